//! Reliable FIFO channels over UDP, which Chandy-Lamport's markers need (a marker must not
//! overtake a transfer sent before it, and nothing may be lost).
//!
//! UDP may lose, duplicate and reorder datagrams. Each directed channel i -> j numbers what it
//! carries (1, 2, 3, ...); j acknowledges every number it gets and delivers strictly in order,
//! holding back anything that arrives early; i sends again whatever is unacknowledged every
//! retransmission period. So each item is delivered exactly once, in the order it was sent.

use crate::trace::NodeId;
use std::collections::BTreeMap;

/// The sending and receiving ends of every channel of one node, carrying items `T`.
#[derive(Debug, Clone)]
pub struct Channels<T> {
    next: BTreeMap<NodeId, u64>,
    unacked: BTreeMap<NodeId, BTreeMap<u64, T>>,
    expected: BTreeMap<NodeId, u64>,
    held: BTreeMap<NodeId, BTreeMap<u64, T>>,
}

impl<T: Clone> Default for Channels<T> {
    fn default() -> Self {
        Channels {
            next: BTreeMap::new(),
            unacked: BTreeMap::new(),
            expected: BTreeMap::new(),
            held: BTreeMap::new(),
        }
    }
}

impl<T: Clone> Channels<T> {
    /// Numbers `item` on the channel to `to`; returns its number (send it with it).
    pub fn push(&mut self, to: NodeId, item: T) -> u64 {
        let n = self.next.entry(to).or_insert(0);
        *n += 1;
        self.unacked.entry(to).or_default().insert(*n, item);
        *n
    }

    /// `to` acknowledged number `seq`.
    pub fn ack(&mut self, to: NodeId, seq: u64) {
        if let Some(u) = self.unacked.get_mut(&to) {
            u.remove(&seq);
        }
    }

    /// Everything not yet acknowledged, to send again.
    pub fn unacked(&self) -> Vec<(NodeId, u64, T)> {
        self.unacked
            .iter()
            .flat_map(|(&to, m)| m.iter().map(move |(&s, x)| (to, s, x.clone())))
            .collect()
    }

    /// Item number `seq` arrived from `from`: returns what can now be delivered, in order
    /// (nothing for a duplicate or an early arrival, which is held back).
    pub fn arrive(&mut self, from: NodeId, seq: u64, item: T) -> Vec<T> {
        let expected = self.expected.entry(from).or_insert(1);
        if seq < *expected {
            return Vec::new();
        }
        let held = self.held.entry(from).or_default();
        held.insert(seq, item);
        let mut out = Vec::new();
        while let Some(x) = held.remove(expected) {
            out.push(x);
            *expected += 1;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::Channels;

    #[test]
    fn delivery_is_once_and_in_order_whatever_the_arrival_order() {
        let mut c: Channels<char> = Channels::default();
        assert_eq!(c.push(2, 'a'), 1);
        assert_eq!(c.push(2, 'b'), 2);
        assert_eq!(c.push(2, 'c'), 3);
        let mut r: Channels<char> = Channels::default();
        assert_eq!(r.arrive(1, 3, 'c'), vec![]);
        assert_eq!(r.arrive(1, 1, 'a'), vec!['a']);
        assert_eq!(r.arrive(1, 1, 'a'), vec![]);
        assert_eq!(r.arrive(1, 2, 'b'), vec!['b', 'c']);
        c.ack(2, 2);
        assert_eq!(c.unacked(), vec![(2, 1, 'a'), (2, 3, 'c')]);
    }
}
