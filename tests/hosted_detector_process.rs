//! The mutual-exclusion algorithms that host the family's detector besides central, with each
//! detector (`--set detector=fixed|phi|swim`), as real processes with fencing, under full
//! contention: the token ring (a ring of 4), Suzuki-Kasami, Ricart-Agrawala, Lamport and Maekawa
//! (a complete mesh of 4). A node is SIGKILLed; a node says its detector takes it for dead and
//! goes on without it (the token skips it; the permission algorithms stop waiting for it;
//! Maekawa's requests move to a grid quorum without it), and the
//! others keep entering, with no token minted after that. The checker's summary says mutual
//! exclusion held and names the suspicion of the killed node as true.

mod common;

use common::*;
use coordlab::trace::{Event, RunDir};
use std::fs;

const VICTIM: u64 = 2;

/// When a node first said it skips `VICTIM` as dead, after `after` (us).
fn skipped(rd: &RunDir, after: u64) -> Option<u64> {
    let said = format!("takes [{VICTIM}] for dead");
    rd.node_events
        .iter()
        .filter(|r| r.t > after && matches!(&r.event, Event::Note { text, .. } if text.contains(&said)))
        .map(|r| r.t)
        .min()
}

/// The entries after `t` (us), and the tokens minted after it.
fn after(rd: &RunDir, t: u64) -> (usize, usize) {
    let later = rd.node_events.iter().filter(|r| r.t > t);
    let (mut entries, mut minted) = (0, 0);
    for r in later {
        match &r.event {
            Event::CsEnter { .. } => entries += 1,
            Event::Note { text, .. } if text.starts_with("minted") => minted += 1,
            _ => {}
        }
    }
    (entries, minted)
}

fn story(algo: &str, detector: &str) {
    let logs = temp_logs(&format!("hosted-detector-{algo}-{detector}"));
    let work = ["--set", "think_ms=0", "--set", "hold_ms=5", "--fencing"];
    let args = with_detector(detector, &work);
    let mut l = if algo == "token-ring" {
        Launch::start(4, &logs, &[&["--algo", algo][..], &strs(&args)].concat())
    } else {
        Launch::complete(4, &logs, algo, &strs(&args))
    };
    l.wait_for("entries by every node", |rd| {
        (1..=4).all(|n| count(rd, n, "cs_enter") >= 3).then_some(())
    });
    l.console(&format!("kill {VICTIM}"));
    let killed = l.wait_for("the kill recorded", |rd| {
        rd.faults
            .iter()
            .find(|r| r.node == Some(VICTIM) && r.event.kind() == "kill")
            .map(|r| r.t)
    });
    let verdict = l.wait_for(&format!("a node to go on without the killed {VICTIM}"), |rd| {
        skipped(rd, killed)
    });
    // Long enough after the verdict for a lost token to have been regenerated (two timeouts
    // and a lap), had one been lost.
    let (entries, minted) = l.wait_for("entries for a second after the verdict", |rd| {
        let last = rd.node_events.iter().map(|r| r.t).max()?;
        (last > verdict + 1_000_000).then(|| after(rd, verdict + 100_000))
    });
    l.quit();
    assert!(entries >= 30, "{algo}, {detector}: {entries} entries after the verdict");
    assert_eq!(minted, 0, "{algo}, {detector}: a token lost after the verdict");
    let rd = RunDir::load(&l.run_dir()).unwrap();
    let summary = fs::read_to_string(rd.path.join("summary.txt")).unwrap();
    assert!(
        summary.contains("mutual exclusion: held"),
        "{algo}, {detector}:\n{summary}"
    );
    assert!(
        summary.contains(&format!("node {VICTIM} was dead (killed at")) && summary.contains("true suspicion"),
        "{algo}, {detector}: the summary names a true suspicion of the killed node:\n{summary}"
    );
    assert!(
        !rd.resource.iter().any(|r| r.event.kind() == "violation"),
        "{algo}, {detector}"
    );
    l.quit_reaped_and_clean(&logs);
}

#[test]
fn the_token_ring_skips_a_killed_node_with_each_detector() {
    for d in ["fixed", "phi", "swim"] {
        story("token-ring", d);
    }
}

#[test]
fn suzuki_kasami_skips_a_killed_node_with_each_detector() {
    for d in ["fixed", "phi", "swim"] {
        story("suzuki-kasami", d);
    }
}

#[test]
fn ricart_agrawala_goes_on_without_a_killed_node_with_each_detector() {
    for d in ["fixed", "phi", "swim"] {
        story("ricart-agrawala", d);
    }
}

#[test]
fn lamport_goes_on_without_a_killed_node_with_each_detector() {
    for d in ["fixed", "phi", "swim"] {
        story("lamport", d);
    }
}

#[test]
fn maekawa_moves_its_requests_off_a_killed_voter_with_each_detector() {
    for d in ["fixed", "phi", "swim"] {
        story("maekawa", d);
    }
}
