//! Clock synchronisation figures: Cristian and Berkeley on complete meshes of skewed clocks
//! (`--clock-skew random:200,100`): the spread before and after, how long until every clock is
//! within 1 ms of every other, and the messages per round. Figures, not tests: they vary from
//! run to run with the machine's load (round trips set the bounds).

use super::launch::{launch, Shape};
use crate::catalog::{Bench, ENTRIES};
use crate::check::clock::{analyse, WITHIN_US};
use crate::error::CliError;
use crate::trace::{Event, RunDir};

/// How long each run lasts, seconds.
const SECONDS: u64 = 10;
/// The largest cluster measured: a complete mesh of more is mostly the machine's scheduler.
const MAX_N: usize = 64;

/// One run's figures.
#[derive(Debug, Clone)]
pub(crate) struct ClockRow {
    /// `cristian` or `berkeley`.
    pub algo: &'static str,
    /// Nodes.
    pub n: usize,
    /// Spread of the offsets at the start, ms.
    pub before_ms: f64,
    /// Spread at the end, ms.
    pub after_ms: f64,
    /// From the first event until the spread stayed within 1 ms, s (None: never).
    pub within_s: Option<f64>,
    /// Rounds completed (Cristian: corrections per client; Berkeley: the master's).
    pub rounds: f64,
    /// All messages sent / rounds.
    pub per_round: f64,
    /// Corrections checked, and how many kept their claimed bound.
    pub claims: (usize, usize),
}

/// The algorithms of the clock table: the registry's entries with a clock row.
fn clock_algos() -> impl Iterator<Item = &'static str> {
    ENTRIES
        .iter()
        .filter(|e| matches!(e.bench, Bench::Clock(_)))
        .map(|e| e.name)
}

fn row(algo: &'static str, n: usize, run: &RunDir) -> ClockRow {
    let f = analyse(run);
    let adjusts = run
        .node_events
        .iter()
        .filter(|r| matches!(r.event, Event::ClockAdjust { .. }))
        .count() as f64;
    let adjusted = match crate::catalog::find(algo).map(|e| e.bench) {
        Some(Bench::Clock(adjusted)) => adjusted(n),
        _ => n,
    };
    let rounds = adjusts / adjusted as f64;
    let sent: u64 = run
        .node_events
        .iter()
        .filter_map(|r| match &r.event {
            Event::Stop { sent, .. } => Some(*sent),
            _ => None,
        })
        .sum();
    ClockRow {
        algo,
        n,
        before_ms: f.spread_before_us() as f64 / 1000.0,
        after_ms: f.spread_after_us() as f64 / 1000.0,
        within_s: f.within_from.map(|t| t.saturating_sub(f.start_t) as f64 / 1e6),
        rounds,
        per_round: if rounds > 0.0 { sent as f64 / rounds } else { 0.0 },
        claims: (f.claims.len(), f.claims.iter().filter(|c| c.holds()).count()),
    }
}

/// Runs both algorithms at every size up to 64 and prints the table.
pub(crate) fn run_clocks(sizes: &[usize], seed: u64) -> Result<Vec<ClockRow>, CliError> {
    let root = std::env::temp_dir().join(format!("coordlab-bench-clock-{}", std::process::id()));
    let mut rows = Vec::new();
    println!(
        "{:>9}  {:>4}  {:>10}  {:>10}  {:>12}  {:>6}  {:>10}  {:>10}",
        "algo", "n", "before ms", "after ms", "within 1 ms", "rounds", "msgs/round", "claims ok"
    );
    for &n in sizes.iter().filter(|&&n| n <= MAX_N) {
        for algo in clock_algos() {
            let dir = root.join(format!("{algo}-{n}"));
            let seed = seed.to_string();
            let secs = SECONDS.to_string();
            let args = [
                "--seed",
                &seed,
                "--algo",
                algo,
                "--clock-skew",
                "random:200,100",
                "--duration",
                &secs,
            ];
            let mut mem = None;
            match launch(&dir, Shape::Mesh("complete"), n, &args, &mut mem) {
                Ok(run) => {
                    let r = row(algo, n, &run);
                    println!(
                        "{:>9}  {:>4}  {:>10.3}  {:>10.3}  {:>12}  {:>6.1}  {:>10.1}  {:>10}",
                        r.algo,
                        r.n,
                        r.before_ms,
                        r.after_ms,
                        r.within_s.map_or("never".into(), |s| format!("{s:.2} s")),
                        r.rounds,
                        r.per_round,
                        format!("{}/{}", r.claims.1, r.claims.0)
                    );
                    rows.push(r);
                }
                Err(e) => println!("{algo:>9}  {n:>4}  failed: {e}"),
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    if sizes.iter().any(|&n| n > MAX_N) {
        println!("(sizes above {MAX_N} skipped: a complete mesh that large measures the scheduler, not the algorithm)");
    }
    println!(
        "before/after: max - min true offset (pt - t) at each node's first and last event. within {} ms: from the",
        WITHIN_US / 1000
    );
    println!(
        "first event until the spread stayed within it to the end, seen at the nodes' events (so to within a round;"
    );
    println!(
        "slewing at the default 100000 ppm absorbs 200 ms in about 2 s). msgs/round: every message sent / rounds;"
    );
    println!("cristian: 2 x 4 samples per client, 8(n-1); berkeley: 4 POLL + 4 CLOCK + 1 ADJUST per node, 9(n-1).");
    println!("{SECONDS} s per run; figures vary from run to run with the machine's load.");
    Ok(rows)
}
