//! Every `suspect` event judged against ground truth: was the target really dead at that moment?
//!
//! The verdict comes from the launcher's record of what it did to processes (the [`Timeline`]),
//! never from what the nodes thought: a paused node is slow, not dead, so suspecting it is false.

use super::timeline::{Proc, Timeline};
use crate::trace::{Event, NodeId, RunDir};

/// One suspicion and the truth about its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Suspicion {
    /// When, microseconds.
    pub t: u64,
    /// The node that suspected.
    pub by: NodeId,
    /// The node it suspected.
    pub target: NodeId,
    /// How long it had heard nothing, as it said.
    pub silence_ms: u64,
    /// The target's process at that moment.
    pub target_state: Proc,
    /// Since when the target had been in that state, microseconds.
    pub since: Option<u64>,
}

impl Suspicion {
    /// True when the target was not alive (killed, exited, stopped, or never started).
    pub fn is_true(&self) -> bool {
        !self.target_state.alive()
    }
}

/// Every suspicion in `run`, in time order, judged by `timeline`.
pub fn judge(run: &RunDir, timeline: &Timeline) -> Vec<Suspicion> {
    run.node_events
        .iter()
        .filter_map(|r| match (r.node, &r.event) {
            (Some(by), &Event::Suspect { target, silence_ms, .. }) => {
                let (target_state, since) = timeline.state_at(target, r.t);
                Some(Suspicion {
                    t: r.t,
                    by,
                    target,
                    silence_ms,
                    target_state,
                    since,
                })
            }
            _ => None,
        })
        .collect()
}
