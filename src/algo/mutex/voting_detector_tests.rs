//! Quorum and Maekawa with the family's detector (`--set detector=fixed|phi|swim`), in the
//! simulator: a vote held by a node taken for dead is taken back, a Maekawa request moves to a
//! grid quorum without a voter taken for dead, and any two grid quorums so built still meet.
//! Without the key, a dead holder keeps its votes and a dead voter its quorums' requests for
//! ever (asserted, as the baseline).

use super::hosted_detector_tests::{a_holder_paused_long_is_fenced, inside, ms, run, Hosts, DETECTORS};
use super::maekawa::{grid_quorum, grid_quorum_avoiding, Maekawa};
use super::quorum::Quorum;
use super::testkit::exits_after;
use super::Mutex;
use crate::rng::Rng;
use crate::sim::Sim;
use crate::trace::Event;
use std::time::Duration;

/// Whether a node's log says `needle` (a state change).
fn told<P: Hosts>(s: &Sim<Mutex<P>>, needle: &str) -> bool {
    s.events("note")
        .into_iter()
        .any(|r| matches!(&r.event, Event::Note { text, .. } if text.contains(needle)))
}

/// Runs `P` hosting detector `d` (none: "") until a node holds the section and `victim` (given
/// the holder) names a node to kill, kills it, and runs 6 s more: the run, whom it killed, when.
fn kill_once_one_holds<P: Hosts>(
    d: &str,
    what: &str,
    victim: impl Fn(u64) -> Option<u64>,
) -> (Sim<Mutex<P>>, u64, Duration) {
    let mut s = run::<P>(d);
    let t = s.now();
    let chosen = |s: &Sim<Mutex<P>>| inside(s).and_then(&victim);
    assert!(
        s.run_until(t + ms(2000), |s| chosen(s).is_some()),
        "{what}: nobody entered"
    );
    let dead = chosen(&s).unwrap_or_default();
    s.crash(dead);
    let t = s.now();
    s.run_for(ms(6000));
    (s, dead, t)
}

/// Kills the node inside the section, holding its votes: without a detector nobody enters
/// again; with one, every other node keeps entering once the verdict is in (3.5 s, SWIM's
/// suspicion timeout included), and a voter says it took the dead node's vote back.
fn a_dead_holder_keeps_no_vote<P: Hosts>() {
    for d in std::iter::once("").chain(DETECTORS) {
        let what = format!("{}, detector {d:?}", P::NAME);
        let (s, holder, t) = kill_once_one_holds::<P>(d, &what, Some);
        let others = (1..=5).filter(|&n| n != holder);
        if d.is_empty() {
            let after: usize = others.map(|n| exits_after(&s, n, t + ms(500))).sum();
            assert_eq!(after, 0, "{what}: went on without the dead holder's votes");
            continue;
        }
        for n in others {
            assert!(
                exits_after(&s, n, t + ms(3500)) >= 20,
                "{what}: node {n} stopped entering"
            );
        }
        let taken_back = format!("takes node {holder} for dead: the vote locked");
        assert!(told(&s, &taken_back), "{what}: no voter took its vote back");
        assert!(s.events("violation").is_empty(), "{what}");
    }
}

#[test]
fn a_dead_holders_votes_are_taken_back_once_it_is_taken_for_dead() {
    a_dead_holder_keeps_no_vote::<Quorum>();
    a_dead_holder_keeps_no_vote::<Maekawa>();
}

/// Maekawa's grid of five is [1 2 3] [4 5]: node 3 is in the quorums of nodes 1 and 2
/// ({1,2,3,4} and {1,2,3,5}), not in those of 4 and 5. Killed while another holds, it blocks
/// nodes 1 and 2 for ever without a detector; with one, they move to {1,4,5} and {2,4,5}.
#[test]
fn a_dead_maekawa_voter_blocks_its_quorums_only_until_the_verdict() {
    for d in std::iter::once("").chain(DETECTORS) {
        let what = format!("maekawa, detector {d:?}");
        let (s, _, t) = kill_once_one_holds::<Maekawa>(d, &what, |h| (h != 3).then_some(3));
        let blocked = [1, 2].map(|n| exits_after(&s, n, t + ms(3500)));
        if d.is_empty() {
            assert_eq!(blocked, [0, 0], "{what}: nodes 1 and 2 went on without their voter 3");
            continue;
        }
        assert!(
            blocked.iter().all(|&e| e >= 20),
            "{what}: {blocked:?} entries of nodes 1, 2"
        );
        for n in [4, 5] {
            assert!(
                exits_after(&s, n, t + ms(3500)) >= 20,
                "{what}: node {n} stopped entering"
            );
        }
        assert!(told(&s, "takes [3] for dead: asking the quorum [1, 4, 5]"), "{what}");
        assert!(told(&s, "takes [3] for dead: asking the quorum [2, 4, 5]"), "{what}");
        assert!(s.events("violation").is_empty(), "{what}");
    }
}

#[test]
fn a_voting_holder_paused_long_is_taken_for_dead_and_fenced() {
    a_holder_paused_long_is_fenced::<Quorum>();
    a_holder_paused_long_is_fenced::<Maekawa>();
}

/// Every grid quorum built around any set of avoided nodes, for any participant, meets every
/// other so built (the safety of moving a request): each holds a whole row and a node of every
/// row. None exactly when every row holds an avoided node or a row holds nothing else.
#[test]
fn grid_quorums_built_around_avoided_nodes_still_meet() {
    let mut rng = Rng::new(7);
    for n in 1..=30u64 {
        let peers: Vec<u64> = (1..=n).collect();
        let cols = (n as f64).sqrt().ceil() as usize;
        let rows: Vec<&[u64]> = peers.chunks(cols).collect();
        let mut built: Vec<Vec<u64>> = peers.iter().map(|&me| grid_quorum(&peers, me)).collect();
        for _ in 0..40 {
            let avoided: Vec<u64> = peers.iter().copied().filter(|_| rng.chance(0.2)).collect();
            let avoid = |p: u64| avoided.contains(&p);
            let possible =
                rows.iter().any(|r| !r.iter().any(|&p| avoid(p))) && rows.iter().all(|r| r.iter().any(|&p| !avoid(p)));
            for &me in &peers {
                let q = grid_quorum_avoiding(&peers, me, &avoid);
                assert_eq!(q.is_some(), possible, "n {n}, avoiding {avoided:?}, node {me}");
                if let Some(q) = q {
                    assert!(!q.iter().any(|&p| avoid(p)), "n {n}: {q:?} holds one of {avoided:?}");
                    built.push(q);
                }
            }
        }
        for a in &built {
            for b in &built {
                assert!(a.iter().any(|p| b.contains(p)), "n {n}: {a:?} and {b:?} do not meet");
            }
        }
    }
}

/// With a dead node in every row of the grid ([1 2 3] [4 5]: nodes 3 and 4), no quorum is left:
/// the requests wait, and the nodes say why.
#[test]
fn with_a_dead_node_in_every_grid_row_maekawa_waits_and_says_so() {
    let mut s = run::<Maekawa>("fixed");
    s.crash(3);
    s.crash(4);
    let t = s.now();
    s.run_for(ms(3000));
    let entries: usize = [1, 2, 5].iter().map(|&n| exits_after(&s, n, t + ms(1000))).sum();
    assert_eq!(entries, 0, "entered without a quorum");
    assert!(told(&s, "takes [3, 4] for dead: no quorum is left without them"));
    assert!(s.events("violation").is_empty());
}
