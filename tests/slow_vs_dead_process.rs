//! `--demo slow-vs-dead` as a user runs it, under each detector: it ends by itself with status
//! 0 and every process reaped, and its summary names, per node, what happened to it as
//! faults.jsonl says (paused, starved, killed, a lossy link, untouched) and a verdict that agrees
//! with the nodes' own traces (suspected or not, declared dead or not, by live nodes).

mod common;

use common::*;
use coordlab::trace::{Event, RunDir};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// The story waits for the first election and then runs about 10 s.
const STORY_DEADLINE: Duration = Duration::from_secs(120);

/// Runs the demo to its end; returns the output and the run.
fn run(name: &str, sub: &str, extra: &[&str]) -> (String, RunDir) {
    let logs = temp_logs(name);
    let mut args = vec!["--demo", "slow-vs-dead"];
    args.extend_from_slice(extra);
    let mut l = Launch::command(sub, 8, &logs, &args);
    let status = wait_until(&mut l.child, Instant::now() + STORY_DEADLINE);
    l.done = status;
    let out = l.output();
    let status = status.unwrap_or_else(|| panic!("{name}: the launcher did not end in time:\n{out}"));
    assert_eq!(status.code(), Some(0), "{name}:\n{out}");
    let rd = RunDir::load(&l.run_dir()).unwrap_or_else(|e| panic!("{name}: {e}:\n{out}"));
    assert_all_reaped(&rd);
    (out, rd)
}

/// The summary's line of each node: `node K: <what happened>. <what was said>. verdict: V (...)`.
fn lines(out: &str) -> BTreeMap<u64, String> {
    out.lines()
        .filter_map(|l| {
            let l = l.trim_start().strip_prefix("node ")?;
            let (id, rest) = l.split_once(": ")?;
            rest.contains("verdict: ").then(|| (id.parse().ok(), rest.to_string()))
        })
        .filter_map(|(id, rest)| Some((id?, rest)))
        .collect()
}

/// Who, alive at the time (not yet `killed`), suspected (`suspect`) or declared dead (`confirm`)
/// `target` at or after `from`.
fn said_of(rd: &RunDir, target: u64, kind: &str, from: u64, killed: &BTreeMap<u64, u64>) -> BTreeSet<u64> {
    rd.node_events
        .iter()
        .filter(|r| r.t >= from && r.event.kind() == kind)
        .filter(|r| match r.event {
            Event::Suspect { target: t, .. } | Event::Confirm { target: t, .. } => t == target,
            _ => false,
        })
        .filter(|r| {
            r.node
                .is_some_and(|by| by != target && killed.get(&by).is_none_or(|&k| r.t < k))
        })
        .filter_map(|r| r.node)
        .collect()
}

fn check(name: &str, sub: &str, extra: &[&str], detector: &str, must_detect: bool) {
    let (out, rd) = run(name, sub, extra);
    assert!(out.contains(&format!("(detector={detector})")), "{name}:\n{out}");
    assert!(
        out.contains(&format!(
            "demo complete: slow and dead side by side under detector={detector}"
        )),
        "{name}:\n{out}"
    );
    let by_node = lines(&out);
    assert_eq!(by_node.len(), 8, "{name}: one line per node:\n{out}");
    let mut pauses: BTreeMap<u64, usize> = BTreeMap::new();
    let mut killed: BTreeMap<u64, u64> = BTreeMap::new();
    let mut lossy: BTreeSet<u64> = BTreeSet::new();
    for r in &rd.faults {
        match (&r.event, r.node) {
            (Event::Pause { .. }, Some(n)) => *pauses.entry(n).or_default() += 1,
            (Event::Kill { .. }, Some(n)) => {
                killed.insert(n, r.t);
            }
            (Event::Loss { links, .. }, _) => lossy.extend(links.iter().flat_map(|&(a, b)| [a, b])),
            _ => {}
        }
    }
    assert_eq!(killed.len(), 1, "{name}: one kill");
    assert_eq!(pauses.len(), 2, "{name}: one paused and one starved node");
    assert_eq!(lossy.len(), 2, "{name}: one lossy link");
    let swim = detector == "swim";
    for (&id, line) in &by_node {
        let verdict = line.split("verdict: ").nth(1).unwrap_or("");
        match (killed.get(&id), pauses.get(&id)) {
            (Some(&k), _) => {
                assert!(line.starts_with("killed at "), "{name}: node {id} was killed: {line}");
                let found = said_of(&rd, id, if swim { "confirm" } else { "suspect" }, k, &killed);
                match found.is_empty() {
                    true => assert!(verdict.starts_with("MISSED"), "{name}: node {id}: {line}"),
                    false => assert!(verdict.starts_with("right (dead"), "{name}: node {id}: {line}"),
                }
                if must_detect {
                    assert!(
                        verdict.starts_with("right (dead"),
                        "{name}: node {id} not detected: {line}"
                    );
                }
            }
            (None, Some(1)) => {
                assert!(line.starts_with("paused "), "{name}: node {id}: {line}");
                // Lifeguard's goal: paused for less than the shortest suspicion timeout (600 ms
                // against 800), so its refutation must reach everyone before anyone confirms.
                if swim {
                    assert!(
                        said_of(&rd, id, "confirm", 0, &killed).is_empty(),
                        "{name}: node {id} was paused 600 ms and declared dead: {line}"
                    );
                    assert!(!verdict.starts_with("WRONG"), "{name}: node {id}: {line}");
                }
            }
            (None, Some(_)) => assert!(line.starts_with("starved of CPU"), "{name}: node {id}: {line}"),
            (None, None) if lossy.contains(&id) => {
                assert!(line.starts_with("its link to "), "{name}: node {id}: {line}")
            }
            (None, None) => assert!(line.starts_with("untouched."), "{name}: node {id}: {line}"),
        }
        if !killed.contains_key(&id) {
            // Suspected by a node alive at the time: never "right (alive, and never suspected)".
            let suspected = !said_of(&rd, id, "suspect", 0, &killed).is_empty();
            assert_eq!(
                verdict.starts_with("right (alive, and never suspected)"),
                !suspected,
                "{name}: node {id}: {line}"
            );
            let confirmed = !said_of(&rd, id, "confirm", 0, &killed).is_empty();
            if confirmed {
                assert!(verdict.starts_with("WRONG"), "{name}: node {id}: {line}");
            }
        }
    }
}

#[test]
fn slow_vs_dead_under_phi_on_a_ring() {
    check("svd-phi", "ring", &["--set", "detector=phi"], "phi", true);
}

#[test]
fn slow_vs_dead_under_swim_on_a_mesh() {
    check(
        "svd-swim",
        "mesh",
        &["--topology", "complete", "--set", "detector=swim"],
        "swim",
        false,
    );
}

#[test]
fn slow_vs_dead_under_swim_with_central() {
    // The mutex family's host: every participant runs SWIM over the others, the coordinator
    // (the highest id) is left alone, and the resource (node 0) is no part of the summary.
    check(
        "svd-central",
        "mesh",
        &["--topology", "complete", "--algo", "central", "--set", "detector=swim"],
        "swim",
        false,
    );
}

#[test]
fn slow_vs_dead_without_a_detector_runs_the_default() {
    check("svd-default", "ring", &[], "fixed", false);
}

#[test]
fn slow_vs_dead_is_refused_where_it_cannot_be_told() {
    let logs = temp_logs("svd-refused");
    let (code, err) = refused(&["4", "--demo", "slow-vs-dead"], &logs);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("at least 6 nodes"), "{err}");
    let (code, err) = refused_cmd("mesh", &["6", "--algo", "central", "--demo", "slow-vs-dead"], &logs);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("hosts the failure detector"), "{err}");
    let (code, err) = refused(&["8", "--demo", "slow-vs-dead", "--duration", "5"], &logs);
    assert_eq!(code, Some(2), "{err}");
    assert!(!logs.exists() || std::fs::read_dir(&logs).map_or(true, |mut d| d.next().is_none()));
}
