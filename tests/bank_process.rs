//! The bank as real processes: an account killed and restarted takes back its stored state, so
//! the restart neither creates nor destroys money, and Chandy-Lamport snapshots go on after it
//! (issue 23, item 5).

mod common;

use common::*;
use coordlab::check::snapshot::analyse;
use coordlab::trace::RunDir;
use std::fs;

/// Chandy-Lamport snapshots that every account finished, after time `t`.
fn complete_after(rd: &RunDir, t: u64) -> usize {
    analyse(rd)
        .complete
        .iter()
        .filter(|g| g.method == "chandy-lamport" && g.t > t)
        .count()
}

fn fault_time(rd: &RunDir, kind: &str) -> Option<u64> {
    rd.faults.iter().find(|f| f.event.kind() == kind).map(|f| f.t)
}

#[test]
fn a_killed_and_restarted_account_keeps_its_money_and_snapshots_go_on() {
    let logs = temp_logs("bank-restart");
    let mut l = Launch::complete(
        5,
        &logs,
        "bank",
        &["--set", "snapshot=chandy-lamport", "--set", "snapshot_ms=500"],
    );
    l.wait_for("two snapshots before the kill", |rd| {
        (complete_after(rd, 0) >= 2).then_some(())
    });
    l.console("kill 2");
    let killed = l.wait_for("the kill to be recorded", |rd| fault_time(rd, "kill"));
    // Money keeps moving towards the dead account meanwhile: it waits in the senders' channels.
    l.wait_for("the others to go on trading while node 2 is dead", |rd| {
        rd.node_events
            .iter()
            .any(|r| r.node == Some(1) && r.t > killed + 300_000)
            .then_some(())
    });
    l.console("restart 2");
    let back = l.wait_for("node 2 to take back its stored state", |rd| {
        let f = analyse(rd);
        f.restored.first().map(|r| r.1)
    });
    let rd = l.wait_for("three snapshots completed after the restart", |rd| {
        (complete_after(rd, back) >= 3).then(|| rd.clone())
    });
    assert_eq!(l.quit().code(), Some(0), "{}", l.output());
    let f = analyse(&rd);
    assert_eq!(f.initial, 5000);
    assert!(
        f.restarts.is_empty(),
        "node 2 did not come back with its starting balance: {f:?}"
    );
    assert_eq!(f.restored.len(), 1);
    assert_ne!(f.restored[0].2, 1000, "it came back with what it stored, not 1000");
    assert!(f.broken().is_empty(), "{:?}", f.broken());
    assert!(f.stopped.is_none());
    assert!(f
        .complete
        .iter()
        .filter(|g| g.method == "chandy-lamport" && g.t > back)
        .all(|g| g.total() == 5000));
    let _ = fs::remove_dir_all(&logs);
}
