//! The clocks a datagram carries, encoded by hand ahead of the bincode body.
//!
//! ```text
//! lamport | hlc.l | hlc.c | pairs | (node - previous node, count) x pairs
//! ```
//!
//! every integer LEB128 (7 bits a byte, low first). The vector clock is the hop's biggest part
//! (64 pairs on a ring of 64): through serde each of its 128 integers was a call of bincode's
//! varint codec and the pairs a `Vec` grown by a visitor, about half of the engine's decode and
//! seal time. Nodes are sent in increasing order, so a node is its distance from the previous
//! one (one byte on a ring).

use super::wire::{Stamps, WireError};
use crate::trace::NodeId;

/// Appends `x` as LEB128.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        out.push(x as u8 | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

/// Appends the clocks of a datagram.
pub(crate) fn put_stamps(out: &mut Vec<u8>, lamport: u64, vc: &[(NodeId, u64)], hlc: (u64, u32)) {
    put_varint(out, lamport);
    put_varint(out, hlc.0);
    put_varint(out, hlc.1 as u64);
    put_varint(out, vc.len() as u64);
    let mut prev = 0;
    for &(node, count) in vc {
        // The sender's pairs are sorted; wrapping keeps a caller's unsorted list decodable
        // (the receiver sorts what it does not trust).
        put_varint(out, node.wrapping_sub(prev));
        put_varint(out, count);
        prev = node;
    }
}

/// A reader of the hand-encoded part of a body.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

fn malformed(what: &str) -> WireError {
    WireError::Malformed(format!("clocks: {what}"))
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, at: 0 }
    }

    /// What is left after the clocks: the bincode body.
    pub(crate) fn rest(&self) -> &'a [u8] {
        &self.bytes[self.at..]
    }

    pub(crate) fn varint(&mut self) -> Result<u64, WireError> {
        let mut x = 0u64;
        for shift in (0..64).step_by(7) {
            let &b = self.bytes.get(self.at).ok_or_else(|| malformed("truncated"))?;
            self.at += 1;
            let bits = (b & 0x7f) as u64;
            if shift == 63 && bits > 1 {
                return Err(malformed("integer over 64 bits"));
            }
            x |= bits << shift;
            if b & 0x80 == 0 {
                return Ok(x);
            }
        }
        Err(malformed("integer over 64 bits"))
    }

    /// The Lamport clock, and the vector and hybrid clocks.
    pub(crate) fn stamps(&mut self) -> Result<(u64, Stamps), WireError> {
        let lamport = self.varint()?;
        let l = self.varint()?;
        let c = u32::try_from(self.varint()?).map_err(|_| malformed("hybrid counter over 32 bits"))?;
        let n = self.varint()?;
        // Two bytes a pair at least: a claimed length beyond the datagram allocates nothing.
        if n > (self.bytes.len() - self.at) as u64 / 2 {
            return Err(malformed(&format!("{n} pairs in {} bytes", self.bytes.len() - self.at)));
        }
        let mut vc = Vec::with_capacity(n as usize);
        let mut node: NodeId = 0;
        for _ in 0..n {
            node = node.wrapping_add(self.varint()?);
            vc.push((node, self.varint()?));
        }
        Ok((lamport, Stamps { vc, hlc: (l, c) }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_round_trip_at_every_width() {
        let xs = [
            0,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            u32::MAX as u64,
            u64::MAX - 1,
            u64::MAX,
        ];
        let mut out = Vec::new();
        for &x in &xs {
            put_varint(&mut out, x);
        }
        assert_eq!(out[..4], [0, 1, 127, 0x80]);
        let mut r = Reader::new(&out);
        for &x in &xs {
            assert_eq!(r.varint().unwrap(), x);
        }
        assert!(r.rest().is_empty());
    }

    #[test]
    fn clocks_round_trip_and_the_rest_is_left() {
        let vc = vec![(0, 3), (1, 2), (2, 900), (64, 1), (u64::MAX, 7)];
        let mut out = Vec::new();
        put_stamps(&mut out, 42, &vc, (1_700_000_000_000_000, 5));
        out.extend_from_slice(b"msg");
        let mut r = Reader::new(&out);
        let hlc = (1_700_000_000_000_000, 5);
        assert_eq!(r.stamps().unwrap(), (42, Stamps { vc, hlc }));
        assert_eq!(r.rest(), b"msg");
    }

    #[test]
    fn hostile_clocks_are_errors_not_panics_or_allocations() {
        // Truncated in the middle of a pair.
        let mut out = Vec::new();
        put_stamps(&mut out, 1, &[(1, 1), (2, 2)], (0, 0));
        for cut in 0..out.len() {
            assert!(Reader::new(&out[..cut]).stamps().is_err(), "cut at {cut}");
        }
        // Eleven continuation bytes, and a tenth byte past 64 bits.
        assert!(Reader::new(&[0xff; 11]).varint().is_err());
        let mut over = vec![0xff; 9];
        over.push(0x02);
        assert!(Reader::new(&over).varint().is_err());
        // A pair count far beyond the datagram.
        let mut huge = Vec::new();
        for x in [1, 0, 0, u64::MAX] {
            put_varint(&mut huge, x);
        }
        assert_eq!(Reader::new(&huge).stamps().unwrap_err().class(), "malformed");
        // A hybrid counter over 32 bits.
        let mut wide = Vec::new();
        for x in [1, 0, 1 << 40, 0] {
            put_varint(&mut wide, x);
        }
        assert!(Reader::new(&wide).stamps().is_err());
    }
}
