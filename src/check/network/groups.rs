//! Who can reach whom: the groups a network splits the running nodes into, at a moment or under given rules.

use super::*;

impl Network {
    /// The nodes `a` may send to (with the implicit complete graph, every member, `a` too).
    pub(super) fn neighbours(&self, a: NodeId) -> &[NodeId] {
        match &self.graph {
            None => &self.members,
            Some(g) => g.get(&a).map(Vec::as_slice).unwrap_or(&[]),
        }
    }

    /// The nodes `from`'s datagrams reach at `t` along the graph, over links neither blocked
    /// nor (when `heavy`) losing at least [`HEAVY_LOSS_PCT`] percent, avoiding `down`.
    pub(super) fn reach(&self, rules: &NetRules, from: NodeId, down: &[NodeId], heavy: bool) -> BTreeSet<NodeId> {
        let open = |a: NodeId, b: NodeId| !(rules.blocked(a, b) || heavy && rules.loss(a, b) >= HEAVY_LOSS_PCT);
        let mut seen = BTreeSet::from([from]);
        let mut todo = vec![from];
        while let Some(a) = todo.pop() {
            for &b in self.neighbours(a) {
                if !down.contains(&b) && open(a, b) && seen.insert(b) {
                    todo.push(b);
                }
            }
        }
        seen
    }

    /// The groups of running nodes (not `down`) that could talk both ways at `t`: nodes in one
    /// group reach each other over the graph minus the blocked links (round the ring, for an
    /// algorithm that forwards in ring order). Each node is in exactly one group; sorted.
    pub(crate) fn groups_at(&self, t: u64, down: &[NodeId]) -> Vec<Vec<NodeId>> {
        self.groups_under(self.rules_at(t), down)
    }

    /// Whether some group of [`Network::groups_at`] holds more than half of `n` nodes. Without
    /// a blocked link, round a ring or over the complete graph, the one group is every member
    /// not `down`: counted, not built (the checker asks this at every change of a run of
    /// thousands of nodes).
    pub(crate) fn majority_group_at(&self, t: u64, down: &[NodeId], n: usize) -> bool {
        let rules = self.rules_at(t);
        let one_group = rules.blocks_nothing() && (self.graph.is_none() || !self.ring.is_empty());
        if one_group && self.sorted.len() == self.members.len() {
            let gone = down.iter().filter(|d| self.sorted.binary_search(d).is_ok()).count();
            return 2 * (self.members.len() - gone) > n;
        }
        self.groups_at(t, down).iter().any(|g| 2 * g.len() > n)
    }

    /// [`Network::groups_at`] with no network rule in force: how the dead nodes alone split
    /// the graph.
    pub(crate) fn groups_without_faults(&self, down: &[NodeId]) -> Vec<Vec<NodeId>> {
        self.groups_under(&self.clear, down)
    }

    /// The node `from` forwards to round the ring under `rules`: its first successor in ring
    /// order that is not `down` and that the link from `from` lets through (None: none is).
    pub(super) fn next_in_ring(&self, rules: &NetRules, from: NodeId, down: &[NodeId]) -> Option<NodeId> {
        let i = self.ring.iter().position(|&m| m == from)?;
        (1..self.ring.len())
            .map(|k| self.ring[(i + k) % self.ring.len()])
            .find(|&b| !down.contains(&b) && !rules.blocked(from, b))
    }

    /// The nodes `from`'s messages reach round the ring: the chain of next successors.
    pub(super) fn ring_reach(&self, rules: &NetRules, from: NodeId, down: &[NodeId]) -> BTreeSet<NodeId> {
        let mut seen = BTreeSet::from([from]);
        let mut at = from;
        while let Some(b) = self.next_in_ring(rules, at, down) {
            if !seen.insert(b) {
                break;
            }
            at = b;
        }
        seen
    }

    /// The groups when no link is blocked, in one pass: round a ring or over the complete graph
    /// every running node reaches every other; over a graph, its connected components.
    pub(super) fn components(&self, up: &[NodeId], down: &BTreeSet<NodeId>) -> Vec<Vec<NodeId>> {
        let Some(graph) = self.graph.as_ref().filter(|_| self.ring.is_empty()) else {
            return if up.is_empty() { Vec::new() } else { vec![up.to_vec()] };
        };
        let mut seen: BTreeSet<NodeId> = BTreeSet::new();
        let mut out = Vec::new();
        for &a in up {
            if !seen.insert(a) {
                continue;
            }
            let mut group = BTreeSet::from([a]);
            let mut todo = vec![a];
            while let Some(x) = todo.pop() {
                for &b in graph.get(&x).into_iter().flatten() {
                    if !down.contains(&b) && seen.insert(b) {
                        group.insert(b);
                        todo.push(b);
                    }
                }
            }
            // In the members' order, as the general case gives them.
            out.push(up.iter().copied().filter(|m| group.contains(m)).collect());
        }
        out
    }

    pub(super) fn groups_under(&self, rules: &NetRules, down: &[NodeId]) -> Vec<Vec<NodeId>> {
        let down: BTreeSet<NodeId> = down.iter().copied().collect();
        let up: Vec<NodeId> = self.members.iter().copied().filter(|m| !down.contains(m)).collect();
        if rules.blocks_nothing() {
            return self.components(&up, &down);
        }
        let down: Vec<NodeId> = down.into_iter().collect();
        let down = down.as_slice();
        let reach: BTreeMap<NodeId, BTreeSet<NodeId>> = up
            .iter()
            .map(|&m| {
                let r = if self.ring.is_empty() {
                    self.reach(rules, m, down, false)
                } else {
                    self.ring_reach(rules, m, down)
                };
                (m, r)
            })
            .collect();
        let mut placed: BTreeSet<NodeId> = BTreeSet::new();
        let mut out = Vec::new();
        for &a in &up {
            if placed.contains(&a) {
                continue;
            }
            let group: Vec<NodeId> = up
                .iter()
                .copied()
                .filter(|&b| !placed.contains(&b) && reach[&a].contains(&b) && reach[&b].contains(&a))
                .collect();
            placed.extend(group.iter().copied());
            out.push(group);
        }
        out
    }

    #[cfg(test)]
    /// Whether the network split the running nodes (not `down`) at `t`.
    pub(crate) fn split_at(&self, t: u64, down: &[NodeId]) -> bool {
        self.groups_at(t, down).len() > 1
    }

    /// The stretches during which the network split the nodes into groups that could not talk
    /// (every node taken as running): (from, to, groups), to `end` at the latest.
    pub(crate) fn splits(&self, end: u64) -> Vec<(u64, u64, Vec<Vec<NodeId>>)> {
        let mut out: Vec<(u64, u64, Vec<Vec<NodeId>>)> = Vec::new();
        for (i, s) in self.steps.iter().enumerate() {
            if s.t >= end {
                break;
            }
            let to = self.steps.get(i + 1).map_or(end, |n| n.t.min(end));
            let groups = self.groups_at(s.t, &[]);
            if groups.len() < 2 {
                continue;
            }
            match out.last_mut() {
                Some(last) if last.1 == s.t && last.2 == groups => last.1 = to,
                _ => out.push((s.t, to, groups)),
            }
        }
        out
    }
}
