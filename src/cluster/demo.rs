//! `--demo false-suspicion`: slow is not dead, told by real processes with no human.
//!
//! 1. wait until every node agrees on a leader L in term T;
//! 2. pause L (SIGSTOP) for several timeouts, and wait until the other nodes agree on a new
//!    leader in a term above T -- they suspected a node that was only slow;
//! 3. resume L (SIGCONT): it wakes believing it still leads T, hears of the newer term and steps
//!    down; wait until every node, L included, agrees again;
//! 4. stop cleanly (the launcher then runs the checker for the summary).
//!
//! Every wait has a deadline; a step that does not happen ends the run with status 1, naming it.

use super::goal::{agreement_line, patience, Ending};
use super::model::State;
use super::nodes::{Agreement, Fleet};
use crate::trace::wall_us;
use std::time::{Duration, Instant};

/// Where the story is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    /// Waiting for the first leader.
    Elect,
    /// The old leader is paused (since `at`, wall `wall`); waiting for a new leader.
    Reelect { old: Agreement, at: Instant, wall: u64 },
    /// The old leader is resumed (wall `wall`); waiting for everyone to agree again.
    Rejoin { old: Agreement, new: Agreement, wall: u64 },
}

/// The false-suspicion story.
pub struct Demo {
    step: Step,
    deadline: Instant,
    hold: Duration,
    patience: Duration,
    n: usize,
}

impl Demo {
    /// The story for `n` nodes with failure-detector `timeout`, starting at `t0`.
    pub fn new(n: usize, timeout: Duration, t0: Instant) -> Self {
        let patience = patience(n, timeout);
        Demo {
            step: Step::Elect,
            deadline: t0 + patience,
            // Several timeouts: long enough that every node's detector fires and an election
            // completes without the paused node.
            hold: (5 * timeout).max(Duration::from_millis(500)),
            patience,
            n,
        }
    }

    /// The step the story is at, in words (for a failure).
    pub fn where_now(&self) -> &'static str {
        match self.step {
            Step::Elect => "at step 1 (the first election)",
            Step::Reelect { .. } => "at step 2 (a new leader while the old one is paused)",
            Step::Rejoin { .. } => "at step 3 (the old leader resumed and stepping down)",
        }
    }

    /// Advances the story after a tick; `Some` ends the run.
    pub fn step(&mut self, fleet: &mut Fleet, now: Instant) -> Option<Ending> {
        if let Some(n) = fleet.nodes.iter().find(|n| matches!(n.state, State::Exited(_))) {
            return Some(Ending::failed(format!(
                "demo failed {}: node {} ended on its own; see {}",
                self.where_now(),
                n.plan.id,
                fleet.log_path(n.plan.id).display()
            )));
        }
        let step = self.step.clone();
        let next = match step {
            Step::Elect => self.elect(fleet, now),
            Step::Reelect { old, at, wall } => self.reelect(fleet, now, old, at, wall),
            Step::Rejoin { old, new, wall } => return self.rejoin(fleet, now, old, new, wall),
        };
        match next {
            Ok(Some(step)) => {
                self.step = step;
                None
            }
            Ok(None) if now >= self.deadline => Some(Ending::failed(format!(
                "demo failed {}: it did not happen within {:.1} s",
                self.where_now(),
                self.patience.as_secs_f64()
            ))),
            Ok(None) => None,
            Err(e) => Some(Ending::failed(format!("demo failed {}: {e}", self.where_now()))),
        }
    }

    fn elect(&mut self, fleet: &mut Fleet, now: Instant) -> Result<Option<Step>, String> {
        let Some(old) = fleet.agreement() else {
            return Ok(None);
        };
        if old.nodes.len() != self.n {
            return Ok(None);
        }
        say!("1. {}", agreement_line(fleet, &old));
        let wall = wall_us();
        fleet.pause(old.leader)?;
        say!(
            "2. paused node {} (SIGSTOP) at {} for {} ms: slow, not dead",
            old.leader,
            fleet.rel(wall),
            self.hold.as_millis()
        );
        self.deadline = now + self.hold + self.patience;
        Ok(Some(Step::Reelect { old, at: now, wall }))
    }

    fn reelect(
        &mut self,
        fleet: &mut Fleet,
        now: Instant,
        old: Agreement,
        at: Instant,
        wall: u64,
    ) -> Result<Option<Step>, String> {
        if now < at + self.hold {
            return Ok(None);
        }
        let Some(new) = fleet.agreement().filter(|a| a.term > old.term) else {
            return Ok(None);
        };
        let suspicions = fleet.suspicions_of(old.leader, wall);
        for s in suspicions.iter().take(3) {
            say!(
                "   node {} suspected node {} at {} after {} ms of silence; node {} was paused, not dead: \
                 a false suspicion",
                s.by,
                s.target,
                fleet.rel(s.t),
                s.silence_ms,
                s.target
            );
        }
        let mut by: Vec<u64> = suspicions.iter().map(|s| s.by).collect();
        by.sort_unstable();
        by.dedup();
        if !by.is_empty() {
            say!(
                "   {} of the {} other nodes suspected node {} in all",
                by.len(),
                self.n - 1,
                old.leader
            );
        }
        say!("   {}", agreement_line(fleet, &new).replace("all ", "the other "));
        let wall = wall_us();
        fleet.resume(old.leader)?;
        say!(
            "3. resumed node {} (SIGCONT) at {}; it still believes it leads term {}",
            old.leader,
            fleet.rel(wall),
            old.term
        );
        self.deadline = now + self.patience;
        Ok(Some(Step::Rejoin { old, new, wall }))
    }

    fn rejoin(&mut self, fleet: &mut Fleet, now: Instant, old: Agreement, new: Agreement, wall: u64) -> Option<Ending> {
        let i = fleet.find(old.leader).ok()?;
        let stepped = fleet.nodes[i].step_downs.iter().find(|s| s.t >= wall).cloned();
        let all = fleet
            .agreement()
            .filter(|a| a.term > old.term && a.nodes.len() == self.n);
        match (stepped, all) {
            (Some(s), Some(all)) => {
                say!(
                    "   node {} stepped down at {}: {}",
                    old.leader,
                    fleet.rel(s.t),
                    s.reason
                );
                say!(
                    "   for {} ms two nodes each believed they led (node {} in term {}, node {} in term {})",
                    s.t.saturating_sub(new.leader_since_us) / 1000,
                    old.leader,
                    old.term,
                    new.leader,
                    new.term
                );
                say!("4. {}", agreement_line(fleet, &all));
                Some(Ending {
                    code: 0,
                    message: "demo complete: slow was taken for dead, and the ring recovered".into(),
                    check: true,
                })
            }
            _ if now >= self.deadline => Some(Ending::failed(format!(
                "demo failed {}: node {} did not step down and rejoin within {:.1} s",
                self.where_now(),
                old.leader,
                self.patience.as_secs_f64()
            ))),
            _ => None,
        }
    }
}
