//! Central with each failure detector (`--set detector=fixed|phi|swim`) on a complete mesh of
//! 4 participants (the coordinator is node 4) and the shared resource, as real processes, with
//! fencing: SIGKILL of a holder mid-hold is taken for dead by the coordinator's detector and the
//! next node enters; a brief SIGSTOP of a holder leaves the run judged as the lab judges it
//! (mutual exclusion held; a holder taken for dead anyway has its stale write rejected). The
//! checker's summary names the coordinator's suspicion of the killed holder as true. Refusals of
//! the keys that central (or a token algorithm) would not read.

mod common;

use common::*;
use coordlab::trace::{Event, RunDir};
use std::fs;
use std::time::Duration;

const COORDINATOR: u64 = 4;

/// The node other than the coordinator inside the section now (its last cs event is an entry).
fn inside(rd: &RunDir) -> Option<u64> {
    (1..COORDINATOR).find(|&n| {
        rd.node_events
            .iter()
            .rev()
            .find(|r| r.node == Some(n) && matches!(r.event, Event::CsEnter { .. } | Event::CsExit { .. }))
            .is_some_and(|r| matches!(r.event, Event::CsEnter { .. }))
    })
}

/// When the coordinator took `holder` for dead after `after` (us): its note.
fn taken_for_dead(rd: &RunDir, holder: u64, after: u64) -> Option<u64> {
    let said = format!("suspects holder {holder} ");
    rd.node_events
        .iter()
        .find(|r| {
            r.node == Some(COORDINATOR)
                && r.t > after
                && matches!(&r.event, Event::Note { text, .. } if text.contains(&said))
        })
        .map(|r| r.t)
}

/// When the latest fault of `kind` on `node` was, us.
fn fault_at(rd: &RunDir, node: u64, kind: &str) -> Option<u64> {
    rd.faults
        .iter()
        .rev()
        .find(|r| r.node == Some(node) && r.event.kind() == kind)
        .map(|r| r.t)
}

fn story(detector: &str) {
    let logs = temp_logs(&format!("mutex-detector-{detector}"));
    let fenced = ["--set", "hold_ms=2000", "--set", "think_ms=100", "--fencing"];
    let args = with_detector(detector, &fenced);
    let mut l = Launch::complete(4, &logs, "central", &strs(&args));

    // 1. SIGKILL a holder mid-hold: the coordinator's detector takes it for dead, the next enters.
    let victim = l.wait_for("a participant other than the coordinator inside", inside);
    l.console(&format!("kill {victim}"));
    let (killed, verdict, next) = l.wait_for(&format!("the coordinator to regrant the killed {victim}"), |rd| {
        let killed = fault_at(rd, victim, "kill")?;
        let verdict = taken_for_dead(rd, victim, killed)?;
        let next = rd
            .node_events
            .iter()
            .find(|r| r.t > verdict && r.node != Some(victim) && matches!(r.event, Event::CsEnter { .. }))?;
        Some((killed, verdict, next.t))
    });
    let rd = RunDir::load(&l.run_dir()).unwrap();
    let exited = rd
        .node_events
        .iter()
        .any(|r| r.node == Some(victim) && r.t < killed && r.event.kind() == "cs_exit" && r.t > killed - 2_000_000);
    assert!(
        !exited,
        "{detector}: node {victim} had left the section before the kill"
    );
    // The coordinator's own detector suspected it, with its own cause, before the regrant.
    let cause = rd.node_events.iter().find_map(|r| match &r.event {
        Event::Suspect { target, cause, .. }
            if *target == victim && r.node == Some(COORDINATOR) && r.t > killed && r.t <= verdict =>
        {
            Some(cause.clone())
        }
        _ => None,
    });
    let cause = cause.unwrap_or_else(|| panic!("{detector}: no suspicion of {victim} by the coordinator"));
    match detector {
        "fixed" => assert_eq!(cause, "probe"),
        "phi" => assert_eq!(cause, "phi"),
        _ => assert!(cause == "swim" || cause == "gossip", "{cause}"),
    }
    if detector == "swim" {
        // By any member: the coordinator may learn the death by gossip from the first to confirm it.
        let confirmed = rd
            .node_events
            .iter()
            .any(|r| r.t <= verdict && matches!(r.event, Event::Confirm { target, .. } if target == victim));
        assert!(confirmed, "swim regrants on a confirmation");
    }
    assert!(next > verdict);

    // 2. SIGSTOP a holder briefly (well under every detector's judgement), then SIGCONT.
    let paused = l.wait_for("a live participant other than the coordinator inside", |rd| {
        inside(rd).filter(|&n| n != victim)
    });
    l.console(&format!("pause {paused}"));
    l.wait_for("the pause recorded", |rd| fault_at(rd, paused, "pause"));
    // The pause's length is the fault being injected, not a wait for a condition.
    std::thread::sleep(Duration::from_millis(100));
    l.console(&format!("resume {paused}"));
    let resumed = l.wait_for("the resume recorded", |rd| fault_at(rd, paused, "resume"));
    l.wait_for(
        &format!("node {paused} to leave the section and another to enter"),
        |rd| {
            let left = rd
                .node_events
                .iter()
                .find(|r| r.node == Some(paused) && r.t > resumed && r.event.kind() == "cs_exit")?;
            rd.node_events
                .iter()
                .find(|r| r.t > left.t && r.event.kind() == "cs_enter")
                .map(|_| ())
        },
    );
    l.quit();
    let rd = RunDir::load(&l.run_dir()).unwrap();
    let summary = fs::read_to_string(rd.path.join("summary.txt")).unwrap();
    assert!(summary.contains("mutual exclusion: held"), "{detector}:\n{summary}");
    assert!(summary.contains("fencing: held"), "{detector}:\n{summary}");
    assert!(
        summary.contains(&format!("node {COORDINATOR} suspected node {victim} at"))
            && summary.contains(&format!("node {victim} was dead (killed at")),
        "{detector}: the summary names the coordinator's true suspicion:\n{summary}"
    );
    assert!(!rd.resource.iter().any(|r| r.event.kind() == "violation"), "{detector}");
    // Taken for dead all the same (a loaded machine can stretch 100 ms): then fencing is what
    // kept the resource safe, and the paused holder's late write was rejected.
    if taken_for_dead(&rd, paused, fault_at(&rd, paused, "pause").unwrap()).is_some() {
        assert!(
            rd.resource.iter().any(|r| r.event.kind() == "reject_stale"),
            "{detector}: a stale holder went unfenced"
        );
    }
    l.quit_reaped_and_clean(&logs);
}

#[test]
fn fixed_takes_a_killed_holder_for_dead_and_keeps_a_briefly_paused_one() {
    story("fixed");
}

#[test]
fn phi_takes_a_killed_holder_for_dead_and_keeps_a_briefly_paused_one() {
    story("phi");
}

#[test]
fn swim_takes_a_killed_holder_for_dead_and_keeps_a_briefly_paused_one() {
    story("swim");
}

#[test]
fn detector_keys_no_algorithm_would_read_are_refused() {
    let logs = temp_logs("mutex-detector-refused");
    let mesh = ["4", "--topology", "complete", "--algo"];
    let cases: &[(&str, &[&str], &str)] = &[
        (
            "central",
            &["--set", "detector=phi", "--set", "regrant_ms=300"],
            "give one",
        ),
        ("central", &["--set", "swim_k=2"], "add --set detector=swim"),
        ("central", &["--set", "detector=chi"], "fixed, phi or swim"),
        ("suzuki-kasami", &["--set", "swim_k=2"], "add --set detector=swim"),
        ("maekawa", &["--set", "swim_k=2"], "add --set detector=swim"),
        (
            "cristian",
            &["--set", "detector=phi"],
            "--set detector does not apply to cristian",
        ),
    ];
    for (algo, set, want) in cases {
        let args: Vec<&str> = mesh.iter().chain([algo]).chain(set.iter()).copied().collect();
        let (code, err) = refused_cmd("mesh", &args, &logs);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    assert!(!logs.exists() || fs::read_dir(&logs).map_or(true, |mut d| d.next().is_none()));
}
