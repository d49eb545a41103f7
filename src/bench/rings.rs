//! Rings of real processes launched through the launcher, measured from their traces.

use crate::error::{failed, CliError};
use crate::trace::{Event, RunDir};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What one ring size measured.
#[derive(Debug, Clone)]
pub struct RingFigures {
    /// Ring size.
    pub n: usize,
    /// One hop, microseconds (ELECTION round trip of the ring / n).
    pub hop_us: f64,
    /// Election time with every node initiating, milliseconds.
    pub election_ms: f64,
    /// ELECTION messages, ids increasing along the ring, all initiating.
    pub best_election_msgs: u64,
    /// ELECTION messages, ids decreasing along the ring, all initiating.
    pub worst_election_msgs: u64,
    /// ELECTED messages of the best-case run.
    pub elected_msgs: u64,
    /// The largest node resident set seen, KiB.
    pub max_rss_kib: Option<u64>,
}

fn ids(n: usize, reverse: bool) -> String {
    let mut v: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
    if reverse {
        v.reverse();
    }
    v.join(",")
}

/// Launches `coordlab ring` with `args` into a fresh logs dir; returns the run when it ends.
/// While it runs, samples the nodes' resident memory once they are all up.
fn launch(logs: &Path, n: usize, args: &[&str], rss: &mut Option<u64>) -> Result<RunDir, CliError> {
    let exe = std::env::current_exe().map_err(|e| failed(e.to_string()))?;
    let mut child = Command::new(exe)
        .arg("ring")
        .arg(n.to_string())
        .args([
            "--logs",
            &logs.to_string_lossy(),
            "--timeout-ms",
            "2000",
            "--heartbeat-ms",
            "500",
        ])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| failed(format!("cannot launch: {e}")))?;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(status) = child.try_wait().map_err(|e| failed(e.to_string()))? {
            if !status.success() {
                return Err(failed(format!("ring {n} {args:?} exited with {status}")));
            }
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(failed(format!("ring {n} {args:?} did not finish in time")));
        }
        if let Ok(run) = RunDir::load(&logs.join("latest")) {
            let pids: Vec<u32> = run
                .faults
                .iter()
                .filter_map(|r| {
                    if let Event::Spawn { pid, .. } = r.event {
                        Some(pid)
                    } else {
                        None
                    }
                })
                .collect();
            if pids.len() == n {
                let seen = pids.iter().filter_map(|p| rss_kib(*p)).max();
                *rss = (*rss).max(seen);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    RunDir::load(&logs.join("latest")).map_err(|e| failed(e.to_string()))
}

fn rss_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn sent(run: &RunDir, name: &str) -> u64 {
    run.node_events
        .iter()
        .filter_map(|r| {
            if let Event::Stop { by_type, .. } = &r.event {
                by_type.get(name).copied()
            } else {
                None
            }
        })
        .sum()
}

/// The first ELECTION the initiator sent, and when its own id came back to it.
fn round_trip_us(run: &RunDir, initiator: u64) -> Option<u64> {
    let mine = run.node_events.iter().filter(|r| r.node == Some(initiator));
    let mut sent_at = None;
    for r in mine {
        match &r.event {
            Event::Send { msg, .. } if msg == "ELECTION" && sent_at.is_none() => sent_at = Some(r.t),
            Event::Recv { msg, .. } if msg == "ELECTION" && sent_at.is_some() => return Some(r.t - sent_at?),
            _ => {}
        }
    }
    None
}

fn election_ms(run: &RunDir) -> Option<f64> {
    let first = run
        .node_events
        .iter()
        .find(|r| matches!(r.event, Event::ElectionStart { .. }))?
        .t;
    let last = run
        .node_events
        .iter()
        .filter(|r| matches!(r.event, Event::Leader { .. }))
        .map(|r| r.t)
        .max()?;
    Some(last.saturating_sub(first) as f64 / 1000.0)
}

/// Measures each ring size.
pub fn run_rings(sizes: &[usize]) -> Result<Vec<RingFigures>, CliError> {
    let root: PathBuf = std::env::temp_dir().join(format!("coordlab-bench-{}", std::process::id()));
    let mut out = Vec::new();
    for &n in sizes {
        let mut rss = None;
        let dir = root.join(format!("hop-{n}"));
        let top = n.to_string();
        let hop = launch(
            &dir,
            n,
            &["--until", "elected", "--initiators", &top, "--ids", &ids(n, false)],
            &mut rss,
        )?;
        let rt = round_trip_us(&hop, n as u64)
            .ok_or_else(|| failed(format!("ring {n}: no ELECTION round trip in the trace")))?;
        let best = launch(
            &root.join(format!("best-{n}")),
            n,
            &["--until", "elected", "--initiators", "all", "--ids", &ids(n, false)],
            &mut rss,
        )?;
        let worst = launch(
            &root.join(format!("worst-{n}")),
            n,
            &["--until", "elected", "--initiators", "all", "--ids", &ids(n, true)],
            &mut rss,
        )?;
        out.push(RingFigures {
            n,
            hop_us: rt as f64 / n as f64,
            election_ms: election_ms(&best).unwrap_or(f64::NAN),
            best_election_msgs: sent(&best, "ELECTION"),
            worst_election_msgs: sent(&worst, "ELECTION"),
            elected_msgs: sent(&best, "ELECTED"),
            max_rss_kib: rss,
        });
    }
    let _ = std::fs::remove_dir_all(&root);
    Ok(out)
}
