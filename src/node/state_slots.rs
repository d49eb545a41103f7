//! The layout of a node's state file: two slots written in place, in turns.
//!
//! A store used to be a new temporary file renamed over the old one. On ext4 that is an inode
//! allocated and one freed per store, 0.1-0.4 ms, paid by every Chang-Roberts node on the
//! ELECTION lap before it forwards, by the bank after every transfer and by the fencing
//! resource after every access. Now the file is created once and each store is one copy into
//! the mapped slot not holding the current state (`state_map.rs`). A kill can cut that copy
//! short; each slot carries a BLAKE3 hash over its sequence number, length and payload, so a
//! cut slot never verifies and the reader takes the other one: the state before the store, as
//! a kill before the rename gave.
//!
//! ```text
//! header  "cldstat2" | span: u64 LE                       (16 bytes, written once)
//! slot k  at 16 + k * span:
//!         hash: [u8; 32] | seq: u64 LE | len: u32 LE | payload (len bytes)
//!         hash = BLAKE3(seq | len | payload)
//! ```
//!
//! The current state is the verifying slot with the highest `seq`. A payload larger than a
//! slot makes a new file with a wider span (temporary file and rename, as every first store).

/// The first bytes of a file of this layout.
pub(crate) const MAGIC: &[u8; 8] = b"cldstat2";
/// The header's length: the magic and the span.
pub(crate) const HEADER: usize = 16;
/// A slot's bytes before its payload: hash, sequence number, length.
pub(crate) const SLOT_HEAD: usize = 32 + 8 + 4;
/// The narrowest span: every state the algorithms keep today fits in it many times over.
const MIN_SPAN: usize = 4096;

/// The span of a file made for a first payload of `len` bytes: room to grow to twice its size.
pub(crate) fn span_for(len: usize) -> usize {
    ((SLOT_HEAD + len) * 2).next_power_of_two().max(MIN_SPAN)
}

/// Where slot `k` starts.
pub(crate) fn slot_offset(span: usize, k: usize) -> usize {
    HEADER + k * span
}

/// The file's header.
pub(crate) fn header(span: usize) -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    h[..8].copy_from_slice(MAGIC);
    h[8..].copy_from_slice(&(span as u64).to_le_bytes());
    h
}

/// The bytes of a slot holding `payload` as store number `seq`.
pub(crate) fn slot(seq: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; 32];
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(payload);
    let hash = blake3::hash(&out[32..]);
    out[..32].copy_from_slice(hash.as_bytes());
    out
}

/// The state a file holds: its payload, the store number, which slot, the span.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Current {
    /// What the algorithm stored.
    pub payload: Vec<u8>,
    /// Its store number.
    pub seq: u64,
    /// The slot it is in (0 or 1).
    pub slot: usize,
    /// The file's span.
    pub span: usize,
}

/// The slot `k` of `file` if it verifies: its store number and payload.
fn read_slot(file: &[u8], span: usize, k: usize) -> Option<(u64, &[u8])> {
    let at = slot_offset(span, k);
    let head = file.get(at..at.checked_add(SLOT_HEAD)?)?;
    let seq = u64::from_le_bytes(head[32..40].try_into().ok()?);
    let len = u32::from_le_bytes(head[40..44].try_into().ok()?) as usize;
    if SLOT_HEAD + len > span {
        return None;
    }
    let body = file.get(at + 32..at + SLOT_HEAD + len)?;
    (blake3::hash(body).as_bytes() == &head[..32]).then(|| (seq, &body[12..]))
}

/// The current state of a file of this layout, or why there is none (one line). `Ok(None)`:
/// the file is not of this layout (the caller may know another).
pub(crate) fn current(file: &[u8]) -> Option<Result<Current, String>> {
    if file.len() < HEADER || &file[..8] != MAGIC {
        return None;
    }
    let span = u64::from_le_bytes(file[8..16].try_into().expect("8 bytes")) as usize;
    if span < SLOT_HEAD {
        return Some(Err(format!("a slot span of {span} bytes: damaged")));
    }
    let best = (0..2)
        .filter_map(|k| read_slot(file, span, k).map(|(seq, p)| (seq, k, p)))
        .max_by_key(|&(seq, _, _)| seq);
    Some(match best {
        Some((seq, slot, payload)) => Ok(Current {
            payload: payload.to_vec(),
            seq,
            slot,
            span,
        }),
        None => Err("neither of its two slots verifies: damaged".into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of `span` with `slots` written at their places.
    fn file(span: usize, slots: &[(usize, Vec<u8>)]) -> Vec<u8> {
        let mut f = header(span).to_vec();
        for (k, bytes) in slots {
            let at = slot_offset(span, *k);
            if f.len() < at + bytes.len() {
                f.resize(at + bytes.len(), 0);
            }
            f[at..at + bytes.len()].copy_from_slice(bytes);
        }
        f
    }

    #[test]
    fn the_newest_verifying_slot_is_current() {
        let span = span_for(10);
        let f = file(span, &[(0, slot(4, b"four")), (1, slot(5, b"five"))]);
        let c = current(&f).unwrap().unwrap();
        assert_eq!(
            (c.payload.as_slice(), c.seq, c.slot, c.span),
            (&b"five"[..], 5, 1, span)
        );
        let f = file(span, &[(0, slot(6, b"six")), (1, slot(5, b"five"))]);
        assert_eq!(current(&f).unwrap().unwrap().payload, b"six");
    }

    #[test]
    fn a_store_cut_short_anywhere_leaves_the_state_before_it() {
        let span = span_for(100);
        let old = slot(7, b"the old state");
        let new = slot(8, b"the new state, longer than the old");
        for cut in 0..new.len() {
            // The kill stopped the write of slot 1 after `cut` bytes, over what it held before
            // (slot 1 held store 6, two stores back).
            let mut before = slot(6, b"two stores back");
            before.resize(new.len(), 0);
            before[..cut].copy_from_slice(&new[..cut]);
            let f = file(span, &[(0, old.clone()), (1, before)]);
            let c = current(&f).unwrap().unwrap();
            assert_eq!(
                (c.payload.as_slice(), c.seq),
                (&b"the old state"[..], 7),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn a_file_with_no_verifying_slot_or_another_layout_is_told_apart() {
        let span = span_for(4);
        let mut bad = slot(1, b"data");
        bad[46] ^= 1;
        assert!(current(&file(span, &[(0, bad)]))
            .unwrap()
            .unwrap_err()
            .contains("damaged"));
        assert!(current(&header(span)).unwrap().is_err(), "a header alone");
        assert!(current(b"cldstat1 an older layout").is_none());
        assert!(current(&header(3)).unwrap().unwrap_err().contains("span"));
        // A length beyond the span, even with a matching hash, is refused.
        let mut f = header(SLOT_HEAD + 2).to_vec();
        f.extend_from_slice(&slot(1, b"four"));
        assert!(current(&f).unwrap().is_err());
    }

    #[test]
    fn spans_leave_room_to_grow() {
        assert_eq!(span_for(0), MIN_SPAN);
        assert!(span_for(10_000) >= 2 * (SLOT_HEAD + 10_000));
    }
}
