//! Tests of [`detectors`](super).

use super::*;

#[test]
fn figures_of_a_hand_built_run() {
    // Three nodes, 10 s. Node 3 is killed at 4 s: node 1 suspects it 300 ms later, node 2
    // 500 ms later. Node 2 was wrongly suspected by 1 from 1.0 s to 1.2 s and by 3 from
    // 2.0 s to 2.6 s; node 1 was wrongly suspected by 2 at 9 s until the end (1 s).
    // A suspicion by the dead node 3 (at 5 s) does not count; SWIM confirmed 2 at 2.5 s.
    let s = 1_000_000;
    let ms = 1000;
    // Node 2 was paused from 0.9 s to 1.1 s: 1's suspicion of it is of a stopped node.
    let fates = [
        (900 * ms, 2, Fate::Paused),
        (1100 * ms, 2, Fate::Resumed),
        (4 * s, 3, Fate::Killed),
    ];
    let ops = [
        (s, 1, 2, Opinion::Suspect { first_hand: true }),
        (s + 200 * ms, 1, 2, Opinion::Unsuspect),
        (2 * s, 3, 2, Opinion::Suspect { first_hand: true }),
        (2 * s + 500 * ms, 3, 2, Opinion::Confirm),
        (2 * s + 600 * ms, 3, 2, Opinion::Unsuspect),
        (4 * s + 300 * ms, 1, 3, Opinion::Suspect { first_hand: true }),
        (4 * s + 500 * ms, 2, 3, Opinion::Suspect { first_hand: true }),
        (5 * s, 3, 1, Opinion::Suspect { first_hand: true }),
        (9 * s, 2, 1, Opinion::Suspect { first_hand: true }),
    ];
    let f = figures(&[1, 2, 3], 0, 10 * s, &fates, &ops);
    assert_eq!(f.crashes, 1);
    assert_eq!(f.detected, 1);
    assert!((f.td_mean_ms - 300.0).abs() < 1e-9);
    assert!((f.td_max_ms - 300.0).abs() < 1e-9);
    assert_eq!(f.td_each, vec![(3, Some(300.0))]);
    assert_eq!(f.false_suspicions, 3);
    assert_eq!(f.false_confirmations, 1);
    assert_eq!(f.false_of_running, 2);
    // Mistakes of 200, 600 and 1000 ms.
    assert!((f.mistake_duration_ms - 600.0).abs() < 1e-9);
    // Node time: 10 + 10 + 4 = 24 s; 3 mistakes in 24/3600 h = 450 per node-hour.
    assert!((f.mistake_rate_per_node_hour - 450.0).abs() < 1e-6);
    // Pair time: (1,2) (2,1) 10 s each, the four pairs with 3: 4 s each = 36 s; 1.8 s wrong.
    assert!((f.query_accuracy - (1.0 - 1.8 / 36.0)).abs() < 1e-9);
}

#[test]
fn the_leaders_crash_and_the_followers_are_reported_apart() {
    // Eight nodes: the follower 6 killed first and never suspected (fixed on a mesh),
    // the leader 8 suspected 250 ms after its kill.
    let s = 1_000_000;
    let fates = [(15 * s, 6, Fate::Killed), (18 * s, 8, Fate::Killed)];
    let ops = [(18 * s + 250_000, 1, 8, Opinion::Suspect { first_hand: true })];
    let nodes: Vec<NodeId> = (1..=8).collect();
    let figures = figures(&nodes, 0, 24 * s, &fates, &ops);
    assert_eq!(figures.td_each, vec![(6, None), (8, Some(250.0))]);
    let row = Row {
        shape: "mesh".into(),
        n: 8,
        detector: "fixed".into(),
        figures,
        confirms: Vec::new(),
        cost: Cost {
            detector_per_node_s: 141.2,
            all_per_node_s: 160.04,
            heavy_detector_per_node_s: 180.0,
        },
    };
    assert_eq!((row.td_leader(), row.td_follower()), (Some(250.0), None));
    let t = table(std::slice::from_ref(&row));
    let line = t.lines().nth(1).expect("a row");
    assert!(line.starts_with("mesh 8   fixed"), "{line}");
    assert!(line.contains(" 250  missed "), "{line}");
    assert_eq!(row.json()["td_leader_ms"], 250.0);
    assert!(row.json()["td_follower_ms"].is_null());
    assert!(line.ends_with(" 141/180/160"), "{line}");
    assert_eq!(row.json()["detector_messages_per_node_s"], 141.2);
    assert_eq!(row.json()["messages_per_node_s"], 160.0);
}

#[test]
fn the_schedule_is_the_same_for_the_same_seed_and_parses() {
    let a = schedule(7, 8);
    assert_eq!(a, schedule(7, 8));
    assert_ne!(a, schedule(8, 8));
    let ids: Vec<NodeId> = (1..=8).collect();
    let s = crate::cluster::schedule::Schedule::parse("detectors", &a, &ids, &ids).expect("valid");
    assert_eq!(s.entries.iter().filter(|e| e.line.starts_with("kill")).count(), 2);
    assert!(s.entries.iter().any(|e| e.line == "kill 8"));
    // The kills' times, against which a run's kills are checked for lateness.
    let due: Vec<f64> = s
        .entries
        .iter()
        .filter(|e| e.line.starts_with("kill"))
        .map(|e| e.at.as_secs_f64())
        .collect();
    let read = kill_times(&a);
    assert_eq!(read.len(), 2);
    assert!(
        read.iter().zip(&due).all(|(a, b)| (a - b).abs() < 1e-6),
        "{read:?} {due:?}"
    );
}

#[test]
fn every_detector_runs_watching_every_member_and_the_settings_are_valid() {
    for det in ["fixed", "phi", "swim"] {
        let sets = settings(det);
        assert!(sets.contains(&"detector_watch=all".to_string()), "{det}");
        let mut setup = crate::algo::Setup::new(1, vec![1, 2, 3], vec![3, 2]);
        for kv in &sets {
            let (k, v) = kv.split_once('=').expect("key=value");
            setup.opts.insert(k.into(), v.into());
        }
        for algo in ["chang-roberts", "bully"] {
            assert_eq!(crate::catalog::check_setup(algo, &setup), Ok(()), "{det} {algo}");
        }
    }
}

#[test]
fn the_cost_counts_each_node_while_it_lived() {
    let s = 1_000_000;
    // Three nodes over 10 s; node 3 killed at 4 s, restarted at 6 s: 10 + 10 + 8 node-seconds.
    let fates = [(4 * s, 3, Fate::Killed), (6 * s, 3, Fate::Restarted)];
    let node_s = cost::live_seconds(&[1, 2, 3], 0, 10 * s, &fates);
    assert!((node_s - 28.0).abs() < 1e-9, "{node_s}");
    // Killed for good: from the kill to the end does not count.
    let node_s = cost::live_seconds(&[1, 2, 3], 0, 10 * s, &fates[..1]);
    assert!((node_s - 24.0).abs() < 1e-9, "{node_s}");
    let c = cost::rates(560, 700, 28.0);
    assert_eq!((c.detector_per_node_s, c.all_per_node_s), (20.0, 25.0));
    assert_eq!(cost::rates(5, 5, 0.0), Cost::default());
}

#[test]
fn every_detector_message_is_counted_as_the_detectors() {
    use crate::algo::detector::swim::SwimMsg;
    use crate::algo::detector::{LiveMsg, DETECTOR_MESSAGES};
    use crate::algo::Message;
    let all = [
        LiveMsg::Probe { epoch: 0, wait: true },
        LiveMsg::Alive { epoch: 0 },
        LiveMsg::Beat {
            stamp: 1,
            relayed: vec![(2, 3)],
        },
        LiveMsg::Swim(SwimMsg::Ping {
            seq: 0,
            ts: 1,
            rumours: vec![],
        }),
        LiveMsg::Swim(SwimMsg::PingReq {
            seq: 0,
            target: 1,
            rumours: vec![],
        }),
        LiveMsg::Swim(SwimMsg::Ack {
            seq: 0,
            ts: 1,
            rumours: vec![],
        }),
        LiveMsg::Swim(SwimMsg::Nack { seq: 0 }),
        LiveMsg::Swim(SwimMsg::Gossip { rumours: vec![] }),
    ];
    for m in &all {
        assert!(DETECTOR_MESSAGES.contains(&m.name()), "{}", m.name());
    }
    assert_eq!(DETECTOR_MESSAGES.len(), all.len());
}

#[test]
fn a_suspicion_heard_by_gossip_is_not_first_hand_and_every_other_cause_is() {
    let suspect = |cause: &str| {
        let ev = crate::trace::Event::Suspect {
            target: 2,
            silence_ms: 0,
            timeout_ms: 0,
            cause: cause.into(),
            phi: None,
            incarnation: None,
        };
        let r = crate::trace::Record::unstamped(7, Some(1), ev);
        super::super::detector_figures::opinion(&r).map(|o| o.3)
    };
    assert_eq!(suspect("gossip"), Some(Opinion::Suspect { first_hand: false }));
    for cause in ["swim", "phi", "heartbeat", "watch", "probe", "ack"] {
        assert_eq!(suspect(cause), Some(Opinion::Suspect { first_hand: true }), "{cause}");
    }
}

#[test]
fn of_the_suspicions_of_running_nodes_those_heard_by_gossip_are_not_counted_first_hand() {
    // Node 1's failed probe of 2 is gossiped to 3 and 4, who suspect 2 on its word; 3 later
    // suspects 4 first hand. No faults: every target ran.
    let truth = crate::check::detection::Truth::default();
    let ops = [
        (1_000, 1, 2, Opinion::Suspect { first_hand: true }),
        (2_000, 3, 2, Opinion::Suspect { first_hand: false }),
        (2_500, 4, 2, Opinion::Suspect { first_hand: false }),
        (3_000, 3, 2, Opinion::Suspect { first_hand: true }),
        (4_000, 3, 4, Opinion::Suspect { first_hand: true }),
    ];
    let (counts, first_hand) = super::super::detector_figures::causes(&truth, &ops);
    assert_eq!(counts, [4, 0, 0, 0], "3's second suspicion of 2 is the same episode");
    assert_eq!(first_hand, 2);
}
