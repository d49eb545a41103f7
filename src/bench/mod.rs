//! `coordlab bench`: the figures of `scripts/bench.sh` — the loopback floor, coordlab's cost
//! per hop, election times and message counts beside the formulas, and memory per node.
//! Benchmarks report; nothing here is a pass/fail test.

mod floor;
mod rings;

pub use floor::{echo_server, floor, relay, ring_floor};
pub use rings::{run_rings, RingFigures};

use crate::error::CliError;

/// Runs every benchmark and prints the table.
pub fn run(sizes: &[usize], rounds: usize) -> Result<(), CliError> {
    let f = floor(rounds)?;
    println!("== loopback floor: plain UDP ping-pong between two processes ({rounds} rounds)");
    println!(
        "round trip: median {:.1} us, p99 {:.1} us; one-hop floor (half) {:.1} us",
        f.median_us,
        f.p99_us,
        f.median_us / 2.0
    );
    println!();
    let figs = run_rings(sizes)?;
    let one_hop = f.median_us / 2.0;
    println!("== chang-roberts rings (release build, one process per node, loopback)");
    println!(
        "per hop, microseconds: chang-roberts cold (ELECTION lap) and warm (ELECTED lap); the runtime in steady state"
    );
    println!("(ring-probe token, median of 190 laps); a plain UDP relay ring of n processes (median of 190 laps)");
    println!(
        "{:>5}  {:>6}  {:>6}  {:>7}  {:>7}  {:>8}  {:>9}  {:>10}  {:>9}  {:>6}  {:>10}  {:>10}  {:>7}  {:>9}",
        "n",
        "cold",
        "warm",
        "runtime",
        "relay",
        "rt/pp",
        "rt/relay",
        "elect (ms)",
        "ELECTION",
        "2n-1",
        "worst run",
        "n(n+1)/2",
        "ELECTED",
        "RSS (KiB)"
    );
    for r in &figs {
        let n = r.n as u64;
        println!(
            "{:>5}  {:>6.1}  {:>6.1}  {:>7.1}  {:>7.1}  {:>8.2}  {:>9.2}  {:>10.1}  {:>9}  {:>6}  {:>10}  {:>10}  {:>7}  {:>9}",
            r.n,
            r.hop_cold_us,
            r.hop_warm_us,
            r.hop_runtime_us,
            r.relay_floor_us,
            r.hop_runtime_us / one_hop,
            r.hop_runtime_us / r.relay_floor_us,
            r.election_ms,
            r.best_election_msgs,
            2 * n - 1,
            r.worst_election_msgs,
            n * (n + 1) / 2,
            r.elected_msgs,
            r.max_rss_kib.map(|k| k.to_string()).unwrap_or_else(|| "-".into()),
        );
    }
    println!();
    println!("rt/pp: runtime hop / ping-pong one-hop floor ({one_hop:.1} us; target <= 1.25). rt/relay: against a relay ring of");
    println!(
        "the same size, which pays the same wake-ups of idle processes. elect: first election_start to the last leader"
    );
    println!(
        "event, every node initiating, ids increasing along the ring (best case, 2n-1). worst run: ids decreasing, all"
    );
    println!(
        "initiating (n(n+1)/2). ELECTED: the announcement lap (n). RSS: largest node resident set (target < 4096 KiB)."
    );
    Ok(())
}
