//! Sweeps forward in time for the checker's progress judgement: who is down and whether a
//! partition is in force at each of an increasing series of moments, at the cost of the
//! changes passed rather than of every node at every moment.

use super::timeline::{Proc, Timeline};
use crate::trace::{NodeId, RunDir};

/// The nodes not running, swept forward in time: `state_at` of every node at each of an
/// increasing series of moments, at the cost of the changes passed rather than of every node.
pub(crate) struct DownSweep {
    /// Every change after the first moment and before the end, in time order (per node, in
    /// its own order).
    changes: Vec<(u64, NodeId, Proc)>,
    next: usize,
    down: std::collections::BTreeSet<NodeId>,
    /// `down` as a sorted list, rebuilt when it changed.
    list: Vec<NodeId>,
    stale: bool,
}

impl DownSweep {
    /// Every node's state at `from`; later changes up to (not including) `to` wait their turn.
    pub(crate) fn new(timeline: &Timeline, from: u64, to: u64) -> Self {
        let down = timeline
            .nodes()
            .filter(|&x| timeline.state_at(x, from).0 != Proc::Running)
            .collect();
        let mut changes: Vec<(u64, NodeId, Proc)> = timeline
            .changes
            .iter()
            .flat_map(|(&x, list)| list.iter().map(move |c| (c.t, x, c.state)))
            .filter(|&(t, _, _)| t > from && t < to)
            .collect();
        // Stable: a node's changes at one moment stay in its order, so the last one wins.
        changes.sort_by_key(|c| c.0);
        DownSweep {
            changes,
            next: 0,
            down,
            list: Vec::new(),
            stale: true,
        }
    }

    /// Applies every change at or before `t` (never earlier than the last call's).
    pub(crate) fn advance(&mut self, t: u64) {
        while let Some(&(_, x, state)) = self.changes.get(self.next).filter(|c| c.0 <= t) {
            let changed = match state == Proc::Running {
                true => self.down.remove(&x),
                false => self.down.insert(x),
            };
            self.stale |= changed;
            self.next += 1;
        }
    }

    /// How many nodes are not running.
    pub(crate) fn count(&self) -> usize {
        self.down.len()
    }

    /// The nodes not running, in id order (as `Timeline::nodes` gives them).
    pub(crate) fn down(&mut self) -> &[NodeId] {
        if self.stale {
            self.list = self.down.iter().copied().collect();
            self.stale = false;
        }
        &self.list
    }
}

/// Whether a partition is in force, read from the faults in file order up to a moment, as
/// `mutex_progress::partitioned_at` reads them, for an increasing series of moments.
#[derive(Default)]
pub(crate) struct PartitionSweep {
    next: usize,
    cut: bool,
}

impl PartitionSweep {
    /// Whether a partition is in force at `t` (never earlier than the last call's).
    pub(crate) fn advance(&mut self, run: &RunDir, t: u64) -> bool {
        while let Some(r) = run.faults.get(self.next).filter(|r| r.t <= t) {
            match r.event {
                crate::trace::Event::Partition { .. } => self.cut = true,
                crate::trace::Event::Heal { .. } => self.cut = false,
                _ => {}
            }
            self.next += 1;
        }
        self.cut
    }
}

#[cfg(test)]
mod sweep_tests {
    use super::*;
    use crate::check::timeline::{Change, End};
    use std::collections::BTreeMap;

    /// The sweep finds, at every moment of an increasing series, the nodes `state_at` finds
    /// not running: changes at the moments themselves, between them, several at one moment
    /// for one node (the last wins), before the first moment and at the end.
    #[test]
    pub(crate) fn the_down_sweep_agrees_with_state_at_at_every_moment() {
        let c = |t, state| Change { t, state };
        use Proc::*;
        let mut changes = BTreeMap::new();
        changes.insert(1, vec![c(10, Running), c(50, Paused), c(70, Running), c(90, Killed)]);
        changes.insert(2, vec![c(20, Running), c(60, Exited), c(60, Running)]);
        changes.insert(3, vec![c(5, Running)]);
        changes.insert(4, vec![]);
        changes.insert(5, vec![c(30, Running), c(30, Paused), c(100, Running)]);
        let timeline = Timeline {
            changes,
            end_us: 200,
            end: End::LastEvent,
        };
        for (from, to) in [(0, 200), (10, 95), (25, 61), (60, 100)] {
            let moments: Vec<u64> = (from..to).filter(|t| t % 5 == 0 || t % 7 == 0).collect();
            let mut sweep = DownSweep::new(&timeline, moments[0], to);
            for &t in &moments {
                sweep.advance(t);
                let want: Vec<NodeId> = timeline
                    .nodes()
                    .filter(|&x| timeline.state_at(x, t).0 != Proc::Running)
                    .collect();
                assert_eq!(sweep.count(), want.len(), "at {t} (from {from} to {to})");
                assert_eq!(sweep.down(), want.as_slice(), "at {t} (from {from} to {to})");
            }
        }
    }
}
