//! Process-level tests of hostile traffic against a real ring: forged terms from a member's
//! address without the key, a genuine datagram sent twice, a second run with another key on
//! the same ports, and a junk flood at the leader. Each waits for conditions with a deadline and
//! reaps every process it starts.

mod common;

use common::*;
use coordlab::algo::election::chang_roberts::CrMsg;
use coordlab::algo::election::LMsg;
use coordlab::engine::key::Key;
use coordlab::engine::wire::{Envelope, Sealer};
use coordlab::node::keyfile;
use coordlab::trace::{Event, RunDir};
use std::fs;
use std::net::UdpSocket;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

type Msg = LMsg<CrMsg>;

/// Datagrams of `class` refused by node `id` so far (the sum of its `drop` records' counts).
fn dropped(rd: &RunDir, id: u64, class: &str) -> u64 {
    rd.node_events
        .iter()
        .filter(|r| r.node == Some(id))
        .filter_map(|r| match &r.event {
            Event::Drop { class: c, count, .. } if c == class => Some(*count),
            _ => None,
        })
        .sum()
}

/// The highest term any node names in an `election_start` or `leader` event.
fn top_term(rd: &RunDir) -> u64 {
    rd.node_events
        .iter()
        .filter_map(|r| match r.event {
            Event::ElectionStart { term } | Event::Leader { term, .. } => Some(term),
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

fn addr_of(rd: &RunDir, id: u64) -> String {
    rd.info.nodes.iter().find(|n| n.id == id).unwrap().addr.clone()
}

/// A ring of 4 in which node 4 leads; returns the launch, the run and the term.
fn elected_ring(name: &str) -> (Launch, RunDir, u64, std::path::PathBuf) {
    let logs = temp_logs(name);
    let mut l = Launch::start(4, &logs, &[]);
    let (rd, term) = l.wait_for("node 4 elected", |rd| {
        let t = all_follow(rd, &[1, 2, 3, 4], 4)?;
        Some((rd.clone(), t))
    });
    (l, rd, term, logs.keep())
}

/// Kills node `id` through the console and binds its address once it is free, so that the test
/// sends from a member's address.
fn take_over(l: &mut Launch, rd: &RunDir, id: u64) -> UdpSocket {
    l.console(&format!("kill {id}"));
    let addr = addr_of(rd, id);
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Ok(s) = UdpSocket::bind(&addr) {
            return s;
        }
        assert!(Instant::now() < deadline, "node {id}'s address {addr} never came free");
        std::thread::sleep(POLL);
    }
}

fn seal(key: &Key, from: u64, to: u64, boot: u64, seq: u64, msg: Msg) -> Vec<u8> {
    Sealer::new(key).seal(&Envelope {
        from,
        to,
        boot,
        seq,
        lamport: 1,
        stamps: Default::default(),
        msg,
    })
}

fn wall_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

#[test]
fn forged_terms_from_a_members_address_are_dropped_and_force_nothing() {
    let (mut l, rd, term, logs) = elected_ring("forged");
    let sock = take_over(&mut l, &rd, 2);
    // The attacker read the run id off the wire but has no key: it seals with its own.
    let run_key = keyfile::load(&l.run_dir().join(keyfile::KEY_FILE)).unwrap();
    let theirs = Key::from_bytes([7; 32]);
    for to in [1, 3, 4] {
        for (seq, msg) in [
            (1, Msg::Heartbeat { term: u64::MAX }),
            (
                2,
                Msg::Newer {
                    term: 1000,
                    leader: Some(2),
                },
            ),
        ] {
            let mut b = seal(&theirs, 2, to, wall_us(), seq, msg);
            b[1..9].copy_from_slice(&run_key.run_id().to_le_bytes());
            sock.send_to(&b, addr_of(&rd, to)).unwrap();
        }
    }
    let rd = l.wait_for("every node to drop both forgeries", |rd| {
        [1, 3, 4]
            .iter()
            .all(|&i| dropped(rd, i, "forged") >= 2)
            .then(|| rd.clone())
    });
    assert!(
        top_term(&rd) < 1000,
        "a forged term was taken: top term {}",
        top_term(&rd)
    );
    assert_eq!(
        all_follow(&rd, &[1, 3, 4], 4),
        Some(term),
        "the leader and term did not change"
    );
    // Every datagram accepted from node 2 is one the real node 2 sent (its own trace says so):
    // none of the attacker's. (Not "nothing after the kill": the kill is recorded before the
    // signal is sent, so a datagram the real node sent just before dying may arrive after it.)
    let sent_by_2: std::collections::BTreeSet<(u64, u64)> = rd
        .node_events
        .iter()
        .filter(|r| r.node == Some(2))
        .filter_map(|r| match &r.event {
            Event::Send { to, seq, .. } => Some((*to, *seq)),
            _ => None,
        })
        .collect();
    let foreign: Vec<_> = rd
        .node_events
        .iter()
        .filter_map(|r| match &r.event {
            Event::Recv { from: 2, seq, .. } if !sent_by_2.contains(&(r.node.unwrap_or(0), *seq)) => {
                Some((r.node, *seq))
            }
            _ => None,
        })
        .collect();
    assert_eq!(foreign, Vec::new(), "accepted from node 2 but never sent by it");
    drop(sock);
    assert_eq!(l.quit().code(), Some(0), "{}", l.output());
    let _ = fs::remove_dir_all(&logs);
}

#[test]
fn a_genuine_datagram_sent_again_is_dropped_as_a_replay_and_a_restart_is_not() {
    let (mut l, rd, _, logs) = elected_ring("replay");
    let sock = take_over(&mut l, &rd, 2);
    // The test holds the run's key and speaks as node 2: the first copy is accepted, the
    // second, byte for byte the same, is a replay; so is one from an earlier boot.
    let key = keyfile::load(&l.run_dir().join(keyfile::KEY_FILE)).unwrap();
    let boot = wall_us();
    let d = seal(&key, 2, 3, boot, 7, Msg::Ack { seqs: vec![999_999] });
    let node3 = addr_of(&rd, 3);
    sock.send_to(&d, &node3).unwrap();
    l.wait_for("node 3 to accept the first copy", |rd| {
        rd.node_events
            .iter()
            .any(|r| r.node == Some(3) && matches!(r.event, Event::Recv { from: 2, seq: 7, .. }))
            .then_some(())
    });
    sock.send_to(&d, &node3).unwrap();
    sock.send_to(&seal(&key, 2, 3, boot - 1, 8, Msg::Ack { seqs: vec![999_998] }), &node3)
        .unwrap();
    l.wait_for("node 3 to drop both as replays", |rd| {
        (dropped(rd, 3, "replay") >= 2).then_some(())
    });
    // The real node 2 comes back with a later boot: its datagrams are accepted, not replays.
    // It may send nothing while it follows (followers only listen to heartbeats), but an
    // election passes through it to node 3, so the test kills the leader once node 2 is back.
    drop(sock);
    l.console("restart 2");
    let heard_after_restart = |rd: &RunDir, by: u64, from: u64| {
        let restarted = rd.faults.iter().find(|f| f.event.kind() == "restart").map(|f| f.t);
        restarted.is_some_and(|t| {
            rd.node_events
                .iter()
                .any(|r| r.node == Some(by) && r.t > t && matches!(r.event, Event::Recv { from: f, .. } if f == from))
        })
    };
    l.wait_for("the restarted node 2 to hear the leader", |rd| {
        heard_after_restart(rd, 2, 4).then_some(())
    });
    l.console("kill 4");
    let rd = l.wait_for("node 3 to hear from the restarted node 2", |rd| {
        heard_after_restart(rd, 3, 2).then(|| rd.clone())
    });
    assert_eq!(dropped(&rd, 3, "replay"), 2);
    assert_eq!(l.quit().code(), Some(0), "{}", l.output());
    let _ = fs::remove_dir_all(&logs);
}

/// A node process of another run, stopped and reaped when dropped.
struct Stranger(Child);

impl Drop for Stranger {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_stranger(rd: &RunDir, dir: &Path) -> Stranger {
    fs::create_dir_all(dir).unwrap();
    let key = dir.join("other.key");
    let _ = fs::remove_file(&key);
    keyfile::write(&key, &keyfile::generate().unwrap()).unwrap();
    let members: Vec<String> = rd.info.nodes.iter().map(|n| format!("{}={}", n.id, n.addr)).collect();
    let child = Command::new(BIN)
        .args(["node", "--id", "2", "--listen", &addr_of(rd, 2), "--initiator"])
        .args(["--members", &members.join(",")])
        .arg("--key")
        .arg(&key)
        .arg("--log-dir")
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(fs::File::create(dir.join("node-2.log")).unwrap())
        .spawn()
        .unwrap();
    Stranger(child)
}

#[test]
fn a_second_run_on_the_same_ports_with_another_key_cannot_mix() {
    let (mut l, rd, term, logs) = elected_ring("foreign");
    // Node 2 of the run dies; a node of another run (another key) takes its port and its id,
    // with the same member list, and starts an election.
    l.console("kill 2");
    l.wait_for("node 2 to exit", |rd| {
        rd.faults
            .iter()
            .any(|f| matches!(f.event, Event::Exit { .. }) && f.node == Some(2))
            .then_some(())
    });
    let other = logs.join("other-run");
    let mut stranger = start_stranger(&rd, &other);
    let deadline = Instant::now() + DEADLINE;
    let stranger_trace = other.join("node-2.jsonl");
    let (ours, theirs) = loop {
        let ours = RunDir::load(&l.run_dir())
            .map(|rd| dropped(&rd, 3, "foreign-run"))
            .unwrap_or(0);
        let theirs = coordlab::trace::read_jsonl(&stranger_trace)
            .map(|(recs, _)| {
                recs.iter()
                    .filter_map(|r| match &r.event {
                        Event::Drop { class, count, .. } if class == "foreign-run" => Some(*count),
                        _ => None,
                    })
                    .sum::<u64>()
            })
            .unwrap_or(0);
        if ours > 0 && theirs > 0 {
            break (ours, theirs);
        }
        if let Ok(Some(s)) = stranger.0.try_wait() {
            panic!(
                "the other run's node ended ({s}): {}",
                fs::read_to_string(other.join("node-2.log")).unwrap_or_default()
            );
        }
        assert!(
            Instant::now() < deadline,
            "no foreign-run drops: ours {ours}, theirs {theirs}"
        );
        std::thread::sleep(POLL);
    };
    assert!(ours > 0 && theirs > 0);
    let rd = RunDir::load(&l.run_dir()).unwrap();
    assert_eq!(all_follow(&rd, &[1, 3, 4], 4), Some(term), "the run was not disturbed");
    let (recs, _) = coordlab::trace::read_jsonl(&stranger_trace).unwrap();
    assert!(
        !recs.iter().any(|r| r.event.kind() == "recv"),
        "the other run's node accepted nothing from ours"
    );
    drop(stranger);
    assert_eq!(l.quit().code(), Some(0), "{}", l.output());
    let _ = fs::remove_dir_all(&logs);
}

#[test]
fn a_junk_flood_at_the_leader_deposes_nobody() {
    let (mut l, rd, term, logs) = elected_ring("flood");
    let leader = addr_of(&rd, 4);
    let run = keyfile::load(&l.run_dir().join(keyfile::KEY_FILE)).unwrap().run_id();
    let started = wall_us();
    // About 50,000 datagrams a second for 2 s from two sockets (other tests run beside it) (the bench measures 300,000):
    // random bytes, and datagrams that pass the version and run-id checks but come from no member.
    let senders: Vec<_> = (0..2u64)
        .map(|k| {
            let leader = leader.clone();
            std::thread::spawn(move || {
                let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
                let mut rng = coordlab::rng::Rng::new(k + 1);
                let mut sent = 0u64;
                let t0 = Instant::now();
                while t0.elapsed() < Duration::from_secs(2) {
                    for _ in 0..250 {
                        let mut b: Vec<u8> = (0..80).map(|_| rng.next_u64() as u8).collect();
                        if sent.is_multiple_of(2) {
                            b[0] = coordlab::engine::wire::VERSION;
                            b[1..9].copy_from_slice(&run.to_le_bytes());
                        }
                        let _ = sock.send_to(&b, &leader);
                        sent += 1;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                sent
            })
        })
        .collect();
    let sent: u64 = senders.into_iter().map(|h| h.join().unwrap()).sum();
    let ended = wall_us();
    // One more after the end opens a tally that is written within a second, after `ended`.
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .send_to(b"marker", &leader)
        .unwrap();
    // The leader writes its tallies at most a second later: then every suspicion the flood
    // could cause (one timeout) would be in the traces too.
    let rd = l.wait_for("the leader's drop tallies after the flood", |rd| {
        rd.node_events
            .iter()
            .any(|r| r.node == Some(4) && r.event.kind() == "drop" && r.t >= ended)
            .then(|| rd.clone())
    });
    let refused = dropped(&rd, 4, "unknown-sender")
        + dropped(&rd, 4, "short")
        + dropped(&rd, 4, "version")
        + dropped(&rd, 4, "foreign-run");
    assert!(refused > sent / 4, "the leader refused {refused} of {sent}");
    let suspicions: Vec<_> = rd
        .node_events
        .iter()
        .filter(|r| r.t >= started && r.event.kind() == "suspect")
        .collect();
    assert!(suspicions.is_empty(), "suspicions during the flood: {suspicions:?}");
    assert_eq!(top_term(&rd), term, "a new term began");
    assert_eq!(all_follow(&rd, &[1, 2, 3, 4], 4), Some(term));
    let drop_lines = rd.node_events.iter().filter(|r| r.event.kind() == "drop").count();
    assert!(
        drop_lines < 40,
        "{drop_lines} drop lines for {sent} datagrams: not tallied"
    );
    assert_eq!(l.quit().code(), Some(0), "{}", l.output());
    let _ = fs::remove_dir_all(&logs);
}

#[test]
fn thousands_of_idle_control_connections_do_not_stop_status() {
    let (mut l, _, _, logs) = elected_ring("control");
    let sock = RunDir::load(&l.run_dir()).unwrap().info.control.unwrap();
    // 3,000 clients that connect and never send a command (or a half line).
    let mut idle = Vec::new();
    for k in 0..3000 {
        match std::os::unix::net::UnixStream::connect(&sock) {
            Ok(mut s) => {
                if k % 2 == 0 {
                    use std::io::Write;
                    let _ = s.write_all(b"sta");
                }
                idle.push(s);
            }
            Err(e) => panic!("connection {k}: {e}"),
        }
    }
    let out = coordlab(&["status"], &l.run_dir());
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("believes"), "{out:?}");
    // The launcher closed every one instead of keeping it: an error line then end of file, or,
    // for a half-sent command it did not read, a reset.
    for (k, s) in idle.iter_mut().enumerate() {
        use std::io::{ErrorKind, Read};
        s.set_read_timeout(Some(DEADLINE)).unwrap();
        let mut answer = String::new();
        match s.read_to_string(&mut answer) {
            Ok(_) => assert!(answer.starts_with("error: "), "connection {k}: {answer}"),
            Err(e) => assert_eq!(e.kind(), ErrorKind::ConnectionReset, "connection {k}"),
        }
    }
    drop(idle);
    assert_eq!(l.quit().code(), Some(0), "{}", l.output());
    let _ = fs::remove_dir_all(&logs);
}

#[test]
fn option_combinations_that_cannot_work_are_refused_before_anything_starts() {
    let logs = temp_logs("refusals");
    let (code, err) = refused(&["4", "--timeout-ms", "1"], &logs);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--timeout-ms 1 must be above --heartbeat-ms 100"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!logs.exists(), "nothing was started or written");
    // A --logs under a plain file cannot be created.
    fs::create_dir_all(logs.parent().unwrap()).unwrap();
    let file = logs.with_extension("file");
    fs::write(&file, "not a directory").unwrap();
    let out = Command::new(BIN)
        .args(["ring", "4", "--logs"])
        .arg(file.join("logs"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--logs") && err.contains("cannot be created"), "{err}");
    // A key file that is not one.
    fs::write(&file, "short").unwrap();
    let (code, err) = refused(&["4", "--key", &file.to_string_lossy()], &logs);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--key"), "{err}");
    let _ = fs::remove_file(&file);
    let _ = fs::remove_dir_all(&logs);
}
