//! Rings of real processes launched through the launcher, measured from their traces.

use crate::check::beliefs::Beliefs;
use crate::check::Timeline;
use crate::error::{failed, CliError};
use crate::trace::{Event, RunDir};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What one ring size measured.
#[derive(Debug, Clone)]
pub struct RingFigures {
    /// Ring size.
    pub n: usize,
    /// One hop, microseconds, on the ELECTION lap (each process's first message: cold).
    pub hop_cold_us: f64,
    /// One hop, microseconds, on the ELECTED lap that follows (warm).
    pub hop_warm_us: f64,
    /// One hop of the runtime in steady state (ring-probe token, median lap / n), microseconds.
    pub hop_runtime_us: f64,
    /// One hop of a plain UDP relay ring of the same size (no coordlab), warm, microseconds.
    pub relay_floor_us: f64,
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

/// What to launch: `coordlab ring N`, or `coordlab mesh N --topology SPEC`.
#[derive(Debug, Clone, Copy)]
pub(super) enum Shape<'a> {
    /// A ring in the order of `--ids`.
    Ring,
    /// A mesh of this topology.
    Mesh(&'a str),
}

/// A running launch (`coordlab ring` or `coordlab mesh`) whose run directory is `logs/latest`.
/// Dropped before it ended, it is stopped (SIGTERM, so that the launcher stops its nodes) and
/// reaped.
pub(super) struct Launch {
    child: Child,
    logs: PathBuf,
    n: usize,
    what: String,
}

impl Launch {
    /// Starts `coordlab ring|mesh N` with `args`, into a fresh logs dir, with timeouts long
    /// enough that no node is suspected by mistake while hundreds of processes share two cores.
    pub(super) fn spawn(logs: &Path, shape: Shape<'_>, n: usize, args: &[&str]) -> Result<Self, CliError> {
        let exe = std::env::current_exe().map_err(|e| failed(e.to_string()))?;
        let mut cmd = Command::new(exe);
        match shape {
            Shape::Ring => cmd.arg("ring").arg(n.to_string()),
            Shape::Mesh(spec) => cmd.arg("mesh").arg(n.to_string()).args(["--topology", spec]),
        };
        let child = cmd
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
        let what = match shape {
            Shape::Ring => format!("ring {n} {args:?}"),
            Shape::Mesh(spec) => format!("mesh {n} {spec} {args:?}"),
        };
        Ok(Launch {
            child,
            logs: logs.to_path_buf(),
            n,
            what,
        })
    }

    /// The run directory (valid once the launcher has written it).
    pub(super) fn run_dir(&self) -> PathBuf {
        self.logs.join("latest")
    }

    /// Waits for the launch to end by itself and loads its run; meanwhile samples the nodes'
    /// resident memory once they are all up.
    pub(super) fn wait(mut self, rss: &mut Option<u64>) -> Result<RunDir, CliError> {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if let Some(status) = self.child.try_wait().map_err(|e| failed(e.to_string()))? {
                if !status.success() {
                    return Err(failed(format!("{} exited with {status}", self.what)));
                }
                break;
            }
            if Instant::now() > deadline {
                return Err(failed(format!("{} did not finish in time", self.what)));
            }
            if let Ok(run) = RunDir::load(&self.run_dir()) {
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
                if pids.len() == self.n {
                    let seen = pids.iter().filter_map(|p| rss_kib(*p)).max();
                    *rss = (*rss).max(seen);
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        RunDir::load(&self.run_dir()).map_err(|e| failed(e.to_string()))
    }
}

impl Drop for Launch {
    fn drop(&mut self) {
        if !matches!(self.child.try_wait(), Ok(None)) {
            return;
        }
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(15);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Launches `coordlab ring|mesh N` with `args` and returns the run once it has ended.
pub(super) fn launch(
    logs: &Path,
    shape: Shape<'_>,
    n: usize,
    args: &[&str],
    rss: &mut Option<u64>,
) -> Result<RunDir, CliError> {
    Launch::spawn(logs, shape, n, args)?.wait(rss)
}

fn rss_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Messages named `name` sent by all nodes, from their `stop` counters.
pub(super) fn sent(run: &RunDir, name: &str) -> u64 {
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

/// From the initiator's first `name` message to the first `name` that came back to it.
fn round_trip_us(run: &RunDir, initiator: u64, name: &str) -> Option<u64> {
    let mine = run.node_events.iter().filter(|r| r.node == Some(initiator));
    let mut sent_at = None;
    for r in mine {
        match &r.event {
            Event::Send { msg, .. } if msg == name && sent_at.is_none() => sent_at = Some(r.t),
            Event::Recv { msg, .. } if msg == name && sent_at.is_some() => return Some(r.t - sent_at?),
            _ => {}
        }
    }
    None
}

/// The median lap of the probe token at its initiator, after ten warm-up laps, per hop.
fn probe_hop_us(run: &RunDir, initiator: u64) -> Option<f64> {
    let sends: Vec<u64> = run
        .node_events
        .iter()
        .filter(|r| r.node == Some(initiator) && matches!(&r.event, Event::Send { msg, .. } if msg == "TOKEN"))
        .map(|r| r.t)
        .collect();
    let mut laps: Vec<u64> = sends.windows(2).skip(10).map(|w| w[1] - w[0]).collect();
    laps.sort_unstable();
    laps.get(laps.len() / 2)
        .map(|&us| us as f64 / run.info.nodes.len() as f64)
}

/// What every node believed, when: the checker's one replay of the run.
pub(super) fn replay(run: &RunDir) -> Beliefs {
    Beliefs::replay(run, &Timeline::build(run))
}

/// First `election_start` to the last `leader` event, milliseconds.
pub(super) fn election_ms(run: &RunDir) -> Option<f64> {
    let b = replay(run);
    let first = b.started.first()?.t;
    let last = b.learned.iter().map(|l| l.t).max()?;
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
            Shape::Ring,
            n,
            &["--until", "elected", "--initiators", &top, "--ids", &ids(n, false)],
            &mut rss,
        )?;
        let lap = |name: &str| {
            round_trip_us(&hop, n as u64, name)
                .map(|us| us as f64 / n as f64)
                .ok_or_else(|| failed(format!("ring {n}: no {name} round trip in the trace")))
        };
        let (hop_cold_us, hop_warm_us) = (lap("ELECTION")?, lap("ELECTED")?);
        let probe = launch(
            &root.join(format!("probe-{n}")),
            Shape::Ring,
            n,
            &[
                "--algo",
                crate::algo::registry::RING_PROBE.name,
                "--until",
                "done",
                "--initiators",
                &top,
                "--set",
                "laps=200",
            ],
            &mut rss,
        )?;
        let hop_runtime_us = probe_hop_us(&probe, n as u64)
            .ok_or_else(|| failed(format!("ring {n}: the probe token did not go round")))?;
        let best = launch(
            &root.join(format!("best-{n}")),
            Shape::Ring,
            n,
            &["--until", "elected", "--initiators", "all", "--ids", &ids(n, false)],
            &mut rss,
        )?;
        let worst = launch(
            &root.join(format!("worst-{n}")),
            Shape::Ring,
            n,
            &["--until", "elected", "--initiators", "all", "--ids", &ids(n, true)],
            &mut rss,
        )?;
        out.push(RingFigures {
            n,
            hop_cold_us,
            hop_warm_us,
            hop_runtime_us,
            relay_floor_us: super::floor::ring_floor(n, 200)?,
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
