//! `coordlab bench`: the figures of `scripts/bench.sh` — the loopback floor, coordlab's cost
//! per hop, election times and message counts beside the formulas, and memory per node.
//! Benchmarks report; nothing here is a pass/fail test.

mod floor;
mod rings;

pub use floor::{echo_server, floor};
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
    println!("== chang-roberts rings (release build, one process per node, loopback)");
    println!(
        "{:>5}  {:>9}  {:>8}  {:>10}  {:>13}  {:>10}  {:>11}  {:>10}  {:>11}  {:>9}",
        "n",
        "hop (us)",
        "x floor",
        "elect (ms)",
        "ELECTION best",
        "2n-1",
        "ELECTION worst",
        "n(n+1)/2",
        "ELECTED",
        "RSS (KiB)"
    );
    for r in &figs {
        let n = r.n as u64;
        println!(
            "{:>5}  {:>9.1}  {:>8.2}  {:>10.1}  {:>13}  {:>10}  {:>14}  {:>10}  {:>11}  {:>9}",
            r.n,
            r.hop_us,
            r.hop_us / (f.median_us / 2.0),
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
    println!(
        "hop: the initiator's ELECTION sent round the whole ring (one initiator, the highest id), divided by n hops."
    );
    println!(
        "x floor: hop / one-hop floor (target <= 1.25). elect: first election_start to the last node's leader event,"
    );
    println!("every node initiating, ids increasing along the ring (best case). RSS: largest node resident set (target < 4096 KiB).");
    Ok(())
}
