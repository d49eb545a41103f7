//! `detector_watch`: the fixed detector watching every member it reaches (`all`) against its
//! default of watching only what its host waits on, in the simulator; and the refusals.

use crate::algo::election::chang_roberts::ChangRoberts;
use crate::algo::election::Leadership;
use crate::algo::{Event, NodeId};
use crate::sim::{ring, NetConfig, Sim};
use std::time::Duration;

type Cr = Leadership<ChangRoberts>;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn sim(n: u64, net: NetConfig, watch: Option<&str>) -> Sim<Cr> {
    let ids: Vec<NodeId> = (1..=n).collect();
    let mut setups = ring(&ids, &[1]);
    for s in &mut setups {
        s.opts.insert("detector".into(), "fixed".into());
        if let Some(w) = watch {
            s.opts.insert("detector_watch".into(), w.into());
        }
    }
    Sim::new(net, setups, Cr::new)
}

/// The first suspicion of `target` at or after `from`, by anyone: (when, cause).
fn first_suspicion(s: &Sim<Cr>, target: NodeId, from: Duration) -> Option<(Duration, String)> {
    s.events("suspect").into_iter().find_map(|r| match &r.event {
        Event::Suspect { target: t, cause, .. } if *t == target && r.t >= from.as_micros() as u64 => {
            Some((Duration::from_micros(r.t), cause.clone()))
        }
        _ => None,
    })
}

#[test]
fn fixed_watching_every_member_detects_a_followers_crash_within_a_second() {
    let mut s = sim(6, NetConfig::default(), Some("all"));
    s.run_for(ms(2000));
    assert!(s.events("suspect").is_empty(), "no suspicion while all run");
    let leader = s.node(1).belief().1.expect("a leader after 2 s");
    let follower = (1..=6).find(|&n| n != leader && n != 2).unwrap();
    s.crash(follower);
    let crashed = s.now();
    s.run_for(ms(2000));
    let (at, cause) = first_suspicion(&s, follower, crashed).expect("the follower's crash is detected");
    assert!(at - crashed <= ms(1000), "detected after {:?}", at - crashed);
    assert_eq!(cause, "watch");
    // Every live member comes to suspect it, not only its ring neighbours.
    for by in (1..=6).filter(|&n| n != follower) {
        assert!(s.node(by).liveness().is_suspected(follower), "node {by}");
    }
}

#[test]
fn by_default_fixed_watches_only_what_its_host_waits_on() {
    // The same crash with the default: no member waits on a follower once a leader is known,
    // so nobody suspects it and no PROBE is sent (the counts the other tests pin stay exact).
    let mut s = sim(6, NetConfig::default(), None);
    s.run_for(ms(2000));
    let leader = s.node(1).belief().1.expect("a leader after 2 s");
    let follower = (1..=6).find(|&n| n != leader && n != 2).unwrap();
    let probes = s.sent("PROBE");
    s.crash(follower);
    let crashed = s.now();
    s.run_for(ms(2000));
    assert_eq!(first_suspicion(&s, follower, crashed), None);
    assert_eq!(s.sent("PROBE"), probes);
}

#[test]
fn fixed_watching_every_member_does_not_suspect_members_that_are_only_lossy_and_slow() {
    for seed in [1, 7, 13, 21] {
        let net = NetConfig {
            seed,
            min_delay: ms(5),
            max_delay: ms(60),
            drop: 0.03,
            duplicate: 0.0,
        };
        let mut s = sim(6, net, Some("all"));
        s.run_for(ms(20_000));
        assert!(s.sent("PROBE") > 1000, "the sweep probes: {}", s.sent("PROBE"));
        // The sweep's own suspicions (`watch`): the host's rule for its leader (three lost
        // heartbeats in a row) is the default's, unchanged by this key, and may still fire.
        let sus: Vec<_> = s
            .events("suspect")
            .into_iter()
            .filter(|r| matches!(&r.event, Event::Suspect { cause, .. } if cause == "watch"))
            .collect();
        assert!(sus.is_empty(), "seed {seed}: nobody is dead, yet: {sus:?}");
    }
}

#[test]
fn watching_every_member_the_host_suspects_its_leader_only_after_a_timeout_of_real_silence() {
    // Under heavy loss the leader's heartbeats are lost three in a row now and then while it
    // answers the sweep's PROBEs: the host's leader rule must not take that for silence.
    for seed in [1, 2, 3] {
        let net = NetConfig {
            seed,
            min_delay: ms(5),
            max_delay: ms(60),
            drop: 0.25,
            duplicate: 0.0,
        };
        let mut s = sim(8, net, Some("all"));
        s.run_for(ms(20_000));
        for r in s.events("suspect") {
            if let Event::Suspect {
                cause,
                silence_ms,
                timeout_ms,
                ..
            } = &r.event
            {
                if cause == "heartbeat" {
                    assert!(
                        silence_ms >= timeout_ms,
                        "seed {seed}: node {:?} suspected its leader {silence_ms} ms after last hearing it: {r:?}",
                        r.node
                    );
                }
            }
        }
        // A leader truly silent is still found: killed, every member comes to suspect it.
        let leader = s.node(1).belief().1.expect("a leader");
        s.crash(leader);
        s.run_for(ms(2000));
        for by in s.live() {
            assert!(s.node(by).liveness().is_suspected(leader), "seed {seed}: node {by}");
        }
    }
}

#[test]
fn a_node_stalled_longer_than_the_timeout_accuses_nobody_when_it_wakes() {
    let mut s = sim(6, NetConfig::default(), Some("all"));
    s.run_for(ms(2000));
    s.pause(3);
    s.run_for(ms(150));
    s.resume(3);
    let woke = s.now();
    s.run_for(ms(1000));
    let by3: Vec<_> = s
        .events("suspect")
        .into_iter()
        .filter(|r| r.node == Some(3) && r.t >= woke.as_micros() as u64)
        .collect();
    assert!(by3.is_empty(), "node 3 slept, the others did not: {by3:?}");
}

#[test]
fn detector_watch_takes_waits_or_all_and_waits_only_with_fixed() {
    use crate::catalog::check_setup;
    let setup = |pairs: &[(&str, &str)]| {
        let mut s = crate::algo::Setup::new(1, vec![1, 2, 3], vec![3, 2]);
        for (k, v) in pairs {
            s.opts.insert((*k).into(), (*v).into());
        }
        s
    };
    for ok in [
        &[("detector_watch", "all")][..],
        &[("detector", "fixed"), ("detector_watch", "waits")],
        &[("detector", "phi"), ("detector_watch", "all")],
        &[("detector", "swim"), ("detector_watch", "all")],
    ] {
        assert_eq!(check_setup("chang-roberts", &setup(ok)), Ok(()), "{ok:?}");
    }
    let err = check_setup("chang-roberts", &setup(&[("detector_watch", "everyone")])).unwrap_err();
    assert!(
        err.contains("detector_watch") && err.contains("waits") && err.contains("all"),
        "{err}"
    );
    let err = check_setup("bully", &setup(&[("detector", "swim"), ("detector_watch", "waits")])).unwrap_err();
    assert!(err.contains("detector_watch=waits is for detector=fixed"), "{err}");
    assert!(!err.contains('\n'));
    // Central has a detector only when asked: whom it would watch means nothing without one.
    let err = check_setup("central", &setup(&[("detector_watch", "all")])).unwrap_err();
    assert!(err.contains("add --set detector="), "{err}");
    assert_eq!(
        check_setup("central", &setup(&[("detector", "fixed"), ("detector_watch", "all")])),
        Ok(())
    );
}
