//! `--demo false-suspicion` and `--demo split-brain`: two stories told by real processes with no
//! human. They share their steps and one runner; a [`Story`] says what each one points out.
//!
//! The steps:
//! 1. wait until every node agrees on a leader L in term T;
//! 2. pause L (SIGSTOP) for several timeouts, and wait until the other nodes agree on a new
//!    leader M in a term T' above T: L still believes it leads T;
//! 3. resume L (SIGCONT), and wait until every node, L included, agrees on one leader in a term
//!    above T, and that agreement has held for a few timeouts (so that an election L's return
//!    causes is seen, not cut short); false-suspicion also waits for L's own step-down;
//! 4. stop cleanly: the launcher runs the checker, and the story closes with its figures (5).
//!
//! false-suspicion points out every suspicion of L, a node that was only slow. split-brain points
//! out the two leaders at once. Both then tell, from the traces, how L learned it was deposed,
//! whether its return caused further elections (bully: the highest id takes over again; with
//! majority and pre-vote: none), and how long two nodes believed they led, in all and within one
//! term (the checker's figures).
//!
//! Every wait has a deadline; a step that does not happen ends the run with status 1, naming it.

use super::goal::{agreement_line, node_ended, patience, Ending};
use super::nodes::{Agreement, Fleet};
use super::plan::DemoKind;
use crate::check::Analysis;
use crate::trace::wall_us;
use std::time::{Duration, Instant};

/// What a story points out along the shared steps.
struct Story {
    /// Said of the leader when it is paused.
    pause_note: &'static str,
    /// Whether each suspicion of the paused leader is shown (else only how many).
    each_suspicion: bool,
    /// Whether step 3 waits for the old leader's own `step_down`.
    needs_step_down: bool,
    /// The last line of a story that went to its end.
    complete: &'static str,
}

impl Story {
    fn of(kind: DemoKind) -> Story {
        match kind {
            DemoKind::FalseSuspicion => Story {
                pause_note: "slow, not dead",
                each_suspicion: true,
                needs_step_down: true,
                complete: "demo complete: slow was taken for dead, and the nodes recovered",
            },
            DemoKind::SplitBrain => Story {
                pause_note: "the leader, frozen mid-term",
                each_suspicion: false,
                needs_step_down: false,
                complete: "demo complete: two nodes believed they led at once, and the nodes came back to one leader",
            },
        }
    }
}

/// Where the story is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    /// Waiting for the first leader.
    Elect,
    /// The old leader is paused (since `at`, wall `wall`); waiting for a new leader.
    Reelect { old: Agreement, at: Instant, wall: u64 },
    /// The old leader is resumed (wall `wall`); waiting for everyone to agree, and for that to
    /// hold (`held`: the agreement seen, leader and term, and since when).
    Rejoin {
        old: Agreement,
        new: Agreement,
        wall: u64,
        held: Option<(u64, u64, Instant)>,
    },
}

/// A scripted story, stepped by the launcher's goal.
pub(crate) struct Demo {
    story: Story,
    step: Step,
    deadline: Instant,
    hold: Duration,
    settle: Duration,
    patience: Duration,
    n: usize,
}

impl Demo {
    /// Story `kind` for `n` nodes with failure-detector `timeout`, starting at `t0`.
    pub fn new(kind: DemoKind, n: usize, timeout: Duration, t0: Instant) -> Self {
        let patience = patience(n, timeout);
        Demo {
            story: Story::of(kind),
            step: Step::Elect,
            deadline: t0 + patience,
            // Several timeouts: long enough that every node's detector fires and an election
            // completes without the paused node.
            hold: (5 * timeout).max(Duration::from_millis(500)),
            // Longer than the wrapper's election timeout (at most 4 timeouts): an election the
            // resumed node starts begins within it.
            settle: (5 * timeout).max(Duration::from_millis(600)),
            patience,
            n,
        }
    }

    /// The step the story is at, in words (for a failure).
    pub(crate) fn where_now(&self) -> &'static str {
        match self.step {
            Step::Elect => "at step 1 (the first election)",
            Step::Reelect { .. } => "at step 2 (a new leader while the old one is paused)",
            Step::Rejoin { .. } => "at step 3 (the old leader resumed, everyone agreeing again)",
        }
    }

    /// Advances the story after a tick; `Some` ends the run.
    pub fn step(&mut self, fleet: &mut Fleet, now: Instant) -> Option<Ending> {
        if let Some(end) = node_ended(fleet, None, self.where_now()) {
            return Some(end);
        }
        let next = match self.step.clone() {
            Step::Elect => self.elect(fleet, now),
            Step::Reelect { old, at, wall } => self.reelect(fleet, now, old, at, wall),
            Step::Rejoin { old, new, wall, held } => return self.rejoin(fleet, now, old, new, wall, held),
        };
        match next {
            Ok(Some(step)) => {
                self.step = step;
                None
            }
            Ok(None) if now >= self.deadline => Some(self.too_late()),
            Ok(None) => None,
            Err(e) => Some(Ending::failed(format!("demo failed {}: {e}", self.where_now()))),
        }
    }

    fn too_late(&self) -> Ending {
        Ending::failed(format!(
            "demo failed {}: it did not happen within {:.1} s",
            self.where_now(),
            self.patience.as_secs_f64()
        ))
    }

    fn elect(&mut self, fleet: &mut Fleet, now: Instant) -> Result<Option<Step>, String> {
        let Some(old) = fleet.agreement().filter(|a| a.nodes.len() == self.n) else {
            return Ok(None);
        };
        say!("1. {}", agreement_line(fleet, &old, true));
        let wall = wall_us();
        fleet.pause(old.leader)?;
        say!(
            "2. paused node {} (SIGSTOP) at {} for {} ms: {}",
            old.leader,
            fleet.rel(wall),
            self.hold.as_millis(),
            self.story.pause_note
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
        let shown = if self.story.each_suspicion { 3 } else { 0 };
        for s in suspicions.iter().take(shown) {
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
        say!("   {}", agreement_line(fleet, &new, true).replace("all ", "the other "));
        say!(
            "   two nodes now each believe they lead: node {} (term {}, paused: it cannot know) and node {} \
             (term {})",
            old.leader,
            old.term,
            new.leader,
            new.term
        );
        let wall = wall_us();
        fleet.resume(old.leader)?;
        say!(
            "3. resumed node {} (SIGCONT) at {}; it still believes it leads term {}",
            old.leader,
            fleet.rel(wall),
            old.term
        );
        self.deadline = now + self.patience;
        Ok(Some(Step::Rejoin {
            old,
            new,
            wall,
            held: None,
        }))
    }

    /// Waits for everyone to agree again and for that to hold; then tells how it came about.
    fn rejoin(
        &mut self,
        fleet: &mut Fleet,
        now: Instant,
        old: Agreement,
        new: Agreement,
        wall: u64,
        held: Option<(u64, u64, Instant)>,
    ) -> Option<Ending> {
        let i = fleet.find(old.leader).ok()?;
        let stepped = fleet.nodes[i].step_downs.iter().find(|s| s.t >= wall).cloned();
        let all = fleet
            .agreement()
            .filter(|a| a.term > old.term && a.nodes.len() == self.n)
            .filter(|_| stepped.is_some() || !self.story.needs_step_down);
        let held = all.as_ref().map(|a| match held {
            Some((l, t, since)) if (l, t) == (a.leader, a.term) => (l, t, since),
            _ => (a.leader, a.term, now),
        });
        let done = held.is_some_and(|(_, _, since)| now >= since + self.settle);
        let (Some(all), true) = (all, done) else {
            // An agreement seen by the deadline may finish holding after it.
            if now >= self.deadline + self.settle * u32::from(held.is_some()) {
                return Some(Ending::failed(format!(
                    "demo failed {}: node {} did not {}rejoin, with every node agreeing for {} ms, within {:.1} s",
                    self.where_now(),
                    old.leader,
                    if self.story.needs_step_down {
                        "step down and "
                    } else {
                        ""
                    },
                    self.settle.as_millis(),
                    self.patience.as_secs_f64()
                )));
            }
            self.step = Step::Rejoin { old, new, wall, held };
            return None;
        };
        match &stepped {
            Some(s) => say!(
                "   node {} stepped down at {}: {}",
                old.leader,
                fleet.rel(s.t),
                s.reason
            ),
            None => say!(
                "   node {} recorded no step-down: it no longer believes it leads term {}",
                old.leader,
                old.term
            ),
        }
        let later = fleet.elections_after(new.term, wall);
        if later.is_empty() {
            say!(
                "   no further election: node {} rejoined as a follower of node {} in term {}",
                old.leader,
                new.leader,
                new.term
            );
        } else {
            let (t, by, term) = later[0];
            say!(
                "   node {}'s return was followed by {} more election{}: node {by} started term {term} at {}",
                old.leader,
                later.len(),
                if later.len() == 1 { "" } else { "s" },
                fleet.rel(t)
            );
            if all.leader == old.leader {
                say!(
                    "   node {} took the lead back from node {}: the paused node, resumed, deposed the live leader",
                    old.leader,
                    new.leader
                );
            }
        }
        say!("4. {}", agreement_line(fleet, &all, all.term != new.term));
        Some(Ending {
            code: 0,
            message: self.story.complete.into(),
            check: true,
        })
    }

    /// The story's closing lines, from the checker's facts of the whole run.
    pub(crate) fn conclude(&self, analysis: &Analysis) -> Vec<String> {
        let Some(e) = &analysis.election else {
            return Vec::new();
        };
        let ms = |us: u64| format!("{:.1} ms", us as f64 / 1000.0);
        let mut out = vec![format!(
            "5. from the traces: two nodes each believed they led for {} in all; within one term: {}",
            ms(e.overlap_us),
            ms(e.same_term_overlap_us)
        )];
        if e.same_term_overlap_us > 0 {
            out.push(
                "   within one term: two nodes each declared themselves leader of the same term (see uniqueness)"
                    .into(),
            );
        } else if e.overlap_us > 0 {
            out.push(
                "   the two leaders were always of different terms: a node that hears of both follows the newer".into(),
            );
        }
        out
    }
}
