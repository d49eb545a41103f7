//! Simulator tests of every mutual-exclusion protocol: liveness and exact message counts
//! without faults, safety under delays, loss, duplication, pauses and crashes, and bad input.

use super::central::Central;
use super::lamport::Lamport;
use super::ricart_agrawala::RicartAgrawala;
use super::testkit::*;
use super::token_ring::TokenRing;
use super::{Protocol, RESOURCE_ID};
use crate::sim::NetConfig;
use crate::trace::Event;
use std::time::Duration;

const FULL: &[(&str, &str)] = &[("think_ms", "0"), ("hold_ms", "1"), ("requests", "20")];

pub(super) fn live_and_count<P: Protocol + 'static>(n: u64, k: usize) -> crate::sim::Sim<super::Mutex<P>> {
    let mut s = sim::<P>(n, NetConfig::default(), FULL);
    let who: Vec<u64> = (1..=n).collect();
    assert!(
        run_to_done(&mut s, &who, k, Duration::from_secs(60)),
        "not every request was served"
    );
    s.run_for(Duration::from_millis(50));
    assert_eq!(assert_safe(&s, &[]), n as usize * k);
    assert_eq!(s.events("violation").len(), 0);
    assert_eq!(
        s.events("access").len(),
        2 * n as usize * k,
        "every entry reached the resource"
    );
    s
}

#[test]
fn central_serves_everyone_with_three_messages_per_entry() {
    for n in [2u64, 5, 9] {
        let s = live_and_count::<Central>(n, 20);
        let remote = (n as usize - 1) * 20;
        assert_eq!(s.sent("REQUEST"), remote, "n={n}");
        assert_eq!(s.sent("GRANT"), remote);
        assert_eq!(s.sent("RELEASE"), remote);
    }
}

/// The fencing tokens of every entry, in the order of entry.
fn entry_tokens<P: Protocol>(s: &crate::sim::Sim<super::Mutex<P>>) -> Vec<u64> {
    s.events("cs_enter")
        .iter()
        .filter_map(|r| match r.event {
            Event::CsEnter { token, .. } => token,
            _ => None,
        })
        .collect()
}

#[test]
fn central_goes_on_after_its_coordinator_and_a_participant_restart_with_higher_tokens() {
    // Node 5 coordinates. It crashes and restarts, losing its queue and its grant counter;
    // then participant 2 does, numbering its requests from 1 again. Before the boot count
    // entered tokens and request ids, the restarted coordinator granted tokens from 1 again
    // (fencing refused every later write), the waiting participants waited for ever, and the
    // restarted participant's requests were ignored as already served.
    let opts = [("think_ms", "2"), ("hold_ms", "2"), ("requests", "40")];
    let mut s = sim::<Central>(5, NetConfig::default(), &opts);
    s.run_until(Duration::from_secs(2), |s| exits(s, 1) >= 5);
    let before = entry_tokens(&s);
    let t = s.now();
    s.crash(5);
    s.run_for(Duration::from_millis(20));
    s.restart(5);
    s.run_until(Duration::from_secs(5), |s| exits(s, 2) >= 15);
    let t2 = s.now();
    s.crash(2);
    s.restart(2);
    // Every other participant ends its 40 requests; the restarted one makes 40 more.
    let done =
        |s: &crate::sim::Sim<super::Mutex<Central>>| [1, 3, 4].iter().all(|&i| exits(s, i) >= 40) && exits(s, 2) >= 55;
    assert!(
        s.run_until(Duration::from_secs(30), done),
        "every request is served after the restarts"
    );
    assert_safe(&s, &[(5, t), (2, t2)]);
    let tokens = entry_tokens(&s);
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "every entry has a higher token than the one before"
    );
    let after = &tokens[before.len()..];
    assert!(after.iter().all(|&tk| tk > before.iter().copied().max().unwrap()));
    assert!(
        after.iter().any(|&tk| tk >> 32 == 2),
        "the restarted coordinator's epoch is 2"
    );
}

#[test]
fn ricart_agrawala_uses_two_n_minus_one_per_entry() {
    for n in [2u64, 5, 8] {
        let s = live_and_count::<RicartAgrawala>(n, 20);
        let entries = n as usize * 20;
        assert_eq!(
            s.sent("REQUEST") + s.sent("REPLY"),
            entries * 2 * (n as usize - 1),
            "n={n}"
        );
    }
}

#[test]
fn lamport_uses_three_n_minus_one_per_entry() {
    for n in [2u64, 5, 8] {
        let s = live_and_count::<Lamport>(n, 20);
        let entries = n as usize * 20;
        let total = s.sent("REQUEST") + s.sent("ACK") + s.sent("RELEASE");
        assert_eq!(total, entries * 3 * (n as usize - 1), "n={n}");
    }
}

#[test]
fn token_ring_serves_everyone_one_pass_per_entry_under_full_contention() {
    for n in [2u64, 5, 8] {
        let mut s = sim::<TokenRing>(n, NetConfig::default(), FULL);
        let who: Vec<u64> = (1..=n).collect();
        assert!(run_to_done(&mut s, &who, 20, Duration::from_secs(60)));
        assert_eq!(assert_safe(&s, &[]), n as usize * 20);
        let entries = n as usize * 20;
        // Every pass under full contention delivers the token to a node that waits: one pass
        // per entry, give or take the first and last laps.
        let passes = s.sent("TOKEN");
        assert!(
            passes + n as usize >= entries && passes <= entries + 2 * n as usize,
            "n={n}: {passes} passes"
        );
    }
}

/// Safety under a rough network, pauses shorter than any timeout, and crashes of random
/// non-coordinators; returns entries over all seeds.
pub(super) fn safe_under_faults<P: Protocol + 'static>(seeds: u64, crash_ok: impl Fn(u64) -> bool) -> usize {
    let mut total = 0;
    for seed in 0..seeds {
        let mut s = sim::<P>(
            5,
            rough(seed),
            &[("think_ms", "2"), ("hold_ms", "2"), ("requests", "30")],
        );
        let mut rng = crate::rng::Rng::new(seed);
        let mut crashed = Vec::new();
        for step in 0..6 {
            s.run_for(Duration::from_millis(20));
            let victim = rng.range(1, 6);
            if step == 2 && crash_ok(victim) {
                crashed.push((victim, s.now()));
                s.crash(victim);
            } else if !crashed.iter().any(|c| c.0 == victim) {
                s.pause(victim);
                s.run_for(Duration::from_millis(10));
                s.resume(victim);
            }
        }
        s.run_for(Duration::from_secs(2));
        total += assert_safe(&s, &crashed);
    }
    total
}

#[test]
fn central_is_safe_under_loss_duplication_delays_pauses_and_crashes() {
    assert!(safe_under_faults::<Central>(40, |v| v != 5) > 100);
}

#[test]
fn ricart_agrawala_is_safe_under_faults() {
    assert!(safe_under_faults::<RicartAgrawala>(40, |_| true) > 40);
}

#[test]
fn lamport_is_safe_under_faults() {
    assert!(safe_under_faults::<Lamport>(40, |_| true) > 40);
}

#[test]
fn token_ring_is_safe_under_faults_and_regenerates_a_lost_token() {
    assert!(safe_under_faults::<TokenRing>(40, |_| true) > 100);
}

#[test]
fn a_token_lost_with_its_holder_is_regenerated_and_the_old_one_is_dropped_as_stale() {
    let mut s = sim::<TokenRing>(4, NetConfig::default(), &[("think_ms", "0"), ("hold_ms", "50")]);
    s.run_until(Duration::from_secs(1), |s| s.node(2).protocol().unwrap().has_token());
    // Node 2 holds the token for 50 ms; pause it well past the lost-token timeout.
    s.pause(2);
    s.run_for(Duration::from_secs(2));
    let gens: Vec<_> = [1, 3, 4]
        .iter()
        .map(|&i| s.node(i).protocol().unwrap().generation())
        .collect();
    assert!(gens.iter().all(|g| g.0 >= 2), "a new generation is in use: {gens:?}");
    s.resume(2);
    s.run_for(Duration::from_millis(500));
    let stale = s
        .events("ignore")
        .iter()
        .filter(|r| matches!(&r.event, Event::Ignore { reason, .. } if reason.contains("old generation")))
        .count();
    assert!(stale >= 1, "node 2's old token was dropped as stale");
    // The paused holder was inside when the new token was used: the resource saw it, and the
    // fencing token of the new generation is higher.
    assert!(!s.events("violation").is_empty());
}

#[test]
fn a_restarted_first_node_never_mints_a_second_token_of_the_same_generation() {
    // Nodes 1 (the first of the ring) and 2 restart while 3 or 4 has the token. Before the
    // first node kept its minted round on stable storage, node 1 minted generation (1, 1) again
    // at its restart, and node 2, remembering no pass of it, took that second token: two
    // tokens of one generation went round, and two nodes held the section at once.
    let mut s = sim::<TokenRing>(4, NetConfig::default(), &[("think_ms", "0"), ("hold_ms", "5")]);
    let far = |s: &crate::sim::Sim<super::Mutex<TokenRing>>| {
        exits(s, 1) >= 2 && [3, 4].iter().any(|&i| s.node(i).protocol().unwrap().has_token())
    };
    assert!(s.run_until(Duration::from_secs(2), far));
    let t = s.now();
    s.crash(1);
    s.crash(2);
    s.restart(2);
    s.restart(1);
    let before = exits(&s, 1);
    s.run_for(Duration::from_secs(3));
    assert_safe(&s, &[(1, t), (2, t)]);
    assert!(s.events("violation").is_empty());
    assert_eq!(minted(&s), vec!["(1, 1)"], "one token, minted once");
    assert!(exits(&s, 1) > before + 5, "the old token reaches the restarted node");
}

#[test]
fn no_generation_is_minted_twice_under_crashes_and_restarts() {
    let mut regenerations = 0;
    for seed in 0..30 {
        // Random delays; no loss or duplication, so that every lost token is a crash's doing.
        let net = NetConfig {
            drop: 0.0,
            duplicate: 0.0,
            ..rough(seed)
        };
        let mut s = sim::<TokenRing>(4, net, &[("think_ms", "1"), ("hold_ms", "2")]);
        let mut rng = crate::rng::Rng::new(seed);
        let mut crashed = Vec::new();
        for _ in 0..4 {
            s.run_for(Duration::from_millis(rng.range(5, 400)));
            // The first node more often than the others: it is the one that mints at start.
            let victim = if rng.chance(0.5) { 1 } else { rng.range(2, 5) };
            crashed.push((victim, s.now()));
            s.crash(victim);
            s.run_for(Duration::from_millis(rng.range(0, 50)));
            s.restart(victim);
        }
        s.run_for(Duration::from_secs(3));
        assert_safe(&s, &crashed);
        let gens = minted(&s);
        let mut distinct = gens.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), gens.len(), "seed {seed}: {gens:?}");
        regenerations += gens.len() - 1;
        assert!(
            exits(&s, 1) > 0 && s.events("cs_enter").last().unwrap().t > s.now().as_micros() as u64 - 1_000_000,
            "seed {seed}: the ring still serves"
        );
    }
    assert!(
        regenerations > 5,
        "tokens lost with a crashed holder were regenerated: {regenerations}"
    );
}

#[test]
fn regrant_gives_two_holders_and_fencing_rejects_the_stale_one() {
    for fencing in ["false", "true"] {
        let opts = [
            ("think_ms", "0"),
            ("hold_ms", "30"),
            ("regrant_ms", "100"),
            ("fencing", fencing),
        ];
        let mut s = sim::<Central>(3, NetConfig::default(), &opts);
        let first = crate::algo::mutex::testkit::first_to_enter(&mut s, Duration::from_secs(1), 3);
        // Paused mid-hold; its END comes after the coordinator regranted.
        s.pause(first);
        s.run_for(Duration::from_millis(300));
        s.resume(first);
        s.run_for(Duration::from_millis(300));
        let v = s.events("violation").len();
        let stale = s.events("reject_stale").len();
        assert!(s
            .events("suspect")
            .iter()
            .any(|r| matches!(r.event, Event::Suspect { target, .. } if target == first)));
        if fencing == "true" {
            assert_eq!(v, 0, "fenced");
            assert!(stale >= 1);
        } else {
            assert!(v >= 1, "two holders at once");
        }
    }
}

#[test]
fn bad_input_is_dropped_and_counted_never_a_crash() {
    use super::central::CentralMsg;
    use super::token_ring::TokenMsg;
    use super::MxMsg;
    use crate::algo::{Algorithm, Context, Setup};
    let all = setups(3, &[]);
    let coord: &Setup = &all[3];
    let mut c = super::Mutex::<Central>::new(coord);
    let mut rng = crate::rng::Rng::new(1);
    let mut out = Vec::new();
    let mut cx = Context::new(Duration::ZERO, coord.me, &mut rng, &mut out);
    // A request by a node that is not a participant (the resource), a RELEASE never granted.
    c.on_msg(&mut cx, RESOURCE_ID, MxMsg::Proto(CentralMsg::Request { req: 1 }));
    c.on_msg(&mut cx, 1, MxMsg::Proto(CentralMsg::Release { req: 7 }));
    c.on_msg(&mut cx, 1, MxMsg::Begin { req: 1, token: None });
    let ignored = out
        .iter()
        .filter(|c| matches!(c, crate::algo::Command::Record(Event::Ignore { .. })))
        .count();
    assert_eq!(ignored, 3);
    assert!(!out.iter().any(|c| matches!(c, crate::algo::Command::Send(..))));
    // A token of an old generation.
    let mut t = super::Mutex::<TokenRing>::new(&all[2]);
    let mut out = Vec::new();
    let mut cx = Context::new(Duration::ZERO, 2, &mut rng, &mut out);
    let tok = |gen| {
        MxMsg::Proto(TokenMsg::Token {
            gen,
            seq: 0,
            idle: 0,
            hops: 1,
        })
    };
    t.on_msg(&mut cx, 1, tok((5, 1)));
    t.on_msg(&mut cx, 1, tok((3, 3)));
    assert!(out.iter().any(
        |c| matches!(c, crate::algo::Command::Record(Event::Ignore { reason, .. }) if reason.contains("old generation"))
    ));
}

// Test-only like this file; said again so that tests/layers.rs knows the file for one.
#[cfg(test)]
#[path = "voting_tests.rs"]
mod voting;

#[test]
fn only_the_resources_messages_are_fences() {
    use super::ricart_agrawala::RaMsg;
    use super::wrapper::MxMsg;
    use crate::algo::Message;
    assert!(MxMsg::<RaMsg>::Begin { req: 1, token: None }.fence());
    assert!(MxMsg::<RaMsg>::End { req: 1 }.fence());
    assert!(!MxMsg::Proto(RaMsg::Request { ts: 1 }).fence());
    assert!(!MxMsg::<RaMsg>::Hello.fence());
}
