//! Checker tests of what a run's faults explain: storms, the longest leaderless stretch, and
//! terms with two leaders that a dead cut vertex, a pause or an anonymous ring accounts for.

use super::test_run::*;
use super::*;
use crate::trace::Event;
#[test]
fn storms_and_the_longest_leaderless_stretch_are_reported() {
    let mut r = Run::new(&[1, 2, 3]);
    r.ev(0, 1, election_start(1)).everyone_learns(10, 3, 1).pause(100, 3);
    r.ev(400, 1, election_start(2));
    // 3 nodes and no links listed: the bound is 2*9 + 6*0 + 4*3 = 30 protocol messages per term.
    for k in 0..60 {
        let send = Event::Send {
            to: 2,
            msg: "ELECTION".into(),
            bytes: 10,
            seq: k,
            brief: String::new(),
        };
        r.ev(400 + k / 10, 1, send);
    }
    // Upkeep: heartbeats, and the failure detectors' own traffic (phi's BEATs, SWIM's PINGs).
    for (k, msg) in (0..300).zip(["HEARTBEAT", "BEAT", "PING"].iter().cycle()) {
        let hb = Event::Send {
            to: 2,
            msg: msg.to_string(),
            bytes: 10,
            seq: 100 + k,
            brief: String::new(),
        };
        r.ev(400 + k / 3, 1, hb);
    }
    r.everyone_learns(700, 2, 2).shutdown(1000);
    let a = r.analyse();
    let e = facts(&a);
    assert_eq!(e.storms.bound, 30);
    assert_eq!(e.storms.over, vec![2]);
    let t2 = e.storms.terms.iter().find(|t| t.term == 2).unwrap();
    assert_eq!(
        t2.messages, 60,
        "heartbeats and detector messages are not protocol messages"
    );
    // Node 3 was paused at +100 ms: no running leader until node 2 at +700 ms.
    let l = e.longest_leaderless().unwrap();
    assert_eq!((l.from, l.to), (ms(100), ms(700)));
    let f = a.findings();
    assert!(f
        .iter()
        .any(|f| !f.violation && f.what.starts_with("storm: term 2 sent 60")));
    // A storm is flagged, not a broken promise.
    assert!(!a.violated());
    let text = summary::render(&a, false);
    assert!(text.contains("FLAG: storm: term 2"), "{text}");
    assert!(
        text.contains("leaderless: longest stretch +100 ms to +700 ms (600 ms)"),
        "{text}"
    );
}

fn mesh_line(r: &Run) -> RunDir {
    // 1 - 2 - 3: node 2 is a cut vertex.
    let mut rd = r.load();
    rd.info.topology = "mesh:file".into();
    for n in &mut rd.info.nodes {
        n.peers = match n.id {
            2 => vec![1, 3],
            _ => vec![2],
        };
    }
    rd
}

#[test]
fn two_leaders_split_by_a_dead_cut_vertex_are_explained_but_not_in_majority_mode() {
    let mut r = Run::new(&[1, 2, 3]);
    r.everyone_learns(10, 2, 1)
        .kill(100, 2)
        .ev(400, 1, election_start(2))
        .ev(400, 3, election_start(2))
        .ev(410, 1, leader(1, 2))
        .ev(411, 3, leader(3, 2))
        .fault(600, 2, Event::Restart { pid: 0 })
        .ev(601, 2, start(2))
        .ev(602, 2, election_start(3))
        .everyone_learns(700, 3, 3)
        .shutdown(1000);
    r.node_events
        .retain(|e| !(e.node == Some(2) && e.t > ms(100) && e.t < ms(600)));
    let rd = mesh_line(&r);
    let a = analyse(&rd);
    let e = facts(&a);
    assert!(matches!(e.violations[0], Violation::Uniqueness { term: 2, .. }));
    let x = e.explanation(2).expect("explained");
    assert!(x.inherent);
    assert!(
        x.words.contains("the cut vertex node 2 (dead since +100 ms)"),
        "{}",
        x.words
    );
    assert!(!a.violated(), "{}", summary::render(&a, false));
    assert!(summary::render(&a, false).contains("EXPLAINED: uniqueness: VIOLATED in term 2"));

    let mut rd = mesh_line(&r);
    rd.info.options = serde_json::json!({"set": {"majority": "true"}});
    let a = analyse(&rd);
    assert!(!facts(&a).explanation(2).unwrap().inherent);
    assert!(a.violated());
}

#[test]
fn a_restarted_cut_vertex_splits_the_graph_until_its_own_start() {
    // Cut down from a chaos soak of Echo (12 nodes, seed 108): node 9 restarted at +22361 ms,
    // its new process wrote its `start` at +23197; a term decided in between had two leaders,
    // one on each side of it. Restarted at +300 ms here, the term at +400.
    for (started, explained) in [(800, true), (350, false)] {
        let mut r = Run::new(&[1, 2, 3]);
        r.everyone_learns(10, 2, 1)
            .kill(100, 2)
            .fault(300, 2, Event::Restart { pid: 7 })
            .ev(started, 2, start(2))
            .ev(400, 1, election_start(2))
            .ev(400, 3, election_start(2))
            .ev(410, 1, leader(1, 2))
            .ev(411, 3, leader(3, 2))
            .ev(900, 2, election_start(3))
            .everyone_learns(1000, 3, 3)
            .shutdown(1500);
        let a = analyse(&mesh_line(&r));
        let x = facts(&a).explanation(2).expect("term 2 judged").clone();
        assert_eq!(x.inherent, explained, "started at +{started} ms: {}", x.words);
        if explained {
            assert!(x.words.contains("the cut vertex node 2 (dead since"), "{}", x.words);
        }
        assert_eq!(a.violated(), !explained, "{}", summary::render(&a, false));
    }
}

#[test]
fn a_resumed_node_claiming_a_term_it_joined_before_its_pause_is_explained_one_that_joined_after_is_not() {
    let mut r = Run::new(&[1, 2, 3]);
    r.ev(10, 3, election_start(1))
        .pause(20, 3)
        .ev(30, 1, election_start(1))
        .ev(40, 2, leader(2, 1))
        .ev(41, 1, leader(2, 1))
        .fault(500, 3, Event::Resume { pid: 0 })
        .ev(501, 3, leader(3, 1))
        .shutdown(1000);
    let a = r.analyse();
    let x = facts(&a).explanation(1).unwrap();
    assert!(x.inherent, "{}", x.words);
    assert!(
        x.words.contains("node 3 was paused from +20 ms to +500 ms"),
        "{}",
        x.words
    );
    // The same claim by a node that joined the term only after waking is ours, not inherent.
    r.node_events.retain(|e| !(e.node == Some(3) && e.t == ms(10)));
    r.ev(500, 3, election_start(1));
    let a = r.analyse();
    assert!(!facts(&a).explanation(1).unwrap().inherent);
    assert!(a.violated());
}

#[test]
fn a_suspicion_held_long_after_its_target_runs_again_is_flagged_a_withdrawn_one_is_not() {
    let mut r = Run::new(&[1, 2, 3]);
    r.everyone_learns(10, 3, 1)
        .pause(100, 2)
        .ev(400, 1, suspect(2, 300))
        .ev(400, 3, suspect(2, 300))
        .fault(500, 2, Event::Resume { pid: 0 })
        // Node 3 withdraws within twice the timeout (600 ms); node 1 never does.
        .ev(700, 3, Event::Unsuspect { target: 2 })
        .shutdown(3000);
    let mut rd = r.load();
    rd.info.options = serde_json::json!({"timeout_ms": 300});
    let a = analyse(&rd);
    assert_eq!(a.timeout_us, Some(300_000));
    assert_eq!(
        a.stale,
        vec![suspicion::Stale {
            by: 1,
            target: 2,
            from: ms(500),
            to: ms(3000),
            withdrawn: false,
        }]
    );
    let text = summary::render(&a, false);
    assert!(
        text.contains("FLAG: suspicions that did not heal: 1 held for more than twice the timeout"),
        "{text}"
    );
    assert!(!a.violated());
}

#[test]
fn a_restarted_target_runs_from_its_own_start_not_from_the_launchers_restart() {
    // Cut down from a user-backend chaos soak: node 2 killed and restarted at +1000 ms, its new
    // process slowed by a busy disk to start at +2300 ms; node 1 withdraws its suspicion 5 ms
    // later. From the restart record it was 1.3 s "while the target ran"; from the start, 5 ms.
    for (started, stale) in [(2300, false), (1050, true)] {
        let mut r = Run::new(&[1, 2, 3]);
        r.everyone_learns(10, 3, 1)
            .kill(500, 2)
            .ev(800, 1, suspect(2, 300))
            .fault(1000, 2, Event::Restart { pid: 7 })
            .ev(started, 2, start(2))
            .ev(2305, 1, Event::Unsuspect { target: 2 })
            .shutdown(3000);
        let mut rd = r.load();
        rd.info.options = serde_json::json!({"timeout_ms": 300});
        let a = analyse(&rd);
        assert_eq!(!a.stale.is_empty(), stale, "started at +{started} ms: {:?}", a.stale);
        if stale {
            assert_eq!((a.stale[0].from, a.stale[0].to), (ms(1050), ms(2305)));
        }
    }
}

#[test]
fn two_anonymous_candidates_leading_one_term_fail_the_check_but_are_told_apart_from_a_bug() {
    let mut r = Run::new(&[1, 2, 3, 4]);
    r.ev(10, 1, election_start(1))
        .ev(10, 3, election_start(1))
        .ev(40, 1, leader(1, 1))
        .ev(41, 3, leader(3, 1))
        .shutdown(1000);
    let mut rd = r.load();
    rd.info.algo = "anon-ring".into();
    let a = analyse(&rd);
    let x = facts(&a).explanation(1).expect("explained");
    assert!(x.by_design && !x.inherent, "{}", x.words);
    assert!(x.words.contains("nodes 1 and 3"), "{}", x.words);
    // Showing it is the algorithm's point: the check still fails, naming the cause.
    assert!(a.violated());
    let text = summary::render(&a, false);
    assert!(
        text.contains("VIOLATED") && text.contains("the anonymous ring has no ids"),
        "{text}"
    );
    // The same run from an algorithm with ids is ours.
    rd.info.algo = "chang-roberts".into();
    let a = analyse(&rd);
    assert!(!facts(&a).explanation(1).unwrap().by_design);
}

#[test]
fn followers_split_by_a_leader_killed_mid_election_are_explained_one_alive_throughout_is_not() {
    // Ring-list: the list that passed node 4 before it was killed names it, the lists that
    // skipped it name node 3.
    let mut r = Run::new(&[1, 2, 3, 4]);
    r.ev(100, 1, election_start(2))
        .ev(101, 2, election_start(2))
        .ev(120, 1, leader(4, 2))
        .kill(150, 4)
        .ev(200, 2, leader(3, 2))
        .ev(201, 3, leader(3, 2))
        .shutdown(1000);
    let a = r.analyse();
    let e = facts(&a);
    assert!(
        e.violations
            .iter()
            .any(|v| matches!(v, Violation::TermAgreement { term: 2, .. })),
        "{:?}",
        e.violations
    );
    let x = e.explanation(2).expect("explained");
    assert!(x.inherent, "{}", x.words);
    assert!(
        x.words
            .contains("node 4 was killed at +150 ms, within two timeouts of term 2"),
        "{}",
        x.words
    );
    // Node 4 alive throughout: nothing explains the split.
    r.faults.clear();
    let a = r.analyse();
    assert!(!facts(&a).explanation(2).unwrap().inherent);
    assert!(a.violated());
}
