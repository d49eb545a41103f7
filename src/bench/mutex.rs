//! Every mutual-exclusion algorithm as real processes under full contention (think 0, hold 0,
//! every node requesting): entries per second, the synchronisation delay (one exit to the next
//! entry) against the one-hop floor, and protocol messages per entry beside the formula.

use super::launch::{launch, Shape};
use crate::catalog::{Bench, Fit, ENTRIES};
use crate::error::{failed, CliError};
use crate::trace::{Event, RunDir};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

/// The sizes of the mutex table.
pub(crate) const SIZES: &[usize] = &[5, 20, 64];

/// Requests per node at size n: enough entries to measure, few enough to stay short.
fn requests(n: usize) -> usize {
    if n >= 64 {
        10
    } else {
        20
    }
}

/// The workload of every row: `k` requests per node, no thinking, no holding, until all served.
fn full_contention(k: &str) -> [&str; 8] {
    ["--requests", k, "--think-ms", "0", "--hold-ms", "0", "--until", "done"]
}

/// One launch's figures.
#[derive(Debug, Clone)]
pub(crate) struct MutexRow {
    /// The algorithm.
    pub algo: &'static str,
    /// Participants.
    pub n: usize,
    /// Entries made.
    pub entries: usize,
    /// Entries per second, first request to last exit.
    pub per_sec: f64,
    /// Median exit-to-next-entry, microseconds.
    pub sync_us: f64,
    /// Protocol messages (BEGIN/END to the resource excluded) per entry.
    pub msgs_per_entry: f64,
    /// The formula, in words and value.
    pub formula: (String, String),
    /// Violations the resource saw.
    pub violations: usize,
}

fn measure(run: &RunDir, algo: &'static str, n: usize, formula: (String, String)) -> MutexRow {
    let t = |kind: &str| -> Vec<(u64, u64)> {
        run.node_events
            .iter()
            .filter(|r| r.event.kind() == kind)
            .map(|r| (r.t, r.node.unwrap_or(0)))
            .collect()
    };
    let (reqs, enters, exits) = (t("cs_request"), t("cs_enter"), t("cs_exit"));
    let first = reqs.iter().map(|r| r.0).min().unwrap_or(0);
    let last = exits.iter().map(|r| r.0).max().unwrap_or(first);
    let span = (last.saturating_sub(first)) as f64 / 1e6;
    let mut gaps: Vec<u64> = enters
        .iter()
        .filter_map(|&(te, _)| exits.iter().filter(|x| x.0 <= te).map(|x| x.0).max().map(|tx| te - tx))
        .collect();
    gaps.sort_unstable();
    let sync_us = gaps.get(gaps.len() / 2).copied().unwrap_or(0) as f64;
    let msgs: u64 = run
        .node_events
        .iter()
        .filter_map(|r| match &r.event {
            Event::Stop { by_type, .. } => Some(
                by_type
                    .iter()
                    .filter(|(k, _)| k.as_str() != "BEGIN" && k.as_str() != "END")
                    .map(|(_, v)| v)
                    .sum::<u64>(),
            ),
            _ => None,
        })
        .sum();
    let entries = enters.len();
    MutexRow {
        algo,
        n,
        entries,
        per_sec: if span > 0.0 { entries as f64 / span } else { 0.0 },
        sync_us,
        msgs_per_entry: msgs as f64 / entries.max(1) as f64,
        formula,
        violations: run.resource.iter().filter(|r| r.event.kind() == "violation").count(),
    }
}

/// Runs every mutex algorithm at every size of [`SIZES`] and prints the table; `one_hop_us`
/// is the loopback floor's one hop.
pub(crate) fn run_mutex(one_hop_us: f64) -> Result<Vec<MutexRow>, CliError> {
    let tmp = std::env::temp_dir().join(format!("coordlab-bench-mutex-{}", std::process::id()));
    println!(
        "{:<16} {:>4} {:>8} {:>10} {:>10} {:>8} {:>10}  {:<30} {:>14} {:>5}",
        "algorithm", "n", "entries", "entries/s", "sync us", "sync/hop", "msgs/entry", "formula", "value", "viol"
    );
    let mut rows = Vec::new();
    for &n in SIZES {
        for (e, formula) in ENTRIES.iter().filter_map(|e| match e.bench {
            Bench::Mutex(formula) => Some((e, formula)),
            _ => None,
        }) {
            let shape = match e.runs_on {
                Fit::Complete => Shape::Mesh("complete"),
                _ => Shape::Ring,
            };
            let k = requests(n).to_string();
            let mut args = vec!["--algo", e.name];
            args.extend(full_contention(&k));
            let dir = tmp.join(format!("{}-{n}", e.name));
            let mut mem = None;
            match launch(Path::new(&dir), shape, n, &args, &mut mem) {
                Ok(run) => {
                    let r = measure(&run, e.name, n, formula(n));
                    println!(
                        "{:<16} {:>4} {:>8} {:>10.0} {:>10.1} {:>8.1} {:>10.1}  {:<30} {:>14} {:>5}",
                        r.algo,
                        r.n,
                        r.entries,
                        r.per_sec,
                        r.sync_us,
                        r.sync_us / one_hop_us,
                        r.msgs_per_entry,
                        r.formula.0,
                        r.formula.1,
                        r.violations
                    );
                    rows.push(r);
                }
                Err(e2) => println!("{:<16} {:>4}  failed: {e2}", e.name, n),
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    Ok(rows)
}

/// coordlab's algorithm and DistAlgo's example of the same algorithm, from the registry.
fn side_by_side() -> impl Iterator<Item = (&'static str, &'static str)> {
    crate::catalog::ENTRIES
        .iter()
        .filter_map(|e| e.distalgo.map(|example| (e.name, example)))
}
/// Runs of each command whose median is reported (one at n = 64, where DistAlgo takes a minute).
fn side_runs(n: usize) -> usize {
    if n >= 64 {
        1
    } else {
        3
    }
}

/// `coordlab mesh N --topology complete --algo ALGO --requests K --think-ms 0 --hold-ms 0 --until
/// done`, as a user types it, launch to exit in ms (median of [`side_runs`]).
fn coordlab_ms(algo: &str, n: usize, k: usize, logs: &Path) -> Result<f64, CliError> {
    let exe = std::env::current_exe().map_err(|e| failed(e.to_string()))?;
    let mut times = Vec::new();
    for _ in 0..side_runs(n) {
        let _ = std::fs::remove_dir_all(logs);
        let t0 = Instant::now();
        let status = Command::new(&exe)
            .args(["mesh", &n.to_string(), "--topology", "complete", "--algo", algo])
            .args(full_contention(&k.to_string()))
            .arg("--logs")
            .arg(logs)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .status()
            .map_err(|e| failed(format!("cannot launch {algo}: {e}")))?;
        if !status.success() {
            return Err(failed(format!("mesh {n} --algo {algo} exited with {status}")));
        }
        times.push(t0.elapsed().as_secs_f64() * 1000.0);
    }
    let _ = std::fs::remove_dir_all(logs);
    Ok(super::readings::median(times))
}

/// The message pattern's floor of `algo` at `n` x `k` ([`super::ra_floor`]; Ricart-Agrawala
/// only): the median of [`side_runs`] runs, go to the last entry, in ms; None where there is
/// none, or it failed (said on stderr).
fn pattern_floor_ms(algo: &str, n: usize, k: usize) -> Option<f64> {
    if algo != "ricart-agrawala" {
        return None;
    }
    let mut times = Vec::new();
    for _ in 0..side_runs(n) {
        match super::ra_floor::ra_floor_ms(n, k, false) {
            Ok(ms) => times.push(ms),
            Err(e) => {
                eprintln!("coordlab: the bare Ricart-Agrawala floor at {n} x {k}: {e}");
                return None;
            }
        }
    }
    Some(super::readings::median(times))
}

/// coordlab beside DistAlgo's own `ramutex` and `lamutex`, same processes and requests, launch
/// to exit; the target (issue 22) is a twentieth of DistAlgo's time at 20 processes and 20 requests each.
pub(crate) fn run_side_by_side() -> Result<(), CliError> {
    let logs = std::env::temp_dir().join(format!("coordlab-bench-side-{}", std::process::id()));
    println!(
        "{:<16} {:>4} {:>9} {:>14} {:>22} {:>7}  {:<8} {:>11} {:>7}",
        "algorithm", "n", "requests", "coordlab (ms)", "DistAlgo 1.1.0 (ms)", "ratio", "target", "floor (ms)", "ratio"
    );
    for &n in SIZES {
        let k = requests(n);
        for (algo, example) in side_by_side() {
            let ours = coordlab_ms(algo, n, k, &logs)?;
            let theirs = super::distalgo::median_ms(example, &[n.to_string(), k.to_string()], side_runs(n));
            let target = if n == 20 && k == 20 { "<= 0.05" } else { "" };
            let floor = pattern_floor_ms(algo, n, k);
            match theirs {
                Ok(da) => println!(
                    "{algo:<16} {n:>4} {k:>9} {ours:>14.0} {:>22} {:>7.3}  {target:<8} {:>11} {:>7}",
                    format!("{da:.0} ({example})"),
                    ours / da,
                    floor.map_or("-".into(), |f| format!("{f:.0}")),
                    floor.map_or("-".into(), |f| format!("{:.3}", f / da)),
                ),
                Err(why) => println!(
                    "{algo:<16} {n:>4} {k:>9} {ours:>14.0} {:>22} {:>7}  skipped: {why}",
                    example, "-"
                ),
            }
        }
    }
    Ok(())
}
