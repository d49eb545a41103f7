//! What a mutual-exclusion run is for, besides a console: `--until done` (every request
//! served) and the `--demo regrant` story; and the status line that says who holds the
//! section and who waits.
//!
//! The regrant story (central, `regrant_ms` shorter than `hold_ms`):
//! 1. wait until a node other than the coordinator holds the section, and pause it (SIGSTOP)
//!    inside, having begun its access;
//! 2. keep it paused for a few regrant timeouts: the coordinator takes it for dead and grants
//!    the next, who begins its own access: two holders (with `--fencing`: the older token is
//!    fenced off);
//! 3. resume it: it finishes its hold and ends its access, which the resource refuses as stale
//!    under fencing; then stop cleanly and let the checker judge.
//!
//! The quorum-amnesia story (quorum on 3 nodes, m = 2, every node a participant and one of
//! the coordinators), the course's picture: P holds with the grants of {P, C}, W waits with
//! its own grant and needs one more; the two quorums meet in C.
//! 1. wait until the GRANTs in the traces show such a P, W and C: C granted P, neither P nor
//!    W is C, and W has no grant of C; kill C, the coordinator in the intersection;
//! 2. start it again at once: it forgot its grant to P (with `--durable` it reads it back
//!    from its state file);
//! 3. C's vote is free again: W (or C's own fresh request, which may outrank W's) makes a
//!    quorum with it while P still holds; stop after a while and let the checker judge.

use super::goal::{patience, Ending};
use super::model::State;
use super::nodes::Fleet;
use super::plan::{MutexDemo, Plan};
use super::RESOURCE_NODE;
use crate::algo::mutex::ballot::VoterOptions;
use crate::algo::mutex::options::MutexOptions;
use crate::algo::mutex::quorum::{smallest_majority, QuorumOptions};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// `holder: node 3 (req 7); waiting: 1, 4` for the status table.
pub(crate) fn status_line(fleet: &Fleet) -> String {
    let holders: Vec<String> = fleet
        .nodes
        .iter()
        // A killed node holds nothing, though its trace ends inside; a paused one still holds.
        .filter(|n| n.plan.id != RESOURCE_NODE && matches!(n.state, State::Running | State::Paused))
        .filter_map(|n| n.cs.holding.map(|(req, _)| format!("node {} (req {req})", n.plan.id)))
        .collect();
    let mut waiting: Vec<(u64, u64)> = fleet
        .nodes
        .iter()
        .filter(|n| n.plan.id != RESOURCE_NODE && n.live())
        .filter_map(|n| n.cs.waiting.map(|_| (n.waiting_since(), n.plan.id)))
        .collect();
    waiting.sort();
    let mut out = String::new();
    let _ = write!(
        out,
        "holder: {}; waiting (longest first): {}; entries so far: {}",
        if holders.is_empty() {
            "none".into()
        } else {
            holders.join(", ")
        },
        if waiting.is_empty() {
            "none".into()
        } else {
            waiting.iter().map(|w| w.1.to_string()).collect::<Vec<_>>().join(", ")
        },
        fleet.nodes.iter().map(|n| n.cs.exits).sum::<u64>()
    );
    out
}

/// A mutual-exclusion goal.
pub(crate) enum MutexGoal {
    /// `--until done`: every node that runs the workload completed its requests.
    Done {
        /// Requests per node.
        k: u64,
        /// Give up then.
        deadline: Instant,
        /// How long that is.
        limit: Duration,
    },
    /// The regrant story.
    Regrant(Regrant),
    /// The quorum-amnesia story.
    Amnesia(Amnesia),
}

/// Where the quorum-amnesia story is.
pub(crate) enum Amnesia {
    /// Waiting for a holder.
    Hold {
        /// Give up then.
        deadline: Instant,
        /// Whether coordinators persist their grants (`--durable`).
        durable: bool,
        /// Grants a quorum needs.
        m: usize,
    },
    /// Killed the coordinators in the intersection; restart them at the next tick.
    Killed {
        /// Those coordinators.
        coordinators: Vec<u64>,
        /// The holder it granted.
        holder: u64,
        /// Whether coordinators persist their grants.
        durable: bool,
    },
    /// Restarted; stop then.
    Restarted {
        /// Stop then.
        until: Instant,
    },
}

/// Where the regrant story is.
pub(crate) enum Regrant {
    /// Waiting for a holder to pause.
    Hold {
        /// Give up then.
        deadline: Instant,
    },
    /// Paused `node`.
    Paused {
        /// The paused holder.
        node: u64,
        /// Resume then.
        until: Instant,
    },
    /// Resumed; stop then.
    Resumed {
        /// Stop then.
        until: Instant,
    },
}

impl MutexGoal {
    /// The goal of `plan`, if it has a mutual-exclusion one.
    pub fn new(plan: &Plan, timeout: Duration, t0: Instant) -> Option<Self> {
        let n = plan.nodes.len();
        // The options as the nodes read them: the declarations' own defaults and rules.
        let members: Vec<u64> = plan.nodes.iter().map(|x| x.id).collect();
        let work = MutexOptions::read_map(&plan.set, &members);
        if plan.until_done {
            let k = work.requests;
            let per = Duration::from_millis(work.hold_ms + work.think_ms + 5);
            let limit = plan
                .duration
                .unwrap_or_else(|| patience(n, timeout) + per * (k * n as u64) as u32);
            return Some(MutexGoal::Done {
                k,
                deadline: t0 + limit,
                limit,
            });
        }
        let deadline = t0 + patience(n, timeout);
        plan.mutex_demo.map(|d| match d {
            MutexDemo::Regrant => MutexGoal::Regrant(Regrant::Hold { deadline }),
            MutexDemo::QuorumAmnesia => MutexGoal::Amnesia(Amnesia::Hold {
                deadline,
                durable: VoterOptions::read_map(&plan.set, &members).durable,
                m: {
                    let n = members.iter().filter(|&&x| x != RESOURCE_NODE).count();
                    QuorumOptions::read_map(&plan.set, &members)
                        .size(n)
                        .unwrap_or(smallest_majority(n))
                },
            }),
        })
    }

    /// Looks at the fleet after a tick (the story also acts on it); `Some` ends the run.
    pub fn step(&mut self, fleet: &mut Fleet, now: Instant) -> Option<Ending> {
        match self {
            MutexGoal::Done { k, deadline, limit } => {
                let workers: Vec<_> = fleet
                    .nodes
                    .iter()
                    .filter(|n| n.plan.id != RESOURCE_NODE && n.plan.initiator)
                    .collect();
                if workers.iter().all(|n| n.cs.exits >= *k) {
                    let total: u64 = workers.iter().map(|n| n.cs.exits).sum();
                    return Some(Ending {
                        check: true,
                        ..Ending::ok(format!(
                            "done: all {} nodes completed their {k} requests ({total} entries)",
                            workers.len()
                        ))
                    });
                }
                (now >= *deadline).then(|| {
                    Ending::failed(format!(
                        "not done: some requests were not served within {:.1} s ({})",
                        limit.as_secs_f64(),
                        status_line(fleet)
                    ))
                })
            }
            MutexGoal::Regrant(r) => r.step(fleet, now),
            MutexGoal::Amnesia(a) => a.step(fleet, now),
        }
    }
}

/// The course's picture in the fleet, from the GRANTs in the traces (less the votes given
/// back): a holder, a waiter, and the coordinators in the intersection of their quorums -- the
/// fewest of the holder's grantors (never the holder) that the waiter's own grants need to
/// make a quorum. One in the course's picture (the waiter holds m-1 grants); when the holder
/// has every grant, the waiter's own coordinator is in the intersection too.
struct Intersection {
    holder: u64,
    holder_grants: Vec<u64>,
    waiter: u64,
    waiter_grants: Vec<u64>,
    coordinators: Vec<u64>,
}

fn intersection(fleet: &Fleet, m: usize) -> Option<Intersection> {
    let grants = |g: &[u64]| {
        let mut g = g.to_vec();
        g.sort_unstable();
        g.dedup();
        g
    };
    let parts = || fleet.nodes.iter().filter(|n| n.plan.id != RESOURCE_NODE && n.live());
    let mut best: Option<Intersection> = None;
    for h in parts().filter(|n| n.cs.holding.is_some()) {
        let hg = grants(&h.cs.grants);
        for w in parts().filter(|n| n.cs.waiting.is_some() && n.plan.id != h.plan.id) {
            let wg = grants(&w.cs.grants);
            let (hid, wid) = (h.plan.id, w.plan.id);
            // Other coordinators first: restarting the waiter's own also restarts the waiter.
            let mut lent: Vec<u64> = hg.iter().copied().filter(|c| *c != hid && !wg.contains(c)).collect();
            lent.sort_by_key(|&c| (c == wid, c));
            let need = m.saturating_sub(wg.len());
            if need == 0 || need > lent.len() || best.as_ref().is_some_and(|b| b.coordinators.len() <= need) {
                continue;
            }
            best = Some(Intersection {
                holder: hid,
                holder_grants: hg.clone(),
                waiter: wid,
                waiter_grants: wg,
                coordinators: lent[..need].to_vec(),
            });
        }
    }
    best
}

impl Amnesia {
    fn step(&mut self, fleet: &mut Fleet, now: Instant) -> Option<Ending> {
        match std::mem::replace(self, Amnesia::Restarted { until: now }) {
            Amnesia::Hold { deadline, durable, m } => {
                let Some(x) = intersection(fleet, m) else {
                    *self = Amnesia::Hold { deadline, durable, m };
                    return (now >= deadline)
                        .then(|| Ending::failed("demo failed: no node held the section while another waited"));
                };
                for &c in &x.coordinators {
                    if let Err(e) = fleet.kill(c) {
                        return Some(Ending::failed(format!("demo failed: {e}")));
                    }
                }
                let cs = &x.coordinators;
                let why = match cs.as_slice() {
                    [c] if *c == x.waiter => format!(
                        "node {c}'s own coordinator granted node {}; restarting it restarts node {c} too, \
                         which asks again",
                        x.holder
                    ),
                    [c] => format!(
                        "coordinator {c} granted node {} and is the one node {} lacks",
                        x.holder, x.waiter
                    ),
                    _ => format!(
                        "node {} holds every grant, so a quorum of node {} must take {} of them back: {cs:?}",
                        x.holder,
                        x.waiter,
                        cs.len()
                    ),
                };
                say!(
                    "1. node {} holds the section with the grants of {:?}; node {} waits with {:?} \
                     (a quorum is {m}). Their quorums meet in {cs:?}: {why}. Killed {cs:?} (SIGKILL)",
                    x.holder,
                    x.holder_grants,
                    x.waiter,
                    x.waiter_grants,
                );
                *self = Amnesia::Killed {
                    coordinators: x.coordinators,
                    holder: x.holder,
                    durable,
                };
                None
            }
            Amnesia::Killed {
                coordinators,
                holder,
                durable,
            } => {
                for c in coordinators {
                    match fleet.restart(c) {
                        Ok(line) if durable => say!(
                            "2. {line}: it read its grant to node {holder} back from its state \
                             file (--durable), so its vote stays with node {holder}"
                        ),
                        Ok(line) => say!(
                            "2. {line}: it forgot its grant to node {holder}, so its vote is free for \
                             another quorum while node {holder} still holds"
                        ),
                        Err(e) => return Some(Ending::failed(format!("demo failed: {e}"))),
                    }
                }
                *self = Amnesia::Restarted {
                    until: now + Duration::from_millis(2000),
                };
                None
            }
            Amnesia::Restarted { until } if now >= until => Some(Ending {
                check: true,
                ..Ending::ok(
                    "3. demo complete: the coordinators in the intersection restarted while their grants were in use",
                )
            }),
            r @ Amnesia::Restarted { .. } => {
                *self = r;
                None
            }
        }
    }
}

impl Regrant {
    fn step(&mut self, fleet: &mut Fleet, now: Instant) -> Option<Ending> {
        let coordinator = fleet.nodes.iter().map(|n| n.plan.id).max().unwrap_or(0);
        match *self {
            Regrant::Hold { deadline } => {
                let holder = fleet
                    .nodes
                    .iter()
                    .find(|n| n.plan.id != coordinator && n.plan.id != RESOURCE_NODE && n.cs.holding.is_some())
                    .map(|n| n.plan.id);
                match holder {
                    Some(id) => {
                        match fleet.pause(id) {
                            Ok(line) => say!("1. {line}, inside its critical section"),
                            Err(e) => return Some(Ending::failed(format!("demo failed: {e}"))),
                        }
                        *self = Regrant::Paused {
                            node: id,
                            until: now + Duration::from_millis(1500),
                        };
                        None
                    }
                    None if now >= deadline => {
                        Some(Ending::failed("demo failed: no node entered its critical section"))
                    }
                    None => None,
                }
            }
            Regrant::Paused { node, until } if now >= until => {
                match fleet.resume(node) {
                    Ok(line) => say!("2. {line}: it still believes it holds the section"),
                    Err(e) => return Some(Ending::failed(format!("demo failed: {e}"))),
                }
                *self = Regrant::Resumed {
                    until: now + Duration::from_millis(1000),
                };
                None
            }
            Regrant::Resumed { until } if now >= until => Some(Ending {
                check: true,
                ..Ending::ok("3. demo complete: the coordinator's timeout took a slow holder for dead")
            }),
            _ => None,
        }
    }
}
