//! What a run shows must be true: the exit-status table (0 nothing the faults do not explain,
//! 1 a violation or a goal that did not hold, 2 bad input) for every way a launch ends and for
//! the subcommands; `--until done` by each family's own goal; `mesh --topology ring` is
//! `coordlab ring`; `mesh N` with every default; the banner's link count; the console's words;
//! `coordlab logs` of a finished run.

mod common;

use common::*;
use coordlab::exit;
use std::fs;
use std::process::Command;

/// The anonymous ring with two initiators: two leaders of term 1 by design (no ids to tell the
/// candidates apart) whatever ends the run, which the check calls VIOLATED. (Central with a
/// short regrant_ms no longer overlaps by itself: a holder renews its grant while it holds.)
const OVERLAPPING: &[&str] = &["--algo", "anon-ring", "--initiators", "2,5"];

fn launch(sub: &str, n: usize, name: &str, extra: &[&str]) -> (Option<i32>, String, TempLogs) {
    let logs = temp_logs(name);
    let mut l = Launch::command(sub, n, &logs, extra);
    let status = l.wait();
    (status.code(), l.output(), logs)
}

#[test]
fn a_violation_is_status_1_however_the_launch_ends() {
    let mut by_duration = OVERLAPPING.to_vec();
    by_duration.extend(["--duration", "3"]);
    let (code, out, logs) = launch("ring", 6, "exit-duration", &by_duration);
    assert!(out.contains("checked: VIOLATED"), "{out}");
    assert_eq!(code, Some(exit::VIOLATED), "--duration:\n{out}");
    // `coordlab check` of the same run says the same.
    let check = Command::new(BIN)
        .arg("check")
        .arg(logs.join("latest"))
        .output()
        .unwrap();
    assert_eq!(check.status.code(), Some(exit::VIOLATED));
    let _ = fs::remove_dir_all(&logs);

    // Stopped by `quit` at the console once two holders were seen.
    let logs = temp_logs("exit-quit");
    let mut l = Launch::command("ring", 6, &logs, OVERLAPPING);
    l.wait_for("two leaders of term 1", |rd| {
        let leaders: std::collections::BTreeSet<_> = rd
            .node_events
            .iter()
            .filter(
                |r| matches!(r.event, coordlab::trace::Event::Leader { term: 1, leader, .. } if Some(leader) == r.node),
            )
            .map(|r| r.node)
            .collect();
        (leaders.len() >= 2).then_some(())
    });
    let status = l.quit();
    assert_eq!(status.code(), Some(exit::VIOLATED), "quit:\n{}", l.output());
    let _ = fs::remove_dir_all(&logs);

    // Ended by its goal (an agreed leader).
    let mut done = OVERLAPPING.to_vec();
    done.extend(["--until", "elected"]);
    let (code, out, logs) = launch("ring", 6, "exit-done", &done);
    assert!(out.contains("VIOLATED"), "{out}");
    assert_eq!(code, Some(exit::VIOLATED), "--until done:\n{out}");
    let _ = fs::remove_dir_all(&logs);
}

#[test]
fn a_clean_run_is_status_0_and_bad_input_status_2_with_nothing_started() {
    let (code, out, logs) = launch("ring", 3, "exit-clean", &["--until", "elected"]);
    assert_eq!(code, Some(exit::OK), "{out}");
    let run = logs.join("latest");
    let check = Command::new(BIN).arg("check").arg(&run).output().unwrap();
    assert_eq!(check.status.code(), Some(exit::OK));
    // `coordlab logs` reads a finished run's node log from its directory.
    let logs_out = Command::new(BIN)
        .args(["logs", "2", "3", "--run"])
        .arg(&run)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&logs_out.stdout);
    assert_eq!(logs_out.status.code(), Some(exit::OK), "{text}");
    assert!(!text.trim().is_empty() && text.lines().count() <= 3, "{text}");
    // A control command at a run that has ended is refused as bad input.
    let pause = Command::new(BIN)
        .args(["pause", "2", "--run"])
        .arg(&run)
        .output()
        .unwrap();
    assert_eq!(pause.status.code(), Some(exit::USAGE));
    assert!(String::from_utf8_lossy(&pause.stderr).contains("the run has ended"));
    let _ = fs::remove_dir_all(&logs);

    let bad = temp_logs("exit-bad");
    for (sub, args) in [
        ("ring", vec!["1"]),
        ("ring", vec!["3", "--until", "forever"]),
        ("mesh", vec!["3", "--algo", "bank", "--until", "done"]),
        ("chaos", vec!["3", "--demo", "split-brain"]),
    ] {
        let (code, err) = refused_cmd(sub, &args, &bad);
        assert_eq!(code, Some(exit::USAGE), "{sub} {args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        assert!(!bad.join("latest").exists(), "{sub} {args:?} started a run");
    }
    let (_, err) = refused_cmd("mesh", &["3", "--algo", "bank", "--until", "done"], &bad);
    assert!(err.contains("--set snapshot="), "{err}");
    let _ = fs::remove_dir_all(&bad);
}

#[test]
fn until_done_waits_for_each_familys_own_goal() {
    let (code, out, logs) = launch("mesh", 3, "done-cristian", &["--algo", "cristian", "--until", "done"]);
    assert_eq!(code, Some(exit::OK), "{out}");
    assert!(
        out.contains("synchronised: all 2 live clocks are within their claimed bounds"),
        "{out}"
    );
    assert!(!out.contains("elected"), "{out}");
    let _ = fs::remove_dir_all(&logs);
    // Berkeley on skewed clocks: the master corrects itself too; every clock must be slewed in.
    let (code, out, logs) = launch(
        "mesh",
        3,
        "done-berkeley",
        &["--algo", "berkeley", "--clock-skew", "random:100,50", "--until", "done"],
    );
    assert_eq!(code, Some(exit::OK), "{out}");
    assert!(out.contains("synchronised: all 2 live clocks"), "{out}");
    let _ = fs::remove_dir_all(&logs);

    let (code, out, logs) = launch(
        "mesh",
        3,
        "done-bank",
        &["--algo", "bank", "--set", "snapshot=chandy-lamport", "--until", "done"],
    );
    assert_eq!(code, Some(exit::OK), "{out}");
    assert!(out.contains("chandy-lamport snapshot"), "{out}");
    assert!(out.contains("recorded by all 3 live nodes"), "{out}");
    let _ = fs::remove_dir_all(&logs);
}

#[test]
fn mesh_ring_topologies_are_the_ring_and_the_demo_runs_the_same_on_both() {
    for (sub, extra) in [
        ("ring", vec![]),
        ("mesh", vec!["--topology", "ring"]),
        ("mesh", vec!["--topology", "bidirectional-ring"]),
    ] {
        let mut args = vec!["--demo", "false-suspicion"];
        args.extend(extra.iter().copied());
        let (code, out, logs) = launch(sub, 5, &format!("ringdemo-{}", extra.len() + sub.len()), &args);
        assert_eq!(code, Some(exit::OK), "{sub} {extra:?}:\n{out}");
        assert!(out.contains("ring of 5 nodes running chang-roberts"), "{out}");
        let run: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(logs.join("latest/run.json")).unwrap()).unwrap();
        assert_eq!(run["topology"], "ring", "{sub} {extra:?}");
        let _ = fs::remove_dir_all(&logs);
    }
}

#[test]
fn mesh_with_every_default_runs_and_its_banner_counts_links_right() {
    let (code, out, logs) = launch("mesh", 4, "mesh-defaults", &["--until", "elected"]);
    assert_eq!(code, Some(exit::OK), "{out}");
    assert!(
        out.contains("mesh (complete: 6 links between the 4 nodes) of 4 nodes running bully"),
        "{out}"
    );
    let _ = fs::remove_dir_all(&logs);
    let (code, out, logs) = launch(
        "mesh",
        4,
        "mesh-mutex-banner",
        &["--algo", "ricart-agrawala", "--until", "done", "--requests", "1"],
    );
    assert_eq!(code, Some(exit::OK), "{out}");
    assert!(
        out.contains("mesh (complete: 6 links between the 4 nodes) of 4 nodes, plus the shared resource (node 0)"),
        "{out}"
    );
    let _ = fs::remove_dir_all(&logs);
}

#[test]
fn the_console_says_a_dead_node_is_dead_and_who_started_the_election() {
    let logs = temp_logs("console-words");
    let mut l = Launch::start(4, &logs, &[]);
    l.wait_for("an agreed leader", |rd| agreed(rd, &[1, 2, 3, 4]));
    l.console("kill 2");
    l.wait_for("node 2 killed", |rd| {
        rd.faults
            .iter()
            .any(|r| matches!(r.event, coordlab::trace::Event::Kill { .. }))
            .then_some(())
    });
    l.console("kill 2");
    let deadline = std::time::Instant::now() + DEADLINE;
    while !l.output().contains("node 2 is already dead") {
        assert!(std::time::Instant::now() < deadline, "{}", l.output());
        std::thread::sleep(POLL);
    }
    l.quit();
    let out = l.output();
    // Who started term 1: every node, in one line, or in two when one node's start came a
    // few milliseconds after the others' (a loaded machine: "nodes 2, 3, 4 start an election:
    // term 1", then "node 1 also starts an election: term 1").
    let starts: Vec<&str> = out.lines().filter(|l| l.contains("election: term 1")).collect();
    // The ids named before "start(s) an election" (after the time, "+8 ms").
    let mut named = std::collections::BTreeSet::new();
    for l in &starts {
        if l.contains("all 4 nodes start") {
            named.extend(1..=4u32);
        }
        let who = l.split_once("node").map_or("", |(_, rest)| rest);
        let who = who
            .split(" start")
            .next()
            .unwrap_or("")
            .split(" also")
            .next()
            .unwrap_or("");
        named.extend(
            who.split(|c: char| !c.is_ascii_digit())
                .filter_map(|w| w.parse::<u32>().ok()),
        );
    }
    assert_eq!(named, (1..=4).collect(), "{out}");
    let _ = fs::remove_dir_all(&logs);
}
