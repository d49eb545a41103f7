//! SWIM with Lifeguard, hosted by the leadership wrapper in the simulator: suspicion and
//! refutation, incarnations, indirect probes, the observer's own stall, and the suspicion
//! timeout shrinking with confirmations.

use super::swim::{suspicion_timeout, State};
use crate::algo::election::chang_roberts::ChangRoberts;
use crate::algo::election::Leadership;
use crate::algo::{Event, NodeId};
use crate::sim::{ring, NetConfig, Sim};
use crate::trace::Record;
use std::time::Duration;

type Cr = Leadership<ChangRoberts>;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn sim(n: u64) -> Sim<Cr> {
    sim_with(n, NetConfig::default(), &[])
}

/// A ring of `n` under SWIM on `net`, with the extra `--set` pairs `keys`.
fn sim_with(n: u64, net: NetConfig, keys: &[(&str, &str)]) -> Sim<Cr> {
    let ids: Vec<NodeId> = (1..=n).collect();
    let mut setups = ring(&ids, &[1]);
    for s in &mut setups {
        s.opts.insert("detector".into(), "swim".into());
        for (k, v) in keys {
            s.opts.insert((*k).into(), (*v).into());
        }
    }
    Sim::new(net, setups, Cr::new)
}

fn since<'a>(s: &'a Sim<Cr>, kind: &str, after: Duration) -> Vec<&'a Record> {
    let from = after.as_micros() as u64;
    s.events(kind).into_iter().filter(|r| r.t >= from).collect()
}

#[test]
fn the_suspicion_timeout_shrinks_with_confirmations_as_memberlist_computes_it() {
    let (min, max) = (ms(270), ms(1080));
    // k = 0 expected: the minimum at once.
    assert_eq!(suspicion_timeout(0, 0, min, max), min);
    // k = 1: none yet is the maximum; one is the minimum.
    assert_eq!(suspicion_timeout(0, 1, min, max), max);
    assert_eq!(suspicion_timeout(1, 1, min, max), min);
    // k = 3: frac = ln 2 / ln 4 = 0.5 -> 1080 - 0.5 * 810 = 675; ln 3 / ln 4 = 0.7925 -> 438.
    assert_eq!(suspicion_timeout(1, 3, min, max), ms(675));
    assert_eq!(suspicion_timeout(2, 3, min, max), ms(438));
    assert_eq!(suspicion_timeout(3, 3, min, max), min);
    assert_eq!(suspicion_timeout(9, 3, min, max), min, "never below the minimum");
}

#[test]
fn a_crashed_node_is_suspected_gossiped_and_confirmed_dead() {
    let mut s = sim(6);
    s.run_for(ms(2000));
    assert!(s.events("suspect").is_empty(), "no suspicion while all run");
    assert!(s.sent("PING") > 0 && s.sent("SWIM_ACK") > 0);
    s.crash(3);
    let crashed = s.now();
    s.run_for(ms(3000));
    let sus = since(&s, "suspect", crashed);
    assert!(sus.iter().all(|r| matches!(r.event, Event::Suspect { target: 3, .. })));
    for by in [1, 2, 4, 5, 6] {
        let first = sus
            .iter()
            .find(|r| r.node == Some(by))
            .expect("every member suspects 3");
        assert!(
            first.t - crashed.as_micros() as u64 <= 1_000_000,
            "node {by} within 1 s"
        );
        assert_eq!(s.node(by).liveness().swim().unwrap().state(3), Some(&State::Dead));
    }
    // Some suspected it first hand, the others by gossip.
    assert!(sus
        .iter()
        .any(|r| matches!(&r.event, Event::Suspect { cause, incarnation: Some(0), .. } if cause == "swim")));
    assert!(sus
        .iter()
        .any(|r| matches!(&r.event, Event::Suspect { cause, .. } if cause == "gossip")));
    let confirms = since(&s, "confirm", crashed);
    assert!(!confirms.is_empty());
    assert!(confirms
        .iter()
        .all(|r| matches!(r.event, Event::Confirm { target: 3, .. })));
}

#[test]
fn a_briefly_paused_node_refutes_with_a_higher_incarnation_and_is_never_confirmed() {
    let mut s = sim(6);
    s.run_for(ms(2000));
    s.pause(4);
    let paused = s.now();
    // Longer than a probe period and its timeout, shorter than the shortest suspicion timeout.
    s.run_until(paused + ms(2000), |s| !s.events("suspect").is_empty());
    assert!(!s.events("suspect").is_empty(), "someone suspects 4");
    s.run_for(ms(50));
    s.resume(4);
    s.run_for(ms(1500));
    assert!(
        s.events("confirm").is_empty(),
        "paused less than the suspicion timeout: never confirmed"
    );
    let refutes = s.events("refute");
    assert!(refutes.iter().all(|r| r.node == Some(4)));
    assert!(refutes.iter().any(|r| matches!(
        r.event,
        Event::Refute {
            incarnation: 0,
            refuted_by: 1
        }
    )));
    assert_eq!(s.node(4).liveness().swim().unwrap().inc, 1);
    for by in [1, 2, 3, 5, 6] {
        assert!(!s.node(by).liveness().is_suspected(4), "node {by} took the refutation");
    }
    assert!(s
        .events("unsuspect")
        .iter()
        .all(|r| matches!(r.event, Event::Unsuspect { target: 4 })));
}

#[test]
fn a_node_cut_off_from_one_member_is_reached_through_indirect_probes() {
    let mut s = sim(5);
    s.run_for(ms(500));
    s.partition(&[1], &[3]);
    s.run_for(ms(4000));
    assert!(s.sent("PING_REQ") > 0, "1 asked others to ping 3");
    let wrong: Vec<_> = s
        .events("suspect")
        .into_iter()
        .filter(|r| matches!(r.event, Event::Suspect { target: 1 | 3, .. }))
        .collect();
    assert!(wrong.is_empty(), "the others vouch for 1 and 3: {wrong:?}");
}

#[test]
fn a_node_resumed_from_a_long_pause_accuses_nobody_and_refutes_what_it_missed() {
    let mut s = sim(6);
    s.run_for(ms(2000));
    s.pause(2);
    s.run_for(ms(3000));
    let resumed = s.now();
    s.resume(2);
    s.run_for(ms(10));
    // Its own stall set the multiplier to 8; the one probe answered since takes off one.
    let lhm = s.node(2).liveness().swim().unwrap().lhm;
    assert!(lhm >= 7, "its own stall stretches its timeouts to the most: {lhm}");
    s.run_for(ms(3000));
    let own: Vec<_> = since(&s, "suspect", resumed)
        .into_iter()
        .filter(|r| r.node == Some(2))
        .collect();
    assert!(own.is_empty(), "node 2 accuses nobody: {own:?}");
    // It was declared dead meanwhile, and comes back with a higher incarnation.
    assert!(!s.events("confirm").is_empty());
    assert!(s.events("refute").iter().any(|r| r.node == Some(2)));
    for by in [1, 3, 4, 5, 6] {
        assert!(!s.node(by).liveness().is_suspected(2), "node {by} has 2 back");
    }
}

#[test]
fn confirmations_from_other_members_shorten_the_suspicion() {
    // Eight members, swim_suspicion_mult=4: two confirmations expected; a crash is confirmed
    // sooner than the longest timeout once others suspect it too.
    let mut s = sim_with(8, NetConfig::default(), &[("swim_suspicion_mult", "4")]);
    s.run_for(ms(2000));
    let (min, max, k) = s.node(1).liveness().swim().unwrap().suspicion_bounds();
    assert_eq!(k, 2);
    s.crash(5);
    s.run_for(ms(4000));
    let confirms = s.events("confirm");
    let first = confirms.first().expect("confirmed");
    let Event::Confirm {
        confirmations,
        suspected_ms,
        ..
    } = first.event
    else {
        unreachable!()
    };
    assert!(confirmations >= 1);
    assert!(
        suspected_ms < max.as_millis() as u64,
        "{suspected_ms} ms: shortened from {max:?} (min {min:?})"
    );
}

#[test]
fn under_loss_and_jitter_swim_confirms_nobody_and_suspects_first_hand_less_than_a_fixed_timeout() {
    use super::phi_tests::hosted::{false_suspicions, lossy_run};
    let (mut fixed, mut first_hand, mut confirms) = (0, 0, 0);
    for seed in 1..=3 {
        fixed += false_suspicions("fixed", seed);
        let s = lossy_run("swim", seed);
        let sus = s.events("suspect");
        first_hand += sus
            .iter()
            .filter(|r| matches!(&r.event, Event::Suspect { cause, .. } if cause == "swim"))
            .count();
        confirms += s.events("confirm").len();
    }
    assert!(fixed > 0, "the fixed timeout is fooled by 10% loss and 40 ms of jitter");
    assert_eq!(confirms, 0, "nobody running is declared dead");
    assert!(first_hand < fixed, "swim {first_hand} against fixed {fixed}");
}

/// Eight members with the default SWIM settings and `net`.
fn sim8(net: NetConfig) -> Sim<Cr> {
    sim_with(8, net, &[])
}

/// Runs of 8 nodes under 1-5 ms of jitter, each at a different point of the probe cycle (seed,
/// offset in ms past 2 s): the phases a pause is tried at.
fn phases() -> impl Iterator<Item = (u64, u64, Sim<Cr>)> {
    (1..=6).flat_map(|seed| {
        [0, 70, 140, 210].into_iter().map(move |offset| {
            let net = NetConfig {
                seed,
                min_delay: ms(1),
                max_delay: ms(5),
                ..NetConfig::default()
            };
            let mut s = sim8(net);
            s.run_for(ms(2000 + offset));
            (seed, offset, s)
        })
    })
}

/// Every other node has the paused node 4 back, unsuspected.
fn all_have_4_back(s: &Sim<Cr>, seed: u64, offset: u64) {
    for by in [1, 2, 3, 5, 6, 7, 8] {
        assert!(
            !s.node(by).liveness().is_suspected(4),
            "seed {seed} +{offset}: node {by} has 4 back"
        );
    }
}

#[test]
fn a_node_resumed_just_after_it_was_first_suspected_is_never_confirmed() {
    // The demo's failure: the first suspicion comes late in the pause, the resumed node hears
    // of it at once and refutes, and its refutation must reach every suspecter before the
    // shortest suspicion timeout runs out, although its own probes are stretched by its stall.
    let mut confirmed = Vec::new();
    for (seed, offset, mut s) in phases() {
        s.pause(4);
        let paused = s.now();
        assert!(s.run_until(paused + ms(3000), |s| !s.events("suspect").is_empty()));
        s.run_for(ms(10));
        s.resume(4);
        let resumed = s.now();
        s.run_for(ms(5000));
        for r in s.events("confirm") {
            confirmed.push((seed, offset, r.node, (r.t - resumed.as_micros() as u64) / 1000));
        }
        all_have_4_back(&s, seed, offset);
    }
    assert!(
        confirmed.is_empty(),
        "confirmed dead (seed, offset, by, ms after the resume): {confirmed:?}"
    );
}

#[test]
fn a_node_paused_for_less_than_the_shortest_suspicion_timeout_is_never_confirmed() {
    // The demo's pause (600 ms) against the default settings, started at many points of the
    // probe cycle and with some jitter, so that it is not one lucky phase.
    let mut confirmed = Vec::new();
    for (seed, offset, mut s) in phases() {
        let (min, _, _) = s.node(1).liveness().swim().unwrap().suspicion_bounds();
        assert!(ms(600) < min, "the pause is shorter than the shortest timeout {min:?}");
        s.pause(4);
        s.run_for(ms(600));
        s.resume(4);
        s.run_for(ms(5000));
        for r in s.events("confirm") {
            confirmed.push((seed, offset, r.node, r.event.clone()));
        }
        all_have_4_back(&s, seed, offset);
    }
    assert!(
        confirmed.is_empty(),
        "confirmed dead after a 600 ms pause: {confirmed:?}"
    );
}

/// PINGs sent to `target` at or after `from`.
fn pings_to(s: &Sim<Cr>, target: NodeId, from: Duration) -> usize {
    s.events("send")
        .into_iter()
        .filter(|r| r.t >= from.as_micros() as u64)
        .filter(|r| matches!(&r.event, Event::Send { to, msg, .. } if *to == target && msg == "PING"))
        .count()
}

/// Six members after 2 s; node 3 crashed and declared dead by every other member.
fn dead_3_of_6() -> Sim<Cr> {
    let mut s = sim(6);
    s.run_for(ms(2000));
    s.crash(3);
    let all_dead = |s: &Sim<Cr>| {
        [1, 2, 4, 5, 6]
            .iter()
            .all(|&by| s.node(by).liveness().swim().unwrap().state(3) == Some(&State::Dead))
    };
    assert!(s.run_until(s.now() + ms(5000), all_dead), "3 is declared dead by all");
    s
}

#[test]
fn a_member_declared_dead_is_no_longer_probed() {
    let mut s = dead_3_of_6();
    let dead = s.now();
    s.run_for(ms(5000));
    assert_eq!(
        pings_to(&s, 3, dead),
        0,
        "nobody spends a probe period on a dead member"
    );
    // The probe periods go to the living: each of the five probes about once a period.
    let pings = s
        .events("send")
        .into_iter()
        .filter(|r| r.t >= dead.as_micros() as u64 && matches!(&r.event, Event::Send { msg, .. } if msg == "PING"))
        .count();
    assert!(pings >= 5 * 5000 / 300 * 9 / 10, "{pings} PINGs in 5 s");
}

#[test]
fn a_member_declared_dead_that_restarts_rejoins_by_refuting_its_death() {
    let mut s = dead_3_of_6();
    s.run_for(ms(1000));
    s.restart(3);
    let back = s.now();
    // Nobody probes it; its own first PING (or announcement) is answered with its death,
    // which it refutes with a higher incarnation.
    let all_alive = |s: &Sim<Cr>| {
        [1, 2, 4, 5, 6]
            .iter()
            .all(|&by| s.node(by).liveness().swim().unwrap().state(3) == Some(&State::Alive))
    };
    assert!(
        s.run_until(back + ms(2000), all_alive),
        "every member has 3 back within 2 s"
    );
    assert!(s.node(3).liveness().swim().unwrap().inc >= 1);
    for by in [1, 2, 4, 5, 6] {
        assert!(!s.node(by).liveness().is_suspected(3), "node {by}");
    }
    s.run_for(ms(2000));
    assert!(pings_to(&s, 3, back) > 0, "3 is probed again once it is back");
}

/// SWIM as the paper has it: one probe a period, of 200 ms, judged at the period's end.
const ONE_PROBE: &[(&str, &str)] = &[
    ("swim_probes", "1"),
    ("swim_period_ms", "200"),
    ("swim_window", "period"),
];

/// PINGs `from` sent to `target` in [`at`, `until`), with their times (µs).
fn pings_between(s: &Sim<Cr>, from: NodeId, target: NodeId, at: Duration, until: Duration) -> Vec<u64> {
    let (a, b) = (at.as_micros() as u64, until.as_micros() as u64);
    s.events("send")
        .into_iter()
        .filter(|r| r.node == Some(from) && (a..b).contains(&r.t))
        .filter(|r| matches!(&r.event, Event::Send { to, msg, .. } if *to == target && msg == "PING"))
        .map(|r| r.t)
        .collect()
}

/// Crashes node 3 of `s` after 2 s and runs 3 s more; the PINGs that the first member to
/// suspect it first hand sent it in the 200 ms (a probe period) before that suspicion, with one
/// probe a 200 ms period (`swim_probes=1`: overlapping probes, and the PING-REQs they send to
/// the same member, would mix other PINGs of it into the window).
fn pings_before_first_suspicion_of_3(s: &mut Sim<Cr>) -> Vec<u64> {
    s.run_for(ms(2000));
    s.crash(3);
    let crashed = s.now();
    s.run_for(ms(3000));
    let first = s
        .events("suspect")
        .into_iter()
        .find(|r| {
            r.t >= crashed.as_micros() as u64
                && matches!(&r.event, Event::Suspect { target: 3, cause, .. } if cause == "swim")
        })
        .expect("3 suspected first hand");
    let by = first.node.expect("a node");
    let end = Duration::from_micros(first.t);
    pings_between(s, by, 3, end.saturating_sub(ms(200)), end)
}

#[test]
fn an_unanswered_ping_is_sent_again_every_retry_interval_while_an_answer_could_still_count() {
    // Within the period (200 ms; probe timeout 70 ms) the PINGs went at 0, 20, .., 120 ms: the
    // next would leave less than a probe timeout for the ACK before the probe is judged.
    let pings = pings_before_first_suspicion_of_3(&mut sim_with(5, NetConfig::default(), ONE_PROBE));
    assert_eq!(pings.len(), 7, "{pings:?}");
    for w in pings.windows(2) {
        assert_eq!(w[1] - w[0], 20_000, "{pings:?}");
    }
    // A live member answers the first PING: no PING is sent twice.
    // Ended between two rounds (one every 60 ms, on the clock's grid), with no PING in flight.
    let mut calm = sim(5);
    calm.run_for(ms(3030));
    let (pings, acks) = (calm.sent("PING"), calm.sent("SWIM_ACK"));
    assert_eq!(pings, acks, "every PING answered once, none re-sent");
}

#[test]
fn without_retries_a_probe_sends_one_direct_ping() {
    let keys = [ONE_PROBE, &[("swim_retry_ms", "0")]].concat();
    let pings = pings_before_first_suspicion_of_3(&mut sim_with(5, NetConfig::default(), &keys));
    assert_eq!(pings.len(), 1, "{pings:?}");
}

/// Each member's targets over `rounds` periods, for members 1..=n all alive.
fn schedule(n: u64, rounds: usize) -> Vec<Vec<NodeId>> {
    let opts = [("detector".to_string(), "swim".to_string())].into_iter().collect();
    let super::Choice::Swim(p) = super::Choice::from_opts(&opts, ms(100)) else {
        unreachable!("swim asked for")
    };
    (1..=n)
        .map(|me| {
            let s = super::swim::Swim::new(p, me, 1..=n, n as usize);
            (0..rounds).map(|r| s.target_in_round(r).expect("members")).collect()
        })
        .collect()
}

#[test]
fn in_each_period_members_in_step_pair_up_and_every_pair_meets_once_a_lap() {
    // Eight members: each round is a perfect matching (every member pinged once, by the
    // member it pings), and the seven rounds of a lap pair every two members once.
    let t = schedule(8, 14);
    let mut met = std::collections::BTreeSet::new();
    for r in 0..14 {
        for i in 0..8 {
            let target = t[i][r];
            assert_ne!(target, i as u64 + 1);
            assert_eq!(
                t[target as usize - 1][r],
                i as u64 + 1,
                "round {r}: {} and {target} pair",
                i + 1
            );
            if r < 7 {
                met.insert((target.min(i as u64 + 1), target.max(i as u64 + 1)));
            }
        }
        assert_eq!(t[0][r], t[0][r % 7], "the next lap repeats the first");
    }
    assert_eq!(met.len(), 8 * 7 / 2);
    // Seven: six paired each round, the seventh pings the member after it; every member is
    // pinged in six rounds of each seven, and pings every other member in a lap.
    let t = schedule(7, 7);
    for (i, targets) in t.iter().enumerate() {
        let pinged = (0..7).filter(|&r| t.iter().any(|x| x[r] == i as u64 + 1)).count();
        assert!(pinged >= 6, "member {} pinged in {pinged} rounds", i + 1);
        let distinct: std::collections::BTreeSet<_> = targets.iter().collect();
        assert!(distinct.len() >= 5, "member {}: {targets:?}", i + 1);
    }
}

#[test]
fn a_crashed_member_is_pinged_and_suspected_within_two_periods() {
    // Members in step ping the crashed one in the next period: first suspected at the end of
    // it, at most two periods after the crash wherever in a period it falls.
    for offset in [0, 50, 110, 170] {
        let mut s = sim(8);
        s.run_for(ms(2000 + offset));
        s.crash(5);
        let at = s.now();
        s.run_for(ms(1000));
        let first = since(&s, "suspect", at)
            .into_iter()
            .find(|r| matches!(r.event, Event::Suspect { target: 5, .. }))
            .map(|r| r.t - at.as_micros() as u64);
        assert!(first.is_some_and(|t| t <= 400_000), "offset {offset}: {first:?}");
    }
}

/// A ring of 8 under SWIM with `keys`, run 2 s, then member 5 crashed: how many probes member
/// 1 started in the second second, and of the first first-hand suspicion of 5, how long after
/// the first PING of that probe and after the crash it came (ms).
fn crash_judged(net: NetConfig, keys: &[(&str, &str)]) -> (usize, u64, u64) {
    let mut s = sim_with(8, net, keys);
    s.run_for(ms(2000));
    let starts = s
        .events("send")
        .into_iter()
        .filter(|r| r.node == Some(1) && r.t >= 1_000_000)
        .filter_map(|r| match &r.event {
            Event::Send { msg, brief, .. } if msg == "PING" => brief.split("seq: ").nth(1).map(|x| {
                x.split(|c: char| !c.is_ascii_digit())
                    .next()
                    .unwrap_or_default()
                    .to_string()
            }),
            _ => None,
        })
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    s.crash(5);
    let crashed = s.now();
    s.run_for(ms(1000));
    let first = since(&s, "suspect", crashed)
        .into_iter()
        .find(|r| matches!(&r.event, Event::Suspect { target: 5, cause, .. } if cause == "swim"))
        .expect("5 suspected first hand");
    let by = first.node.expect("a node");
    let pings = pings_between(&s, by, 5, crashed, Duration::from_micros(first.t));
    let judged = (first.t - pings[0]) / 1000;
    (starts, judged, (first.t - crashed.as_micros() as u64) / 1000)
}

#[test]
fn a_member_starts_swim_probes_probes_a_period_and_judges_each_a_period_after_its_first_ping() {
    // Four probes a 240 ms period, one every 60 ms, to the next member of the round-robin
    // tournament each; with `swim_window=period` a crashed member is suspected first hand
    // exactly a period after the first PING that member's probe sent it. Member 1's own probes
    // are counted (distinct seqs), none of the PINGs it relays, since nothing is lost: about
    // 1000 / 60 a second.
    let (starts, judged, td) = crash_judged(NetConfig::default(), &[("swim_window", "period")]);
    assert!((15..=18).contains(&starts), "{starts} probes in a second");
    assert_eq!(judged, 240);
    assert!(td <= 300, "within a period and an interval: {td} ms");
}

#[test]
fn with_round_trips_measured_a_probe_is_judged_after_its_timeout_and_two_of_them_at_least_half_a_period() {
    // The defaults (`swim_window=rtt`). The simulator's default network answers within a few
    // ms: the probe timeout (70 ms) and two round trips are under half a period, so a probe is
    // judged half a period (120 ms) after its first PING.
    let (starts, judged, td) = crash_judged(NetConfig::default(), &[]);
    assert!((15..=18).contains(&starts), "{starts} probes in a second");
    assert_eq!(judged, 120);
    assert!(td <= 180, "within half a period and an interval: {td} ms");
    // Round trips of 40-100 ms: 70 ms and two round trips of up to about 100 ms are more than
    // a period, so the probe waits its whole period.
    let slow = NetConfig {
        seed: 3,
        min_delay: ms(20),
        max_delay: ms(50),
        ..NetConfig::default()
    };
    let (_, judged, _) = crash_judged(slow, &[]);
    assert_eq!(judged, 240);
    // Round trips of 10-30 ms: judged in between, 70 ms and two bounds of 30-60 ms (the
    // slowest recent sample, or the mean and four deviations) after its first PING.
    let fair = NetConfig {
        seed: 3,
        min_delay: ms(5),
        max_delay: ms(15),
        ..NetConfig::default()
    };
    let (_, judged, _) = crash_judged(fair, &[]);
    assert!((130..=190).contains(&judged), "{judged} ms");
}

/// Every member's local health multiplier but `except`'s.
fn lhms(s: &Sim<Cr>, n: u64, except: NodeId) -> Vec<u32> {
    (1..=n)
        .filter(|&b| b != except)
        .map(|b| s.node(b).liveness().swim().unwrap().lhm)
        .collect()
}

#[test]
fn finding_a_crash_leaves_no_members_health_multiplier_raised() {
    // A probe judged at its window (half a period here) came before its helpers' NACKs, which
    // go a probe timeout after the PING-REQ: counted then, all were missing, and each prober
    // of the crashed member took its multiplier to swim_k (6), a probe period 7 times as long,
    // for good. The NACKs are now counted at the period's end.
    for hold in ["rtt", "off"] {
        let mut s = sim_with(8, NetConfig::default(), &[("swim_hold", hold)]);
        s.run_for(ms(2000));
        s.crash(3);
        let crashed = s.now();
        let all_dead = s.run_until(crashed + ms(5000), |s| {
            [1, 2, 4, 5, 6, 7, 8]
                .iter()
                .all(|&b| s.node(b).liveness().swim().unwrap().state(3) == Some(&State::Dead))
        });
        assert!(all_dead, "{hold}: 3 declared dead by all");
        assert_eq!(lhms(&s, 8, 3), vec![0; 7], "{hold}");
    }
}

#[test]
fn a_probe_answered_by_its_targets_own_ping_lowers_the_health_multiplier() {
    // In step, a member hears its partner's PING before the ACK of its own; a multiplier that
    // only an ACK lowered stayed where a stall had put it.
    let mut s = sim(6);
    s.run_for(ms(2000));
    s.pause(2);
    s.run_for(ms(400));
    s.resume(2);
    s.run_for(ms(10));
    let lhm = s.node(2).liveness().swim().unwrap().lhm;
    assert!(
        lhm >= 7,
        "its stall sets it to the most (8), less a probe answered since: {lhm}"
    );
    // At LHM l the next probe is l + 1 rounds (60 ms each) away: 8 down to 0 takes 44 rounds.
    s.run_for(ms(60 * 44 + 500));
    assert_eq!(s.node(2).liveness().swim().unwrap().lhm, 0);
}

#[test]
fn a_live_members_failed_probe_is_refuted_to_its_prober_and_never_gossiped() {
    // `swim_hold=rtt`: node 4 is cut off until the first member suspects it (its PINGs and
    // their relays all lost), then the links heal. Told first, node 4 refutes to its
    // suspecters, and no member believes the mistake on another's word. With swim_hold=off the
    // suspicion is gossiped at once and members who never probed 4 hold it too.
    for hold in ["rtt", "off"] {
        let mut s = sim_with(6, NetConfig::default(), &[("swim_hold", hold)]);
        s.run_for(ms(2000));
        s.partition(&[4], &[1, 2, 3, 5, 6]);
        let cut = s.now();
        assert!(s.run_until(cut + ms(2000), |s| !s.events("suspect").is_empty()));
        s.heal();
        s.run_for(ms(1500));
        // Node 4, cut off, suspects others too: only the others' suspicions of it are looked at.
        let sus: Vec<_> = since(&s, "suspect", cut)
            .into_iter()
            .filter(|r| matches!(r.event, Event::Suspect { target: 4, .. }))
            .collect();
        let on_word = sus
            .iter()
            .filter(|r| matches!(&r.event, Event::Suspect { cause, .. } if cause == "gossip"))
            .count();
        match hold {
            "rtt" => assert_eq!(on_word, 0, "{sus:?}"),
            _ => assert!(on_word > 0, "{sus:?}"),
        }
        assert!(s.events("refute").iter().any(|r| r.node == Some(4)), "{hold}");
        assert!(s.events("confirm").is_empty(), "{hold}");
        for b in [1, 2, 3, 5, 6] {
            assert!(!s.node(b).liveness().is_suspected(4), "{hold}: node {b}");
        }
    }
}
