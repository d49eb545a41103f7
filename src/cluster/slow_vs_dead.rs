//! `--demo slow-vs-dead` (`scripts/ring.sh 8 --demo slow-vs-dead --set detector=phi`, or on a
//! mesh): the course's point that no detector can tell slow from dead, shown on real processes
//! with the detector the run chose (`--set detector=fixed|phi|swim`, the default without it).
//!
//! 1. wait until every node agrees on a leader L (with `--algo central --set detector=...`: until
//!    every node runs; L is then the coordinator, the highest id, and the resource is no
//!    part of the story);
//! 2. make one link lossy (the run's network backend: nftables when root, else the nodes'
//!    user-space filter), between two nodes other than L;
//! 3. pause one node briefly (SIGSTOP, [`PAUSE`]): slow, not dead;
//! 4. starve a third of CPU: a duty cycle of SIGSTOP/SIGCONT ([`STARVE`]);
//! 5. kill a fourth (SIGKILL): dead;
//! 6. after [`AFTER_KILL`], heal the network and stop; the summary names, per node, what
//!    happened to it (from faults.jsonl), what the detector concluded (suspected by whom, and
//!    with SWIM declared dead by whom), how long it took, and whether it was right
//!    ([`crate::check::detection`]).
//!
//! The leader is left alone so that the story is about the detector, not about an election.
//! Every wait has a deadline; a step that does not happen ends the run with status 1.

use super::chaos_net::apply;
use super::goal::{agreement_line, node_ended, patience, Ending};
use super::net::NetControl;
use super::nodes::Fleet;
use super::RESOURCE_NODE;
use crate::check::detection::{stories, Verdict};
use crate::check::Analysis;
use crate::net::NetAction;
use crate::trace::{wall_us, NodeId, RunDir};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The story's `--demo` name.
pub(crate) const SLOW_VS_DEAD: &str = "slow-vs-dead";
/// Fewest nodes: a leader, and five others for the lossy link, the pause, the starving, the kill.
pub(crate) const MIN_NODES: usize = 6;
/// How long the paused node is stopped: longer than the default timeout, shorter than SWIM's
/// shortest suspicion timeout.
pub(crate) const PAUSE: Duration = Duration::from_millis(600);
/// The starved node's duty cycle: stopped 60 ms of every 100 ms, for 3 s.
pub(crate) const STARVE: (Duration, Duration, u32) = (Duration::from_millis(60), Duration::from_millis(100), 30);
/// How long the run goes on after the kill, for the detectors to conclude.
pub(crate) const AFTER_KILL: Duration = Duration::from_millis(3000);
/// The lossy link's loss, percent.
pub(crate) const LOSS_PCT: u32 = 20;

/// One thing the story does to the processes or the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Act {
    Loss(NodeId, NodeId),
    Pause(NodeId),
    Resume(NodeId),
    Kill(NodeId),
    End,
}

/// Who gets what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Roles {
    paused: NodeId,
    starved: NodeId,
    killed: NodeId,
    lossy: (NodeId, NodeId),
}

impl Roles {
    /// The roles among `ids` (in launch order) other than `leader`, spread round the ring.
    fn pick(ids: &[NodeId], leader: NodeId) -> Roles {
        let others: Vec<NodeId> = ids.iter().copied().filter(|&i| i != leader).collect();
        let at: [usize; 5] = if others.len() >= 7 {
            [0, 2, 4, 5, 6]
        } else {
            [0, 1, 2, 3, 4]
        };
        Roles {
            paused: others[at[0]],
            starved: others[at[1]],
            killed: others[at[2]],
            lossy: (others[at[3]], others[at[4]]),
        }
    }
}

/// The story, stepped by the launcher's goal.
pub(crate) struct SlowVsDead {
    detector: String,
    n: usize,
    deadline: Instant,
    patience: Duration,
    /// What is left to do, and when, in time order (empty until the first agreement).
    plan: Vec<(Instant, Act)>,
    started: bool,
    roles: Option<Roles>,
    starved_said: bool,
}

impl SlowVsDead {
    /// The story on `n` nodes with failure-detector `timeout`, from `t0`; `set` is the run's
    /// options (`detector`).
    pub fn new(n: usize, timeout: Duration, t0: Instant, set: &BTreeMap<String, String>) -> Self {
        let patience = patience(n, timeout);
        SlowVsDead {
            detector: set.get("detector").cloned().unwrap_or_else(|| "fixed".into()),
            n,
            deadline: t0 + patience,
            patience,
            plan: Vec::new(),
            started: false,
            roles: None,
            starved_said: false,
        }
    }

    /// The step the story is at, in words (for a failure).
    pub(crate) fn where_now(&self) -> &'static str {
        match self.started {
            false => "at step 1 (the first election)",
            true => "while injecting the faults",
        }
    }

    /// Advances the story after a tick; `Some` ends the run.
    pub fn step(&mut self, fleet: &mut Fleet, net: &mut NetControl, now: Instant) -> Option<Ending> {
        let killed = self.roles.map(|r| r.killed);
        if let Some(end) = node_ended(fleet, killed, self.where_now()) {
            return Some(end);
        }
        if !self.started {
            let late = || {
                (now >= self.deadline).then(|| {
                    Ending::failed(format!(
                        "demo failed {}: no agreement within {:.1} s",
                        self.where_now(),
                        self.patience.as_secs_f64()
                    ))
                })
            };
            let ids: Vec<NodeId> = participants(fleet);
            let leader = if is_mutex(fleet) {
                // Central: nothing to agree on; its coordinator is the highest id.
                let Some(&c) = ids.iter().max().filter(|_| fleet.all_started) else {
                    return late();
                };
                say!(
                    "1. all {} nodes run; node {c} coordinates the resource under central (detector={})",
                    ids.len(),
                    self.detector
                );
                c
            } else {
                let Some(a) = fleet.agreement().filter(|a| a.nodes.len() == self.n) else {
                    return late();
                };
                say!("1. {} (detector={})", agreement_line(fleet, &a, true), self.detector);
                a.leader
            };
            let r = Roles::pick(&ids, leader);
            self.plan = schedule(now, r);
            self.roles = Some(r);
            self.started = true;
        }
        while let Some(&(at, act)) = self.plan.first() {
            if now < at {
                break;
            }
            self.plan.remove(0);
            match self.act(fleet, net, act) {
                Ok(Some(end)) => return Some(end),
                Ok(None) => {}
                Err(e) => return Some(Ending::failed(format!("demo failed {}: {e}", self.where_now()))),
            }
        }
        None
    }

    fn act(&mut self, fleet: &mut Fleet, net: &mut NetControl, act: Act) -> Result<Option<Ending>, String> {
        let wall = wall_us();
        match act {
            Act::Loss(a, b) => {
                let done = apply(
                    net,
                    fleet,
                    &NetAction::Loss {
                        pct: LOSS_PCT,
                        link: Some((a, b)),
                    },
                )?;
                say!(
                    "2. the link {a}-{b} loses {LOSS_PCT}% of its datagrams from {} ({done}): both ends run",
                    fleet.rel(wall)
                );
            }
            Act::Pause(id) if self.is_starved(id) => {
                fleet.pause(id)?;
                if !self.starved_said {
                    self.starved_said = true;
                    let (off, every, times) = STARVE;
                    say!(
                        "4. starving node {id} of CPU from {}: stopped {} ms of every {} ms, {times} times \
                         (SIGSTOP/SIGCONT): slow, not dead",
                        fleet.rel(wall),
                        off.as_millis(),
                        every.as_millis()
                    );
                }
            }
            Act::Pause(id) => {
                fleet.pause(id)?;
                say!(
                    "3. paused node {id} (SIGSTOP) at {} for {} ms: slow, not dead",
                    fleet.rel(wall),
                    PAUSE.as_millis()
                );
            }
            Act::Resume(id) => {
                fleet.resume(id)?;
            }
            Act::Kill(id) => {
                fleet.kill(id)?;
                say!("5. killed node {id} (SIGKILL) at {}: dead", fleet.rel(wall));
            }
            Act::End => {
                let done = apply(net, fleet, &NetAction::Heal { link: None })?;
                say!("6. healed the network at {} ({done}); stopping", fleet.rel(wall));
                return Ok(Some(Ending {
                    code: crate::exit::OK,
                    message: format!(
                        "demo complete: slow and dead side by side under detector={}",
                        self.detector
                    ),
                    check: true,
                }));
            }
        }
        Ok(None)
    }

    /// Whether `id` is the node the duty cycle starves.
    fn is_starved(&self, id: NodeId) -> bool {
        self.roles.is_some_and(|r| r.starved == id)
    }

    /// The summary: per node, what happened and what the detector concluded, from the traces.
    pub(crate) fn conclude(&self, analysis: &Analysis) -> Vec<String> {
        let run = match RunDir::load(&analysis.dir) {
            Ok(r) => r,
            Err(e) => return vec![format!("7. the traces could not be read: {e}")],
        };
        let end = run.end_us().unwrap_or(0);
        // The resource of a mutex run is no member: nobody watches it.
        let nodes: Vec<NodeId> = run
            .info
            .nodes
            .iter()
            .map(|n| n.id)
            .filter(|&id| id != RESOURCE_NODE)
            .collect();
        let swim = self.detector == "swim";
        let all = stories(&run, &nodes, end, swim);
        let mut out = vec![format!(
            "7. what detector={} concluded, per node, against what happened (faults.jsonl):",
            self.detector
        )];
        out.extend(all.iter().map(|s| format!("   {}", s.line(analysis.start_us, swim))));
        let count = |v: Verdict| all.iter().filter(|s| s.verdict == v).count();
        out.push(format!(
            "   in all: {} dead detected, {} missed; {} alive never suspected, {} mistaken then corrected, {} wrong at \
             the end",
            count(Verdict::Detected),
            count(Verdict::Missed),
            count(Verdict::Right),
            count(Verdict::Corrected),
            count(Verdict::Wrong)
        ));
        out
    }
}

/// Whether the run is of the mutex family (central): its resource runs as node 0.
fn is_mutex(fleet: &Fleet) -> bool {
    fleet.nodes.iter().any(|n| n.plan.id == RESOURCE_NODE)
}

/// The members the story may pick from, in launch order (not the resource).
fn participants(fleet: &Fleet) -> Vec<NodeId> {
    fleet
        .nodes
        .iter()
        .map(|n| n.plan.id)
        .filter(|&id| id != RESOURCE_NODE)
        .collect()
}

/// The story's acts from `now`, given the roles.
fn schedule(now: Instant, r: Roles) -> Vec<(Instant, Act)> {
    let at = |ms: u64| now + Duration::from_millis(ms);
    let mut plan = vec![
        (at(500), Act::Loss(r.lossy.0, r.lossy.1)),
        (at(1000), Act::Pause(r.paused)),
        (at(1000) + PAUSE, Act::Resume(r.paused)),
    ];
    let (off, every, times) = STARVE;
    for i in 0..times {
        let t = at(3000) + every * i;
        plan.push((t, Act::Pause(r.starved)));
        plan.push((t + off, Act::Resume(r.starved)));
    }
    let kill = at(3000) + every * times + Duration::from_millis(1000);
    plan.push((kill, Act::Kill(r.killed)));
    plan.push((kill + AFTER_KILL, Act::End));
    plan.sort_by_key(|p| p.0);
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_distinct_and_spare_the_leader() {
        for n in MIN_NODES..=10 {
            let ids: Vec<NodeId> = (1..=n as u64).collect();
            let r = Roles::pick(&ids, n as u64);
            let mut all = vec![r.paused, r.starved, r.killed, r.lossy.0, r.lossy.1];
            all.sort_unstable();
            all.dedup();
            assert_eq!(all.len(), 5, "n = {n}: {r:?}");
            assert!(!all.contains(&(n as u64)));
        }
        assert_eq!(
            Roles::pick(&(1..=8).collect::<Vec<_>>(), 8),
            Roles {
                paused: 1,
                starved: 3,
                killed: 5,
                lossy: (6, 7)
            }
        );
    }

    #[test]
    fn the_schedule_pauses_resumes_and_ends_after_the_kill() {
        let now = Instant::now();
        let r = Roles::pick(&(1..=8).collect::<Vec<_>>(), 8);
        let p = schedule(now, r);
        let pauses = p.iter().filter(|x| matches!(x.1, Act::Pause(_))).count();
        let resumes = p.iter().filter(|x| matches!(x.1, Act::Resume(_))).count();
        assert_eq!(pauses, resumes);
        assert_eq!(pauses, 1 + STARVE.2 as usize);
        assert_eq!(p.last().map(|x| x.1), Some(Act::End));
        let kill = p.iter().find(|x| x.1 == Act::Kill(5)).expect("a kill").0;
        assert_eq!(p.last().unwrap().0 - kill, AFTER_KILL);
    }
}
