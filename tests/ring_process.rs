//! Process-level tests of `coordlab ring`: the real launcher spawning real node processes on
//! 127.0.0.1. Each test has its own logs directory; every wait polls the run directory with a
//! deadline; a guard stops the launcher (and so every node) even when a test fails.

mod common;

use common::*;
use coordlab::trace::{Event, RunDir};
use std::fs;
use std::net::UdpSocket;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

#[test]
fn a_ring_of_five_elects_the_highest_id() {
    let logs = temp_logs("elects");
    let mut l = Launch::start(5, &logs, &["--until", "elected"]);
    let status = l.wait();
    assert_eq!(status.code(), Some(0), "{}", l.output());
    assert!(l.output().contains("elected: node 5 leads term"), "{}", l.output());
    let rd = RunDir::load(&l.run_dir()).unwrap();
    for id in 1..=5 {
        assert_eq!(belief(&rd, id).map(|b| b.0), Some(5), "node {id}");
    }
    assert_all_reaped(&rd);
    // The control socket is gone with the launcher, and says so.
    let out = Command::new(BIN)
        .args(["status", "--run"])
        .arg(l.run_dir())
        .output()
        .unwrap();
    // A command at a run that has ended is bad input (exit 2), not a violation.
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no launcher is running"));
    drop(l);
    let _ = fs::remove_dir_all(&logs);
}

#[test]
fn killing_the_leader_elects_the_next_highest() {
    let logs = temp_logs("kill");
    let mut l = Launch::start(5, &logs, &[]);
    let first = l.wait_for("node 5 elected", |rd| all_follow(rd, &[1, 2, 3, 4, 5], 5));
    l.console("kill 5");
    let second = l.wait_for("node 4 elected by 1-4", |rd| all_follow(rd, &[1, 2, 3, 4], 4));
    assert!(second > first);
    assert_eq!(l.quit().code(), Some(0), "{}", l.output());
    let rd = RunDir::load(&l.run_dir()).unwrap();
    assert!(rd
        .faults
        .iter()
        .any(|r| r.node == Some(5) && matches!(&r.event, Event::Kill { signal, .. } if signal == "SIGKILL")));
    assert_eq!(count(&rd, 5, "stop"), 0, "a killed node writes no stop event");
    assert_all_reaped(&rd);
    drop(l);
    let _ = fs::remove_dir_all(&logs);
}

#[test]
fn a_paused_leader_resumed_steps_down_leaving_one_leader() {
    let logs = temp_logs("pause");
    let mut l = Launch::start(5, &logs, &[]);
    let first = l.wait_for("node 5 elected", |rd| all_follow(rd, &[1, 2, 3, 4, 5], 5));
    // From another terminal, as a user would: through the control socket.
    let out = coordlab(&["pause", "5"], &l.run_dir());
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("paused node 5"));
    let bad = coordlab(&["pause", "9"], &l.run_dir());
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no node 9"), "{bad:?}");
    let second = l.wait_for("node 4 elected by 1-4", |rd| all_follow(rd, &[1, 2, 3, 4], 4));
    assert!(second > first);
    let status = coordlab(&["status"], &l.run_dir());
    let table = String::from_utf8_lossy(&status.stdout).to_string();
    assert!(table.contains("paused"), "{table}");
    assert!(coordlab(&["resume", "5"], &l.run_dir()).status.success());
    l.wait_for("node 5 to step down and follow 4", |rd| {
        (count(rd, 5, "step_down") > 0).then_some(())?;
        all_follow(rd, &[1, 2, 3, 4, 5], 4)
    });
    assert_eq!(l.quit().code(), Some(0), "{}", l.output());
    let rd = RunDir::load(&l.run_dir()).unwrap();
    let (top, leaders) = leaders_of_top_term(&rd);
    assert_eq!(leaders, vec![4], "exactly one leader in the highest term {top}");
    assert!(rd.faults.iter().any(|r| r.event.kind() == "pause" && r.node == Some(5)));
    assert!(rd
        .faults
        .iter()
        .any(|r| r.event.kind() == "resume" && r.node == Some(5)));
    assert_all_reaped(&rd);
    drop(l);
    let _ = fs::remove_dir_all(&logs);
}

#[test]
fn malformed_and_oversized_datagrams_are_dropped_and_counted() {
    let logs = temp_logs("garbage");
    let mut l = Launch::start(5, &logs, &[]);
    let rd = l.wait_for("node 5 elected", |rd| {
        all_follow(rd, &[1, 2, 3, 4, 5], 5)?;
        Some(rd.clone())
    });
    let target = rd.info.nodes.iter().find(|n| n.id == 3).unwrap().addr.clone();
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let me = sock.local_addr().unwrap().to_string();
    let junk: [&[u8]; 3] = [b"\xff\xfe not a message", &[], &[0u8; 40_000]];
    for d in junk {
        sock.send_to(d, &target).unwrap();
    }
    let reasons = l.wait_for("node 3 to drop the junk", |rd| {
        let r: Vec<(String, u64)> = rd
            .node_events
            .iter()
            .filter_map(|r| match &r.event {
                Event::Drop {
                    reason, addr, count, ..
                } if r.node == Some(3) && *addr == me => Some((reason.clone(), *count)),
                _ => None,
            })
            .collect();
        // Drops are tallied: one record per class per second, with a count.
        (r.iter().map(|x| x.1).sum::<u64>() == junk.len() as u64).then_some(r)
    });
    assert!(reasons.iter().any(|r| r.0.contains("too large")), "{reasons:?}");
    // The ring still works: losing its leader, it elects the next.
    l.console("kill 5");
    l.wait_for("node 4 elected by 1-4", |rd| all_follow(rd, &[1, 2, 3, 4], 4));
    assert_eq!(l.quit().code(), Some(0), "{}", l.output());
    let rd = RunDir::load(&l.run_dir()).unwrap();
    let dropped = rd
        .node_events
        .iter()
        .find_map(|r| match r.event {
            Event::Stop { dropped, .. } if r.node == Some(3) => Some(dropped),
            _ => None,
        })
        .expect("node 3 stopped cleanly");
    assert!(dropped >= junk.len() as u64, "dropped {dropped}");
    drop(l);
    let _ = fs::remove_dir_all(&logs);
}

#[test]
fn killing_the_launcher_leaves_no_node_behind() {
    let logs = temp_logs("orphans");
    let mut l = Launch::start(3, &logs, &[]);
    let pids: Vec<u32> = l.wait_for("all three nodes up", |rd| {
        let pids: Vec<u32> = rd
            .node_events
            .iter()
            .filter_map(|r| match r.event {
                Event::Start { pid, .. } => Some(pid),
                _ => None,
            })
            .collect();
        (pids.len() == 3).then_some(pids)
    });
    l.child.kill().unwrap(); // SIGKILL: no clean stop, no chance to clean up
    l.done = l.child.wait().ok();
    let deadline = Instant::now() + DEADLINE;
    for pid in pids {
        // Gone, or a zombie waiting for init to reap it: either way no longer running.
        let stat = PathBuf::from(format!("/proc/{pid}/stat"));
        while fs::read_to_string(&stat).is_ok_and(|s| !s.contains(") Z ")) {
            assert!(Instant::now() < deadline, "node process {pid} outlived its launcher");
            std::thread::sleep(POLL);
        }
    }
    let _ = fs::remove_dir_all(&logs);
}

#[test]
fn bad_options_are_refused_with_one_line_naming_the_problem() {
    let logs = temp_logs("refused");
    let cases: [(&[&str], &str); 5] = [
        (&["1"], "at least 2 nodes"),
        (&["3", "--ids", "1,2,2"], "id 2 appears twice"),
        (&["3", "--ids", "1,2"], "--ids lists 2 ids"),
        (&["3", "--algo", "paxos"], "unknown algorithm 'paxos'"),
        (&["3", "--initiators", "9"], "node 9 is not in the ring"),
    ];
    for (args, needle) in cases {
        let (code, err) = refused(args, &logs);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("coordlab: ") && err.contains(needle), "{args:?}: {err}");
    }
    assert!(!logs.exists(), "nothing is created for a refused launch");
}

#[test]
fn the_false_suspicion_demo_tells_its_story_without_a_human() {
    let logs = temp_logs("demo");
    let mut l = Launch::start(5, &logs, &["--demo", "false-suspicion"]);
    let status = l.wait();
    let out = l.output();
    for step in [
        "1. all 5 live nodes agree: node 5 leads term 1",
        "2. paused node 5 (SIGSTOP)",
        "a false suspicion",
        "the other 4 live nodes agree: node 4 leads term",
        "3. resumed node 5 (SIGCONT)",
        "node 5 stepped down",
        "4. all 5 live nodes agree: node 4 leads term",
        "demo complete",
    ] {
        assert!(out.contains(step), "missing {step:?}:\n{out}");
    }
    // Its summary comes from `coordlab check`; while that is a stub the demo says so and fails.
    let expected = if out.contains("the checker is not built yet") {
        1
    } else {
        0
    };
    assert_eq!(status.code(), Some(expected), "{out}");
    let rd = RunDir::load(&l.run_dir()).unwrap();
    assert_eq!(count(&rd, 5, "step_down"), 1);
    assert_all_reaped(&rd);
    drop(l);
    let _ = fs::remove_dir_all(&logs);
}
