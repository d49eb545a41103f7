//! Vector clocks: one counter per node, so that causality can be read off the stamps.
//!
//! Rules: before each event a node increments its own entry; a send carries the vector; on
//! receipt the node takes the entrywise maximum with the message's vector, then increments its
//! own entry. a -> b iff VC(a) <= VC(b) entrywise and VC(a) != VC(b); neither way: concurrent.

use crate::trace::NodeId;
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// A vector clock; absent entries are zero.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VectorClock(pub BTreeMap<NodeId, u64>);

impl VectorClock {
    /// A vector from `(node, count)` pairs (zeros dropped).
    pub fn from_pairs(pairs: impl IntoIterator<Item = (NodeId, u64)>) -> Self {
        VectorClock(pairs.into_iter().filter(|&(_, c)| c > 0).collect())
    }

    /// A vector over nodes 1..=len from a list (`[2,4,0]` is node 1: 2, node 2: 4, node 3: 0).
    pub fn from_slice(v: &[u64]) -> Self {
        Self::from_pairs(v.iter().enumerate().map(|(i, &c)| (i as NodeId + 1, c)))
    }

    /// The entry of `node`.
    pub fn get(&self, node: NodeId) -> u64 {
        self.0.get(&node).copied().unwrap_or(0)
    }

    /// A local event (or send) at `me`.
    pub fn tick(&mut self, me: NodeId) {
        *self.0.entry(me).or_default() += 1;
    }

    /// Receiving a message stamped `other` at `me`: the entrywise maximum, then a tick.
    pub fn recv(&mut self, me: NodeId, other: &VectorClock) {
        self.merge(other);
        self.tick(me);
    }

    /// The entrywise maximum with `other`.
    pub fn merge(&mut self, other: &VectorClock) {
        for (&k, &v) in &other.0 {
            let e = self.0.entry(k).or_default();
            *e = (*e).max(v);
        }
    }

    /// The causal order: Less when `self` happened before `other`, None when concurrent.
    pub fn compare(&self, other: &VectorClock) -> Option<Ordering> {
        let keys = self.0.keys().chain(other.0.keys());
        let (mut le, mut ge) = (true, true);
        for &k in keys {
            le &= self.get(k) <= other.get(k);
            ge &= self.get(k) >= other.get(k);
        }
        match (le, ge) {
            (true, true) => Some(Ordering::Equal),
            (true, false) => Some(Ordering::Less),
            (false, true) => Some(Ordering::Greater),
            (false, false) => None,
        }
    }

    /// Whether `self` happened before `other`.
    pub fn before(&self, other: &VectorClock) -> bool {
        self.compare(other) == Some(Ordering::Less)
    }

    /// Whether neither happened before the other.
    pub fn concurrent(&self, other: &VectorClock) -> bool {
        self.compare(other).is_none()
    }

    /// How many events causally precede the event stamped with this vector: the sum of its
    /// entries minus the event itself.
    pub fn predecessors(&self) -> u64 {
        self.0.values().sum::<u64>().saturating_sub(1)
    }

    /// As `(node, count)` pairs for the wire.
    pub fn pairs(&self) -> Vec<(NodeId, u64)> {
        self.0.iter().map(|(&k, &v)| (k, v)).collect()
    }
}

/// Whether event `a` at node `i` and event `b` at node `j` can both lie on the frontier of one
/// consistent cut: neither has seen more of the other's node than that node itself had done,
/// i.e. VC(a)[i] >= VC(b)[i] and VC(b)[j] >= VC(a)[j].
pub fn frontier_compatible(i: NodeId, a: &VectorClock, j: NodeId, b: &VectorClock) -> bool {
    a.get(i) >= b.get(i) && b.get(j) >= a.get(j)
}

/// Whether a frontier (one event per node, `(node, vector)`) is a consistent cut: every pair
/// compatible.
pub fn consistent(frontier: &[(NodeId, VectorClock)]) -> bool {
    frontier
        .iter()
        .all(|(i, a)| frontier.iter().all(|(j, b)| frontier_compatible(*i, a, *j, b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_course_vectors_a_and_b_are_concurrent() {
        let a = VectorClock::from_slice(&[2, 4, 0]);
        let b = VectorClock::from_slice(&[2, 3, 3]);
        assert!(a.concurrent(&b) && b.concurrent(&a));
        assert!(!a.before(&b) && !b.before(&a));
        assert!(VectorClock::from_slice(&[2, 3, 0]).before(&b));
    }

    #[test]
    fn events_that_causally_precede_b_are_its_sum_minus_one() {
        assert_eq!(VectorClock::from_slice(&[2, 3, 3]).predecessors(), 7);
        // Built by the rules: P1 two events, the second a send to P2; P2 three events, the last
        // receiving it; P2 sends to P3, whose third event receives it.
        let mut p1 = VectorClock::default();
        p1.tick(1);
        p1.tick(1);
        let mut p2 = VectorClock::default();
        p2.tick(2);
        p2.recv(2, &p1);
        p2.tick(2);
        let mut p3 = VectorClock::default();
        p3.tick(3);
        p3.tick(3);
        p3.recv(3, &p2);
        assert_eq!(p3, VectorClock::from_slice(&[2, 3, 3]));
        assert_eq!(p3.predecessors(), 7);
    }

    #[test]
    fn the_frontier_test_of_a_consistent_cut() {
        // a at node 2 = [2,4,0], b at node 3 = [2,3,3]: b saw 3 events of node 2 and a is node
        // 2's 4th, a saw nothing of node 3: both can be on one frontier.
        let a = VectorClock::from_slice(&[2, 4, 0]);
        let b = VectorClock::from_slice(&[2, 3, 3]);
        assert!(frontier_compatible(2, &a, 3, &b));
        // c at node 2 = [2,2,0] with b at node 3 (which saw node 2's 3rd event): b's receive is
        // in the cut while its send is not.
        let c = VectorClock::from_slice(&[2, 2, 0]);
        assert!(!frontier_compatible(2, &c, 3, &b));
        let p1 = VectorClock::from_slice(&[2, 0, 0]);
        assert!(consistent(&[(1, p1.clone()), (2, a), (3, b.clone())]));
        assert!(!consistent(&[(1, p1), (2, c), (3, b)]));
    }
}
