//! The chaos soak (`coordlab chaos`): a launcher goal that injects a random fault every
//! 0.3-1.5 s (pause a running node for 0.2-2 s then resume it, or kill it and restart it after
//! 0.5-2 s; the leader about one time in three), stops injecting a settling time before
//! `--duration` ends, then judges the run by the checker against the soak's criteria: for
//! every family, suspicions of a running node heal within twice the timeout; for elections, no
//! storm, no two leaders in a term that the faults do not explain, one agreed leader at the
//! end; the other families by their own goal and safety ([`super::chaos_judge`]).
//! Network faults (cuts, partitions, loss, delay) are drawn beside them unless `--faults
//! process` ([`chaos_net`]).
//!
//! [`chaos_net`]: super::chaos_net

use super::chaos_net::{self, NetChaos};
use super::goal::Ending;
use super::model::State;
use super::net::NetControl;
use super::nodes::Fleet;
use super::schedule::FaultKinds;
use crate::check::Analysis;
use crate::rng::Rng;
use std::time::{Duration, Instant};

/// What to do to a node later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Undo {
    Resume,
    Restart,
}

/// The soak in progress.
pub struct Chaos {
    rng: Rng,
    started: Instant,
    faults_until: Instant,
    deadline: Instant,
    next_fault: Instant,
    pending: Vec<(Instant, u64, Undo)>,
    injected: usize,
    kinds: FaultKinds,
    net: NetChaos,
    /// How long before the end faults stop: the time the run is given to recover.
    pub settle: Duration,
}

impl Chaos {
    /// A soak of `duration` from `t0`, seeded; faults stop `settle` before the end.
    pub fn new(seed: u64, t0: Instant, duration: Duration, timeout: Duration) -> Self {
        // Long enough for the last restarted node (2 s) to rejoin and an election to end.
        let settle = (Duration::from_secs(2) + 10 * timeout).min(duration / 2);
        Chaos {
            rng: Rng::new(seed ^ 0xC4A0_5EED),
            started: t0,
            faults_until: t0 + duration - settle,
            deadline: t0 + duration,
            next_fault: t0 + Duration::from_millis(1000),
            pending: Vec::new(),
            injected: 0,
            kinds: FaultKinds::All,
            net: NetChaos::new(),
            settle,
        }
    }

    /// The same soak drawing only `kinds` of faults.
    pub(crate) fn with_kinds(mut self, kinds: FaultKinds) -> Self {
        self.kinds = kinds;
        self
    }

    /// Injects and undoes faults as they fall due; `Some` ends the run (to be judged).
    pub fn step(&mut self, fleet: &mut Fleet, net: &mut NetControl, now: Instant) -> Option<Ending> {
        let mut due = Vec::new();
        self.pending.retain(|&(at, id, undo)| {
            if at <= now {
                due.push((id, undo));
            }
            at > now
        });
        for (id, undo) in due {
            let done = match undo {
                Undo::Resume => fleet.resume(id),
                Undo::Restart => fleet.restart(id),
            };
            say!(
                "chaos: {}",
                done.unwrap_or_else(|e| format!("could not undo a fault: {e}"))
            );
        }
        self.net.due(net, fleet, now, now >= self.faults_until);
        if now >= self.deadline {
            return Some(Ending {
                code: crate::exit::OK,
                message: format!(
                    "chaos: {} faults injected ({} of the network) over {:.1} s; judging the run",
                    self.injected + self.net.injected,
                    self.net.injected,
                    (now - self.started).as_secs_f64()
                ),
                check: true,
            });
        }
        if now < self.faults_until && now >= self.next_fault {
            self.inject(fleet, net, now);
            self.next_fault = now + Duration::from_millis(self.rng.range(300, 1501));
        }
        None
    }

    fn inject(&mut self, fleet: &mut Fleet, net: &mut NetControl, now: Instant) {
        let (process, network) = (chaos_net::process(self.kinds), chaos_net::network(self.kinds));
        if network && !self.net.busy() && (!process || self.rng.chance(0.4)) {
            let leader = fleet.agreement().map(|a| a.leader);
            return self.net.inject(net, fleet, now, &mut self.rng, leader);
        }
        if !process {
            return;
        }
        let busy: Vec<u64> = self.pending.iter().map(|p| p.1).collect();
        let candidates: Vec<u64> = fleet
            .nodes
            .iter()
            .filter(|n| n.state == State::Running && n.started && !busy.contains(&n.plan.id))
            .map(|n| n.plan.id)
            .collect();
        if candidates.is_empty() {
            return;
        }
        let leader = candidates
            .iter()
            .copied()
            .find(|&id| fleet.beliefs.current(id).is_some_and(|b| b.leader == id));
        let target = match leader {
            Some(l) if self.rng.chance(0.3) => l,
            _ => candidates[self.rng.range(0, candidates.len() as u64) as usize],
        };
        let what = if Some(target) == leader { " (the leader)" } else { "" };
        let (result, undo, ms) = if self.rng.chance(0.5) {
            (fleet.pause(target), Undo::Resume, self.rng.range(200, 2001))
        } else {
            (fleet.kill(target), Undo::Restart, self.rng.range(500, 2001))
        };
        match result {
            Ok(line) => {
                self.injected += 1;
                let then = match undo {
                    Undo::Resume => "resume",
                    Undo::Restart => "restart",
                };
                say!("chaos: {line}{what}; {then} in {ms} ms");
                self.pending.push((now + Duration::from_millis(ms), target, undo));
            }
            Err(e) => say!("chaos: could not inject a fault: {e}"),
        }
    }
}

/// One criterion of the soak: whether it held, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Criterion {
    /// Whether it held.
    pub ok: bool,
    /// What was found.
    pub words: String,
}

/// The soak's criteria, judged from the checker's analysis of the whole run by the family's
/// own goal and safety (elections here, the others in [`super::chaos_judge`]); `settle` is
/// how long before the end the faults stopped.
pub fn criteria(a: &Analysis, settle: Duration) -> Vec<Criterion> {
    let mut out = Vec::new();
    let twice = a
        .timeout_us
        .map_or("twice the timeout".to_string(), |t| crate::check::summary::dur(2 * t));
    out.push(match a.stale.iter().max_by_key(|s| s.us()) {
        None => Criterion {
            ok: true,
            words: format!("suspicions of a running node: every one healed within {twice}"),
        },
        Some(w) => Criterion {
            ok: false,
            words: format!(
                "suspicions of a running node: {} lasted longer than {twice} after the target ran \
                 (longest: node {} suspected node {} for {})",
                a.stale.len(),
                w.by,
                w.target,
                crate::check::summary::dur(w.us())
            ),
        },
    });
    let family = crate::check::section::family(&a.algo);
    if family != crate::catalog::ELECTION.name {
        out.extend(super::chaos_judge::criteria(family, a, settle.as_micros() as u64));
        return out;
    }
    let Some(e) = &a.election else {
        out.push(Criterion {
            ok: false,
            words: "no election in this run: nothing elected".into(),
        });
        return out;
    };
    out.push(if e.storms.over.is_empty() {
        Criterion {
            ok: true,
            words: format!("storms: none (no term over {} protocol messages)", e.storms.bound),
        }
    } else {
        let terms: Vec<String> = e.storms.over.iter().map(u64::to_string).collect();
        Criterion {
            ok: false,
            words: format!(
                "storms: terms {} over {} protocol messages",
                terms.join(", "),
                e.storms.bound
            ),
        }
    });
    let two: Vec<_> = e
        .violations
        .iter()
        .filter_map(|v| v.term().map(|t| (t, e.explanation(t))))
        .collect();
    // Not ours: what the faults explain, and what the algorithm does by design.
    let not_ours = |x: Option<&crate::check::explain::Explanation>| x.is_some_and(|x| x.inherent || x.by_design);
    let explained = two.iter().filter(|(_, x)| not_ours(*x)).count();
    let ours: Vec<String> = two
        .iter()
        .filter(|(_, x)| !not_ours(*x))
        .map(|(t, _)| t.to_string())
        .collect();
    out.push(Criterion {
        ok: ours.is_empty(),
        words: if two.is_empty() {
            "two leaders in a term: never".into()
        } else if ours.is_empty() {
            format!("two leaders in a term: {explained} term(s), each explained by the faults or the algorithm")
        } else {
            format!(
                "two leaders in a term: {explained} explained by the faults or the algorithm, NOT explained in terms {}",
                ours.join(", ")
            )
        },
    });
    let all: Vec<_> = a.timeline.nodes().collect();
    out.push(match e.agreed() {
        Some(b) if e.live_at_end.len() == all.len() && e.live_at_end.contains(&b.leader) => Criterion {
            ok: true,
            words: format!(
                "one agreed leader at the end: all {} nodes believe node {} leads term {}",
                all.len(),
                b.leader,
                b.term
            ),
        },
        _ => Criterion {
            ok: false,
            words: format!(
                "one agreed leader at the end: NO ({} of {} nodes running; see the agreement line above)",
                e.live_at_end.len(),
                all.len()
            ),
        },
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::election::{chang_roberts::ChangRoberts, Leadership};
    use crate::check::{analyse, sim_run};
    use crate::sim::{ring, NetConfig, Sim};

    type Cr = Leadership<ChangRoberts>;

    fn judged(s: &Sim<Cr>) -> Vec<Criterion> {
        criteria(&analyse(&sim_run(s, "chang-roberts", "ring")), Duration::from_secs(5))
    }

    fn agreed_on(s: &Sim<Cr>, leader: u64) -> bool {
        s.live().iter().all(|&i| s.node(i).belief().1 == Some(leader))
    }

    #[test]
    fn criteria_pass_a_clean_election_and_fail_a_leader_left_paused() {
        let ids = [1, 2, 3, 4, 5];
        let mut s: Sim<Cr> = Sim::new(NetConfig::default(), ring(&ids, &ids), Cr::new);
        assert!(s.run_until(Duration::from_secs(5), |s| agreed_on(s, 5)));
        let c = judged(&s);
        assert!(c.iter().all(|c| c.ok), "{c:?}");
        // The leader paused to the end: the others elect node 4, but not every node runs at the end.
        s.pause(5);
        let limit = s.now() + Duration::from_secs(10);
        assert!(s.run_until(limit, |s| agreed_on(s, 4)));
        let c = judged(&s);
        let ok: Vec<bool> = c.iter().map(|c| c.ok).collect();
        assert_eq!(ok, vec![true, true, true, false], "{c:?}");
        assert!(c[3].words.contains("4 of 5 nodes running"), "{c:?}");
    }
}
