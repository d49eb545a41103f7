//! Lamport's scalar clock, by the course's rules with increment d (the engine uses d = 1).
//!
//! - before each local event or send: C := C + d; a send carries C.
//! - on receiving a message stamped T: C := max(C, T) + d.

/// A scalar logical clock.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct LamportClock {
    /// The clock's value.
    pub c: u64,
    /// The increment of every event.
    pub d: u64,
}

impl LamportClock {
    /// A clock at zero with increment `d`.
    pub fn new(d: u64) -> Self {
        LamportClock { c: 0, d }
    }
    /// A local event or a send: returns the stamp.
    pub fn tick(&mut self) -> u64 {
        self.c += self.d;
        self.c
    }
    /// Receiving a message stamped `t`: returns the receive event's stamp.
    pub fn recv(&mut self, t: u64) -> u64 {
        self.c = self.c.max(t) + self.d;
        self.c
    }
}

#[cfg(test)]
mod tests {
    use super::LamportClock;

    #[test]
    fn the_scalar_rules_with_d_1() {
        // P1: a (local), b (send m1 to P2). P2: c (local), d (recv m1), e (send m2 to P3).
        // P3: f (recv m2).
        let (mut p1, mut p2, mut p3) = (LamportClock::new(1), LamportClock::new(1), LamportClock::new(1));
        let a = p1.tick();
        let b = p1.tick();
        let c = p2.tick();
        let d = p2.recv(b);
        let e = p2.tick();
        let f = p3.recv(e);
        assert_eq!([a, b, c, d, e, f], [1, 2, 1, 3, 4, 5]);
        // The clock condition: a -> b implies C(a) < C(b); the converse fails (c=1 < b=2, yet concurrent).
        assert!(a < b && b < d && d < e && e < f);
        // A receive jumps past a far-ahead sender.
        let mut p = LamportClock::new(1);
        assert_eq!(p.recv(40), 41);
    }
}
