//! `coordlab bench --only flood`: junk datagrams at a fixed rate at the leader of a ring, and
//! what they cost the run: suspicions of running nodes, new terms, trace growth, datagrams the
//! leader refused (by class) and those the kernel dropped before it could read them.

use crate::check::beliefs::Beliefs;
use crate::check::Timeline;
use crate::error::{failed, CliError};
use crate::node::keyfile;
use crate::trace::{Event, RunDir};
use std::collections::BTreeMap;
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What a flood did.
#[derive(Debug, Clone)]
pub(crate) struct FloodFigures {
    /// Datagrams sent.
    pub sent: u64,
    /// How long the flood lasted.
    pub secs: f64,
    /// Datagrams the leader refused during and just after the flood, by class.
    pub refused: BTreeMap<String, u64>,
    /// Datagrams the kernel dropped at the leader's socket (its buffer was full), if known.
    pub kernel_drops: Option<u64>,
    /// `drop` lines the leader wrote for them.
    pub drop_lines: usize,
    /// Suspicions raised from the flood's start to a second after its end (all false: no
    /// fault was injected).
    pub suspicions: usize,
    /// Terms begun in that time.
    pub new_terms: u64,
    /// Bytes the run's traces grew in that time.
    pub trace_bytes: u64,
}

/// The launcher of the flooded ring; stopped (SIGTERM, then reaped) when dropped.
struct Ring(Child);

impl Drop for Ring {
    fn drop(&mut self) {
        super::launch::stop(&mut self.0);
    }
}

fn trace_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|it| {
            it.filter_map(Result::ok)
                .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// The leader every node believes in at the end of what is traced so far, and the highest term
/// any node started or learned, from the checker's replay of beliefs.
fn leader_and_top_term(run: &RunDir) -> (Option<u64>, u64) {
    let b = Beliefs::replay(run, &Timeline::build(run));
    let leaders: Vec<Option<u64>> = b.at_end.values().map(|x| x.map(|x| x.leader)).collect();
    let agreed = leaders
        .first()
        .copied()
        .flatten()
        .filter(|l| leaders.iter().all(|x| *x == Some(*l)));
    let top = b
        .started
        .iter()
        .map(|s| s.term)
        .chain(b.learned.iter().map(|l| l.belief.term))
        .max();
    (
        agreed.filter(|_| leaders.len() == run.info.nodes.len()),
        top.unwrap_or(0),
    )
}

/// The kernel's drop count for the UDP socket bound at `port` on 127.0.0.1 (/proc/net/udp).
fn kernel_drops(port: u16) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/net/udp").ok()?;
    let local = format!("0100007F:{port:04X}");
    text.lines()
        .skip(1)
        .find(|l| l.split_whitespace().nth(1) == Some(local.as_str()))
        .and_then(|l| l.split_whitespace().last()?.parse().ok())
}

/// Sends junk at `to` at `rate` datagrams a second for `secs` from one socket; returns how
/// many were sent. Half is random bytes, half passes the version and run-id checks but comes
/// from no member.
fn blast(to: String, rate: u64, secs: f64, run_id: u64, seed: u64) -> u64 {
    // Connected: each send skips the address lookup, so one socket sends faster.
    let Ok(sock) = UdpSocket::bind("127.0.0.1:0").and_then(|s| s.connect(&to).map(|_| s)) else {
        return 0;
    };
    let mut rng = crate::rng::Rng::new(seed);
    let junk: Vec<Vec<u8>> = (0..64)
        .map(|k| {
            let mut b: Vec<u8> = (0..80).map(|_| rng.next_u64() as u8).collect();
            if k % 2 == 0 {
                b[0] = crate::engine::wire::VERSION;
                b[1..9].copy_from_slice(&run_id.to_le_bytes());
            }
            b
        })
        .collect();
    let t0 = Instant::now();
    let total = (rate as f64 * secs) as u64;
    let mut sent = 0u64;
    while sent < total {
        let elapsed = t0.elapsed().as_secs_f64();
        if elapsed > secs + 1.0 {
            break;
        }
        // Catch up with the schedule, then yield a moment.
        let due = ((elapsed * rate as f64) as u64).min(total);
        // In slices, so that a sender starved of CPU still stops on time; a pause only when on
        // schedule.
        let slice = due.min(sent + 1000);
        while sent < slice {
            let _ = sock.send(&junk[(sent % 64) as usize]);
            sent += 1;
        }
        if sent >= due {
            std::thread::sleep(Duration::from_micros(500));
        }
    }
    sent
}

/// Launches a ring of `n` (default timing: heartbeat 100 ms, timeout 300 ms), waits for its
/// leader, floods the leader at `rate` datagrams a second for `secs` from `senders` sockets, and
/// measures what that did.
pub(crate) fn run_flood(n: usize, rate: u64, secs: f64, senders: u64) -> Result<FloodFigures, CliError> {
    let logs: PathBuf = std::env::temp_dir().join(format!("coordlab-flood-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&logs);
    let exe = std::env::current_exe().map_err(|e| failed(e.to_string()))?;
    let child = Command::new(exe)
        .args(["ring", &n.to_string(), "--duration", "120", "--logs"])
        .arg(&logs)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| failed(format!("cannot launch: {e}")))?;
    let ring = Ring(child);
    let dir = logs.join("latest");
    let deadline = Instant::now() + Duration::from_secs(60);
    let (leader, addr) = loop {
        if let Ok(run) = RunDir::load(&dir) {
            if let (Some(leader), _) = leader_and_top_term(&run) {
                let addr = run.info.nodes.iter().find(|x| x.id == leader).map(|x| x.addr.clone());
                break (leader, addr.unwrap_or_default());
            }
        }
        if Instant::now() > deadline {
            return Err(failed("flood: the ring elected no leader within 60 s"));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // Let the first heartbeats settle before measuring.
    std::thread::sleep(Duration::from_secs(1));
    let run_id = keyfile::load(&dir.join(keyfile::KEY_FILE)).map_err(failed)?.run_id();
    let port: u16 = addr.rsplit(':').next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let before = RunDir::load(&dir).map_err(|e| failed(e.to_string()))?;
    let (bytes0, term0, kdrops0) = (trace_bytes(&dir), leader_and_top_term(&before).1, kernel_drops(port));
    let started = crate::trace::wall_us();
    let t0 = Instant::now();
    let threads: Vec<_> = (0..senders)
        .map(|k| {
            let to = addr.clone();
            std::thread::spawn(move || blast(to, rate / senders, secs, run_id, k + 1))
        })
        .collect();
    let sent: u64 = threads.into_iter().map(|t| t.join().unwrap_or(0)).sum();
    let took = t0.elapsed().as_secs_f64();
    // Tallies are written once a second, and a suspicion would come within a timeout.
    std::thread::sleep(Duration::from_millis(1500));
    let end = crate::trace::wall_us();
    let after = RunDir::load(&dir).map_err(|e| failed(e.to_string()))?;
    let kernel = match (kdrops0, kernel_drops(port)) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    let mut refused = BTreeMap::new();
    let mut drop_lines = 0;
    for r in after.node_events.iter().filter(|r| r.t >= started && r.t <= end) {
        if let Event::Drop { class, count, .. } = &r.event {
            if r.node == Some(leader) {
                *refused.entry(class.clone()).or_insert(0) += count;
                drop_lines += 1;
            }
        }
    }
    let figures = FloodFigures {
        sent,
        secs: took,
        refused,
        kernel_drops: kernel,
        drop_lines,
        suspicions: after
            .node_events
            .iter()
            .filter(|r| r.t >= started && r.t <= end && r.event.kind() == "suspect")
            .count(),
        new_terms: leader_and_top_term(&after).1.saturating_sub(term0),
        trace_bytes: trace_bytes(&dir).saturating_sub(bytes0),
    };
    drop(ring);
    let _ = std::fs::remove_dir_all(&logs);
    Ok(figures)
}

/// Runs the flood section and prints its figures.
pub(crate) fn print_flood(build: &str) -> Result<(), CliError> {
    let (n, rate, secs, senders) = (8, 300_000, 5.0, 3);
    println!(
        "== flood ({build}): {rate} junk datagrams/s for {secs} s from {senders} sockets at the leader of a ring of {n}"
    );
    println!("   (--heartbeat-ms 100 --timeout-ms 300; figures vary from run to run with the machine's load)");
    let f = run_flood(n, rate, secs, senders)?;
    let refused: u64 = f.refused.values().sum();
    let classes: Vec<String> = f.refused.iter().map(|(c, k)| format!("{c} {k}")).collect();
    println!(
        "sent {} in {:.2} s ({:.0}/s achieved); the leader refused {refused} ({}) in {} drop lines",
        f.sent,
        f.secs,
        f.sent as f64 / f.secs,
        classes.join(", "),
        f.drop_lines
    );
    println!(
        "kernel drops at the leader's socket: {}; suspicions: {}; new terms: {}; trace growth: {} bytes (target: 0, 0, < 1 MB)",
        f.kernel_drops.map(|k| k.to_string()).unwrap_or_else(|| "unknown".into()),
        f.suspicions,
        f.new_terms,
        f.trace_bytes
    );
    println!();
    Ok(())
}
