//! Each failure detector (`--set detector=fixed|phi|swim`) under a real Chang-Roberts ring of
//! processes: SIGKILL of the leader is detected (with the detector's own cause in the trace)
//! and a new leader elected; SIGSTOP of the new leader is detected, and after SIGCONT every
//! suspicion of it is withdrawn (SWIM: by its refutation with a higher incarnation).
//!
//! The same detectors hosted by a mutual-exclusion algorithm (central's coordinator) are
//! exercised in tests/mutex_detector_process.rs.

mod common;

use common::*;
use coordlab::trace::{Event, RunDir};

/// Whether `by` suspects `target` at the end of the trace (its last word on it).
fn suspects(rd: &RunDir, by: u64, target: u64) -> bool {
    let mut on = false;
    for r in rd.node_events.iter().filter(|r| r.node == Some(by)) {
        match r.event {
            Event::Suspect { target: t, .. } if t == target => on = true,
            Event::Unsuspect { target: t } if t == target => on = false,
            _ => {}
        }
    }
    on
}

fn story(detector: &str) {
    let logs = temp_logs(&format!("detector-{detector}"));
    let args = with_detector(detector, &["--algo", "chang-roberts"]);
    let mut l = Launch::start(5, &logs, &strs(&args));
    let all: Vec<u64> = (1..=5).collect();
    let (first, t1) = l.wait_for("a first leader", |rd| agreed(rd, &all));

    l.console(&format!("kill {first}"));
    let live: Vec<u64> = all.iter().copied().filter(|&i| i != first).collect();
    let cause = l.wait_for(&format!("a suspicion of the killed leader {first}"), |rd| {
        rd.node_events.iter().find_map(|r| match &r.event {
            Event::Suspect { target, cause, .. } if *target == first => Some(cause.clone()),
            _ => None,
        })
    });
    match detector {
        "phi" => assert_eq!(cause, "phi"),
        "swim" => assert!(cause == "swim" || cause == "gossip", "{cause}"),
        _ => {}
    }
    let (second, t2) = l.wait_for(&format!("a new leader after killing {first}"), |rd| {
        agreed(rd, &live).filter(|&(_, t)| t > t1)
    });

    l.console(&format!("pause {second}"));
    let others: Vec<u64> = live.iter().copied().filter(|&i| i != second).collect();
    l.wait_for(&format!("the paused leader {second} suspected and replaced"), |rd| {
        let suspected = others.iter().any(|&o| suspects(rd, o, second));
        agreed(rd, &others).filter(|&(_, t)| t > t2 && suspected)
    });
    l.console(&format!("resume {second}"));
    l.wait_for(
        &format!("every suspicion of {second} withdrawn after resuming it"),
        |rd| {
            let clear = others.iter().all(|&o| !suspects(rd, o, second));
            agreed(rd, &live).filter(|_| clear)
        },
    );
    if detector == "swim" {
        let rd = RunDir::load(&l.run_dir()).unwrap();
        let refuted = rd
            .node_events
            .iter()
            .any(|r| r.node == Some(second) && matches!(r.event, Event::Refute { .. }));
        assert!(
            refuted,
            "swim: node {second} refuted the suspicion with a higher incarnation"
        );
    }
    l.quit_reaped_and_clean(&logs);
}

#[test]
fn fixed_detects_a_killed_and_a_paused_leader() {
    story("fixed");
}

#[test]
fn phi_detects_a_killed_and_a_paused_leader() {
    story("phi");
}

#[test]
fn swim_detects_a_killed_and_a_paused_leader_which_refutes_on_waking() {
    story("swim");
}
