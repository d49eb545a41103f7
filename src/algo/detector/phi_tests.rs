//! Phi against values computed by hand, and the window's statistics.

use super::config::PhiParams;
use super::phi::{phi, Phi, Window};
use std::time::Duration;

fn close(a: f64, b: f64, eps: f64) -> bool {
    (a - b).abs() < eps
}

#[test]
fn phi_matches_hand_computed_values() {
    // At the mean: y = 0, e = 1, phi = -log10(1 - 1/2) = log10(2).
    assert!(close(phi(100.0, 100.0, 10.0), 2f64.log10(), 1e-12));
    // One deviation above: y = 1, e = exp(-1.668166) = 0.188590..., phi = -log10(e / (1 + e))
    // = -log10(0.158664...) = 0.79951...
    let e = (-1.668166f64).exp();
    assert!(close(e, 0.188_590, 1e-5));
    assert!(close(phi(110.0, 100.0, 10.0), 0.799_52, 1e-4));
    // Two deviations: y = 2, e = exp(-2 * (1.5976 + 0.282264)) = exp(-3.759728) = 0.023289,
    // phi = -log10(0.023289 / 1.023289) = 1.64283.
    assert!(close(phi(120.0, 100.0, 10.0), 1.642_83, 1e-4));
    // Three: e = exp(-3 * (1.5976 + 0.635094)) = 0.0012323, phi = 2.90948 (the exact normal
    // tail gives 2.8697: the approximation is close, not equal).
    assert!(close(phi(130.0, 100.0, 10.0), 2.909_48, 1e-4));
    // Below the mean: y = -1, e = exp(1.668166) = 5.30245, phi = -log10(1 - 1/6.30245) = 0.07503.
    assert!(close(phi(90.0, 100.0, 10.0), 0.075_03, 1e-4));
    // Rising with the silence.
    let mut last = 0.0;
    for t in (0..400).step_by(10) {
        let p = phi(t as f64, 200.0, 20.0);
        assert!(p >= last, "phi never falls as the silence grows");
        last = p;
    }
}

#[test]
fn the_window_keeps_the_newest_samples_and_their_statistics() {
    let mut w = Window::new(4, 100.0);
    // Seeded with 75 and 125.
    assert!(close(w.mean(), 100.0, 1e-9));
    assert!(close(w.std(), 25.0, 1e-9));
    for x in [100.0, 100.0, 100.0, 100.0] {
        w.add(x);
    }
    assert!(close(w.mean(), 100.0, 1e-9));
    assert!(close(w.std(), 0.0, 1e-6));
    w.add(200.0);
    // 100, 100, 100, 200: mean 125, variance 4375 - ... = (3*25^2 + 75^2)/4 = 1875.
    assert!(close(w.mean(), 125.0, 1e-9));
    assert!(close(w.std(), 1875f64.sqrt(), 1e-9));
}

fn params() -> PhiParams {
    PhiParams {
        threshold: 8.0,
        window: 100,
        min_std: Duration::from_millis(25),
        pause: Duration::from_millis(100),
        period: Duration::from_millis(100),
        relay: 6,
    }
}

#[test]
fn regular_beats_keep_phi_low_and_silence_raises_it_past_the_threshold() {
    let ms = Duration::from_millis;
    let mut p = Phi::new(params(), [2], ms(0), 0);
    for t in (100..=2000).step_by(100) {
        p.beat(2, t, &[], ms(t));
        assert!(p.phi(2, ms(t + 50)) < 1.0);
    }
    // Mean 100 (seeded 75/125 among twenty 100s), plus the pause: 200; std floor 25 ms.
    // phi = 8 at y ~= 5.23: about 200 + 131 = 331 ms of silence.
    assert!(!p.over(2, ms(2000 + 300)));
    assert!(p.over(2, ms(2000 + 340)));
    // A message of any kind restarts the silence.
    p.heard(2, ms(2340));
    assert!(!p.over(2, ms(2400)));
}

#[test]
fn the_moment_phi_reaches_the_threshold_is_computed_ahead() {
    let ms = Duration::from_millis;
    let mut p = Phi::new(params(), [2], ms(0), 0);
    for t in (100..=2000).step_by(100) {
        p.beat(2, t, &[], ms(t));
    }
    // As above: about 331 ms after the last beat; over from then on, and not a ms before.
    let due = p.due(2).expect("watched");
    assert!(due > ms(2000 + 320) && due < ms(2000 + 340), "{due:?}");
    assert!(p.over(2, due));
    assert!(!p.over(2, due - ms(1)));
    assert_eq!(p.due(3), None, "not watched");
}

#[test]
fn irregular_arrivals_widen_the_distribution() {
    let ms = Duration::from_millis;
    let mut steady = Phi::new(params(), [2], ms(0), 0);
    let mut lossy = Phi::new(params(), [2], ms(0), 0);
    let mut t = 0;
    for i in 0..40 {
        t += 100;
        steady.beat(2, t, &[], ms(t));
        // Every third beat lost: gaps of 200 ms among the 100s.
        if i % 3 != 0 {
            lossy.beat(2, t, &[], ms(t));
        }
    }
    lossy.beat(2, t, &[], ms(t));
    let silence = ms(t + 340);
    assert!(steady.over(2, silence));
    assert!(!lossy.over(2, silence), "a lossy link earns a longer allowance");
}

#[test]
fn a_beat_lost_on_its_link_is_made_up_by_a_peer_relaying_its_stamp() {
    let ms = Duration::from_millis;
    let mut direct = Phi::new(params(), [2, 3], ms(0), 0);
    let mut lost = Phi::new(params(), [2, 3], ms(0), 0);
    let mut relayed = Phi::new(params(), [2, 3], ms(0), 0);
    for (i, t) in (100..=3900u64).step_by(100).enumerate() {
        direct.beat(2, t, &[], ms(t));
        // Every third BEAT of 2 is lost on its link: gone for `lost`, and for `relayed` it
        // arrives 30 ms later by way of 3.
        if i % 3 != 0 {
            lost.beat(2, t, &[], ms(t));
            assert_eq!(relayed.beat(2, t, &[(3, t)], ms(t)), vec![2, 3]);
        } else {
            assert_eq!(relayed.beat(3, t, &[(2, t)], ms(t + 30)), vec![3, 2]);
        }
    }
    // The last BEAT (3,900) was lost on the link. The silence each allows after its last
    // arrival: the relays keep the spacing near 100 ms, so about the direct link's (331 ms);
    // the gaps of lost BEATs earn a much longer one.
    let allowed = |p: &Phi, last: u64| p.due(2).expect("watched") - ms(last);
    let (d, r, l) = (allowed(&direct, 3900), allowed(&relayed, 3930), allowed(&lost, 3800));
    assert!(r <= d + ms(10), "relayed {r:?} against direct {d:?}");
    assert!(l >= r + ms(100), "lost {l:?} against relayed {r:?}");
}

#[test]
fn only_a_stamp_newer_than_any_known_is_an_arrival() {
    let ms = Duration::from_millis;
    let mut p = Phi::new(params(), [2, 3], ms(0), 0);
    assert_eq!(p.beat(2, 10, &[(3, 20)], ms(100)), vec![2, 3]);
    // The same stamps again, by another path, or an older one: nothing arrives.
    assert_eq!(p.beat(3, 20, &[(2, 10)], ms(120)), Vec::<u64>::new());
    assert_eq!(
        p.beat(3, 19, &[(2, 9), (4, 1)], ms(130)),
        Vec::<u64>::new(),
        "4 is not watched"
    );
    // A relayed stamp says nothing about the relay's own silence; its own stamp does.
    assert_eq!(p.beat(3, 21, &[(2, 11)], ms(200)), vec![3, 2]);
    assert_eq!(p.known(), vec![(2, 11), (3, 21)]);
}

#[test]
fn a_restarted_peer_stamps_from_its_later_boot_so_its_beats_are_newer() {
    let ms = Duration::from_millis;
    // Node 2 booted at 1,000,000 us and beat 40 times; its restart boots at 9,000,000 us.
    let mut before = Phi::new(params(), [1], ms(0), 1_000_000);
    let last = (0..40).map(|_| before.next_stamp()).last().unwrap();
    let mut after = Phi::new(params(), [1], ms(0), 9_000_000);
    let first = after.next_stamp();
    assert!(first > last);
    let mut observer = Phi::new(params(), [2], ms(0), 0);
    assert_eq!(observer.beat(2, last, &[], ms(100)), vec![2]);
    assert_eq!(observer.beat(2, first, &[], ms(900)), vec![2]);
}

#[test]
fn a_beat_brief_reads_back_as_its_stamps() {
    use crate::algo::detector::{beat_of_brief, LiveMsg};
    use crate::algo::Message;
    let m = LiveMsg::Beat {
        stamp: 1_764_000_000_000_001,
        relayed: vec![(2, 17), (30, 1_764_000_000_000_123)],
    };
    let b = m.brief();
    assert_eq!(b, "BEAT(stamp=1764000000000001; 2:17 30:1764000000000123)");
    assert_eq!(
        beat_of_brief(&b),
        Some((1_764_000_000_000_001, vec![(2, 17), (30, 1_764_000_000_000_123)]))
    );
    let alone = LiveMsg::Beat {
        stamp: 5,
        relayed: vec![],
    }
    .brief();
    assert_eq!(beat_of_brief(&alone), Some((5, vec![])));
    assert_eq!(beat_of_brief("BEAT"), None, "an older trace's BEAT has no stamps");
    assert_eq!(beat_of_brief("BEAT(stamp=x; )"), None);
}

#[test]
fn a_beat_relays_phi_relay_stamps_and_a_period_relays_each_stamp_about_that_often() {
    let ms = Duration::from_millis;
    let peers: Vec<u64> = (2..=64).collect();
    let mut p = Phi::new(params(), peers.clone(), ms(0), 0);
    for &n in &peers {
        p.beat(n, 7, &[], ms(10));
    }
    let known = p.known();
    assert_eq!(known.len(), 63);
    for round in 0..3 {
        p.next_stamp();
        let mut times = std::collections::BTreeMap::<u64, usize>::new();
        let mut seen_by = std::collections::BTreeSet::new();
        for (j, &to) in peers.iter().enumerate() {
            let relayed = p.relayed(&known, 1, to, j);
            assert_eq!(relayed.len(), 6, "round {round}: a BEAT relays phi_relay stamps");
            assert!(relayed.iter().all(|&(k, _)| k != to), "nobody is told its own stamp");
            for (k, _) in relayed {
                *times.entry(k).or_default() += 1;
                seen_by.insert((k, to));
            }
        }
        // 63 BEATs of 6 tile the 63 stamps 6 times over; a stamp whose block went to its own
        // node goes out once fewer, and the stamp after the block once more.
        assert_eq!(times.len(), 63, "round {round}: every stamp relayed");
        assert!(times.values().all(|&t| (5..=7).contains(&t)), "{times:?}");
        assert_eq!(times.values().sum::<usize>(), 63 * 6);
        assert!(seen_by.len() >= 63 * 5);
    }
    // Every sender lists its peers in the same order; still, one period's BEATs to a peer
    // carry between them every stamp, not all the same block.
    let to = 10;
    let told: std::collections::BTreeSet<u64> = (1..=64u64)
        .filter(|&me| me != to)
        .flat_map(|me| {
            let j = (1..=64).filter(|&n| n != me).position(|n| n == to).expect("listed");
            p.relayed(&known, me, to, j)
        })
        .map(|(k, _)| k)
        .collect();
    assert_eq!(told.len(), 62, "{told:?}");
    // The blocks move on with the period: the same peer is told other stamps next period.
    let now = p.relayed(&known, 1, 2, 0);
    p.next_stamp();
    assert_ne!(p.relayed(&known, 1, 2, 0), now);
}

#[test]
fn with_no_more_peers_than_phi_relay_a_beat_relays_every_other_stamp() {
    let ms = Duration::from_millis;
    // 8 members: 7 peers, 6 of them besides the recipient, all relayed (as before phi_relay).
    let mut p = Phi::new(params(), 2..=8, ms(0), 0);
    for n in 2..=8 {
        p.beat(n, 7, &[], ms(10));
    }
    let known = p.known();
    for (j, to) in (2..=8).enumerate() {
        p.next_stamp();
        let relayed = p.relayed(&known, 1, to, j);
        let expected: Vec<_> = known.iter().copied().filter(|&(k, _)| k != to).collect();
        assert_eq!(relayed, expected);
    }
}

/// Phi hosted by the leadership wrapper, in the simulator.
pub(crate) mod hosted {
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

    pub(crate) fn sim(detector: &str, n: u64, net: NetConfig) -> Sim<Cr> {
        sim_with(detector, n, net, &[])
    }

    /// As [`sim`], with more `--set` keys.
    fn sim_with(detector: &str, n: u64, net: NetConfig, extra: &[(&str, &str)]) -> Sim<Cr> {
        let ids: Vec<NodeId> = (1..=n).collect();
        let mut setups = ring(&ids, &[1]);
        for s in &mut setups {
            s.opts.insert("detector".into(), detector.into());
            for (k, v) in extra {
                s.opts.insert(k.to_string(), v.to_string());
            }
        }
        Sim::new(net, setups, Cr::new)
    }

    #[test]
    fn phi_beats_every_phi_beat_ms_and_judges_silence_against_that_spacing() {
        // Five nodes each beating to its four peers every 40 ms for 2 s: 50 rounds.
        let mut fast = sim_with("phi", 5, NetConfig::default(), &[("phi_beat_ms", "40")]);
        fast.run_for(ms(2000));
        let beats = fast.sent("BEAT");
        assert!((5 * 4 * 49..=5 * 4 * 51).contains(&beats), "{beats} BEATs");
        // 0: the heartbeat period (100 ms), 20 rounds.
        let mut slow = sim_with("phi", 5, NetConfig::default(), &[("phi_beat_ms", "0")]);
        slow.run_for(ms(2000));
        let beats = slow.sent("BEAT");
        assert!((5 * 4 * 19..=5 * 4 * 21).contains(&beats), "{beats} BEATs");
        // Phi is computed from those beats: low while they come.
        for s in [&fast, &slow] {
            let now = s.node(1).liveness().phis(s.now());
            assert!(now.iter().all(|&(_, p)| p < 1.0), "{now:?}");
        }
        // And a crash is suspected by every other member sooner than with the slower beats.
        let td = |s: &mut Sim<Cr>| {
            s.crash(3);
            let at = s.now();
            s.run_for(ms(1000));
            let sus = suspicions(s, at);
            let last = [1, 2, 4, 5]
                .iter()
                .map(|&by| {
                    sus.iter()
                        .find(|r| r.node == Some(by) && matches!(r.event, Event::Suspect { target: 3, .. }))
                        .map(|r| r.t - at.as_micros() as u64)
                        .unwrap_or_else(|| panic!("node {by} never suspected 3"))
                })
                .max();
            last.expect("four observers")
        };
        let (f, s) = (td(&mut fast), td(&mut slow));
        assert!(f < s, "40 ms beats: {f} µs, 100 ms: {s} µs");
    }

    /// The default threshold.
    fn threshold() -> f64 {
        let opts = [("detector".to_string(), "phi".to_string())].into_iter().collect();
        match crate::algo::detector::Choice::from_opts(&opts, ms(100)) {
            crate::algo::detector::Choice::Phi(p) => p.threshold,
            other => panic!("{other:?}"),
        }
    }

    fn suspicions(s: &Sim<Cr>, after: Duration) -> Vec<&Record> {
        let from = after.as_micros() as u64;
        s.events("suspect").into_iter().filter(|r| r.t >= from).collect()
    }

    #[test]
    fn a_crashed_leader_is_suspected_by_phi_and_replaced() {
        let mut s = sim("phi", 5, NetConfig::default());
        s.run_for(ms(2000));
        assert!(suspicions(&s, ms(0)).is_empty(), "no suspicion while all run");
        assert!(s.sent("BEAT") > 0);
        assert_eq!(s.node(1).belief().1, Some(5));
        s.crash(5);
        let crashed = s.now();
        s.run_for(ms(1000));
        let sus = suspicions(&s, crashed);
        for by in 1..=4 {
            let r = sus
                .iter()
                .find(|r| r.node == Some(by) && matches!(r.event, Event::Suspect { target: 5, .. }))
                .unwrap_or_else(|| panic!("node {by} never suspected 5"));
            let Event::Suspect { phi, ref cause, .. } = r.event else {
                unreachable!()
            };
            assert_eq!(cause, "phi");
            // Judged the moment phi crossed the threshold, not at the next look a period later
            // (when it would be far above: phi grows faster than the square of the silence).
            let t = threshold();
            assert!(
                phi.is_some_and(|p| (t..t + 0.5).contains(&p)),
                "phi {phi:?} just over {t}"
            );
            assert!(r.t - crashed.as_micros() as u64 <= 600_000, "within 600 ms");
        }
        assert!(s.live().iter().all(|&i| s.node(i).belief().1 == Some(4)));
    }

    #[test]
    fn a_leader_killed_before_its_first_beat_is_suspected() {
        let mut s = sim("phi", 5, NetConfig::default());
        s.run_until(ms(1000), |s| s.node(1).belief().1 == Some(5));
        s.crash(5);
        let crashed = s.now();
        s.run_for(ms(1000));
        let sus = suspicions(&s, crashed);
        assert!(
            (1..=4).all(|by| sus.iter().any(|r| r.node == Some(by))),
            "{sus:?} {:?}",
            s.node(1).liveness().phis(s.now())
        );
    }

    #[test]
    fn a_paused_node_is_suspected_then_unsuspected_when_it_runs_again() {
        let mut s = sim("phi", 5, NetConfig::default());
        s.run_for(ms(1500));
        s.pause(3);
        s.run_for(ms(1000));
        for by in [1, 2, 4, 5] {
            assert!(s.node(by).liveness().is_suspected(3), "node {by} suspects 3");
            let phi = s.node(by).liveness().phis(s.now());
            assert!(phi.iter().any(|&(n, p)| n == 3 && p >= 8.0));
            assert!(
                phi.iter().all(|&(n, p)| n == 3 || p < 1.0),
                "the others are fine: {phi:?}"
            );
        }
        s.resume(3);
        s.run_for(ms(300));
        for by in [1, 2, 4, 5] {
            assert!(!s.node(by).liveness().is_suspected(3), "node {by} withdrew it");
        }
        assert_eq!(s.events("unsuspect").len(), 4);
    }

    #[test]
    fn a_node_that_was_itself_stopped_accuses_nobody() {
        let mut s = sim("phi", 5, NetConfig::default());
        s.run_for(ms(1500));
        s.pause(2);
        s.run_for(ms(2000));
        let resumed = s.now();
        s.resume(2);
        s.run_for(ms(1000));
        let own: Vec<_> = suspicions(&s, resumed)
            .into_iter()
            .filter(|r| r.node == Some(2))
            .collect();
        assert!(own.is_empty(), "node 2 slept through the silence: {own:?}");
        assert!(s.ids().iter().all(|&i| !s.node(i).liveness().is_suspected(2)));
    }

    #[test]
    fn a_peer_cut_off_from_one_observer_is_heard_of_through_the_others_until_it_crashes() {
        let mut s = sim("phi", 5, NetConfig::default());
        s.run_for(ms(1500));
        // Only the link between 1 and 2 is cut: both still hear of each other's stamps.
        s.partition(&[1], &[2]);
        let cut = s.now();
        s.run_for(ms(2000));
        assert!(suspicions(&s, cut).is_empty(), "{:?}", suspicions(&s, cut));
        let phi = s.node(1).liveness().phis(s.now());
        assert!(phi.iter().all(|&(_, p)| p < 1.0), "{phi:?}");
        // Crashed, 2 sends no stamp any more, and no relay has a newer one.
        s.crash(2);
        let crashed = s.now();
        s.run_for(ms(1000));
        let by_1 = suspicions(&s, crashed)
            .into_iter()
            .find(|r| r.node == Some(1) && matches!(r.event, Event::Suspect { target: 2, .. }))
            .map(|r| r.t - crashed.as_micros() as u64);
        assert!(by_1.is_some_and(|t| t <= 600_000), "{by_1:?}");
    }

    #[test]
    fn at_thirty_two_nodes_relaying_six_stamps_a_beat_still_makes_up_lost_beats() {
        // 10% loss and 1..40 ms of delay on every link, 32 members: a BEAT relays 6 stamps
        // of 31, so each stamp reaches an observer by about 6 relays a period, as among 8.
        let net = NetConfig {
            seed: 3,
            min_delay: ms(1),
            max_delay: ms(40),
            drop: 0.1,
            duplicate: 0.0,
        };
        let mut s = sim("phi", 32, net);
        s.run_for(ms(6000));
        assert!(suspicions(&s, ms(0)).is_empty(), "{:?}", suspicions(&s, ms(0)));
        let beats = s.sent("BEAT");
        assert!(beats >= 32 * 31 * 70, "{beats} BEATs");
        s.crash(17);
        let crashed = s.now();
        s.run_for(ms(1000));
        let sus = suspicions(&s, crashed);
        for by in s.live() {
            let t = sus
                .iter()
                .find(|r| r.node == Some(by) && matches!(r.event, Event::Suspect { target: 17, .. }))
                .map(|r| r.t - crashed.as_micros() as u64);
            assert!(t.is_some_and(|t| t <= 700_000), "node {by}: {t:?}");
        }
        assert!(
            sus.iter().all(|r| matches!(r.event, Event::Suspect { target: 17, .. })),
            "only the crashed node is suspected"
        );
    }

    /// A run of 20 s of `detector` on 6 nodes with 10% loss and 1..40 ms of delay, nobody failing.
    pub(crate) fn lossy_run(detector: &str, seed: u64) -> Sim<Cr> {
        let net = NetConfig {
            seed,
            min_delay: ms(1),
            max_delay: ms(40),
            drop: 0.1,
            duplicate: 0.0,
        };
        let mut s = sim(detector, 6, net);
        s.run_for(ms(20_000));
        s
    }

    /// False suspicions of running nodes over [`lossy_run`].
    pub(crate) fn false_suspicions(detector: &str, seed: u64) -> usize {
        lossy_run(detector, seed).events("suspect").len()
    }

    #[test]
    fn under_loss_and_jitter_phi_is_wrong_far_less_often_than_a_fixed_timeout() {
        let (fixed, phi): (usize, usize) = (1..=3)
            .map(|seed| (false_suspicions("fixed", seed), false_suspicions("phi", seed)))
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        assert!(fixed > 0, "the fixed timeout is fooled by 10% loss and 40 ms of jitter");
        assert!(phi * 5 <= fixed, "phi {phi} against fixed {fixed}");
    }
}
