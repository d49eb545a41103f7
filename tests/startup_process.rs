//! Process-level tests of start-up: the launcher binds every node's socket and hands it down,
//! so a busy port fails the launch before any process exists, and a killed node's port really
//! closes (a restart binds it afresh).

mod common;

use common::*;
use coordlab::trace::{Event, RunDir};
use std::fs;
use std::net::{SocketAddr, UdpSocket};
use std::process::{Command, Stdio};
use std::time::Instant;

#[test]
fn a_busy_base_port_fails_the_launch_cleanly_naming_the_port() {
    let logs = temp_logs("busy-port");
    // Two consecutive ports, the second busy: the first is bound, then the launch must undo it.
    let (busy, port) = loop {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let p = a.local_addr().unwrap().port();
        if p < 65_000 {
            if let Ok(b) = UdpSocket::bind(("127.0.0.1", p + 1)) {
                drop(a);
                break (b, p);
            }
        }
    };
    let busy_port = port + 1;
    let out = Command::new(BIN)
        .args([
            "ring",
            "3",
            "--until",
            "elected",
            "--base-port",
            &port.to_string(),
            "--logs",
        ])
        .arg(&logs)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(
        err.trim(),
        format!("coordlab: port {busy_port} is already in use (127.0.0.1:{busy_port})")
    );
    // Nothing started: no run directory, no node, and the first port is free again.
    // (The --logs directory itself may be made while the options are checked.)
    let runs = fs::read_dir(&logs).map(|d| d.count()).unwrap_or(0);
    assert!(
        runs == 0,
        "a launch refused before anything started leaves no run directory"
    );
    UdpSocket::bind(("127.0.0.1", port)).expect("the launcher released the port it had bound");
    drop(busy);
}

/// The address node `id` says it is up on.
fn addr_of(rd: &RunDir, id: u64) -> Option<SocketAddr> {
    rd.node_events.iter().find_map(|r| match &r.event {
        Event::Start { addr, .. } if r.node == Some(id) => addr.parse().ok(),
        _ => None,
    })
}

#[test]
fn a_killed_nodes_port_closes_and_a_restart_binds_it_again() {
    let logs = temp_logs("port-closes");
    let mut l = Launch::start(3, &logs, &[]);
    l.wait_for("node 3 elected", |rd| all_follow(rd, &[1, 2, 3], 3));
    let addr = l.wait_for("node 2's address", |rd| addr_of(rd, 2));
    assert!(UdpSocket::bind(addr).is_err(), "node 2 holds {addr} while it runs");
    l.console("kill 2");
    // The launcher closed its copy at spawn, so the port closes with the process.
    let deadline = Instant::now() + DEADLINE;
    let held = loop {
        match UdpSocket::bind(addr) {
            Ok(s) => break s,
            Err(_) => {
                assert!(Instant::now() < deadline, "{addr} stayed bound after node 2 was killed");
                std::thread::sleep(POLL);
            }
        }
    };
    // While another program holds the port, a restart fails with a message naming it.
    l.console("restart 2");
    l.wait_for("the refused restart", |_| {
        let out = l_output(&logs);
        out.contains("cannot restart node 2").then_some(())
    });
    drop(held);
    l.console("restart 2");
    l.wait_for("node 2 back and following", |rd| {
        let restarted = rd.faults.iter().any(|r| matches!(r.event, Event::Restart { .. }));
        (restarted && UdpSocket::bind(addr).is_err()).then_some(())?;
        all_follow(rd, &[1, 2, 3], 3)
    });
    assert_eq!(l.quit().code(), Some(0), "{}", l.output());
    assert_all_reaped(&RunDir::load(&l.run_dir()).unwrap());
    drop(l);
    let _ = fs::remove_dir_all(&logs);
}

/// What the launcher of `logs` printed so far.
fn l_output(logs: &std::path::Path) -> String {
    fs::read_to_string(logs.join("launcher.out")).unwrap_or_default()
}

/// The benchmark's relay forwards each datagram to `--next`, `stop` last, waiting either in a
/// blocking receive or in a mio poll like a node; a bad `--next` is refused by name.
#[test]
fn the_benchmark_relay_forwards_in_both_modes_and_refuses_a_bad_next() {
    use std::io::{BufRead, BufReader};
    for poll in [false, true] {
        let me = UdpSocket::bind("127.0.0.1:0").unwrap();
        me.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
        let next = me.local_addr().unwrap().to_string();
        let mut cmd = Command::new(BIN);
        cmd.args(["bench-relay", "--listen", "127.0.0.1:0", "--next", &next]);
        if poll {
            cmd.arg("--poll");
        }
        let mut relay = cmd.stdout(Stdio::piped()).stdin(Stdio::null()).spawn().unwrap();
        let mut line = String::new();
        BufReader::new(relay.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let at: SocketAddr = line.trim().parse().unwrap();
        let mut buf = [0u8; 64];
        for token in [&b"one"[..], b"two", b"stop"] {
            me.send_to(token, at).unwrap();
            let (n, _) = me.recv_from(&mut buf).expect("the relay forwarded nothing");
            assert_eq!(&buf[..n], token, "poll: {poll}");
        }
        assert!(relay.wait().unwrap().success(), "poll: {poll}");
    }
    let out = Command::new(BIN)
        .args(["bench-relay", "--listen", "127.0.0.1:0", "--next", "nowhere"])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--next nowhere: not an address"), "{err}");
}
