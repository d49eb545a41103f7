//! Short chaos soaks of every algorithm of every family in the registry, each judged by its
//! family's own goal and safety (not as an election): the exit status is the soak's verdict and
//! the criteria reported are the family's. Elections, clocks, the probe and every mutual
//! exclusion algorithm (with and without `--fencing`) must pass; a bank soak must be judged by
//! its own criteria, but whether it keeps them through kills and restarts is its own story
//! (its verdict is printed; see docs/soak-figures.md).

mod common;

use common::*;
use coordlab::catalog::{Entry, Fit, ENTRIES};
use coordlab::trace::Event;
use std::fs;

/// The criteria a soak of `family` must report, in its own words.
fn family_criteria(family: &str) -> &'static [&'static str] {
    match family {
        "election" => &["storms:", "two leaders in a term", "one agreed leader at the end"],
        "mutex" => &["mutual exclusion", "every request served", "progress after each fault"],
        "clock" => &["backwards", "claims held", "back within bound after the faults"],
        "snapshot" => &["every snapshot conserves money"],
        _ => &["the checker found nothing wrong"],
    }
}

/// Where `e` runs in a soak: a ring unless it needs a complete graph (or, for echo, a sparse mesh).
fn topology(e: &Entry) -> Vec<&'static str> {
    match e.runs_on {
        Fit::Complete => vec!["--topology", "complete"],
        Fit::AnyGraph if e.family.name == "election" => vec!["--topology", "random:3"],
        _ => vec![],
    }
}

/// A chaos soak of `e` on 5 nodes for 8 s, seed 7, with `extra` options (`--fencing`);
/// returns whether it passed and its output.
fn soak_with(e: &Entry, extra: &[&'static str]) -> (bool, String) {
    let logs = temp_logs(&format!("soak-{}{}", e.name, extra.concat()));
    let mut args = vec!["--duration", "8", "--seed", "7", "--algo", e.name];
    args.extend(extra);
    args.extend(topology(e));
    if e.family.name == "clock" {
        // Skewed, so that a restarted clock comes back off true time and must be brought back.
        args.extend(["--clock-skew", "random:100,50"]);
    }
    let mut l = Launch::command("chaos", 5, &logs, &args);
    let status = l.wait();
    let out = l.output();
    let rd = coordlab::trace::RunDir::load(&logs.join("latest")).unwrap_or_else(|err| panic!("{err}:\n{out}"));
    assert_all_reaped(&rd);
    let faults = rd
        .faults
        .iter()
        .filter(|r| matches!(r.event, Event::Pause { .. } | Event::Kill { .. }))
        .count();
    assert!(faults >= 2, "{}: only {faults} faults injected:\n{out}", e.name);
    assert!(logs.join("latest/summary.txt").is_file());
    assert!(out.contains("suspicions of a running node"), "{}:\n{out}", e.name);
    for c in family_criteria(e.family.name) {
        assert!(out.contains(c), "{}: criterion {c:?} not reported:\n{out}", e.name);
    }
    assert!(
        !out.contains("no election in this run"),
        "{} judged as an election:\n{out}",
        e.name
    );
    // The exit status is the soak's verdict.
    assert_eq!(status.success(), out.contains("chaos: passed"), "{}:\n{out}", e.name);
    let _ = fs::remove_dir_all(&logs);
    (status.success(), out)
}

/// Soaks every algorithm of `family`; with `must_pass`, asserts each passed.
fn soak_family(family: &str, must_pass: bool) {
    soak_family_with(family, must_pass, &[]);
}

/// [`soak_family`] with `extra` options.
fn soak_family_with(family: &str, must_pass: bool, extra: &[&'static str]) {
    let entries: Vec<&Entry> = ENTRIES.iter().filter(|e| e.family.name == family).collect();
    assert!(!entries.is_empty(), "no {family} algorithm");
    let mut failed = Vec::new();
    for e in entries {
        let (ok, out) = soak_with(e, extra);
        let verdict = out.lines().filter(|l| l.starts_with("  FAILED: ")).collect::<Vec<_>>();
        eprintln!(
            "soak of {}: {}",
            e.name,
            if ok { "passed".to_string() } else { verdict.join("; ") }
        );
        if !ok {
            failed.push(format!("--- {} ---\n{out}", e.name));
        }
    }
    assert!(
        !must_pass || failed.is_empty(),
        "soaks that failed:\n{}",
        failed.join("\n")
    );
}

#[test]
fn every_election_survives_a_short_chaos_soak() {
    soak_family("election", true);
}

#[test]
fn every_mutex_algorithm_survives_a_short_chaos_soak_with_and_without_fencing() {
    // Two holders that a fault's lesson explains (a token regenerated or a grant forgotten
    // while the stale holder was paused or cut off) are judged as the faults' doing; anything
    // else fails, as does a request left waiting or a fault after which nobody entered.
    soak_family("mutex", true);
    soak_family_with("mutex", true, &["--fencing"]);
}

#[test]
fn clocks_and_the_probe_pass_a_chaos_soak_judged_by_their_own_goals() {
    for family in ["clock", "probe"] {
        soak_family(family, true);
    }
}

#[test]
fn the_bank_is_judged_by_its_snapshots_in_a_chaos_soak() {
    // Required: a restarted account takes back its stored state (balance, transfers applied and
    // not yet acknowledged), so snapshots conserve the money and go on after every restart.
    soak_family("snapshot", true);
}
