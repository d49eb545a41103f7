//! Ground truth about processes: which node was running, paused or dead at any moment, and
//! where the observed run ends.
//!
//! Built from `faults.jsonl` (what the launcher did) plus two facts only a process can state
//! about itself: its `start` (a fresh process is up; this is also the spawn of a node that the
//! launcher did not record, e.g. one started by hand or by the simulator) and its `stop`.

use crate::trace::{Event, NodeId, RunDir};
use std::collections::BTreeMap;

/// A node's process at some moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Proc {
    /// Neither spawned nor started yet.
    NotStarted,
    /// Running (spawned, restarted or resumed).
    Running,
    /// Stopped with SIGSTOP: alive but silent.
    Paused,
    /// Killed by the launcher (and not restarted since).
    Killed,
    /// The process ended on its own (the launcher saw it exit).
    Exited,
    /// The process shut down cleanly (its `stop` event).
    Stopped,
}

impl Proc {
    /// Whether a process exists (running or paused): what makes a suspicion of it false.
    pub fn alive(self) -> bool {
        matches!(self, Proc::Running | Proc::Paused)
    }

    /// Whether the process has ended (its events after this point cannot be real).
    pub fn ended(self) -> bool {
        matches!(self, Proc::Killed | Proc::Exited | Proc::Stopped)
    }
}

/// How the observed run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The launcher's clean shutdown began (the first `shutdown` in faults.jsonl).
    Shutdown,
    /// No shutdown was recorded, but nodes stopped cleanly (stopped by hand, say): just before
    /// the first `stop`, so that the stopping does not hide what the nodes believed.
    FirstStop,
    /// No shutdown and no clean stop was recorded: the last event of any trace.
    LastEvent,
}

/// One change of a node's process state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change {
    /// True time, microseconds.
    pub t: u64,
    /// The state from `t` on.
    pub state: Proc,
}

/// Every node's process states over time, and the end of the run.
#[derive(Debug, Clone)]
pub struct Timeline {
    /// Per node, its state changes in time order.
    pub changes: BTreeMap<NodeId, Vec<Change>>,
    /// The end of the observed run, microseconds.
    pub end_us: u64,
    /// What the end is.
    pub end: End,
}

impl Timeline {
    /// Builds the timeline of `run`.
    pub fn build(run: &RunDir) -> Self {
        // Faults first on equal times: the launcher acts, then the process reports.
        let mut steps: Vec<(u64, u8, NodeId, &Event)> = Vec::new();
        for r in &run.faults {
            if let Some(n) = r.node {
                steps.push((r.t, 0, n, &r.event));
            }
        }
        for r in &run.node_events {
            if let (Some(n), Event::Start { .. } | Event::Stop { .. }) = (r.node, &r.event) {
                steps.push((r.t, 1, n, &r.event));
            }
        }
        steps.sort_by_key(|&(t, rank, _, _)| (t, rank));
        let mut changes: BTreeMap<NodeId, Vec<Change>> = BTreeMap::new();
        for n in &run.info.nodes {
            changes.insert(n.id, Vec::new());
        }
        for (t, _, node, ev) in steps {
            let list = changes.entry(node).or_default();
            let now = list.last().map_or(Proc::NotStarted, |c| c.state);
            if let Some(next) = transition(now, ev).filter(|&s| s != now) {
                list.push(Change { t, state: next });
            }
        }
        let shutdown = run.faults.iter().find(|r| matches!(r.event, Event::Shutdown {}));
        let first_stop = run.node_events.iter().find(|r| matches!(r.event, Event::Stop { .. }));
        let (end_us, end) = match (shutdown, first_stop) {
            (Some(r), _) => (r.t, End::Shutdown),
            (None, Some(r)) => (r.t.saturating_sub(1), End::FirstStop),
            (None, None) => {
                let last = run.node_events.iter().chain(&run.faults).map(|r| r.t).max();
                (last.unwrap_or(run.info.start_us), End::LastEvent)
            }
        };
        Timeline { changes, end_us, end }
    }

    /// Every node known to the run (launched, or seen in the launcher's log).
    pub fn nodes(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.changes.keys().copied()
    }

    /// The state of `node` at `t` (every change at or before `t` applied), and since when.
    pub(crate) fn state_at(&self, node: NodeId, t: u64) -> (Proc, Option<u64>) {
        self.last_change(node, |c| c.t <= t)
    }

    /// Whether `node` was running (not paused, not dead) at the end of the run.
    pub(crate) fn live_at_end(&self, node: NodeId) -> bool {
        self.state_at(node, self.end_us).0 == Proc::Running
    }

    /// The nodes running at the end of the run.
    pub(crate) fn live_nodes_at_end(&self) -> Vec<NodeId> {
        self.nodes().filter(|&n| self.live_at_end(n)).collect()
    }

    /// Every moment a process ended without saying so itself (killed, exited): `(t, node, how)`.
    pub(crate) fn deaths(&self) -> impl Iterator<Item = (u64, NodeId, Proc)> + '_ {
        self.changes.iter().flat_map(|(&n, list)| {
            list.iter()
                .filter(|c| matches!(c.state, Proc::Killed | Proc::Exited))
                .map(move |c| (c.t, n, c.state))
        })
    }

    /// When `node`, running at `t`, was last resumed from a pause, if its running since then
    /// began with a resume (not a start or a restart).
    pub(crate) fn resumed_before(&self, node: NodeId, t: u64) -> Option<u64> {
        let list = self.changes.get(&node)?;
        let upto = list.iter().take_while(|c| c.t <= t).count();
        match &list[..upto] {
            [.., before, last] if before.state == Proc::Paused && last.state == Proc::Running => Some(last.t),
            _ => None,
        }
    }

    fn last_change(&self, node: NodeId, upto: impl Fn(&Change) -> bool) -> (Proc, Option<u64>) {
        self.changes
            .get(&node)
            .and_then(|list| list.iter().take_while(|c| upto(c)).last())
            .map_or((Proc::NotStarted, None), |c| (c.state, Some(c.t)))
    }
}

/// The process state after `ev` happened to a process in state `now`; None: no change.
fn transition(now: Proc, ev: &Event) -> Option<Proc> {
    match ev {
        Event::Spawn { .. } => Some(Proc::Running),
        // A restarted node runs from its own `start`, not from the launcher's `restart`: the
        // new process can take most of a second to get there (an exec on a busy machine), and
        // until then it answers nothing and forwards nothing (a chaos soak of Echo, seed 108:
        // node 9 restarted at +22361 ms, started at +23197, and split the ring meanwhile).
        Event::Start { .. } if !now.alive() => Some(Proc::Running),
        Event::Pause { .. } if now == Proc::Running => Some(Proc::Paused),
        Event::Resume { .. } if now == Proc::Paused => Some(Proc::Running),
        Event::Kill { .. } if now != Proc::NotStarted => Some(Proc::Killed),
        // An exit after a kill or a clean stop is only the launcher reaping it: keep the cause.
        Event::Exit { .. } if now.alive() => Some(Proc::Exited),
        Event::Stop { .. } if now.alive() => Some(Proc::Stopped),
        _ => None,
    }
}
