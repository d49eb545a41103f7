//! SWIM's false confirmations (declarations of death of a node that was not dead), each
//! attributed from faults.jsonl before the bench deletes its run: of whom, by whom, the
//! target's fault at the time, and whether the goal allows it. The goal allows
//! confirming a node paused for longer than the shortest suspicion timeout (no detector can
//! tell that pause from death); it forbids confirming one paused for less, or one starved,
//! cut off or running.

use crate::check::detection::{Cause, Truth};
use crate::trace::{Event, NodeId, RunDir};
use std::time::Duration;

/// One false confirmation, attributed.
#[derive(Debug, Clone, PartialEq)]
pub struct FalseConfirm {
    /// When, µs from the run's start.
    pub at_us: u64,
    /// Who declared it dead.
    pub by: NodeId,
    /// Whom.
    pub target: NodeId,
    /// How long the confirmer had suspected it, ms (from the Confirm record).
    pub suspected_ms: u64,
    /// The target's fault at the time, in words.
    pub fault: String,
    /// Whether the goal allows it: the target was paused longer than the shortest timeout.
    pub allowed: bool,
}

impl FalseConfirm {
    /// One line for the report.
    pub fn line(&self) -> String {
        format!(
            "+{:.2} s: node {} declared node {} dead after suspecting it {} ms; node {} was {} -> {}",
            self.at_us as f64 / 1e6,
            self.by,
            self.target,
            self.suspected_ms,
            self.target,
            self.fault,
            if self.allowed {
                "allowed (paused longer than the suspicion timeout)"
            } else {
                "BREAKS THE GOAL"
            }
        )
    }

    /// The confirmation as a JSON object.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "at_ms": self.at_us / 1000,
            "by": self.by,
            "target": self.target,
            "suspected_ms": self.suspected_ms,
            "fault": self.fault,
            "allowed": self.allowed,
        })
    }
}

/// The confirmations in `run` of nodes that were not dead, by live confirmers, each judged
/// against `shortest`, the shortest suspicion timeout; times relative to `start_us`.
pub fn false_confirms(run: &RunDir, start_us: u64, shortest: Duration) -> Vec<FalseConfirm> {
    let truth = Truth::of(run);
    let shortest_us = shortest.as_micros() as u64;
    let mut out = Vec::new();
    for r in &run.node_events {
        let (
            Some(by),
            Event::Confirm {
                target, suspected_ms, ..
            },
        ) = (r.node, &r.event)
        else {
            continue;
        };
        let (t, target) = (r.t, *target);
        if truth.dead_at(by, t) || truth.dead_at(target, t) {
            continue;
        }
        let (fault, allowed) = match truth.cause(by, target, t) {
            Cause::Paused => match truth.stop_around(target, t) {
                Some((from, to)) => {
                    let held = to.unwrap_or(t.max(from)).saturating_sub(from);
                    let when = match to {
                        Some(to) if to <= t => format!("resumed {} ms before", (t - to) / 1000),
                        _ => "still stopped".to_string(),
                    };
                    let words = format!(
                        "paused {} ms from +{:.2} s ({when})",
                        held / 1000,
                        from.saturating_sub(start_us) as f64 / 1e6
                    );
                    (words, held > shortest_us)
                }
                None => ("paused".to_string(), false),
            },
            Cause::Starved => ("starved of CPU".to_string(), false),
            Cause::CutOff => ("cut off from its confirmer".to_string(), false),
            Cause::Running => ("running".to_string(), false),
        };
        out.push(FalseConfirm {
            at_us: t.saturating_sub(start_us),
            by,
            target,
            suspected_ms: *suspected_ms,
            fault,
            allowed,
        });
    }
    out
}

#[cfg(test)]
#[path = "detector_confirms_tests.rs"]
mod tests;
