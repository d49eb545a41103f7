//! Vector clocks written as changes: a node's trace line carries `dvc`, the entries of its
//! vector clock that differ from the node's previous line's, instead of the whole `vc`; the
//! readers ([`super::Jsonl`]) put the whole clock back, so every record read has its `vc`.
//!
//! On a ring of 64 with vector clocks, a hop's two records carried about 100 entries (1.4 KB of
//! JSON) of which one or two had changed: the bytes, not the encoder, were the trace's cost.
//! A line is written whole (`vc`) when the writer has no previous clock (the first line of a
//! boot: a restarted node appends to its file, and its clock need not follow from the last
//! boot's), every [`WHOLE_EVERY`] lines (so that a line damaged on disk costs at most that many
//! clocks, not the rest of the file), when an entry of the previous clock is gone, and when the
//! changes would not be shorter than the clock.

use super::encode::encode_line_as;
use super::{NodeId, Record};
use crate::clock::VectorClock;

/// A whole `vc` at least once every this many lines that carry a clock.
pub(crate) const WHOLE_EVERY: u32 = 64;

/// The writer's side: the clock of the previous line written, to write the next as changes.
#[derive(Debug, Default)]
pub struct VcChanges {
    /// The previous line's clock; None before the first line that carried one.
    prev: Option<Vec<(NodeId, u64)>>,
    /// Lines written as changes since the last whole one.
    since_whole: u32,
    /// The changes of the line being written (kept to reuse its allocation).
    changes: Vec<(NodeId, u64)>,
}

impl VcChanges {
    /// Appends `rec` as one JSON line to `out`, its vector clock as changes where it can.
    pub fn encode(&mut self, rec: &Record, out: &mut Vec<u8>) {
        let Some(vc) = &rec.vc else {
            encode_line_as(rec, None, out);
            return;
        };
        let now = vc.pairs();
        let as_changes = match &self.prev {
            Some(prev) if self.since_whole < WHOLE_EVERY => changes(prev, now, &mut self.changes),
            _ => false,
        };
        if as_changes {
            encode_line_as(rec, Some((b"dvc", &self.changes)), out);
            self.since_whole += 1;
        } else {
            encode_line_as(rec, Some((b"vc", now)), out);
            self.since_whole = 0;
        }
        let prev = self.prev.get_or_insert_with(Vec::new);
        prev.clear();
        prev.extend_from_slice(now);
    }
}

/// The entries of `now` that differ from `prev` into `out`; false when `now` cannot be written
/// as changes of `prev` (an entry of `prev` is gone from it), or the changes are no shorter.
fn changes(prev: &[(NodeId, u64)], now: &[(NodeId, u64)], out: &mut Vec<(NodeId, u64)>) -> bool {
    out.clear();
    // Once, at the widest (a node's first message from afar brings every entry at once):
    // not a doubling reallocation on that hop.
    out.reserve(now.len());
    let mut i = 0;
    for &(k, c) in now {
        match prev.get(i) {
            // Both are sorted: an entry of `prev` before `k` is not in `now` (a zero cannot be
            // written as a change).
            Some(&(pk, _)) if pk < k => return false,
            Some(&(pk, pc)) if pk == k => {
                if pc != c {
                    out.push((k, c));
                }
                i += 1;
            }
            _ => out.push((k, c)),
        }
    }
    i == prev.len() && out.len() < now.len()
}

/// The reader's side: the whole clock of a line that carried `dvc`, from the previous line's
/// clock `prev` (each changed entry replaces the old one).
pub(crate) fn expand(prev: &VectorClock, dvc: &VectorClock) -> VectorClock {
    let (a, b) = (prev.pairs(), dvc.pairs());
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        match (a.get(i), b.get(j)) {
            (Some(&x), Some(&y)) if x.0 == y.0 => {
                out.push(y);
                i += 1;
                j += 1;
            }
            (Some(&x), Some(&y)) if x.0 < y.0 => {
                out.push(x);
                i += 1;
            }
            (Some(&x), None) => {
                out.push(x);
                i += 1;
            }
            (_, Some(&y)) => {
                out.push(y);
                j += 1;
            }
            (None, None) => break,
        }
    }
    VectorClock::from_pairs(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Event, Jsonl};

    fn rec(t: u64, vc: Option<VectorClock>) -> Record {
        Record {
            t,
            node: Some(2),
            lamport: Some(t),
            pt: None,
            vc,
            hlc: None,
            event: if t.is_multiple_of(3) {
                Event::Leader { leader: 2, term: t }
            } else {
                Event::Send {
                    to: 3,
                    msg: "M".into(),
                    bytes: 9,
                    seq: t,
                    brief: String::new(),
                }
            },
        }
    }

    /// Reads `text` as a whole file is read.
    fn read(text: &[u8]) -> Jsonl {
        read_as(Jsonl::default(), text)
    }

    fn read_as(mut j: Jsonl, text: &[u8]) -> Jsonl {
        for (i, line) in text.split(|&b| b == b'\n').enumerate() {
            j.read_line("node-2.jsonl", i + 1, line);
        }
        j
    }

    /// The launcher's reading of `text` ([`Jsonl::without_vc`]) is the whole reading of it
    /// with every clock left out: the same records otherwise, the same bad lines.
    fn same_without_vc(text: &[u8]) {
        let whole = read(text);
        let without = read_as(
            Jsonl {
                without_vc: true,
                ..Jsonl::default()
            },
            text,
        );
        assert_eq!(without.bad, whole.bad);
        let mut stripped = whole.records;
        for r in &mut stripped {
            r.vc = None;
        }
        assert_eq!(without.records, stripped);
    }

    /// A clock history as a node's would go (ticks, merges bringing new entries) with the odd
    /// line without a clock, an entry gone (a clock that does not follow from the last) and one
    /// that changes everything.
    fn history() -> Vec<Record> {
        let mut vc = VectorClock::default();
        let mut seed = 7u64;
        let mut out = Vec::new();
        for t in 1..400u64 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let r = seed >> 33;
            vc.tick(2);
            if r.is_multiple_of(4) {
                let k = 1 + (r >> 8) % 64;
                vc.merge_pairs(&[(k, vc.get(k) + 1 + r % 5)]);
            }
            if t == 150 {
                vc = VectorClock::from_pairs([(2, 1)]);
            }
            if t == 200 {
                vc = VectorClock::from_pairs((1..=64).map(|k| (k, vc.get(k) + 10)));
            }
            out.push(rec(t, (!r.is_multiple_of(11)).then(|| vc.clone())));
        }
        out
    }

    #[test]
    fn a_history_written_as_changes_reads_back_whole_and_shorter() {
        let recs = history();
        let (mut changes, mut whole) = (Vec::new(), Vec::new());
        let mut w = VcChanges::default();
        for r in &recs {
            w.encode(r, &mut changes);
            crate::trace::encode_line(r, &mut whole);
        }
        let j = read(&changes);
        assert!(j.bad.is_empty(), "{:?}", j.bad);
        assert_eq!(j.records, recs);
        let text = String::from_utf8(changes.clone()).unwrap();
        assert!(text.contains("\"dvc\":{"), "{text}");
        // Whole clocks: the first, the entry gone at 150, and at least one in WHOLE_EVERY.
        let wholes = text.lines().filter(|l| l.contains("\"vc\":")).count();
        let with_clock = recs.iter().filter(|r| r.vc.is_some()).count() as u32;
        assert!(wholes as u32 >= with_clock / (WHOLE_EVERY + 1), "{wholes}");
        assert!(changes.len() * 3 < whole.len(), "{} vs {}", changes.len(), whole.len());
        // The old form, every line whole, reads the same.
        assert_eq!(read(&whole).records, recs);
        same_without_vc(&changes);
        same_without_vc(&whole);
    }

    #[test]
    fn changes_after_a_line_that_did_not_parse_are_bad_until_a_whole_clock() {
        let recs = history();
        let mut text = Vec::new();
        let mut w = VcChanges::default();
        for r in &recs[..10] {
            w.encode(r, &mut text);
        }
        text.extend_from_slice(b"{\"t\":11,\"node\":2,\"dvc\":{\"2\":11},\"ev\":\"send\"\xff}\n");
        let mut w = VcChanges::default();
        for r in &recs[11..20] {
            w.encode(r, &mut text);
        }
        let j = read(&text);
        // The damaged line, and nothing after it lost: the next boot's writer starts whole.
        assert_eq!(j.bad.len(), 1, "{:?}", j.bad);
        assert_eq!(j.records.len(), 19);
        same_without_vc(&text);
        // Without the whole clock after it, the changes that follow cannot be read.
        let mut text = Vec::new();
        let mut w = VcChanges::default();
        for r in &recs[..10] {
            w.encode(r, &mut text);
        }
        let cut = text.len();
        text.extend_from_slice(b"garbage\n");
        for r in &recs[10..20] {
            w.encode(r, &mut text);
        }
        let j = read(&text);
        let with_clock = recs[10..20].iter().filter(|r| r.vc.is_some()).count();
        assert_eq!(j.bad.len(), 1 + with_clock, "{:?}", j.bad);
        assert!(j.bad[1].why.contains("no whole clock"), "{:?}", j.bad[1]);
        same_without_vc(&text);
        assert_eq!(read(&text[..cut]).records, recs[..10]);
    }

    #[test]
    fn the_changes_are_the_entries_that_differ_and_none_that_vanished() {
        let mut out = Vec::new();
        assert!(changes(&[(1, 1), (2, 5)], &[(1, 1), (2, 6), (3, 1)], &mut out));
        assert_eq!(out, [(2, 6), (3, 1)]);
        assert!(
            !changes(&[(1, 1), (2, 5)], &[(2, 6), (3, 1), (4, 1)], &mut out),
            "entry 1 gone"
        );
        assert!(
            !changes(&[(1, 1), (9, 5)], &[(1, 2), (2, 6), (3, 1)], &mut out),
            "entry 9 gone"
        );
        assert!(!changes(&[(1, 1)], &[(1, 2)], &mut out), "no shorter than the clock");
        let prev = VectorClock::from_pairs([(1, 1), (3, 2), (7, 1)]);
        let dvc = VectorClock::from_pairs([(0, 4), (3, 3), (9, 1)]);
        assert_eq!(
            expand(&prev, &dvc),
            VectorClock::from_pairs([(0, 4), (1, 1), (3, 3), (7, 1), (9, 1)])
        );
    }
}
