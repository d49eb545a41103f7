//! Test helpers for mutual exclusion in the simulator: setups with the resource, a run to
//! completion, and the safety check from the nodes' own cs_enter/cs_exit (in simulated time).

use super::{Mutex, Protocol, RESOURCE_ID};
use crate::algo::{NodeId, Setup};
use crate::sim::{NetConfig, Sim};
use crate::trace::Event;
use std::time::Duration;

/// Setups for participants 1..=n (every one running the workload) plus the resource.
pub fn setups(n: u64, opts: &[(&str, &str)]) -> Vec<Setup> {
    let mut ids: Vec<NodeId> = vec![RESOURCE_ID];
    ids.extend(1..=n);
    ids.iter()
        .map(|&me| {
            let mut s = Setup::new(me, ids.clone(), ids.iter().copied().filter(|&x| x != me).collect());
            s.initiator = me != RESOURCE_ID;
            for (k, v) in opts {
                s.opts.insert(k.to_string(), v.to_string());
            }
            s
        })
        .collect()
}

/// A simulator of n participants and the resource.
pub fn sim<P: Protocol + 'static>(n: u64, net: NetConfig, opts: &[(&str, &str)]) -> Sim<Mutex<P>> {
    let s = setups(n, opts);
    for x in &s {
        Mutex::<P>::check(x, "test").unwrap();
    }
    Sim::new(net, s, Mutex::<P>::new)
}

/// How many entries node `id` completed.
pub(crate) fn exits<P: Protocol>(s: &Sim<Mutex<P>>, id: NodeId) -> usize {
    s.trace
        .iter()
        .filter(|r| r.node == Some(id) && matches!(r.event, Event::CsExit { .. }))
        .count()
}

/// Exits of node `id` after simulated time `t`.
pub(crate) fn exits_after<P: Protocol>(s: &Sim<Mutex<P>>, id: NodeId, t: Duration) -> usize {
    let t = t.as_micros() as u64;
    s.trace
        .iter()
        .filter(|r| r.node == Some(id) && r.t > t && matches!(r.event, Event::CsExit { .. }))
        .count()
}

/// Runs `n` participants with `opts` on `net`; crashes `victim` (if any) at 150 ms and
/// restarts it 100 ms later; then every participant, the restarted one included, must complete
/// 10 more entries. Panics on two holders at once or on a stall.
pub(crate) fn serves_after_restart_with<P: Protocol + 'static>(
    n: u64,
    net: NetConfig,
    victim: Option<NodeId>,
    opts: &[(&str, &str)],
) {
    let seed = net.seed;
    let mut s = sim::<P>(n, net, opts);
    s.run_for(Duration::from_millis(150));
    let mut crashed = Vec::new();
    if let Some(v) = victim {
        crashed.push((v, s.now()));
        s.crash(v);
        s.run_for(Duration::from_millis(100));
        s.restart(v);
    }
    let t = s.now();
    let who: Vec<NodeId> = (1..=n).collect();
    let served = s.run_until(t + Duration::from_secs(60), |s| {
        who.iter().all(|&i| exits_after(s, i, t) >= 10)
    });
    let entries = assert_safe(&s, &crashed);
    assert!(
        served,
        "seed {seed}: a stall after the restart of {victim:?}: exits since {t:?}: {:?} (entries {entries})",
        who.iter().map(|&i| exits_after(&s, i, t)).collect::<Vec<_>>()
    );
}

/// Runs until every participant in `who` has `k` exits; false at the time limit.
pub(crate) fn run_to_done<P: Protocol>(s: &mut Sim<Mutex<P>>, who: &[NodeId], k: usize, limit: Duration) -> bool {
    let who = who.to_vec();
    s.run_until(limit, |s| who.iter().all(|&i| exits(s, i) >= k))
}

/// Panics if two nodes were ever in the section at once (by their own cs_enter/cs_exit, in
/// simulated time; a crash ends a node's hold). Returns the number of entries.
pub(crate) fn assert_safe<P: Protocol>(s: &Sim<Mutex<P>>, crashed: &[(NodeId, Duration)]) -> usize {
    let mut holder: Option<NodeId> = None;
    let mut entries = 0;
    let mut events: Vec<(u64, NodeId, bool)> = s
        .trace
        .iter()
        .filter_map(|r| match r.event {
            Event::CsEnter { .. } => Some((r.t, r.node.unwrap(), true)),
            Event::CsExit { .. } => Some((r.t, r.node.unwrap(), false)),
            _ => None,
        })
        .collect();
    // A crash is an exit of whatever it held.
    for &(id, at) in crashed {
        events.push((at.as_micros() as u64, id, false));
    }
    events.sort_by_key(|e| (e.0, e.2));
    for (t, id, enter) in events {
        if enter {
            assert!(
                holder.is_none(),
                "node {id} entered at {t} us while node {holder:?} held"
            );
            holder = Some(id);
            entries += 1;
        } else if holder == Some(id) {
            holder = None;
        }
    }
    entries
}

/// A network with random delays, loss and duplication.
pub(crate) fn rough(seed: u64) -> NetConfig {
    NetConfig {
        seed,
        min_delay: Duration::from_micros(200),
        max_delay: Duration::from_millis(5),
        drop: 0.02,
        duplicate: 0.05,
    }
}

/// Runs `s` for at most `within` until a node other than `not` (the coordinator) enters the
/// section, and returns that node (panics if none did: the test's premise failed).
pub(crate) fn first_to_enter<P: Protocol>(s: &mut Sim<Mutex<P>>, within: Duration, not: NodeId) -> NodeId {
    s.run_until(within, |s| s.events("cs_enter").iter().any(|r| r.node != Some(not)));
    s.events("cs_enter")
        .iter()
        .find(|r| r.node != Some(not))
        .and_then(|r| r.node)
        .expect("no node entered the section")
}

/// 20% loss, 5% duplication, delays from 0.2 to 8 ms (so datagrams overtake each other).
pub fn lossy(seed: u64) -> NetConfig {
    NetConfig {
        seed,
        min_delay: Duration::from_micros(200),
        max_delay: Duration::from_millis(8),
        drop: 0.2,
        duplicate: 0.05,
    }
}

/// The generations minted so far in `s`, in order (from the nodes' notes).
pub(crate) fn minted<P: Protocol>(s: &Sim<Mutex<P>>) -> Vec<String> {
    s.trace
        .iter()
        .filter_map(|r| match &r.event {
            Event::Note { text, .. } => text.strip_prefix("minted the token of generation ").map(String::from),
            _ => None,
        })
        .collect()
}
