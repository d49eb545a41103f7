use super::*;

const M: &[NodeId] = &[1, 2, 3, 4, 5, 10];

fn parse(s: &str) -> Result<NetCommand, String> {
    let words: Vec<&str> = s.split_whitespace().collect();
    NetCommand::parse(&words, M)
}

fn act(s: &str) -> NetAction {
    match parse(s) {
        Ok(NetCommand::Act(a)) => a,
        other => panic!("{s}: {other:?}"),
    }
}

fn rules(cmds: &[&str]) -> NetRules {
    let mut r = NetRules::new(M);
    for c in cmds {
        r.apply(&act(c));
    }
    r
}

#[test]
fn every_verb_parses() {
    assert_eq!(
        act("net cut 2 10"),
        NetAction::Cut {
            a: 2,
            b: 10,
            one_way: false
        }
    );
    assert_eq!(
        act("cut 2 10 --one-way"),
        NetAction::Cut {
            a: 2,
            b: 10,
            one_way: true
        }
    );
    assert_eq!(
        act("net cut --one-way 2 10"),
        NetAction::Cut {
            a: 2,
            b: 10,
            one_way: true
        }
    );
    assert_eq!(
        act("net partition 1,2,3 4,5"),
        NetAction::Partition {
            sides: vec![vec![1, 2, 3], vec![4, 5], vec![10]]
        }
    );
    assert_eq!(
        act("net partition 10"),
        NetAction::Partition {
            sides: vec![vec![10], vec![1], vec![2], vec![3], vec![4], vec![5]]
        }
    );
    assert_eq!(act("net heal"), NetAction::Heal { link: None });
    assert_eq!(act("net heal 2 10"), NetAction::Heal { link: Some((2, 10)) });
    assert_eq!(act("net loss 20"), NetAction::Loss { pct: 20, link: None });
    assert_eq!(
        act("net loss 100% 2 10"),
        NetAction::Loss {
            pct: 100,
            link: Some((2, 10))
        }
    );
    assert_eq!(act("net loss 0"), NetAction::Loss { pct: 0, link: None });
    assert_eq!(
        act("net delay 50:20"),
        NetAction::Delay {
            ms: 50,
            jitter_ms: 20,
            link: None
        }
    );
    assert_eq!(
        act("net delay 50 2 10"),
        NetAction::Delay {
            ms: 50,
            jitter_ms: 0,
            link: Some((2, 10))
        }
    );
    assert_eq!(parse("net status"), Ok(NetCommand::Status));
}

#[test]
fn every_bad_input_is_one_line_naming_the_problem() {
    let cases = [
        ("net", "which verb"),
        ("net snip 1 2", "unknown verb 'snip'"),
        ("net cut 2", "expected two node ids"),
        ("net cut 2 10 3", "expected two node ids"),
        ("net cut 2 99", "node 99 is not a member"),
        ("net cut 2 x", "'x' is not a node id"),
        ("net cut 2 2", "two different nodes"),
        ("net cut 2 10 --both", "unknown option '--both'"),
        ("net partition", "expected sides"),
        ("net partition 1,2 2,3", "node 2 is on two sides"),
        ("net partition 1,,2 3", "empty node id"),
        ("net partition 1,2,3,4,5,10", "every member is on one side"),
        ("net partition 1,7 2", "node 7 is not a member"),
        ("net heal 2", "expected a link"),
        ("net heal 2 99", "node 99 is not a member"),
        ("net loss", "expected a percentage"),
        ("net loss 101", "from 0 to 100, not '101'"),
        ("net loss -1", "not '-1'"),
        ("net loss 2.5", "whole percentage"),
        ("net loss 20 2", "expected a link"),
        ("net delay", "expected MS"),
        ("net delay -5", "0 or more"),
        ("net delay 50:x", "not '50:x'"),
        ("net delay abc", "not 'abc'"),
        ("net delay 99999999999", "longer than a day"),
        ("net status now", "takes no arguments"),
    ];
    for (input, want) in cases {
        let e = parse(input).expect_err(input);
        assert!(e.contains(want), "{input}: {e}");
        assert!(!e.contains('\n'), "{input}: {e}");
    }
}

#[test]
fn a_cut_blocks_both_ways_or_one_and_heal_lifts_it() {
    let r = rules(&["cut 2 10"]);
    assert!(r.blocked(2, 10) && r.blocked(10, 2));
    assert!(!r.blocked(2, 3));
    let r = rules(&["cut 2 10 --one-way"]);
    assert!(r.blocked(2, 10) && !r.blocked(10, 2));
    let r = rules(&["cut 2 10", "cut 3 4", "heal 10 2"]);
    assert!(!r.blocked(2, 10) && !r.blocked(10, 2));
    assert!(r.blocked(3, 4));
    let r = rules(&["cut 2 10", "cut 3 4", "heal"]);
    assert!(r.is_clear());
}

#[test]
fn a_partition_separates_sides_and_unnamed_nodes_are_alone() {
    let r = rules(&["partition 1,2 3,4"]);
    assert!(!r.blocked(1, 2) && !r.blocked(3, 4));
    assert!(r.blocked(1, 3) && r.blocked(4, 2));
    // 5 and 10 were not named: each alone.
    assert!(r.blocked(5, 10) && r.blocked(5, 1) && r.blocked(1, 10));
    // The resource (id 0) is not a member: no partition touches it.
    assert!(!r.blocked(0, 1) && !r.blocked(5, 0));
    // Healing one link bridges it; a new partition forgets the bridge.
    let mut r = rules(&["partition 1,2 3,4,5,10", "heal 2 3"]);
    assert!(!r.blocked(2, 3) && !r.blocked(3, 2) && r.blocked(1, 3));
    r.apply(&act("partition 1,2 3,4,5,10"));
    assert!(r.blocked(2, 3));
    // A cut on a bridged link still cuts.
    let r = rules(&["partition 1,2 3,4,5,10", "heal 2 3", "cut 2 3 --one-way"]);
    assert!(r.blocked(2, 3) && !r.blocked(3, 2));
}

#[test]
fn loss_and_delay_latest_rule_wins_and_heal_of_a_link_makes_it_perfect() {
    let r = rules(&["loss 20", "loss 50 2 10"]);
    assert_eq!((r.loss(2, 10), r.loss(10, 2), r.loss(1, 3)), (50, 50, 20));
    let r = rules(&["loss 50 2 10", "loss 20"]);
    assert_eq!(r.loss(2, 10), 20, "every-link loss replaces per-link values");
    let r = rules(&["loss 20", "heal 2 10"]);
    assert_eq!((r.loss(2, 10), r.loss(1, 2)), (0, 20));
    let r = rules(&["delay 50:20", "delay 5 1 2"]);
    assert_eq!(
        (r.delay(1, 2), r.delay(2, 1), r.delay(3, 4)),
        ((5, 0), (5, 0), (50, 20))
    );
    let r = rules(&["delay 50:20", "heal 1 2"]);
    assert_eq!((r.delay(1, 2), r.delay(3, 4)), ((0, 0), (50, 20)));
    assert!(r.has_delay());
    let r = rules(&["delay 50", "loss 5", "heal"]);
    assert!(r.is_clear() && !r.has_delay());
    let r = rules(&["loss 0", "delay 0"]);
    assert!(r.is_clear());
}

#[test]
fn folding_the_events_gives_the_same_rules_and_from_event_inverts_event() {
    let script = [
        "cut 2 10",
        "cut 3 4 --one-way",
        "partition 1,2,3 4,5",
        "heal 2 4",
        "loss 20",
        "loss 40 1 2",
        "delay 50:20",
        "delay 10 3 5",
        "heal 10 2",
        "heal",
        "loss 5 1 10",
    ];
    let mut direct = NetRules::new(M);
    let mut folded = NetRules::new(M);
    for c in script {
        let a = act(c);
        direct.apply(&a);
        let ev = a.event("user");
        // Through JSON, as faults.jsonl stores it.
        let line = serde_json::to_string(&ev).unwrap();
        let back: Event = serde_json::from_str(&line).unwrap();
        assert_eq!(NetAction::from_event(&back), Some(a.clone()), "{c}: {line}");
        assert!(folded.apply_event(&back));
        assert_eq!(direct, folded, "{c}");
    }
    assert!(!folded.apply_event(&Event::Shutdown {}));
}

#[test]
fn old_traces_still_read_and_fold() {
    let ev: Event = serde_json::from_str(r#"{"ev":"partition","nodes":[1,2]}"#).unwrap();
    assert_eq!(
        ev,
        Event::Partition {
            nodes: vec![1, 2],
            sides: vec![],
            backend: String::new()
        }
    );
    let mut r = NetRules::new(M);
    r.apply_event(&ev);
    assert!(r.blocked(1, 3) && r.blocked(10, 2) && !r.blocked(1, 2) && !r.blocked(3, 10));
    assert_eq!(r.sides(), vec![vec![1, 2], vec![3, 4, 5, 10]]);
    let heal: Event = serde_json::from_str(r#"{"ev":"heal","nodes":[]}"#).unwrap();
    r.apply_event(&heal);
    assert!(r.is_clear());
    let stop: Event = serde_json::from_str(r#"{"ev":"stop","sent":1,"received":2,"dropped":0,"by_type":{}}"#).unwrap();
    assert!(matches!(stop, Event::Stop { net_dropped: 0, .. }));
}

#[test]
fn the_rules_travel_as_json_and_read_back_equal() {
    let r = rules(&["cut 2 10", "partition 1,2 3", "heal 1 3", "loss 20 4 5", "delay 30:10"]);
    let back = NetRules::from_json(&r.to_json()).unwrap();
    assert_eq!(back, r);
    assert!(back.blocked(2, 3) && !back.blocked(1, 3));
    assert!(NetRules::from_json(b"{nonsense").is_err());
}

#[test]
fn words_for_the_console_and_for_status() {
    assert_eq!(act("cut 2 10").describe(), "cut the link 2-10 (both ways)");
    assert_eq!(
        act("partition 1,2,3 4,5").describe(),
        "partition into 3 sides: {1,2,3} | {4,5} | {10}"
    );
    assert_eq!(act("loss 20 2 10").describe(), "loss 20% on the link 2-10 (both ways)");
    assert_eq!(act("delay 50:20").describe(), "delay 50 ms +- 20 ms on every link");
    assert_eq!(NetRules::new(M).describe(), vec!["no network rule in force"]);
    let r = rules(&[
        "cut 2 10",
        "cut 3 4 --one-way",
        "partition 1,2,3 4,5,10",
        "loss 20",
        "heal 1 4",
        "loss 50 1 2",
        "delay 40 1 3",
    ]);
    assert_eq!(
        r.describe(),
        vec![
            "cut: 2-10, 3->4",
            "partition: {1,2,3} | {4,5,10} (healed across it: 1-4)",
            "loss: 20% on every link; 0% on 1-4; 50% on 1-2",
            "delay: 40 ms on 1-3",
        ]
    );
}
