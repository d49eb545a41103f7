//! Every mutual-exclusion algorithm as real processes under full contention (think 0, hold 0,
//! every node requesting): entries per second, the synchronisation delay (one exit to the next
//! entry) against the one-hop floor, and protocol messages per entry beside the formula.

use super::launch::{launch, Shape};
use crate::algo::registry::{Fit, ENTRIES, MUTEX};
use crate::error::CliError;
use crate::trace::{Event, RunDir};
use std::path::Path;

/// The sizes of the mutex table.
pub const SIZES: &[usize] = &[5, 20, 64];

/// Requests per node at size n: enough entries to measure, few enough to stay short.
fn requests(n: usize) -> usize {
    if n >= 64 {
        10
    } else {
        20
    }
}

/// One launch's figures.
#[derive(Debug, Clone)]
pub struct MutexRow {
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

fn formula(algo: &str, n: usize) -> (String, String) {
    let n_f = n as f64;
    let k = crate::algo::mutex::maekawa::grid_quorum(&(1..=n as u64).collect::<Vec<_>>(), 1).len();
    match algo {
        "central" => ("3(n-1)/n (own: 0)".into(), format!("{:.2}", 3.0 * (n_f - 1.0) / n_f)),
        "token-ring" => ("1 pass per entry".into(), "1".into()),
        "ricart-agrawala" => ("2(n-1)".into(), format!("{}", 2 * (n - 1))),
        "lamport" => ("3(n-1)".into(), format!("{}", 3 * (n - 1))),
        "quorum" => ("3n uncontended, + FAILED".into(), format!("{}", 3 * n)),
        "maekawa" => (
            format!("3K..5K (K={k}); 3..5 sqrt(n)"),
            format!("{}..{}; {:.0}..{:.0}", 3 * k, 5 * k, 3.0 * n_f.sqrt(), 5.0 * n_f.sqrt()),
        ),
        _ => ("-".into(), "-".into()),
    }
}

fn measure(run: &RunDir, algo: &'static str, n: usize) -> MutexRow {
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
        formula: formula(algo, n),
        violations: run.resource.iter().filter(|r| r.event.kind() == "violation").count(),
    }
}

/// Runs every mutex algorithm at every size of [`SIZES`] and prints the table; `one_hop_us`
/// is the loopback floor's one hop.
pub fn run_mutex(one_hop_us: f64) -> Result<Vec<MutexRow>, CliError> {
    let tmp = std::env::temp_dir().join(format!("coordlab-bench-mutex-{}", std::process::id()));
    println!(
        "{:<16} {:>4} {:>8} {:>10} {:>10} {:>8} {:>10}  {:<30} {:>14} {:>5}",
        "algorithm", "n", "entries", "entries/s", "sync us", "sync/hop", "msgs/entry", "formula", "value", "viol"
    );
    let mut rows = Vec::new();
    for &n in SIZES {
        for e in ENTRIES.iter().filter(|e| e.family.name == MUTEX.name) {
            let shape = match e.runs_on {
                Fit::Complete => Shape::Mesh("complete"),
                _ => Shape::Ring,
            };
            let k = requests(n).to_string();
            let args = [
                "--algo",
                e.name,
                "--requests",
                &k,
                "--think-ms",
                "0",
                "--hold-ms",
                "0",
                "--until",
                "done",
            ];
            let dir = tmp.join(format!("{}-{n}", e.name));
            let mut rss = None;
            match launch(Path::new(&dir), shape, n, &args, &mut rss) {
                Ok(run) => {
                    let r = measure(&run, e.name, n);
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
