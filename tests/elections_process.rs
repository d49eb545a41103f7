//! Process tests of every registered election algorithm, each on a layout that fits it (the
//! launcher's own rule table): elect; kill the leader, and the live nodes agree on a new one;
//! pause that one and resume it, and every live node agrees on exactly one leader of the highest
//! term. Then `coordlab check` judges the run. Also: misfits and bad graphs are refused up front.

mod common;

use common::*;
use coordlab::catalog::{find, Fit, ELECTION, ENTRIES};
use coordlab::trace::RunDir;
use std::fs;
use std::process::Command;

/// How a test launches an algorithm of rule `f`: subcommand, its options, and how many nodes.
/// A 2x3 grid has no cut vertex and stays connected without its first two leaders (Yo-Yo's
/// smallest ids, 1 and 2), so the story can go on.
fn layout(f: Fit) -> (&'static str, Vec<&'static str>, usize) {
    match f.example() {
        (sub, None) => (sub, vec![], 5),
        (sub, Some(spec)) => (sub, vec!["--topology", spec], if f == Fit::AnyGraph { 6 } else { 5 }),
    }
}

/// Runs the story for `algo`; panics with the launcher's output on any failure.
fn elect_kill_pause_resume(algo: &str) {
    let rule = find(algo).unwrap_or_else(|| panic!("{algo} is not registered")).runs_on;
    let (sub, mut extra, n) = layout(rule);
    extra.extend(["--algo", algo, "--timeout-ms", "200", "--heartbeat-ms", "50"]);
    if algo == "anon-ring" {
        // The course's Ring 1 elects every candidate that starts at once (the point of its own
        // demo): one initiator, so that the first election has one candidate.
        extra.extend(["--initiators", "1"]);
    }
    let logs = temp_logs(&format!("elections-{algo}"));
    let mut l = Launch::command(sub, n, &logs, &extra);
    let all: Vec<u64> = (1..=n as u64).collect();
    let (first, t1) = l.wait_for(&format!("{algo}: a first leader"), |rd| agreed(rd, &all));

    l.console(&format!("kill {first}"));
    let live: Vec<u64> = all.iter().copied().filter(|&i| i != first).collect();
    let (second, t2) = l.wait_for(&format!("{algo}: a new leader after killing {first}"), |rd| {
        agreed(rd, &live).filter(|&(_, t)| t > t1)
    });

    l.console(&format!("pause {second}"));
    let others: Vec<u64> = live.iter().copied().filter(|&i| i != second).collect();
    let (third, t3) = l.wait_for(&format!("{algo}: a leader while {second} is paused"), |rd| {
        agreed(rd, &others).filter(|&(_, t)| t > t2)
    });
    l.console(&format!("resume {second}"));
    let (last, t4) = l.wait_for(
        &format!("{algo}: every live node agreeing after resuming {second}"),
        |rd| agreed(rd, &live).filter(|&(_, t)| t >= t3),
    );
    // The launcher's status is its check's verdict (only anon-ring may be found violated).
    let quit = l.quit().code();
    eprintln!(
        "{algo} on {sub} {extra:?}: node {first} led term {t1}; killed, node {second} term {t2}; paused, node {third} \
         term {t3}; resumed, node {last} term {t4}"
    );

    // The course's Ring 1 cannot tell two candidates apart: nodes that time out together after a
    // fault may both win one term (the point of its own demo). For it, the last leader must be
    // among those of the highest term, and uniqueness is the one property the checker may report.
    let anonymous = algo == "anon-ring";
    let rd = RunDir::load(&l.run_dir()).unwrap();
    let (top, leaders) = leaders_of_top_term(&rd);
    if anonymous {
        assert!(
            top == t4 && leaders.contains(&last),
            "{algo}: term {top}, leaders {leaders:?}"
        );
    } else {
        assert_eq!(
            (top, leaders),
            (t4, vec![last]),
            "{algo}: exactly one leader in the highest term"
        );
    }
    assert_eq!(
        agreed(&rd, &live),
        Some((last, t4)),
        "{algo}: the last word of every live node"
    );
    assert_all_reaped(&rd);
    let check = Command::new(BIN).arg("check").arg(l.run_dir()).output().unwrap();
    let text = String::from_utf8_lossy(&check.stdout);
    assert_eq!(
        quit,
        check.status.code(),
        "{algo}: the launcher and coordlab check disagree:\n{text}"
    );
    if anonymous && check.status.code() == Some(1) {
        let violated: Vec<&str> = text
            .lines()
            .filter(|l| l.trim_start().starts_with("VIOLATED:"))
            .collect();
        assert!(
            !violated.is_empty() && violated.iter().all(|l| l.contains("uniqueness")),
            "{algo}: only uniqueness may be violated:\n{text}"
        );
    } else {
        assert_eq!(check.status.code(), Some(0), "{algo}: coordlab check:\n{text}");
        assert!(text.contains("no property violated"), "{algo}: {text}");
    }
    drop(l);
    let _ = fs::remove_dir_all(&logs);
}

#[test]
fn every_election_elects_survives_a_dead_leader_and_a_paused_one() {
    for e in ENTRIES.iter().filter(|e| e.family.name == ELECTION.name) {
        elect_kill_pause_resume(e.name);
    }
}

#[test]
fn bad_graphs_and_misfits_are_refused_before_anything_starts() {
    let logs = temp_logs("mesh-refused");
    fs::create_dir_all(&logs).unwrap();
    let split = logs.join("split.txt");
    fs::write(&split, "1 2\n3 4\n").unwrap();
    let split = split.to_string_lossy().into_owned();
    let run_logs = logs.join("runs");
    let cases: [(&[&str], &str); 5] = [
        (
            &["4", "--topology", &split, "--algo", "yoyo"],
            "the graph is not connected: node 3 cannot be reached from node 1",
        ),
        (
            &["5", "--topology", "grid", "--algo", "franklin"],
            "node 2 has 3 neighbours",
        ),
        (
            &["5", "--topology", "grid", "--algo", "chang-roberts"],
            "coordlab ring N",
        ),
        (&["5", "--topology", "hexagon"], "unknown topology 'hexagon'"),
        (
            &["5", "--algo", "echo", "--set", "weights=1:x"],
            "weights: '1:x' is not ID:CAPABILITY",
        ),
    ];
    for (args, needle) in cases {
        let (code, err) = refused_cmd("mesh", args, &run_logs);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("coordlab: ") && err.contains(needle), "{args:?}: {err}");
    }
    assert!(!run_logs.exists(), "nothing is created for a refused launch");
    let _ = fs::remove_dir_all(&logs);
}
