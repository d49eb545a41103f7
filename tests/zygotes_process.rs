//! Process-level tests of a launch forked by several zygotes (`cluster::fork::Zygotes`; one per
//! 2,048 nodes, or as many as `COORDLAB_ZYGOTES` says): every node is still the launcher's
//! child, in the one process group of the run, and a node killed and restarted rejoins it; a
//! value of `COORDLAB_ZYGOTES` that is no number is refused before anything starts.

mod common;

use common::*;
use coordlab::trace::{Event, RunDir};
use std::fs;
use std::process::{Command, Stdio};

/// The pids of the nodes' first processes, by node, as faults.jsonl records them.
fn spawned(rd: &RunDir) -> Vec<(u64, u32)> {
    rd.faults
        .iter()
        .filter_map(|r| match r.event {
            Event::Spawn { pid, .. } => Some((r.node?, pid)),
            _ => None,
        })
        .collect()
}

/// Process `pid`'s parent and process group, from /proc/PID/stat.
fn parent_and_group(pid: u32) -> (u32, u32) {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // After the command's name in parentheses: state, ppid, pgrp.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<u32> = rest.split(' ').skip(1).take(2).map(|f| f.parse().unwrap()).collect();
    (fields[0], fields[1])
}

#[test]
fn three_zygotes_fork_the_launchers_children_in_one_group_and_a_restart_joins_it() {
    let logs = temp_logs("zygotes-three");
    let mut l = Launch::command_env("ring", 7, &logs, &[], &[("COORDLAB_ZYGOTES", "3")]);
    let ids: Vec<u64> = (1..=7).collect();
    l.wait_for("node 7 elected by all", |rd| all_follow(rd, &ids, 7));
    let rd = RunDir::load(&l.run_dir()).unwrap();
    let nodes = spawned(&rd);
    assert_eq!(nodes.len(), 7, "{nodes:?}");
    let launcher = l.child.id();
    let groups: Vec<(u64, u32)> = nodes
        .iter()
        .map(|&(id, pid)| {
            let (parent, group) = parent_and_group(pid);
            assert_eq!(parent, launcher, "node {id} (pid {pid}) is not the launcher's child");
            (id, group)
        })
        .collect();
    assert!(
        groups.iter().all(|&(_, g)| g == groups[0].1 && g != launcher),
        "the nodes are not in one group of their own: {groups:?}"
    );
    l.console("kill 3");
    l.console("restart 3");
    let pid = l.wait_for("node 3 restarted and started", |rd| {
        let starts = rd
            .node_events
            .iter()
            .filter(|r| r.node == Some(3) && matches!(r.event, Event::Start { .. }))
            .count();
        (starts >= 2).then_some(())?;
        rd.faults.iter().rev().find_map(|r| match r.event {
            Event::Restart { pid } if r.node == Some(3) => Some(pid),
            _ => None,
        })
    });
    assert_eq!(
        parent_and_group(pid).1,
        groups[0].1,
        "the restarted node 3 left the run's group"
    );
    assert_eq!(l.quit().code(), Some(0), "{}", l.output());
    assert!(l.output().contains("checked: no property violated"), "{}", l.output());
    assert_all_reaped(&RunDir::load(&l.run_dir()).unwrap());
    drop(l);
    let _ = fs::remove_dir_all(&logs);
}

#[test]
fn a_number_of_zygotes_that_is_no_number_is_refused_before_anything_starts() {
    let logs = temp_logs("zygotes-refused");
    for bad in ["0", "two", "-1", "1.5", "", "65"] {
        let out = Command::new(BIN)
            .args(["ring", "4", "--until", "elected", "--logs"])
            .arg(&*logs)
            .env("COORDLAB_ZYGOTES", bad)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "COORDLAB_ZYGOTES={bad:?}: {err}");
        assert!(
            err.contains(&format!("COORDLAB_ZYGOTES={bad} is not a number of zygotes")),
            "COORDLAB_ZYGOTES={bad:?}: {err}"
        );
        assert!(
            !logs.join("latest").exists(),
            "COORDLAB_ZYGOTES={bad:?} made a run directory"
        );
    }
}
