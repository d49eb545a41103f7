//! `coordlab quorum-risk --simulate RUNS`: the course's P_v observed, by running the quorum
//! protocol itself ([`Voting`](crate::algo::mutex::voting)) in the simulator, with the formula's
//! assumptions set up so that the two are comparable:
//!
//! - n coordinators that only vote, and two participants A and B that only ask;
//! - A holds the grants of m coordinators and B those of the other n-m, as under contention
//!   (a partition at the start makes that split; it is healed once A is in);
//! - during A's hold each of A's m coordinators restarts, forgetting its grant, with
//!   probability P, independently, early enough for B's next retry (every 10 ms) to reach it;
//! - a run counts when the shared resource sees A and B hold at once.
//!
//! B then gets a quorum exactly when n-m plus the forgetful reach m, as the formula counts.

use crate::algo::mutex::ballot::{Ballot, Voter};
use crate::algo::mutex::{Mutex, RESOURCE_ID};
use crate::algo::options::{options, Kind};
use crate::algo::{NodeId, Setup};
use crate::rng::Rng;
use crate::sim::{NetConfig, Sim};
use std::time::Duration;

/// The largest n the simulation takes: it is for small n, where P_v is large enough to observe.
pub(crate) const MAX_N: u64 = 16;

/// How long A holds; the restarts fall in its first half.
const HOLD: Duration = Duration::from_millis(400);

/// Coordinators 1..=n, asked by every participant; m grants needed (both from the setup).
#[derive(Debug, Clone)]
pub struct Coordinators;

options! {
    /// What the simulation tells every node of its coordinators (written by [`run`] itself).
    pub(crate) struct RiskKeys {
        coordinators: u64 = 1, Kind::Int { min: 1, max: MAX_N }, "coordinators 1..=n";
        quorum: u64 = 1, Kind::Int { min: 1, max: MAX_N }, "grants needed";
    }
}

impl Ballot for Coordinators {
    const NAME: &'static str = "quorum-risk";

    fn ballot(setup: &Setup, _peers: &[NodeId]) -> (Vec<NodeId>, usize) {
        let k = RiskKeys::read(setup);
        ((1..=k.coordinators).collect(), k.quorum as usize)
    }
}

type Node = Mutex<Voter<Coordinators>>;

/// One run with seed `seed`: true when A and B held the resource at once.
fn run(n: u64, m: u64, p: f64, seed: u64) -> bool {
    let (a, b) = (n + 1, n + 2);
    let mut ids = vec![RESOURCE_ID];
    ids.extend(1..=b);
    let setups = ids
        .iter()
        .map(|&me| {
            let mut s = Setup::new(me, ids.clone(), ids.iter().copied().filter(|&x| x != me).collect());
            s.initiator = me == a || me == b;
            s.timeout = Duration::from_millis(10);
            s.seed = seed ^ me;
            for (k, v) in [
                ("think_ms", "0".to_string()),
                ("hold_ms", HOLD.as_millis().to_string()),
                ("requests", "1".into()),
                ("coordinators", n.to_string()),
                ("quorum", m.to_string()),
            ] {
                s.opts.insert(k.into(), v);
            }
            s
        })
        .collect();
    // One fixed delay keeps every link FIFO: the resource sees accesses in their real order.
    let net = NetConfig {
        seed,
        min_delay: Duration::from_micros(100),
        max_delay: Duration::from_micros(100),
        ..NetConfig::default()
    };
    let mut sim: Sim<Node> = Sim::new(net, setups, Node::new);
    let mine: Vec<NodeId> = (1..=m).collect();
    let theirs: Vec<NodeId> = (m + 1..=n).collect();
    sim.partition(&[a], &theirs);
    sim.partition(&[b], &mine);
    let holds = |s: &Sim<Node>| !s.events("cs_enter").is_empty();
    if !sim.run_until(Duration::from_secs(1), holds) {
        return false;
    }
    sim.heal();
    let mut rng = Rng::new(seed);
    let half = HOLD.as_micros() as u64 / 2;
    let mut restarts = Vec::new();
    for &c in &mine {
        if rng.chance(p) {
            restarts.push((rng.range(0, half), c));
        }
    }
    restarts.sort_unstable();
    let t0 = sim.now();
    for (at, c) in restarts {
        let until = t0 + Duration::from_micros(at);
        sim.run_until(until, |_| false);
        sim.crash(c);
        sim.restart(c);
    }
    sim.run_until(t0 + HOLD, |_| false);
    !sim.events("violation").is_empty()
}

/// Runs the quorum protocol `runs` times (seeds `seed`, `seed+1`, ...) and returns the runs in
/// which two held at once. n at most [`MAX_N`].
pub fn simulate(n: u64, m: u64, p: f64, runs: u64, seed: u64) -> Result<u64, String> {
    super::risk::check(n, m, p)?;
    if n > MAX_N {
        return Err(format!(
            "--simulate runs the protocol with n = {n} coordinators; at most {MAX_N} (small n, where P_v is large enough to observe in seconds)"
        ));
    }
    Ok((0..runs).filter(|&r| run(n, m, p, seed.wrapping_add(r))).count() as u64)
}

/// The model the simulation sets up, in words, for printing beside the estimate.
pub fn assumptions(n: u64, m: u64) -> String {
    format!(
        "each run: the quorum protocol in the simulator, {n} coordinators and 2 participants; A holds \
         the grants of {m} coordinators and B those of the other {}, as under contention; during A's \
         hold each of A's {m} coordinators restarts (forgetting its grant) with probability P; B \
         re-asks every 10 ms; counted: A and B at the resource at once",
        n - m
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_protocol_violates_as_often_as_the_formula_says() {
        // n = 3, m = 2: P_v = 2P(1-P) + P^2.
        let p: f64 = 0.3;
        let exact = 2.0 * p * (1.0 - p) + p * p;
        let runs = 300;
        let hits = simulate(3, 2, p, runs, 1).unwrap() as f64 / runs as f64;
        assert!((hits - exact).abs() < 0.1, "{hits} vs {exact}");
        // n = 5, m = 4: B has 1 grant and needs 3 forgetful of A's 4: 4P^3(1-P) + P^4.
        let exact = 4.0 * p.powi(3) * (1.0 - p) + p.powi(4);
        let hits = simulate(5, 4, p, runs, 1).unwrap() as f64 / runs as f64;
        assert!((hits - exact).abs() < 0.06, "{hits} vs {exact}");
        assert_eq!(simulate(3, 2, 0.0, 20, 1).unwrap(), 0, "no restart, no violation");
        assert_eq!(simulate(3, 2, 1.0, 20, 1).unwrap(), 20, "every grant forgotten");
        assert!(simulate(17, 9, 0.1, 1, 1).unwrap_err().contains("at most 16"));
    }
}
