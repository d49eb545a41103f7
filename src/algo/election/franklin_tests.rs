//! Simulator tests of Franklin.

use super::super::testkit::{self, bidirectional_ring, elect, ids, net, one_leader_per_term, setups, shuffled, terms};
use super::Franklin;
use crate::algo::election::Leadership;
use crate::algo::NodeId;
use crate::sim::Sim;
use std::time::Duration;

type Fr = Leadership<Franklin>;

fn sim(ring: &[NodeId], initiators: &[NodeId], seed: u64, max_ms: u64) -> Sim<Fr> {
    testkit::sim::<Franklin>(
        net(seed, max_ms),
        setups(ring, &bidirectional_ring(ring), initiators, seed),
    )
}

fn bound(n: u64) -> u64 {
    2 * n * (n.ilog2() as u64 + 1)
}

/// Elects on `ring` with every node initiating; returns (leader, ELECTION, LEADER) counts.
fn run(ring: &[NodeId], initiators: &[NodeId], seed: u64, max_ms: u64) -> (NodeId, usize, usize) {
    let mut s = sim(ring, initiators, seed, max_ms);
    let l = elect(&mut s, None);
    s.run_for(Duration::from_millis(50));
    assert_eq!(s.sent("VOID"), 0);
    assert_eq!(s.sent("PROBE"), 0);
    assert_eq!(terms(&s).len(), 1, "one election, in one term");
    (l, s.sent("ELECTION"), s.sent("LEADER"))
}

#[test]
fn worked_examples_count_two_n_messages_per_round() {
    // [1,2,3]: round 1 leaves 3 (the only local maximum); round 2: 3's id goes all round.
    // [1,2,3,4]: likewise 4. [1,3,2,4]: round 1 leaves 3 and 4, round 2 leaves 4, round 3.
    // [1,8,2,7,3,6,4,5]: round 1 leaves 8,7,6,5; round 2 leaves 8; round 3.
    // [8,1,5,2,7,3,6,4]: round 1 leaves 8,5,7,6; round 2 leaves 8 and 7 (5 and 6 lie between
    // them); round 3 leaves 8; round 4: exactly the bound 2n(floor(log2 n) + 1) = 64.
    let cases: &[(&[NodeId], u64, usize)] = &[
        (&[1], 1, 0),
        (&[1, 2], 2, 2),
        (&[2, 1], 2, 2),
        (&[1, 2, 3], 3, 2),
        (&[3, 1, 2], 3, 2),
        (&[1, 2, 3, 4], 4, 2),
        (&[1, 3, 2, 4], 4, 3),
        (&[1, 8, 2, 7, 3, 6, 4, 5], 8, 3),
        (&[8, 1, 5, 2, 7, 3, 6, 4], 8, 4),
    ];
    for &(ring, leader, rounds) in cases {
        let n = ring.len();
        let (l, election, announce) = run(ring, ring, 1, 1);
        assert_eq!(l, leader, "{ring:?}");
        assert_eq!(election, 2 * n * rounds, "{ring:?}");
        assert_eq!(announce, if n == 1 { 0 } else { n + 1 }, "{ring:?}");
    }
    assert_eq!(bound(8), 64);
}

#[test]
fn one_initiator_wakes_the_others_into_round_one() {
    // Every other node starts when the first message reaches it: the same rounds, the same count.
    let ring = [8, 1, 5, 2, 7, 3, 6, 4];
    assert_eq!(run(&ring, &[1], 1, 1), (8, 64, 9));
    assert_eq!(
        run(&ring, &[], 1, 1),
        (8, 64, 9),
        "nobody initiates: the first timeout starts it"
    );
}

#[test]
fn bound_holds_across_many_arrangements_and_delays() {
    for seed in 0..120 {
        let n = 2 + seed % 40;
        let ring = shuffled(n, seed);
        let initiators: Vec<NodeId> = ring.iter().copied().filter(|&i| (i + seed) % 3 != 0).collect();
        let (l, election, announce) = run(&ring, &initiators, seed, 5);
        assert_eq!(l, n, "seed {seed}");
        assert_eq!(election as u64 % (2 * n), 0, "seed {seed}: 2n per round");
        assert!(election as u64 <= bound(n), "seed {seed}: {election} > {}", bound(n));
        assert_eq!(announce as u64, n + 1, "seed {seed}");
    }
}

#[test]
fn leader_crash_re_elects_on_the_line_that_is_left() {
    for seed in 0..30 {
        let n = 3 + seed % 12;
        let ring = shuffled(n, seed);
        let mut s = sim(&ring, &ring, seed, 3);
        assert_eq!(elect(&mut s, None), n);
        s.run_for(Duration::from_millis(250));
        s.crash(n);
        assert_eq!(elect(&mut s, Some(n)), n - 1, "seed {seed}");
        // Its two neighbours found out it is dead, and the line answered with VOIDs.
        assert!(s.sent("VOID") > 0, "seed {seed}");
        assert!(s
            .events("suspect")
            .iter()
            .any(|r| matches!(r.event, crate::trace::Event::Suspect { target, .. } if target == n)));
        one_leader_per_term(&s);
        // Again, when the two dead nodes were neighbours: the line of n - 2 nodes elects too.
        let at = |x| ring.iter().position(|&y| y == x).unwrap();
        let (i, j) = (at(n), at(n - 1));
        if n > 3 && ((i + 1) % ring.len() == j || (j + 1) % ring.len() == i) {
            s.run_for(Duration::from_millis(250));
            s.crash(n - 1);
            assert_eq!(elect(&mut s, Some(n - 1)), n - 2, "seed {seed}");
            one_leader_per_term(&s);
        }
    }
}

#[test]
fn crash_mid_election_still_ends_with_the_largest_live_id() {
    for seed in 0..150 {
        let n = 4 + seed % 10;
        let ring = shuffled(n, seed);
        let mut s = sim(&ring, &ring, seed, 5);
        s.run_for(Duration::from_millis(1 + seed % 6));
        let victim = 1 + seed % n;
        s.crash(victim);
        let expect = if victim == n { n - 1 } else { n };
        let l = elect(&mut s, None);
        // A leader chosen before the crash may be the crashed node only for a moment.
        let l = if l == victim { elect(&mut s, Some(victim)) } else { l };
        assert_eq!(l, expect, "seed {seed}, crashed {victim}");
        one_leader_per_term(&s);
    }
}

#[test]
fn paused_leader_wakes_up_and_follows_the_new_one() {
    let ring = shuffled(7, 4);
    testkit::pause_and_resume(&mut sim(&ring, &ring, 4, 2), 7, 6);
}

#[test]
fn restarted_node_rejoins_without_disturbing_the_leader() {
    let ring = shuffled(6, 9);
    let mut s = sim(&ring, &ring, 9, 2);
    assert_eq!(elect(&mut s, None), 6);
    s.crash(2);
    s.run_for(Duration::from_secs(1));
    s.restart(2);
    s.run_for(Duration::from_secs(2));
    let b = s.node(2).belief();
    assert_eq!(b.1, Some(6));
    assert!(s.ids().iter().all(|&i| s.node(i).belief() == b));
}

#[test]
fn loss_and_duplication_never_give_two_leaders_a_term() {
    for seed in 0..20 {
        let ring = shuffled(6, seed);
        testkit::lossy::<Franklin>(setups(&ring, &bidirectional_ring(&ring), &ring, seed), seed);
    }
}

#[test]
fn more_than_two_neighbours_is_refused() {
    let g = testkit::complete(&ids(4));
    let s = setups(&ids(4), &g, &[], 1);
    let e = crate::catalog::check_setup("franklin", &s[0]).unwrap_err();
    assert!(e.contains("bidirectional ring"), "{e}");
    let r = setups(&ids(4), &bidirectional_ring(&ids(4)), &[], 1);
    assert!(crate::catalog::check_setup("franklin", &r[0]).is_ok());
}
