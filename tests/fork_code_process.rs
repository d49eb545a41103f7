//! Process-level tests of the zygote's shared code (`cluster::fork_code`): in a launch of 1,024
//! nodes or more, every forked node runs with the binary's code already mapped from the
//! zygote's anonymous copy, not from the file; a node restarted (exec'd) maps its own; a small
//! launch keeps the file mapping (the copy would cost more than it saves).

mod common;

use common::*;
use coordlab::trace::{Event, RunDir};
use std::fs;

/// The pid of node `id`'s latest process, as faults.jsonl records it (spawn or restart).
fn pid_of(rd: &RunDir, id: u64, restarted: bool) -> Option<u32> {
    rd.faults.iter().rev().find_map(|r| match r.event {
        Event::Spawn { pid, .. } if r.node == Some(id) && !restarted => Some(pid),
        Event::Restart { pid } if r.node == Some(id) && restarted => Some(pid),
        _ => None,
    })
}

/// Whether node `id` has written its `start` record (from `since`: the number of starts before).
fn started(rd: &RunDir, id: u64, since: usize) -> bool {
    starts(rd, id) > since
}

fn starts(rd: &RunDir, id: u64) -> usize {
    rd.node_events
        .iter()
        .filter(|r| r.node == Some(id) && matches!(r.event, Event::Start { .. }))
        .count()
}

/// The executable mappings of process `pid`: (mapped from the coordlab binary, anonymous).
fn code_mappings(pid: u32) -> (usize, usize) {
    let bin = fs::canonicalize(BIN).unwrap();
    let bin = bin.to_string_lossy();
    let maps = fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    let exec: Vec<&str> = maps
        .lines()
        .filter(|l| l.split_whitespace().nth(1) == Some("r-xp"))
        .collect();
    let from_file = exec.iter().filter(|l| l.ends_with(&*bin)).count();
    let anonymous = exec.iter().filter(|l| l.split_whitespace().nth(5).is_none()).count();
    (from_file, anonymous)
}

/// How many anonymous executable mappings of process `pid` begin and end on 2 MiB boundaries.
fn aligned_code(pid: u32) -> usize {
    let maps = fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    maps.lines()
        .filter(|l| l.split_whitespace().nth(1) == Some("r-xp") && l.split_whitespace().nth(5).is_none())
        .filter_map(|l| l.split_whitespace().next()?.split_once('-'))
        .filter_map(|(a, b)| Some((u64::from_str_radix(a, 16).ok()?, u64::from_str_radix(b, 16).ok()?)))
        .filter(|(a, b)| a % (2 << 20) == 0 && b % (2 << 20) == 0)
        .count()
}

#[test]
fn a_large_launchs_nodes_run_the_zygotes_copy_of_the_code_and_a_restart_maps_its_own() {
    let logs = temp_logs("fork-code-large");
    let mut l = Launch::start(1024, &logs, &[]);
    let pid = l.wait_for("node 700 spawned and started", |rd| {
        started(rd, 700, 0).then_some(())?;
        pid_of(rd, 700, false)
    });
    let (from_file, anonymous) = code_mappings(pid);
    assert_eq!(
        from_file, 0,
        "node 700 (pid {pid}) maps the binary's code from the file"
    );
    assert!(anonymous >= 1, "node 700 (pid {pid}) has no anonymous code mapping");
    // The binary's segments are 2 MiB aligned (build.rs) and the copy widened to whole huge
    // pages, so that a fork copies, and an exit unmaps, one entry per 2 MiB of it.
    let aligned = aligned_code(pid);
    assert!(
        aligned >= 1,
        "node 700 (pid {pid}) has no anonymous code mapping on 2 MiB boundaries"
    );
    l.wait_for("node 1024 elected by all", |rd| {
        let ids: Vec<u64> = (1..=1024).collect();
        all_follow(rd, &ids, 1024)
    });
    // A restart is exec'd: it maps the binary itself, and runs.
    l.console("kill 700");
    l.console("restart 700");
    let pid = l.wait_for("node 700 restarted and started", |rd| {
        started(rd, 700, 1).then_some(())?;
        pid_of(rd, 700, true)
    });
    let (from_file, _) = code_mappings(pid);
    assert!(
        from_file >= 1,
        "the restarted node 700 (pid {pid}) does not map the binary"
    );
    assert_eq!(l.quit().code(), Some(0), "{}", l.output());
    assert_all_reaped(&RunDir::load(&l.run_dir()).unwrap());
    drop(l);
    let _ = fs::remove_dir_all(&logs);
}

#[test]
fn a_small_launchs_nodes_map_the_code_from_the_binary() {
    let logs = temp_logs("fork-code-small");
    let mut l = Launch::start(3, &logs, &[]);
    let pid = l.wait_for("node 2 spawned and started", |rd| {
        started(rd, 2, 0).then_some(())?;
        pid_of(rd, 2, false)
    });
    let (from_file, _) = code_mappings(pid);
    assert!(
        from_file >= 1,
        "node 2 (pid {pid}) of a ring of 3 does not map the binary"
    );
    l.quit_reaped_and_clean(&logs);
}
