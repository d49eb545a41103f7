//! A node killed with SIGKILL loses no record of a datagram it sent: its trace is written
//! through a shared mapping before each datagram leaves (docs/trace.md, what a kill can lose).
//! A busy ring (a probe token going round without end, vector clocks on, so records are long)
//! has one node killed and restarted several times while it forwards; every datagram a peer
//! logged as received from it must have its `send` in the killed node's trace, in the boot
//! that sent it. Every wait has a deadline; the launcher guard reaps every node.

mod common;

use common::*;
use coordlab::trace::{read_jsonl_file, Event, Record, RunDir};
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

/// Node 2's records so far, from its own file alone: the waits read only what they need, as
/// the busy ring's other files grow by megabytes a second, and reloading them all at every
/// poll slowed a loaded machine's test until the files passed the reader's bound.
fn node_2(dir: &Path) -> Option<Vec<Record>> {
    read_jsonl_file(&dir.join("node-2.jsonl")).ok().map(|j| j.records)
}

fn kills(dir: &Path) -> Option<usize> {
    let faults = read_jsonl_file(&dir.join("faults.jsonl")).ok()?;
    Some(faults.records.iter().filter(|r| r.event.kind() == "kill").count())
}

/// One node's boots among its `records`: the `t` of each `start`, in order.
fn boots<'a>(records: impl IntoIterator<Item = &'a Record>) -> Vec<u64> {
    records
        .into_iter()
        .filter(|r| matches!(r.event, Event::Start { .. }))
        .map(|r| r.t)
        .collect()
}

fn sends(records: &[Record]) -> usize {
    records.iter().filter(|r| matches!(r.event, Event::Send { .. })).count()
}

#[test]
fn a_sigkilled_nodes_trace_has_the_send_of_every_datagram_a_peer_received_from_it() {
    let logs = temp_logs("trace-kill");
    let mut l = Launch::start(
        4,
        &logs,
        &["--algo", "ring-probe", "--set", "laps=1000000000", "--set", "vc=true"],
    );
    const KILLS: usize = 4;
    for k in 0..KILLS {
        // Busy: node 2 has forwarded the token a few hundred times in this boot.
        let floor = l.poll("node 2 forwarding", |dir| {
            let mine = node_2(dir)?;
            (boots(&mine).len() == k + 1).then(|| sends(&mine))
        });
        l.poll("node 2 forwarding more", |dir| {
            (sends(&node_2(dir)?) >= floor + 300).then_some(())
        });
        l.console("kill 2");
        l.poll("the kill recorded", |dir| (kills(dir)? == k + 1).then_some(()));
        // A killed node's file ends in its window's zeros: it was not cleaned up after.
        let bytes = fs::read(l.run_dir().join("node-2.jsonl")).unwrap();
        assert_eq!(
            bytes.last(),
            Some(&0),
            "the killed node's mapped window is left as the kill left it"
        );
        l.console("restart 2");
    }
    l.poll("node 2 back for good", |dir| {
        (boots(&node_2(dir)?).len() == KILLS + 1).then_some(())
    });
    // The token goes round without end: the probe's own goal (every lap done) is the one
    // thing the check may find unmet; nothing else.
    let status = l.quit();
    assert!(
        status.code() == Some(0) || l.output().contains("checked: VIOLATED: laps done ("),
        "{}",
        l.output()
    );
    let rd = RunDir::load(&l.run_dir()).unwrap();
    assert!(rd.bad.is_empty(), "{:?}", rd.bad);
    let starts = boots(rd.node_events.iter().filter(|r| r.node == Some(2)));
    assert_eq!(starts.len(), KILLS + 1);
    // (boot index, seq) of every datagram node 2 logged as sent.
    let boot_of = |t: u64| {
        starts
            .iter()
            .rposition(|&s| s <= t)
            .expect("after node 2's first start")
    };
    let sent: BTreeSet<(usize, u64)> = rd
        .node_events
        .iter()
        .filter(|r| r.node == Some(2))
        .filter_map(|r: &Record| match r.event {
            Event::Send { seq, .. } => Some((boot_of(r.t), seq)),
            _ => None,
        })
        .collect();
    let mut received = 0;
    for r in &rd.node_events {
        if let Event::Recv { from: 2, seq, .. } = r.event {
            received += 1;
            // A boot's datagrams reach their receiver (loopback, microseconds) long before
            // the next boot starts (a restart takes milliseconds): the boot in force then.
            let b = boot_of(r.t);
            assert!(
                sent.contains(&(b, seq)),
                "node {:?} received seq {seq} of node 2 (boot {b}) at t={}, which node 2's trace does not have",
                r.node,
                r.t
            );
        }
    }
    assert!(received > 300 * KILLS, "only {received} datagrams from node 2");
    // Its clocks were written as changes (dvc) and read back whole: every record of node 2
    // has its vector clock, which never goes back within a boot, and each datagram it sent
    // was received with a clock that has seen that send.
    let mine: Vec<&Record> = rd.node_events.iter().filter(|r| r.node == Some(2)).collect();
    for w in mine.windows(2) {
        let (a, b) = (
            w[0].vc.as_ref().unwrap(),
            w[1].vc.as_ref().expect("node 2's records have clocks"),
        );
        if boot_of(w[0].t) == boot_of(w[1].t) {
            assert!(
                matches!(a.compare(b), Some(std::cmp::Ordering::Less | std::cmp::Ordering::Equal)),
                "node 2's clock never goes back within a boot, t={}",
                w[1].t
            );
        }
    }
    let sends: std::collections::BTreeMap<(usize, u64), &Record> = mine
        .iter()
        .filter_map(|r| match r.event {
            Event::Send { seq, .. } => Some(((boot_of(r.t), seq), *r)),
            _ => None,
        })
        .collect();
    for r in &rd.node_events {
        if let Event::Recv { from: 2, seq, .. } = r.event {
            let s = sends[&(boot_of(r.t), seq)];
            assert!(
                s.vc.as_ref().unwrap().before(r.vc.as_ref().unwrap()),
                "the receive of node 2's seq {seq} at t={} has not seen its send",
                r.t
            );
        }
    }
    let text = fs::read_to_string(l.run_dir().join("node-2.jsonl")).unwrap();
    assert!(
        text.contains("\"dvc\":{") && text.matches("\"vc\":{").count() > KILLS,
        "node 2's trace has its clocks as changes, and whole at each boot"
    );
    assert_all_reaped(&rd);
    drop(l);
    let _ = fs::remove_dir_all(&logs);
}
