//! Test helpers for the election protocols: seeded graphs as neighbour lists, setups for
//! them, simulators, and running until the live nodes agree.

use super::{Election, Leadership};
use crate::algo::{NodeId, Setup};
use crate::check::Violation;
use crate::rng::Rng;
use crate::sim::{NetConfig, Sim};
use crate::trace::Event;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// A graph: every node's neighbours (symmetric).
pub type Graph = BTreeMap<NodeId, Vec<NodeId>>;

fn add(g: &mut Graph, a: NodeId, b: NodeId) {
    if a != b && !g[&a].contains(&b) {
        g.get_mut(&a).unwrap().push(b);
        g.get_mut(&b).unwrap().push(a);
    }
}

fn empty(ids: &[NodeId]) -> Graph {
    ids.iter().map(|&i| (i, Vec::new())).collect()
}

/// Every node linked to every other.
pub fn complete(ids: &[NodeId]) -> Graph {
    let mut g = empty(ids);
    for (i, &a) in ids.iter().enumerate() {
        for &b in &ids[i + 1..] {
            add(&mut g, a, b);
        }
    }
    g
}

/// The cycle `ids[0] - ids[1] - ... - ids[0]`, each node listing [successor, predecessor].
pub fn ring(ids: &[NodeId]) -> Graph {
    let n = ids.len();
    let mut g = empty(ids);
    for (i, &a) in ids.iter().enumerate() {
        for b in [ids[(i + 1) % n], ids[(i + n - 1) % n]] {
            if a != b && !g[&a].contains(&b) {
                g.get_mut(&a).unwrap().push(b);
            }
        }
    }
    g
}

/// The same cycle, each node listing [predecessor, successor] (as the ring launcher does).
pub(crate) fn bidirectional_ring(ids: &[NodeId]) -> Graph {
    ring(ids)
        .into_iter()
        .map(|(a, mut nb)| {
            (a, {
                nb.reverse();
                nb
            })
        })
        .collect()
}

/// The launcher's graph `spec` (`grid`, `random:K`, ...) over `ids` as neighbour lists: the
/// tests run on the graphs users launch, built by one module.
pub(crate) fn launched(spec: &str, ids: &[NodeId], seed: u64) -> Graph {
    let g = crate::topology::build(spec, ids, seed).unwrap_or_else(|e| panic!("{spec}: {e}"));
    ids.iter().map(|&i| (i, g.neighbours(i).to_vec())).collect()
}

/// The number of edges.
pub(crate) fn edges(g: &Graph) -> usize {
    g.values().map(Vec::len).sum::<usize>() / 2
}

/// Whether the graph without the `dead` nodes is connected.
pub(crate) fn connected_without(g: &Graph, dead: &[NodeId]) -> bool {
    let live: Vec<NodeId> = g.keys().copied().filter(|x| !dead.contains(x)).collect();
    let Some(&first) = live.first() else {
        return true;
    };
    let mut seen = BTreeSet::from([first]);
    let mut todo = vec![first];
    while let Some(a) = todo.pop() {
        for &b in &g[&a] {
            if !dead.contains(&b) && seen.insert(b) {
                todo.push(b);
            }
        }
    }
    seen.len() == live.len()
}

/// Setups for graph `g` with members in the order of `ids`, one run seed for all.
pub fn setups(ids: &[NodeId], g: &Graph, initiators: &[NodeId], seed: u64) -> Vec<Setup> {
    ids.iter()
        .map(|&me| {
            let mut s = Setup::new(me, ids.to_vec(), g[&me].clone());
            s.initiator = initiators.contains(&me);
            s.seed = seed;
            s
        })
        .collect()
}

/// A network with one-way delays from 1 to `max_ms` milliseconds.
pub fn net(seed: u64, max_ms: u64) -> NetConfig {
    NetConfig {
        seed,
        min_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(max_ms),
        ..NetConfig::default()
    }
}

/// A network that drops and duplicates each datagram with probability `p`, with one-way delays
/// from 1 to `max_ms` milliseconds.
pub fn lossy_net(seed: u64, p: f64, max_ms: u64) -> NetConfig {
    NetConfig {
        drop: p,
        duplicate: p,
        ..net(seed, max_ms)
    }
}

/// Starts a simulation of protocol `E` under leadership.
pub fn sim<E: Election + 'static>(net: NetConfig, setups: Vec<Setup>) -> Sim<Leadership<E>> {
    Sim::new(net, setups, Leadership::<E>::new)
}

/// Runs (at most 60 s of simulated time) until every live node believes the same term and
/// leader, the leader being live and not `old`; returns that leader.
pub fn elect<E: Election>(s: &mut Sim<Leadership<E>>, old: Option<NodeId>) -> NodeId {
    let limit = s.now() + Duration::from_secs(60);
    let done = s.run_until(limit, |s| {
        let live = s.live();
        let b: Vec<_> = live.iter().map(|&i| s.node(i).belief()).collect();
        b[0].1.is_some_and(|l| Some(l) != old && live.contains(&l)) && b.iter().all(|x| *x == b[0])
    });
    assert!(done, "no agreement by {limit:?}");
    s.node(s.live()[0]).belief().1.unwrap()
}

/// For every term, the nodes that declared themselves its leader.
pub(crate) fn self_declared<A: crate::algo::Algorithm>(s: &Sim<A>) -> BTreeMap<u64, BTreeSet<NodeId>> {
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
pub(crate) fn one_leader_per_term<A: crate::algo::Algorithm>(s: &Sim<A>) {
    for (term, who) in self_declared(s) {
        assert!(who.len() == 1, "term {term} has leaders {who:?}");
    }
}

/// A network with delays of 1 to `max_ms` ms, each datagram lost and duplicated with
/// probability `loss`; the simulator of `E` on it.
pub(crate) fn sim_net<E: Election + 'static>(
    setups: Vec<Setup>,
    seed: u64,
    max_ms: u64,
    loss: f64,
) -> Sim<Leadership<E>> {
    let net = NetConfig {
        drop: loss,
        duplicate: loss,
        ..net(seed, max_ms)
    };
    sim::<E>(net, setups)
}

/// [`lossy`] without its liveness half: the checker finds no two leaders in a term, no
/// disagreement within a term and no absurd term, but the run need not end agreed. For a
/// protocol known not to elect under loss yet (Yo-Yo: a lost YO stalls its round); move it to
/// [`lossy`] once it does.
pub(crate) fn lossy_safety<E: Election + 'static>(setups: Vec<Setup>, seed: u64) {
    let mut n = net(seed, 4);
    n.drop = 0.03;
    n.duplicate = 0.05;
    let mut s = sim::<E>(n, setups);
    s.run_for(Duration::from_secs(10));
    let a = judge(&s);
    let e = a.election.as_ref().expect("an election was recorded");
    let safety: Vec<_> = e
        .violations
        .iter()
        .filter(|v| !matches!(v, Violation::Termination { .. } | Violation::Agreement { .. }))
        .collect();
    assert!(safety.is_empty(), "{}", crate::check::summary::render(&a, false));
}

/// Sets option `key=value` on every setup.
pub(crate) fn with_opt(mut setups: Vec<Setup>, key: &str, value: &str) -> Vec<Setup> {
    for s in &mut setups {
        s.opts.insert(key.into(), value.into());
    }
    setups
}

/// Messages named `name` sent from simulated time `since` on.
pub(crate) fn sent_since<A: crate::algo::Algorithm>(s: &Sim<A>, name: &str, since: Duration) -> usize {
    s.trace
        .iter()
        .filter(|r| r.t >= since.as_micros() as u64)
        .filter(|r| matches!(&r.event, Event::Send { msg, .. } if msg == name))
        .count()
}

/// The terms in which some node started or joined an election.
pub fn terms<E: Election>(s: &Sim<Leadership<E>>) -> BTreeSet<u64> {
    s.events("election_start")
        .iter()
        .filter_map(|r| match r.event {
            Event::ElectionStart { term } => Some(term),
            _ => None,
        })
        .collect()
}

/// The ids 1..=n.
pub fn ids(n: u64) -> Vec<NodeId> {
    (1..=n).collect()
}

/// The ids 1..=n in a seeded random order.
pub fn shuffled(n: u64, seed: u64) -> Vec<NodeId> {
    let mut v = ids(n);
    Rng::new(seed).shuffle(&mut v);
    v
}

/// Every topology the graph protocols must run on, built over `ids` (with seed `seed`).
pub(crate) fn topologies(ids: &[NodeId], seed: u64) -> Vec<(&'static str, Graph)> {
    // A node has at most n - 1 neighbours.
    let random = |k: usize| launched(&format!("random:{}", k.min(ids.len() - 1)), ids, seed);
    vec![
        ("complete", complete(ids)),
        ("ring", ring(ids)),
        ("bidirectional-ring", bidirectional_ring(ids)),
        ("grid", launched("grid", ids, seed)),
        ("random:3", random(3)),
        ("random:6", random(6)),
    ]
}

/// Pauses the leader `old`, expects `new` to win, resumes `old`, and checks that it stepped
/// down and follows `new` in the new term.
pub(crate) fn pause_and_resume<E: Election>(s: &mut Sim<Leadership<E>>, old: NodeId, new: NodeId) {
    assert_eq!(elect(s, None), old);
    s.pause(old);
    assert_eq!(elect(s, Some(old)), new);
    let (term, _) = s.node(new).belief();
    s.run_for(Duration::from_secs(1));
    s.resume(old);
    s.run_for(Duration::from_millis(50));
    assert_eq!(s.node(old).belief(), (term, Some(new)));
    assert!(s.events("step_down").iter().any(|r| r.node == Some(old)));
    one_leader_per_term(s);
    assert_checked(s);
}

/// The checker's judgement of the simulation so far (as if the launcher had recorded it).
pub(crate) fn judge<A: crate::algo::Algorithm>(s: &Sim<A>) -> crate::check::Analysis {
    crate::check::analyse(&crate::check::sim_run(s, "simulation", "sim"))
}

/// Asserts what the checker asserts of a real run: no violation it cannot explain (a term
/// with two leaders, an agreement or termination failure at the end, an absurd term), and that
/// an election happened at all.
pub(crate) fn assert_checked<A: crate::algo::Algorithm>(s: &Sim<A>) -> crate::check::Analysis {
    let a = judge(s);
    assert!(a.election.is_some(), "no election event at all");
    assert!(!a.violated(), "{}", crate::check::summary::render(&a, false));
    a
}

/// Runs `setups` for ten seconds on a network that loses and duplicates datagrams, then on
/// until the nodes agree (a lost heartbeat may start a term just before ten seconds): the
/// checker finds no violation (one leader per term, and every node agrees on a leader by the
/// end), and nothing panics.
pub fn lossy<E: Election + 'static>(setups: Vec<Setup>, seed: u64) {
    let mut n = net(seed, 4);
    n.drop = 0.03;
    n.duplicate = 0.05;
    let mut s = sim::<E>(n, setups);
    s.run_for(Duration::from_secs(10));
    elect(&mut s, None);
    one_leader_per_term(&s);
    assert_checked(&s);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::election::chang_roberts::ChangRoberts;

    #[test]
    fn a_run_in_which_nothing_was_elected_fails_the_check() {
        // Nobody starts an election and the failure detector has no leader to miss: nothing
        // is ever elected, which "at most one leader per term" alone would pass.
        let ids = ids(4);
        let mut s = sim::<ChangRoberts>(net(1, 2), setups(&ids, &ring(&ids), &[], 1));
        s.run_for(Duration::from_millis(100));
        one_leader_per_term(&s);
        let a = judge(&s);
        assert!(a.violated() || a.election.is_none());
        // With every node partitioned off after starting, no leader is agreed: termination fails
        // (judged once the run went on well past the partition: a run that ends within 10
        // timeouts of its last fault may end mid-election).
        let mut s = sim::<ChangRoberts>(net(1, 2), setups(&ids, &ring(&ids), &ids, 1));
        for &i in &ids {
            s.partition(&[i], &ids.iter().copied().filter(|&x| x != i).collect::<Vec<_>>());
        }
        s.run_for(Duration::from_secs(5));
        let a = judge(&s);
        assert!(a.violated(), "{}", crate::check::summary::render(&a, false));
    }

    #[test]
    fn a_clean_election_passes_the_check() {
        let ids = ids(5);
        let mut s = sim::<ChangRoberts>(net(2, 3), setups(&ids, &ring(&ids), &ids, 2));
        assert_eq!(elect(&mut s, None), 5);
        let a = assert_checked(&s);
        assert_eq!(a.election.unwrap().agreed().map(|b| b.leader), Some(5));
    }
}
