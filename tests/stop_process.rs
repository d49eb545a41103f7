//! Process-level test of the clean stop of many nodes (`Fleet::stop_all`): every node is
//! signalled, reaped by pid from one `waitpid(-1)` loop and recorded once; each node ends
//! without running its destructors (runtime.rs), after its trace is cut to what it wrote.

mod common;

use common::*;
use coordlab::trace::{Event, RunDir};
use std::fs;

#[test]
fn a_clean_stop_of_many_nodes_records_each_exit_once_and_leaves_whole_traces() {
    let logs = temp_logs("stop-many");
    let n = 200u64;
    let mut l = Launch::start(n as usize, &logs, &["--until", "elected", "--initiators", "all"]);
    let status = l.wait();
    assert_eq!(status.code(), Some(0), "{}", l.output());
    let rd = RunDir::load(&l.run_dir()).unwrap();
    assert_all_reaped(&rd);
    let shutdown = rd
        .faults
        .iter()
        .position(|r| r.event == Event::Shutdown {})
        .expect("a shutdown record");
    for id in 1..=n {
        let exits: Vec<&str> = rd
            .faults
            .iter()
            .filter(|r| r.node == Some(id))
            .filter_map(|r| match &r.event {
                Event::Exit { status, .. } => Some(status.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(exits, ["exit 0"], "node {id}'s exits: {exits:?}");
        let path = l.run_dir().join(format!("node-{id}.jsonl"));
        let bytes = fs::read(&path).unwrap();
        assert!(
            bytes.ends_with(b"\n") && !bytes.contains(&0),
            "{} is not cut to its last line",
            path.display()
        );
        assert_eq!(count(&rd, id, "stop"), 1, "node {id} has no stop record");
    }
    assert!(
        rd.faults[shutdown..]
            .iter()
            .filter(|r| matches!(r.event, Event::Exit { .. }))
            .count()
            == n as usize,
        "every exit is recorded after the shutdown"
    );
    assert_eq!(rd.bad_lines, 0, "{:?}", rd.bad);
    drop(l);
    let _ = fs::remove_dir_all(&logs);
}
