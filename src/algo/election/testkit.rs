//! Helpers shared by the election protocols' simulator tests.

use super::{Election, Leadership};
use crate::algo::{NodeId, Setup};
use crate::sim::{NetConfig, Sim};
use crate::trace::Event;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// A simulator running `E` under leadership on `setups`, with a fixed 1 ms delay.
pub fn sim<E: Election + 'static>(setups: Vec<Setup>, seed: u64) -> Sim<Leadership<E>> {
    sim_net(setups, seed, 1, 0.0)
}

/// The same with delays of 1 to `max_ms` ms, each datagram lost and duplicated with probability `loss`.
pub fn sim_net<E: Election + 'static>(setups: Vec<Setup>, seed: u64, max_ms: u64, loss: f64) -> Sim<Leadership<E>> {
    let net = NetConfig {
        seed,
        min_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(max_ms),
        drop: loss,
        duplicate: loss,
    };
    Sim::new(net, setups, Leadership::<E>::new)
}

/// Sets option `key=value` on every setup.
pub fn with_opt(mut setups: Vec<Setup>, key: &str, value: &str) -> Vec<Setup> {
    for s in &mut setups {
        s.opts.insert(key.into(), value.into());
    }
    setups
}

/// Runs (at most 30 s of simulated time) until every live node believes the same term and
/// leader, the leader being live and not `not`; returns that leader.
pub fn agree<E: Election>(s: &mut Sim<Leadership<E>>, not: Option<NodeId>) -> NodeId {
    let limit = s.now() + Duration::from_secs(30);
    let done = s.run_until(limit, |s| {
        let live = s.live();
        let b: Vec<_> = live.iter().map(|&i| s.node(i).belief()).collect();
        b[0].1.is_some_and(|l| Some(l) != not && live.contains(&l)) && b.iter().all(|x| *x == b[0])
    });
    assert!(done, "no agreement by {limit:?}");
    s.node(s.live()[0]).belief().1.unwrap()
}

/// For every term, the nodes that declared themselves its leader.
pub fn self_declared<A: crate::algo::Algorithm>(s: &Sim<A>) -> BTreeMap<u64, BTreeSet<NodeId>> {
    let mut out: BTreeMap<u64, BTreeSet<NodeId>> = BTreeMap::new();
    for r in s.events("leader") {
        if let Event::Leader { leader, term } = r.event {
            if Some(leader) == r.node {
                out.entry(term).or_default().insert(leader);
            }
        }
    }
    out
}

/// Asserts that no term had two nodes that each declared themselves its leader.
pub fn assert_one_leader_per_term<A: crate::algo::Algorithm>(s: &Sim<A>) {
    for (term, who) in self_declared(s) {
        assert!(who.len() == 1, "term {term} has leaders {who:?}");
    }
}

/// Messages named `name` sent from simulated time `since` on.
pub fn sent_since<A: crate::algo::Algorithm>(s: &Sim<A>, name: &str, since: Duration) -> usize {
    s.trace
        .iter()
        .filter(|r| r.t >= since.as_micros() as u64)
        .filter(|r| matches!(&r.event, Event::Send { msg, .. } if msg == name))
        .count()
}
