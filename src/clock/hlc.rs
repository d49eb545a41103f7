//! Hybrid logical clocks (Kulkarni, Demirbas et al., 2014): a stamp (l, c) where l is the
//! largest physical time heard of and c counts events within the same l.
//!
//! - send or local event at physical time pt: l' := max(l, pt); c := c + 1 if l' = l, else 0.
//! - receive (lm, cm) at pt: l' := max(l, lm, pt); c := max(c, cm) + 1 if l' = l = lm;
//!   c + 1 if l' = l only; cm + 1 if l' = lm only; 0 if l' = pt.
//!
//! Bounds: l >= pt always (never behind the node's physical clock); l - pt is at most the
//! clocks' largest disagreement; and c stays small (it resets whenever physical time moves past l).

use serde::{Deserialize, Serialize};

/// A hybrid logical clock stamp.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Hlc {
    /// The physical part, microseconds.
    pub l: u64,
    /// The logical counter.
    pub c: u32,
}

impl Hlc {
    /// A send or local event at physical time `pt`.
    pub fn tick(&mut self, pt: u64) -> Hlc {
        let l = self.l.max(pt);
        self.c = if l == self.l { self.c.saturating_add(1) } else { 0 };
        self.l = l;
        *self
    }

    /// Receiving a message stamped `m` at physical time `pt`.
    pub fn recv(&mut self, m: Hlc, pt: u64) -> Hlc {
        let l = self.l.max(m.l).max(pt);
        self.c = if l == self.l && l == m.l {
            self.c.max(m.c).saturating_add(1)
        } else if l == self.l {
            self.c.saturating_add(1)
        } else if l == m.l {
            m.c.saturating_add(1)
        } else {
            0
        };
        self.l = l;
        *self
    }
}

#[cfg(test)]
mod tests {
    use super::Hlc;

    #[test]
    fn the_rules_keep_causality_and_stay_near_physical_time() {
        let mut a = Hlc::default();
        let mut b = Hlc::default();
        // a's clock is 10 ahead: its stamps drag b's l forward, and b counts within that l.
        let m = a.tick(110);
        let r = b.recv(m, 100);
        assert_eq!(r, Hlc { l: 110, c: 1 });
        assert!(m < r);
        assert_eq!(b.tick(105), Hlc { l: 110, c: 2 });
        // Once b's own clock passes l, the counter resets.
        assert_eq!(b.tick(111), Hlc { l: 111, c: 0 });
        let old = Hlc { l: 50, c: 9 };
        assert_eq!(b.recv(old, 112), Hlc { l: 112, c: 0 });
    }
}
