//! Simulator tests of the voting protocols (quorum and Maekawa): Maekawa's grid quorums, their
//! message counts, service under contention and loss, safety under faults, and what a
//! coordinator that forgets its grant does to safety with and without durable grants or fencing.

use super::super::maekawa::{grid_quorum, Maekawa};
use super::super::quorum::Quorum;
use super::super::Mutex;
use super::*;

#[test]
fn grid_quorums_pairwise_intersect_and_are_about_two_sqrt_n() {
    for n in 2..=70u64 {
        let peers: Vec<u64> = (1..=n).collect();
        let qs: Vec<Vec<u64>> = peers.iter().map(|&p| grid_quorum(&peers, p)).collect();
        for (i, a) in qs.iter().enumerate() {
            assert!(a.contains(&peers[i]), "n={n}: a node is in its own quorum");
            assert!(a.len() as f64 <= 2.0 * (n as f64).sqrt() + 1.0, "n={n}: {a:?}");
            for b in &qs {
                assert!(a.iter().any(|x| b.contains(x)), "n={n}: {a:?} and {b:?} do not meet");
            }
        }
    }
    assert_eq!(grid_quorum(&(1..=9).collect::<Vec<_>>(), 5), vec![2, 4, 5, 6, 8]);
}

#[test]
fn quorum_and_maekawa_serve_everyone_under_full_contention() {
    for n in [3u64, 5, 9] {
        live_and_count::<Quorum>(n, 20);
        live_and_count::<Maekawa>(n, 20);
    }
}

#[test]
fn one_requester_costs_three_messages_per_voter() {
    let opts = [("think_ms", "0"), ("hold_ms", "1"), ("requests", "10")];
    // Only node 1 runs the workload: no contention, so no INQUIRE, RELINQUISH or FAILED.
    let mut setups = setups(5, &opts);
    for x in setups.iter_mut() {
        x.initiator = x.me == 1;
    }
    let mut s = crate::sim::Sim::new(NetConfig::default(), setups.clone(), super::super::Mutex::<Quorum>::new);
    assert!(run_to_done(&mut s, &[1], 10, Duration::from_secs(10)));
    s.run_for(Duration::from_millis(20));
    assert_eq!(s.sent("REQUEST") + s.sent("GRANT") + s.sent("RELEASE"), 10 * 3 * 5);
    let mut m = crate::sim::Sim::new(NetConfig::default(), setups, super::super::Mutex::<Maekawa>::new);
    assert!(run_to_done(&mut m, &[1], 10, Duration::from_secs(10)));
    m.run_for(Duration::from_millis(20));
    let k = grid_quorum(&[1, 2, 3, 4, 5], 1).len();
    assert_eq!(m.sent("REQUEST") + m.sent("GRANT") + m.sent("RELEASE"), 10 * 3 * k);
    assert_eq!(m.sent("FAILED") + m.sent("INQUIRE") + m.sent("RELINQUISH"), 0);
}

#[test]
fn quorum_and_maekawa_serve_everyone_despite_lost_and_duplicated_datagrams() {
    // A lost RELEASE, FAILED or INQUIRE must not lock a vote for good.
    fn run<P: Protocol + 'static>(seed: u64) {
        let opts = [("think_ms", "1"), ("hold_ms", "1"), ("requests", "10")];
        let net = NetConfig {
            drop: 0.05,
            ..rough(seed)
        };
        let mut s = sim::<P>(6, net, &opts);
        let who: Vec<u64> = (1..=6).collect();
        assert!(run_to_done(&mut s, &who, 10, Duration::from_secs(120)), "seed {seed}");
        assert_eq!(assert_safe(&s, &[]), 60);
    }
    for seed in 0..10 {
        run::<Quorum>(seed);
        run::<Maekawa>(seed);
    }
}

#[test]
fn quorum_and_maekawa_are_safe_under_faults_without_restarts() {
    assert!(safe_under_faults::<Quorum>(30, |_| true) > 40);
    assert!(safe_under_faults::<Maekawa>(30, |_| true) > 40);
}

/// 3 coordinators, m = 2, nodes 1 and 3 request, node 2 only votes. Once P holds with two
/// votes and W waits with the third, restart the coordinator in the intersection of their
/// quorums. Returns the violations and the stale accesses rejected over the seeds.
fn amnesia(durable: bool, fencing: bool) -> (usize, usize) {
    let flag = |b: bool| if b { "true" } else { "false" };
    let opts = [
        ("think_ms", "0"),
        ("hold_ms", "500"),
        ("quorum", "2"),
        ("durable", flag(durable)),
        ("fencing", flag(fencing)),
    ];
    let (mut violations, mut rejected) = (0, 0);
    for seed in 0..10 {
        let mut st = setups(3, &opts);
        for x in st.iter_mut() {
            x.initiator = x.me != 2 && x.me != RESOURCE_ID;
        }
        // One delay per run, different each run: random delays per datagram would let a
        // holder's END reach the resource after the next holder's BEGIN, a violation the
        // resource would see in a correct run.
        let delay = Duration::from_micros(150 + 170 * seed);
        let net = NetConfig {
            seed,
            min_delay: delay,
            max_delay: delay,
            ..NetConfig::default()
        };
        let mut s = crate::sim::Sim::new(net, st, Mutex::<Quorum>::new);
        // The course's picture: P holds with the votes of {P, C}; W waits with the third
        // vote, one short of a quorum; C (node 2, or W's own coordinator) is in the
        // intersection of their quorums.
        let picture = |s: &crate::sim::Sim<Mutex<Quorum>>| {
            let owner = |v: u64| s.node(v).protocol().unwrap().voting.locked().map(|t| t.1);
            [(1, 3), (3, 1)].iter().find_map(|&(p, w)| {
                let holds = matches!(s.node(p).phase(), Some(super::super::wrapper::Phase::Holding(_)));
                let waits = matches!(s.node(w).phase(), Some(super::super::wrapper::Phase::Waiting(_)));
                let c = [2, w].into_iter().find(|&c| owner(c) == Some(p))?;
                let other = if c == 2 { w } else { 2 };
                (holds && waits && owner(other) == Some(w)).then_some(c)
            })
        };
        assert!(
            s.run_until(Duration::from_secs(5), |s| picture(s).is_some()),
            "seed {seed}: no split quorum"
        );
        let c = picture(&s).unwrap();
        s.crash(c);
        s.restart(c);
        assert_eq!(
            s.node(c).protocol().unwrap().voting.epoch(),
            2,
            "a restart is a new epoch"
        );
        s.run_for(Duration::from_secs(2));
        violations += s.events("violation").len();
        rejected += s.events("reject_stale").len();
        if durable {
            assert_safe(&s, &[]);
        }
    }
    (violations, rejected)
}

#[test]
fn a_coordinator_that_forgets_its_grant_lets_two_in_and_durable_grants_do_not() {
    assert!(
        amnesia(false, false).0 >= 1,
        "amnesia: two holders at least once over the seeds"
    );
    assert_eq!(amnesia(true, false).0, 0, "durable: never");
}

#[test]
fn fencing_rejects_the_holder_whose_grant_a_restarted_coordinator_forgot() {
    let (violations, rejected) = amnesia(false, true);
    assert_eq!(violations, 0, "the resource fenced the older holder off");
    assert!(rejected >= 1, "the older holder's write was rejected");
}

/// The fencing tokens of the entries of `s`, in the order of entry.
fn tokens<P: Protocol>(s: &crate::sim::Sim<Mutex<P>>) -> Vec<u64> {
    s.events("cs_enter")
        .iter()
        .map(|r| match r.event {
            Event::CsEnter { token, .. } => token.expect("every entry has a fencing token"),
            _ => unreachable!(),
        })
        .collect()
}

#[test]
fn every_entry_has_a_higher_token_than_the_one_before_so_fencing_rejects_nothing() {
    fn run<P: Protocol + 'static>(seed: u64) {
        let opts = [
            ("think_ms", "1"),
            ("hold_ms", "1"),
            ("requests", "15"),
            ("fencing", "true"),
        ];
        // Random delays reorder datagrams: a BEGIN may then reach the resource after the
        // next holder's, and be refused as it should. On a FIFO network, never.
        for fifo in [false, true] {
            let net = match fifo {
                true => NetConfig {
                    seed,
                    ..NetConfig::default()
                },
                false => NetConfig {
                    drop: 0.0,
                    ..rough(seed)
                },
            };
            let mut s = sim::<P>(7, net, &opts);
            // Pauses shorter than any timeout: slow, never taken for dead.
            for v in [3, 5] {
                s.run_for(Duration::from_millis(15));
                s.pause(v);
                s.run_for(Duration::from_millis(20));
                s.resume(v);
            }
            let who: Vec<u64> = (1..=7).collect();
            assert!(run_to_done(&mut s, &who, 15, Duration::from_secs(60)), "seed {seed}");
            assert_eq!(assert_safe(&s, &[]), 7 * 15);
            let t = tokens(&s);
            assert!(t.windows(2).all(|w| w[0] < w[1]), "seed {seed}: tokens {t:?}");
            s.run_for(Duration::from_millis(50));
            if fifo {
                assert_eq!(s.events("reject_stale").len(), 0, "seed {seed}");
            }
        }
    }
    for seed in 0..10 {
        run::<Quorum>(seed);
        run::<Maekawa>(seed);
    }
}
