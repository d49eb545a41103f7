//! `coordlab status` shows each node's failure detector: with `detector=phi` the current phi of
//! every peer (a paused peer's phi past the threshold, marked `!`), with `detector=swim` the
//! node's incarnation and whom it suspects or has declared dead; nothing more with `fixed`.

mod common;

use common::*;
use coordlab::trace::{Event, RunDir};
use std::fs;
use std::time::{Duration, Instant};

/// `coordlab status` of the running launch, until `ok` holds of it (the view follows the
/// traces, read every tick); panics with the last answer at the deadline.
fn status_until(l: &Launch, ok: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let out = coordlab(&["status"], &l.run_dir());
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        if ok(&text) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "status never showed it:\n{text}\n{}",
            l.output()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn suspected(rd: &RunDir, target: u64) -> bool {
    rd.node_events
        .iter()
        .any(|r| matches!(r.event, Event::Suspect { target: t, .. } if t == target))
}

fn paused_peer(detector: &str, want: impl Fn(&str) -> bool) {
    let logs = temp_logs(&format!("status-{detector}"));
    let set = format!("detector={detector}");
    let mut l = Launch::start(5, &logs, &["--set", &set]);
    let all: Vec<u64> = (1..=5).collect();
    l.wait_for("a first leader", |rd| agreed(rd, &all));
    l.console("pause 2");
    l.wait_for("a suspicion of the paused node 2", |rd| suspected(rd, 2).then_some(()));
    let text = status_until(&l, &want);
    assert!(text.contains("paused"), "{text}");
    l.quit_reaped_and_clean(&logs);
}

#[test]
fn status_shows_phi_per_peer() {
    paused_peer("phi", |text| {
        let phi_lines: Vec<&str> = text.lines().filter(|l| l.contains("phi (suspect at 40):")).collect();
        // Every node has its line; the running ones find the paused node 2 past the threshold
        // and the others below it.
        phi_lines.len() == 5
            && phi_lines
                .iter()
                .filter(|l| l.contains(" 2=") && l.contains('!'))
                .count()
                >= 3
            && phi_lines.iter().any(|l| l.contains(" 3=0."))
    });
}

#[test]
fn status_shows_swim_suspicion_and_incarnation() {
    paused_peer("swim", |text| {
        text.lines().filter(|l| l.contains("swim: own incarnation 0")).count() == 5
            && text.lines().any(|l| l.contains("2@0"))
    });
}

#[test]
fn status_with_the_fixed_detector_adds_nothing() {
    let logs = temp_logs("status-fixed");
    let mut l = Launch::start(5, &logs, &[]);
    let all: Vec<u64> = (1..=5).collect();
    l.wait_for("a first leader", |rd| agreed(rd, &all));
    let text = status_until(&l, |t| t.contains("agree"));
    assert!(!text.contains("phi") && !text.contains("swim"), "{text}");
    l.quit();
    drop(l);
    let _ = fs::remove_dir_all(&logs);
}
