//! Vector clocks: one counter per node, so that causality can be read off the stamps.
//!
//! Rules: before each event a node increments its own entry; a send carries the vector; on
//! receipt the node takes the entrywise maximum with the message's vector, then increments its
//! own entry. a -> b iff VC(a) <= VC(b) entrywise and VC(a) != VC(b); neither way: concurrent.

use crate::trace::NodeId;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// A vector clock; absent entries are zero. Kept as `(node, count)` pairs sorted by node, with
/// no zero counts: every message and every trace line carries one, so a merge is one pass over
/// two sorted lists and a copy is one allocation (a tree of nodes cost a node a tenth of a hop
/// on a ring of 64). In traces it is the object `{"<id>": count}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VectorClock(Vec<(NodeId, u64)>);

impl VectorClock {
    /// A vector from `(node, count)` pairs in any order (zeros dropped; a node listed twice
    /// keeps its largest count).
    pub(crate) fn from_pairs(pairs: impl IntoIterator<Item = (NodeId, u64)>) -> Self {
        let mut v: Vec<(NodeId, u64)> = pairs.into_iter().filter(|&(_, c)| c > 0).collect();
        // By node, the largest count first: dedup keeps it.
        v.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        v.dedup_by_key(|p| p.0);
        VectorClock(v)
    }

    /// A vector from pairs already sorted by node, each node once, no zero count (a trace
    /// reader's scan checked them).
    pub(crate) fn from_sorted_pairs(pairs: Vec<(NodeId, u64)>) -> Self {
        debug_assert!(pairs.windows(2).all(|w| w[0].0 < w[1].0) && pairs.iter().all(|p| p.1 > 0));
        VectorClock(pairs)
    }

    #[cfg(test)]
    /// A vector over nodes 1..=len from a list (`[2,4,0]` is node 1: 2, node 2: 4, node 3: 0).
    pub(crate) fn from_slice(v: &[u64]) -> Self {
        Self::from_pairs(v.iter().enumerate().map(|(i, &c)| (i as NodeId + 1, c)))
    }

    /// The entry of `node`.
    pub fn get(&self, node: NodeId) -> u64 {
        match self.0.binary_search_by_key(&node, |p| p.0) {
            Ok(i) => self.0[i].1,
            Err(_) => 0,
        }
    }

    /// A local event (or send) at `me`.
    pub fn tick(&mut self, me: NodeId) {
        match self.0.binary_search_by_key(&me, |p| p.0) {
            Ok(i) => self.0[i].1 += 1,
            Err(i) => self.0.insert(i, (me, 1)),
        }
    }

    /// Receiving a message stamped `other` (its pairs, as the wire carries them) at `me`: the
    /// entrywise maximum, then a tick.
    pub fn recv(&mut self, me: NodeId, other: &[(NodeId, u64)]) {
        self.merge_pairs(other);
        self.tick(me);
    }

    /// The entrywise maximum with `pairs` as the wire carries them (sorted by node; any other
    /// order is sorted first, since a datagram's contents are not to be trusted).
    pub(crate) fn merge_pairs(&mut self, pairs: &[(NodeId, u64)]) {
        if !pairs.windows(2).all(|w| w[0].0 < w[1].0) {
            return self.merge_pairs(&VectorClock::from_pairs(pairs.iter().copied()).0);
        }
        // One pass raising the entries this vector has: on a ring the sender's nodes are
        // almost always all known here, and then nothing is allocated. Any node it lacks sends
        // it to the merge below, which the raised entries do not change (a maximum twice).
        let mut lacking = false;
        let mut i = 0;
        for &(k, c) in pairs.iter().filter(|p| p.1 > 0) {
            while i < self.0.len() && self.0[i].0 < k {
                i += 1;
            }
            match self.0.get_mut(i) {
                Some(p) if p.0 == k => p.1 = p.1.max(c),
                _ => {
                    lacking = true;
                    break;
                }
            }
        }
        if !lacking {
            return;
        }
        let mut out = Vec::with_capacity(self.0.len() + pairs.len());
        let (mut a, mut b) = (self.0.iter().peekable(), pairs.iter().filter(|p| p.1 > 0).peekable());
        loop {
            match (a.peek(), b.peek()) {
                (Some(&&(ka, ca)), Some(&&(kb, cb))) => match ka.cmp(&kb) {
                    Ordering::Less => {
                        out.push((ka, ca));
                        a.next();
                    }
                    Ordering::Greater => {
                        out.push((kb, cb));
                        b.next();
                    }
                    Ordering::Equal => {
                        out.push((ka, ca.max(cb)));
                        a.next();
                        b.next();
                    }
                },
                (Some(&&p), None) => {
                    out.push(p);
                    a.next();
                }
                (None, Some(&&p)) => {
                    out.push(p);
                    b.next();
                }
                (None, None) => break,
            }
        }
        self.0 = out;
    }

    /// The causal order: Less when `self` happened before `other`, None when concurrent.
    pub fn compare(&self, other: &VectorClock) -> Option<Ordering> {
        let keys = self.0.iter().chain(other.0.iter()).map(|p| p.0);
        let (mut le, mut ge) = (true, true);
        for k in keys {
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

    #[cfg(test)]
    /// Whether neither happened before the other.
    pub(crate) fn concurrent(&self, other: &VectorClock) -> bool {
        self.compare(other).is_none()
    }

    #[cfg(test)]
    /// How many events causally precede the event stamped with this vector: the sum of its
    /// entries minus the event itself.
    pub(crate) fn predecessors(&self) -> u64 {
        self.0.iter().map(|p| p.1).sum::<u64>().saturating_sub(1)
    }

    /// The `(node, count)` pairs, sorted by node, none zero: what the wire carries.
    pub fn pairs(&self) -> &[(NodeId, u64)] {
        &self.0
    }
}

impl Serialize for VectorClock {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

impl<'de> Deserialize<'de> for VectorClock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        BTreeMap::<NodeId, u64>::deserialize(d).map(VectorClock::from)
    }
}

impl From<BTreeMap<NodeId, u64>> for VectorClock {
    fn from(m: BTreeMap<NodeId, u64>) -> Self {
        // Already sorted and unique.
        VectorClock(m.into_iter().filter(|&(_, c)| c > 0).collect())
    }
}

/// Whether event `a` at node `i` and event `b` at node `j` can both lie on the frontier of one
/// consistent cut: neither has seen more of the other's node than that node itself had done,
/// i.e. VC(a)[i] >= VC(b)[i] and VC(b)[j] >= VC(a)[j].
pub(crate) fn frontier_compatible(i: NodeId, a: &VectorClock, j: NodeId, b: &VectorClock) -> bool {
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
        p2.recv(2, p1.pairs());
        p2.tick(2);
        let mut p3 = VectorClock::default();
        p3.tick(3);
        p3.tick(3);
        p3.recv(3, p2.pairs());
        assert_eq!(p3, VectorClock::from_slice(&[2, 3, 3]));
        assert_eq!(p3.predecessors(), 7);
    }

    #[test]
    fn merging_wire_pairs_in_any_order_takes_the_entrywise_maximum() {
        let mut v = VectorClock::from_slice(&[2, 0, 5]);
        v.merge_pairs(&[(1, 1), (2, 3), (4, 1)]);
        assert_eq!(v, VectorClock::from_pairs([(1, 2), (2, 3), (3, 5), (4, 1)]));
        // Unsorted, repeated and zero entries, as a hostile datagram might carry them.
        v.merge_pairs(&[(4, 7), (1, 0), (4, 2), (9, 0)]);
        assert_eq!(v.pairs(), &[(1, 2), (2, 3), (3, 5), (4, 7)]);
        // Nothing new: unchanged.
        v.merge_pairs(&[(1, 1), (3, 5)]);
        assert_eq!(v.pairs(), &[(1, 2), (2, 3), (3, 5), (4, 7)]);
        let json = serde_json::to_string(&v).unwrap();
        assert_eq!(json, r#"{"1":2,"2":3,"3":5,"4":7}"#);
        assert_eq!(serde_json::from_str::<VectorClock>(&json).unwrap(), v);
    }

    #[test]
    fn merging_agrees_with_a_map_of_maxima_on_random_clocks() {
        let mut rng = crate::rng::Rng::new(40);
        for _ in 0..2_000 {
            let mut pick = |len: u64| -> Vec<(NodeId, u64)> {
                let mut m = BTreeMap::new();
                for _ in 0..rng.range(0, len) {
                    m.insert(rng.range(1, 13), rng.range(0, 4));
                }
                m.into_iter().collect()
            };
            let (mine, theirs) = (pick(10), pick(10));
            let mut v = VectorClock::from_pairs(mine.iter().copied());
            v.merge_pairs(&theirs);
            let mut want = BTreeMap::new();
            for &(k, c) in mine.iter().chain(&theirs).filter(|p| p.1 > 0) {
                let e = want.entry(k).or_insert(0);
                *e = c.max(*e);
            }
            assert_eq!(
                v.pairs(),
                want.into_iter().collect::<Vec<_>>().as_slice(),
                "{mine:?} + {theirs:?}"
            );
        }
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
