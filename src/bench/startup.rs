//! `coordlab bench --only startup`: how fast a launch starts and ends. The whole command for a
//! ring of 50 (beside DistAlgo's Chang-Roberts when it is installed), the ELECTION lap on a
//! ring of 64 against a plain relay ring measured in the same run, and per ring size the time
//! from launch until every node ran its first handler, the election, launch to exit, terms and
//! memory; written as `bench/startup.md` and plotted as `bench/startup.svg`.

use super::memory::Memory;
use super::plot::{log_log, Series};
use super::readings::median;
use crate::error::{failed, CliError};
use crate::trace::{wall_us, Event, RunDir};
use std::fmt::Write as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The sizes measured when `--sizes` is not given.
pub const DEFAULT_SIZES: &[usize] = &[8, 64, 256, 1024, 4096];
/// Runs of the ring of 50 whose median is reported.
const RUNS_OF_50: usize = 3;
/// Launches of `ring 64 --initiators 64` whose ELECTION laps are measured.
const LAP_RUNS: usize = 7;

/// One launch measured from outside (wall clock) and from its traces.
#[derive(Debug, Clone)]
pub(crate) struct Measured {
    /// Nodes.
    pub n: usize,
    /// Launch (the bench spawning `coordlab`) until every node wrote its `start` event, ms.
    pub startup_ms: f64,
    /// First `election_start` to the last `leader` event, ms.
    pub election_ms: f64,
    /// Launch until the command exited, ms.
    pub exit_ms: f64,
    /// Distinct terms in which some node learned a leader.
    pub terms: usize,
    /// The largest PSS and private memory among the sampled nodes (see [`Memory`]).
    pub memory: Option<Memory>,
}

/// A `coordlab` child killed and reaped if dropped early.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        super::launch::stop(&mut self.0);
    }
}

/// Runs `coordlab ring N args` (default heartbeat and timeout) into `logs` and measures it;
/// with `memory`, also samples the nodes' memory once all are spawned.
fn measure(logs: &Path, n: usize, args: &[&str], memory: bool) -> Result<(Measured, RunDir), CliError> {
    let exe = std::env::current_exe().map_err(|e| failed(e.to_string()))?;
    let _ = std::fs::remove_dir_all(logs);
    let launched_us = wall_us();
    let t0 = Instant::now();
    let child = Command::new(exe)
        .args(["ring", &n.to_string(), "--logs"])
        .arg(logs)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| failed(format!("cannot launch ring {n}: {e}")))?;
    let mut child = Guard(child);
    let deadline = t0 + Duration::from_secs(120 + n as u64 / 20);
    let mut memory_seen: Option<Memory> = None;
    let mut sampled = !memory;
    let status = loop {
        if let Some(s) = child.0.try_wait().map_err(|e| failed(e.to_string()))? {
            break s;
        }
        if Instant::now() > deadline {
            return Err(failed(format!("ring {n} did not finish in time")));
        }
        if !sampled {
            let pids = spawned_pids(&logs.join("latest"));
            if pids.len() == n {
                memory_seen = Memory::worst_of(&pids);
                // A sample that caught a node ending is no reading: the next poll tries again.
                sampled = memory_seen.is_some();
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let exit_ms = t0.elapsed().as_secs_f64() * 1000.0;
    if !status.success() {
        return Err(failed(format!("ring {n} {args:?} exited with {status}")));
    }
    let run = RunDir::load(&logs.join("latest")).map_err(|e| failed(e.to_string()))?;
    let last_start = run
        .node_events
        .iter()
        .filter(|r| matches!(r.event, Event::Start { .. }))
        .map(|r| r.t)
        .max()
        .unwrap_or(launched_us);
    let mut terms: Vec<u64> = run
        .node_events
        .iter()
        .filter_map(|r| match r.event {
            Event::Leader { term, .. } => Some(term),
            _ => None,
        })
        .collect();
    terms.sort_unstable();
    terms.dedup();
    let m = Measured {
        n,
        startup_ms: last_start.saturating_sub(launched_us) as f64 / 1000.0,
        election_ms: super::readings::election_ms(&run).unwrap_or(f64::NAN),
        exit_ms,
        terms: terms.len(),
        memory: memory_seen,
    };
    Ok((m, run))
}

fn spawned_pids(run_dir: &Path) -> Vec<u32> {
    let text = std::fs::read_to_string(run_dir.join("faults.jsonl")).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<crate::trace::Record>(l).ok())
        .filter_map(|r| match r.event {
            Event::Spawn { pid, .. } => Some(pid),
            _ => None,
        })
        .collect()
}

/// The machine's load averages, as /proc/loadavg gives them (`-` when unreadable).
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(", "))
        .unwrap_or_else(|| "-".into())
}

/// The ELECTION lap on `run` per hop, microseconds: from the initiator's first ELECTION send to
/// its first ELECTION receive, divided by n.
fn election_hop_us(run: &RunDir, initiator: u64, n: usize) -> Option<f64> {
    let mut sent = None;
    for r in run.node_events.iter().filter(|r| r.node == Some(initiator)) {
        match &r.event {
            Event::Send { msg, .. } if msg == "ELECTION" && sent.is_none() => sent = Some(r.t),
            Event::Recv { msg, .. } if msg == "ELECTION" => {
                return sent.map(|s| r.t.saturating_sub(s) as f64 / n as f64);
            }
            _ => {}
        }
    }
    None
}

/// The median single hop of the same lap, microseconds: the ELECTION leaves node n and reaches
/// 1, 2, ..., n in turn (ids 1..n in ring order), and each hop is the time from one node's first
/// ELECTION event to the next node's first receive. Unlike the lap, one hop that waited behind
/// other work (a node still starting) does not move it.
pub(super) fn median_hop_us(records: &[crate::trace::Record], n: u64) -> Option<f64> {
    // The time of `node`'s first ELECTION sent (or received).
    let first = |node: u64, sent: bool| {
        records
            .iter()
            .filter(|r| r.node == Some(node))
            .find_map(|r| match &r.event {
                Event::Send { msg, .. } | Event::Recv { msg, .. }
                    if msg == "ELECTION" && sent == matches!(r.event, Event::Send { .. }) =>
                {
                    Some(r.t)
                }
                _ => None,
            })
    };
    let mut times = vec![first(n, true)?];
    for node in 1..=n {
        times.push(first(node, false)?);
    }
    let hops: Vec<f64> = times.windows(2).map(|w| w[1].saturating_sub(w[0]) as f64).collect();
    Some(median(hops))
}

/// Runs the start-up benchmark over ring sizes `sizes`; prints its tables and writes them with
/// the plot under `bench/`.
pub fn run_startup(sizes: &[usize]) -> Result<(), CliError> {
    let root = std::env::temp_dir().join(format!("coordlab-bench-startup-{}", std::process::id()));
    let mut md = String::new();
    let load_before = load_average();
    println!(
        "== start-up ({}, one process per node, loopback, default heartbeat and timeout)",
        super::BUILD
    );

    let mut whole = Vec::new();
    for k in 0..RUNS_OF_50 {
        let (m, _) = measure(
            &root.join(format!("r50-{k}")),
            50,
            &["--initiators", "all", "--until", "elected"],
            // Only the command's own time: its memory is sampled in the per-size rows.
            false,
        )?;
        whole.push(m.exit_ms);
    }
    let ours = median(whole);
    let _ = writeln!(md, "## Whole command, launch to exit (median of {RUNS_OF_50})\n");
    let _ = writeln!(md, "| command | ms | target |\n|---|---:|---|");
    let _ = writeln!(
        md,
        "| `coordlab ring 50 --initiators all --until elected` | {ours:.0} | <= 150 |"
    );
    match super::distalgo::median_ms("crleader", &["50".into()], RUNS_OF_50) {
        Ok(da) => {
            let _ = writeln!(
                md,
                "| DistAlgo 1.1.0 `crleader`, 50 processes (Python 3.7) | {da:.0} | coordlab <= {:.0} (a fifth): {:.2}x |",
                da / 5.0,
                ours / da
            );
        }
        Err(why) => {
            let _ = writeln!(md, "| DistAlgo 1.1.0 `crleader`, 50 processes | - | skipped: {why} |");
        }
    }

    // No memory sample here: reading 64 nodes' status and smaps_rollup (page-table walks under
    // each node's lock) right after the last spawn falls inside the lap. One lap is one sample
    // and they vary a lot (the lap shares the cores with the other nodes' start): the median
    // of several launches, with the range.
    let (mut hops, mut singles) = (Vec::new(), Vec::new());
    for k in 0..LAP_RUNS {
        let (_, lap_run) = measure(
            &root.join(format!("lap-64-{k}")),
            64,
            &["--initiators", "64", "--until", "elected"],
            false,
        )?;
        hops.extend(election_hop_us(&lap_run, 64, 64));
        singles.extend(median_hop_us(&lap_run.node_events, 64));
    }
    let single = if singles.is_empty() { f64::NAN } else { median(singles) };
    let (lo, hi) = hops
        .iter()
        .fold((f64::NAN, f64::NAN), |(lo, hi), &h| (h.min(lo), h.max(hi)));
    let hop = if hops.is_empty() { f64::NAN } else { median(hops) };
    let relay = super::floor::ring_floor(64, 200, false)?;
    let polled = super::floor::ring_floor(64, 200, true)?;
    let _ = writeln!(
        md,
        "\n## First hops: the ELECTION lap on a ring of 64 against a plain relay ring (same run)\n"
    );
    let _ = writeln!(
        md,
        "| ELECTION hop (us): lap / 64, median of {LAP_RUNS} launches [range] | median single hop (us) | relay ring hop (us) | ratio (lap) | target | relay waiting in a mio poll (us) |\n|---:|---:|---:|---:|---|---:|"
    );
    let _ = writeln!(
        md,
        "| {hop:.1} [{lo:.1}-{hi:.1}] | {single:.1} ({:.2}x) | {relay:.1} | {:.2} | <= 1.5 | {polled:.1} ({:.2}x) |",
        single / relay,
        hop / relay,
        polled / relay
    );
    let _ = writeln!(
        md,
        "\nThe lap shares the two cores with the other 63 nodes' start (each node wakes at the go), so it can be \
         longer than 64 typical hops; the median single hop leaves those waits out. The relay ring waiting in \
         a mio poll is the event loop's own share, with no engine."
    );

    let mut rows = Vec::new();
    for &n in sizes {
        let (m, _) = measure(
            &root.join(format!("n-{n}")),
            n,
            &["--initiators", "all", "--until", "elected"],
            true,
        )?;
        println!(
            "  ring {n}: start-up {:.0} ms, election {:.0} ms, launch to exit {:.0} ms, {} term(s)",
            m.startup_ms, m.election_ms, m.exit_ms, m.terms
        );
        rows.push(m);
    }
    let _ = writeln!(
        md,
        "\n## Per ring size: `coordlab ring N --initiators all --until elected`\n"
    );
    let _ = writeln!(
        md,
        "| n | start-up (ms) | election (ms) | launch to exit (ms) | terms | node PSS (KiB) | node private (KiB) |\n|---:|---:|---:|---:|---:|---:|---:|"
    );
    for m in &rows {
        let _ = writeln!(
            md,
            "| {} | {:.0} | {:.0} | {:.0} | {} | {} | {} |",
            m.n,
            m.startup_ms,
            m.election_ms,
            m.exit_ms,
            m.terms,
            m.memory.map_or("-".into(), |m| m.pss_kib.to_string()),
            m.memory.map_or("-".into(), |m| m.private_kib.to_string())
        );
    }
    let _ = writeln!(
        md,
        "\nstart-up: from launch until every node has run its first handler (its `start` event). election: first \
         `election_start` to the last `leader`. Targets: ring 1024 exits in < 2000 ms, ring 4096 in < 3000 ms and ring \
         16384 in < 30000 ms, each with one term and no process left; node PSS < 512 KiB at 16384 (proportional set size: a page shared by k processes counts 1/k in each; the \
         largest of a sample of up to 64 nodes; private: the pages only that node maps). Figures vary from run to run, \
         and with the machine's load."
    );
    // Other work on the machine slows every figure above: say how busy it was.
    let _ = writeln!(
        md,
        "\nLoad average (1, 5, 15 min) when the benchmark began: {load_before}; when it ended: {}.",
        load_average()
    );
    print!("{md}");
    let svg = log_log(
        "coordlab: start-up and election time against ring size",
        "nodes (n)",
        "milliseconds",
        &[
            Series {
                name: "start-up (launch until every node ran)".into(),
                points: rows.iter().map(|m| (m.n as f64, m.startup_ms)).collect(),
            },
            Series {
                name: "election (first start to last leader)".into(),
                points: rows.iter().map(|m| (m.n as f64, m.election_ms)).collect(),
            },
        ],
    );
    let out = Path::new("bench");
    std::fs::create_dir_all(out).map_err(|e| failed(format!("cannot create bench/: {e}")))?;
    std::fs::write(out.join("startup.md"), format!("# Start-up benchmark\n\n{md}"))
        .and_then(|_| std::fs::write(out.join("startup.svg"), svg))
        .map_err(|e| failed(format!("cannot write under bench/: {e}")))?;
    println!("\nwrote bench/startup.md and bench/startup.svg");
    let _ = std::fs::remove_dir_all(&root);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Record;

    fn rec(node: u64, t: u64, send: bool, msg: &str) -> Record {
        let event = match send {
            true => Event::Send {
                to: node % 4 + 1,
                msg: msg.into(),
                bytes: 10,
                seq: 1,
                brief: String::new(),
            },
            false => Event::Recv {
                from: (node + 2) % 4 + 1,
                msg: msg.into(),
                bytes: 10,
                seq: 1,
                brief: String::new(),
            },
        };
        Record::unstamped(t, Some(node), event)
    }

    #[test]
    fn the_laps_median_hop_leaves_a_slow_first_hop_out_and_counts_each_node_once() {
        // Node 4 starts the lap at 100: node 1 gets it 900 us later (still starting), then
        // 30, 40 and 50 us a hop back to node 4. Other messages, and a second ELECTION at node
        // 2, do not count.
        let records = vec![
            rec(4, 100, true, "ELECTION"),
            rec(3, 120, false, "HEARTBEAT"),
            rec(1, 1000, false, "ELECTION"),
            rec(2, 1030, false, "ELECTION"),
            rec(3, 1070, false, "ELECTION"),
            rec(2, 1080, false, "ELECTION"),
            rec(4, 1120, false, "ELECTION"),
        ];
        // Hops 900, 30, 40, 50: sorted 30, 40, 50, 900, the median the upper middle one.
        assert_eq!(median_hop_us(&records, 4), Some(50.0));
        // A node the lap never reached: no figure.
        assert_eq!(median_hop_us(&records[..6], 4), None);
    }
}
