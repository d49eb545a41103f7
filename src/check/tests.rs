//! Checker tests: small synthetic runs for each rule, and one real simulated Chang-Roberts run.

use super::test_run::*;
use super::*;
use crate::trace::{Event, Record};
#[test]
fn a_clean_election_violates_nothing_and_is_written_to_summary_txt() {
    let tmp = TempDir::new("clean");
    clean_run().write(&tmp.0);
    let report = check(&tmp.0).unwrap();
    assert!(!report.violated);
    let e = facts(&report.analysis);
    assert!(e.violations.is_empty());
    assert_eq!(e.live_at_end, vec![1, 2, 3]);
    assert_eq!(e.agreed(), Some(Belief { leader: 3, term: 1 }));
    assert_eq!(e.terms.len(), 1);
    let t1 = &e.terms[0];
    assert_eq!(t1.first_start, Some((1, ms(10))));
    assert_eq!(t1.took_part, vec![1, 2, 3]);
    assert_eq!(t1.winners, vec![Claim { node: 3, t: ms(30) }]);
    assert_eq!(t1.last_learned(), Some(ms(31)));
    assert_eq!(t1.election_us(), Some(21_000));
    // The leader's interval runs to the end of the run: the shutdown, not the last event.
    assert_eq!(e.spans.len(), 1);
    assert_eq!((e.spans[0].from, e.spans[0].to), (ms(30), ms(100)));
    assert_eq!(e.overlap_us, 0);
    let written = std::fs::read_to_string(tmp.0.join("summary.txt")).unwrap();
    assert_eq!(written, report.full);
    assert!(report.full.starts_with(report.text.lines().next().unwrap()));
    assert!(report
        .text
        .contains("agreement: ok, all 3 running nodes believe node 3 leads term 1"));
    assert!(report.full.contains("election took 21 ms"));
    assert!(report.text.contains("Verdict: no property violated"));
}

#[test]
fn two_self_declared_leaders_in_one_term_are_a_named_violation() {
    let mut r = Run::new(&[1, 2, 3]);
    r.ev(10, 1, election_start(1))
        .ev(10, 2, election_start(1))
        .ev(20, 2, leader(2, 1))
        .ev(25, 3, leader(3, 1))
        .ev(40, 1, leader(3, 1))
        .ev(40, 2, leader(3, 1))
        .shutdown(100);
    let a = r.analyse();
    assert!(a.violated());
    let e = facts(&a);
    assert_eq!(
        e.violations,
        vec![Violation::Uniqueness {
            term: 1,
            claims: vec![Claim { node: 2, t: ms(20) }, Claim { node: 3, t: ms(25) }],
        }]
    );
    // Both led term 1 from +25 to +40 ms: overlap within one term.
    assert_eq!(e.same_term_overlap_us, 15_000);
    assert_eq!(e.overlap_us, 15_000);
    let text = summary::render(&a, true);
    assert!(text.contains("uniqueness: VIOLATED in term 1: nodes 2 and 3 each declared themselves leader"));
    assert!(text.contains("Verdict: VIOLATED: uniqueness (term 1)"));
}

#[test]
fn disagreement_at_the_end_is_a_violation() {
    let mut r = Run::new(&[1, 2, 3]);
    r.everyone_learns(30, 3, 1)
        .ev(50, 2, election_start(2))
        .ev(60, 2, leader(2, 2))
        .shutdown(100);
    let a = r.analyse();
    let e = facts(&a);
    let groups = BTreeMap::from([
        (Belief { leader: 2, term: 2 }, vec![2]),
        (Belief { leader: 3, term: 1 }, vec![1, 3]),
    ]);
    assert_eq!(e.violations, vec![Violation::Agreement { groups }]);
    assert!(a.violated());
    let text = summary::render(&a, true);
    assert!(
        text.contains(
            "agreement: VIOLATED: node 2 believes node 2 leads term 2; nodes 1 and 3 believe node 3 leads term 1"
        ),
        "{text}"
    );
}

#[test]
fn a_killed_node_is_not_owed_a_leader_but_a_running_one_is() {
    let mut r = Run::new(&[1, 2, 3]);
    r.kill(5, 3).everyone_learns(30, 2, 1);
    // Node 3 was dead before it could learn anything; drop its (impossible) events.
    r.node_events.retain(|e| !(e.node == Some(3) && e.t > ms(5)));
    r.shutdown(100);
    let a = r.analyse();
    let e = facts(&a);
    assert_eq!(e.live_at_end, vec![1, 2]);
    assert!(e.violations.is_empty(), "{:?}", e.violations);
    assert!(summary::render(&a, true).contains("not running at the end: node 3 (killed at +5 ms)"));

    // The same run where node 1 never heard of the leader: termination fails, naming node 1.
    r.node_events
        .retain(|e| !(e.node == Some(1) && matches!(e.event, Event::Leader { .. })));
    let a = r.analyse();
    assert_eq!(facts(&a).violations, vec![Violation::Termination { without: vec![1] }]);
    assert!(summary::render(&a, true)
        .contains("termination: VIOLATED: node 1 was running at the end but had learned no leader"));
}

#[test]
fn a_suspicion_of_a_node_resumed_within_its_silence_says_so() {
    // Node 4 paused 100-250 ms: node 1 suspects it at 260 ms, after 220 ms of silence, just
    // after the resume; node 2 suspects node 3, running all along.
    let mut r = Run::new(&[1, 2, 3, 4]);
    r.everyone_learns(30, 4, 1)
        .pause(100, 4)
        .resume(250, 4)
        .ev(260, 1, suspect(4, 220))
        .ev(600, 2, suspect(3, 300))
        .shutdown(1000);
    let a = r.analyse();
    assert!(a.suspicions[0].running_within_silence());
    assert!(!a.suspicions[1].running_within_silence());
    let text = summary::render(&a, true);
    for line in [
        "node 1 suspected node 4 at +260 ms after 220 ms of silence; node 4 was running, but resumed from a pause only at +250 ms, within the silence: false suspicion",
        "node 2 suspected node 3 at +600 ms after 300 ms of silence; node 3 was running: false suspicion",
        "2 in all, 0 true, 2 false (0 of a paused node, 2 of a running one, 1 of which had been resumed from a pause within its silence)",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
}

#[test]
fn suspecting_a_paused_node_is_false_and_a_killed_one_true() {
    let mut r = Run::new(&[1, 2, 3, 4]);
    r.everyone_learns(30, 4, 1)
        .pause(100, 4)
        .ev(400, 1, suspect(4, 300))
        .kill(500, 3)
        .ev(820, 2, suspect(3, 320))
        .ev(830, 1, suspect(2, 310))
        .shutdown(1000);
    let a = r.analyse();
    let s = &a.suspicions;
    assert_eq!(s.len(), 3);
    assert_eq!(
        (s[0].target_state, s[0].since, s[0].is_true()),
        (Proc::Paused, Some(ms(100)), false)
    );
    assert_eq!(
        (s[1].target_state, s[1].since, s[1].is_true()),
        (Proc::Killed, Some(ms(500)), true)
    );
    assert_eq!((s[2].target_state, s[2].is_true()), (Proc::Running, false));
    assert_eq!(a.suspicion_counts(), (1, 2));
    let text = summary::render(&a, true);
    for line in [
        "node 1 suspected node 4 at +400 ms after 300 ms of silence; node 4 was paused, not dead: false suspicion",
        "node 2 suspected node 3 at +820 ms after 320 ms of silence; node 3 was dead (killed at +500 ms): true suspicion",
        "node 1 suspected node 2 at +830 ms after 310 ms of silence; node 2 was running: false suspicion",
        "3 in all, 1 true, 2 false (1 of a paused node, 1 of a running one)",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
}

#[test]
fn overlap_across_terms_is_measured_and_zero_within_a_term() {
    let mut r = Run::new(&[1, 2, 3]);
    r.everyone_learns(30, 3, 1)
        .pause(200, 3)
        .ev(520, 1, election_start(2))
        .ev(521, 2, election_start(2))
        .ev(600, 2, leader(2, 2))
        .ev(601, 1, leader(2, 2))
        .fault(900, 3, Event::Resume { pid: 0 })
        .ev(
            905,
            3,
            Event::StepDown {
                term: 1,
                reason: "heard of term 2 from node 2".into(),
            },
        )
        .ev(905, 3, election_start(2))
        .ev(906, 3, leader(2, 2))
        .shutdown(1000);
    let a = r.analyse();
    let e = facts(&a);
    assert!(e.violations.is_empty(), "{:?}", e.violations);
    assert_eq!(
        e.overlaps,
        vec![Overlap {
            from: ms(600),
            to: ms(905),
            holders: vec![(2, 2), (3, 1)],
        }]
    );
    assert_eq!(e.overlap_us, 305_000);
    assert_eq!(e.same_term_overlap_us, 0);
    assert_eq!(e.spans[0].ended, SpanEnd::StepDown);
    assert_eq!(e.spans[1].ended, SpanEnd::RunEnd);
    // Node 3 was paused when term 2 was decided: it learned late, and does not delay the election.
    let t2 = &e.terms[1];
    assert_eq!(t2.expected, vec![1, 2]);
    assert_eq!(t2.late(), vec![(3, ms(906))]);
    assert_eq!(t2.election_us(), Some(81_000));
    let text = summary::render(&a, true);
    assert!(
        text.contains("two or more nodes each believed they led for 305 ms in all"),
        "{text}"
    );
    assert!(
        text.contains("+600 ms to +905 ms (305 ms): node 2 (term 2), node 3 (term 1)"),
        "{text}"
    );
    assert!(text.contains("within one term: none (0 ms)"));
}

#[test]
fn a_restart_forgets_beliefs_and_late_lines_of_a_dead_process_are_left_out() {
    let mut r = Run::new(&[1, 2, 3]);
    r.everyone_learns(30, 3, 1)
        .kill(200, 3)
        // Flushed after the kill was recorded: not the belief of any live process.
        .ev(201, 3, leader(3, 1))
        .fault(300, 3, Event::Restart { pid: 0 })
        .ev(305, 3, start(3))
        .shutdown(400);
    let a = r.analyse();
    let e = facts(&a);
    assert_eq!(a.after_death, BTreeMap::from([(3, 1)]));
    assert_eq!(e.spans.len(), 1);
    assert_eq!(
        (e.spans[0].to, e.spans[0].ended),
        (ms(200), SpanEnd::ProcessEnded(Proc::Killed))
    );
    assert_eq!(e.at_end[&3], None);
    assert_eq!(e.live_at_end, vec![1, 2, 3]);
    // Nodes 1 and 2 still follow the dead leader; the fresh node 3 knows nothing yet.
    assert_eq!(e.violations, vec![Violation::Termination { without: vec![3] }]);
    assert!(summary::render(&a, true).contains("node 3: 1 event written after its process had ended, left out"));
}

#[test]
fn a_run_without_election_events_is_not_judged_on_elections() {
    let mut r = Run::new(&[1, 2]);
    r.ev(50, 1, suspect(2, 300)).shutdown(100);
    let a = r.analyse();
    assert!(a.election.is_none());
    assert!(!a.violated());
    let text = summary::render(&a, true);
    assert!(text.contains("no election in this run"));
    assert!(text.contains("node 2 was running: false suspicion"));
}

#[test]
fn drops_are_grouped_by_reason_and_bad_lines_counted() {
    let tmp = TempDir::new("drops");
    let mut r = clean_run();
    for (t, reason) in [
        (40, "stale term 1 < 2"),
        (41, "stale term 3 < 5"),
        (42, "unknown sender: x"),
    ] {
        r.ev(
            t,
            1,
            Event::Drop {
                reason: reason.into(),
                addr: "node 2".into(),
                count: 1,
                class: String::new(),
            },
        );
    }
    r.ev(
        150,
        1,
        Event::Stop {
            sent: 10,
            received: 9,
            dropped: 3,
            ignored: 0,
            net_dropped: 0,
            by_type: BTreeMap::from([("ELECTION".to_string(), 4)]),
            datagrams: 0,
        },
    );
    r.write(&tmp.0);
    std::fs::write(tmp.0.join("node-2.jsonl"), "{not json\n").unwrap();
    let report = check(&tmp.0).unwrap();
    let tr = &report.analysis.traffic;
    assert_eq!(tr.drops["stale term # < #"].count, 2);
    assert_eq!(tr.drops["stale term # < #"].example, "stale term 1 < 2");
    assert_eq!(tr.drop_events(), 3);
    assert_eq!((tr.stops, tr.sent, tr.received, tr.dropped), (1, 10, 9, 3));
    assert_eq!(report.analysis.bad_lines, 1);
    assert!(report.text.contains("2 x stale term 1 < 2"));
    assert!(report.text.contains("trace lines that did not parse: 1"));
}

#[test]
fn a_missing_directory_or_run_json_is_a_usage_error_naming_the_path() {
    let tmp = TempDir::new("missing");
    let gone = tmp.0.join("no-such-run");
    match check(&gone) {
        Err(CliError::Usage(m)) => assert!(m.contains("no-such-run"), "{m}"),
        other => panic!("expected a usage error, got {other:?}"),
    }
    match check(&tmp.0) {
        Err(CliError::Usage(m)) => assert!(m.contains("run.json"), "{m}"),
        other => panic!("expected a usage error, got {other:?}"),
    }
}

#[test]
fn a_simulated_chang_roberts_run_with_a_paused_leader() {
    use crate::algo::election::chang_roberts::ChangRoberts;
    use crate::algo::election::Leadership;
    use crate::sim::{ring, NetConfig, Sim};
    use std::time::Duration;
    type Cr = Leadership<ChangRoberts>;

    let ids: Vec<NodeId> = (1..=8).collect();
    let mut s: Sim<Cr> = Sim::new(
        NetConfig {
            seed: 3,
            ..NetConfig::default()
        },
        ring(&ids, &ids),
        Cr::new,
    );
    let agree_on = |s: &Sim<Cr>, not: NodeId| {
        let b: Vec<_> = s.live().iter().map(|&i| s.node(i).belief()).collect();
        b[0].1.is_some_and(|l| l != not) && b.iter().all(|x| *x == b[0])
    };
    assert!(s.run_until(Duration::from_secs(30), |s| agree_on(s, 0)));
    let paused_at = s.now();
    s.pause(8);
    let limit = s.now() + Duration::from_secs(30);
    assert!(s.run_until(limit, |s| agree_on(s, 8)));
    s.run_for(Duration::from_secs(1));
    let resumed_at = s.now();
    s.resume(8);
    s.run_for(Duration::from_millis(50));

    // The run directory as the launcher would have written it; simulated time is true time.
    let us = |d: Duration| d.as_micros() as u64;
    let fault = Record::unstamped;
    let mut faults: Vec<Record> = ids
        .iter()
        .map(|&id| {
            let spawn = Event::Spawn {
                pid: 0,
                addr: format!("sim:{id}"),
            };
            fault(0, Some(id), spawn)
        })
        .collect();
    faults.push(fault(us(paused_at), Some(8), Event::Pause { pid: 0 }));
    faults.push(fault(us(resumed_at), Some(8), Event::Resume { pid: 0 }));
    faults.push(fault(us(s.now()), None, Event::Shutdown {}));
    let run = Run {
        ids: ids.clone(),
        start_us: 0,
        node_events: s.trace.clone(),
        faults,
    };
    let tmp = TempDir::new("sim");
    run.write(&tmp.0);

    let report = check(&tmp.0).unwrap();
    let a = &report.analysis;
    assert!(!report.violated, "{}", report.text);
    assert_eq!(a.bad_lines, 0);
    let e = facts(a);
    assert_eq!(e.live_at_end, ids);
    let new = e.agreed().expect("agreement on one leader");
    assert_eq!(new.leader, 7);
    assert!(new.term >= 2);

    // Every suspicion of node 8 happened while it was paused: all false.
    let of8: Vec<_> = a.suspicions.iter().filter(|s| s.target == 8).collect();
    assert!(!of8.is_empty());
    assert!(of8.iter().all(|s| s.target_state == Proc::Paused && !s.is_true()));
    assert!(report.full.contains("node 8 was paused, not dead: false suspicion"));

    // Node 8 believed it led term 1 until it stepped down after waking; node 7 led the new term.
    let step_down = s
        .trace
        .iter()
        .find(|r| r.node == Some(8) && matches!(r.event, Event::StepDown { .. }))
        .expect("node 8 stepped down")
        .t;
    let claim7 = e.claims[&new.term][0];
    assert_eq!(claim7.node, 7);
    assert!(step_down >= us(resumed_at));
    assert_eq!(e.overlap_us, step_down - claim7.t);
    assert_eq!(e.same_term_overlap_us, 0);
    assert_eq!(e.overlaps[0].holders, vec![(7, new.term), (8, 1)]);
    let old = e.spans.iter().find(|sp| sp.node == 8).unwrap();
    assert_eq!((old.term, old.to, old.ended), (1, step_down, SpanEnd::StepDown));
    assert_eq!(e.claims.values().map(Vec::len).max(), Some(1));
}

#[test]
fn without_a_shutdown_the_run_ends_before_the_first_clean_stop_or_at_the_last_event() {
    let stop = || Event::Stop {
        sent: 1,
        received: 1,
        dropped: 0,
        ignored: 0,
        net_dropped: 0,
        by_type: BTreeMap::new(),
        datagrams: 0,
    };
    let mut r = Run::new(&[1, 2, 3]);
    r.everyone_learns(30, 3, 1);
    let a = r.analyse();
    assert_eq!((a.timeline.end, a.timeline.end_us), (End::LastEvent, ms(31)));
    r.ev(150, 2, stop()).ev(151, 1, stop()).ev(152, 3, stop());
    let a = r.analyse();
    assert_eq!((a.timeline.end, a.timeline.end_us), (End::FirstStop, ms(150) - 1));
    // Stopping by hand does not make the nodes look dead or leaderless.
    assert_eq!(facts(&a).live_at_end, vec![1, 2, 3]);
    assert!(!a.violated());
    assert_eq!(a.traffic.stops, 3);
}

#[test]
fn a_follower_of_another_leader_in_the_same_term_breaks_agreement_within_the_term() {
    let mut r = Run::new(&[1, 2, 3]);
    r.ev(10, 3, leader(3, 1))
        .ev(11, 1, leader(3, 1))
        .ev(12, 2, leader(1, 1))
        .shutdown(100);
    let a = r.analyse();
    let groups = BTreeMap::from([(1, vec![2]), (3, vec![3, 1])]);
    assert!(facts(&a)
        .violations
        .contains(&Violation::TermAgreement { term: 1, groups }));
    assert!(a.violated());
    let text = summary::render(&a, false);
    assert!(
        text.contains("agreement within a term: VIOLATED in term 1: node 2 believes node 1 leads it"),
        "{text}"
    );
}

#[test]
fn an_absurd_term_is_reported() {
    let mut r = Run::new(&[1, 2]);
    r.everyone_learns(10, 2, 1)
        .everyone_learns(50, 2, u64::MAX)
        .shutdown(100);
    let a = r.analyse();
    assert!(facts(&a).violations.iter().any(|v| matches!(
        v,
        Violation::AbsurdTerm {
            term: u64::MAX,
            node: 2,
            ..
        }
    )));
    assert!(a.violated());
    assert!(summary::render(&a, false).contains("absurd term: node 2 recorded term 18446744073709551615"));
}

#[test]
fn invalid_bytes_and_unknown_kinds_are_counted_per_file_and_line_and_missing_files_named() {
    let tmp = TempDir::new("input");
    let mut r = clean_run();
    r.ids.push(7);
    r.write(&tmp.0);
    std::fs::remove_file(tmp.0.join("node-7.jsonl")).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(tmp.0.join("node-2.jsonl"))
        .unwrap();
    use std::io::Write as _;
    f.write_all(b"{\"t\":1,\"ev\":\"le\xffder\"}\n").unwrap();
    writeln!(f, r#"{{"t":{},"node":2,"ev":"telepathy","x":1}}"#, ms(50)).unwrap();
    drop(f);
    let report = check(&tmp.0).unwrap();
    let a = &report.analysis;
    assert_eq!(a.bad_lines, 1);
    assert_eq!((a.bad[0].file.as_str(), a.bad[0].line), ("node-2.jsonl", 4));
    assert!(a.bad[0].why.contains("invalid UTF-8"));
    assert_eq!(a.unknown, BTreeMap::from([("telepathy".to_string(), 1)]));
    assert_eq!(a.missing, vec!["node-7.jsonl".to_string()]);
    // Node 7 is not judged: no termination violation about it.
    assert!(!report.violated, "{}", report.text);
    assert_eq!(facts(a).unjudged, vec![7]);
    for line in [
        "node-7.jsonl is missing: no verdict about that node is given",
        "node-2.jsonl:4: invalid UTF-8 at byte",
        "unknown event kinds (counted, not judged): telepathy x 1",
        "node 7: trace missing",
    ] {
        assert!(report.text.contains(line), "missing {line:?} in\n{}", report.text);
    }

    // Without faults.jsonl no suspicion and no end-of-run property is judged.
    std::fs::remove_file(tmp.0.join("faults.jsonl")).unwrap();
    let report = check(&tmp.0).unwrap();
    assert!(report.analysis.suspicions.is_empty());
    assert!(!facts(&report.analysis).judged_end);
    assert!(report.text.contains("faults.jsonl is missing: no ground truth"));
    assert!(report.text.contains("Suspicions: not judged (faults.jsonl is missing)"));
    assert!(report.text.contains("termination: not judged"));
}
