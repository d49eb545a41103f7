//! `coordlab bench`: the figures of `scripts/bench.sh` — the loopback floor, coordlab's cost
//! per hop, election times and message counts beside the formulas, and memory per node.
//! Benchmarks report; nothing here is a pass/fail test.

mod bully_best;
pub mod cases;
mod claims;
mod clock;
mod detector_confirms;
mod detector_figures;
pub mod detectors;
mod distalgo;
mod election_plots;
mod elections;
mod flood;
mod floor;
mod formulas;
mod launch;
mod memory;
mod mutex;
pub mod mutex_formulas;
mod net;
mod plot;
mod ra_floor;
mod readings;
mod rings;
mod startup;
mod table;

pub use cases::Case;
pub use claims::Claim;
#[cfg(test)]
pub(crate) use claims::Count;
pub use detectors::{run_detectors, DETECTOR_SIZES};
pub(crate) use elections::run_elections;
pub use floor::{echo_server, floor, relay};
pub(crate) use mutex::{run_mutex, run_side_by_side};
pub use ra_floor::{ra_floor_ms, ra_floor_node};
pub(crate) use rings::run_rings;
pub use startup::{run_startup, DEFAULT_SIZES as STARTUP_SIZES};

use crate::error::{usage, CliError};

/// The kind of build measured: the figures of a debug build are not coordlab's.
const BUILD: &str = if cfg!(debug_assertions) {
    "debug build"
} else {
    "release build"
};

/// Which parts of the benchmark to run (`--only`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sections {
    /// The loopback ping-pong floor.
    pub floor: bool,
    /// Chang-Roberts rings: cost per hop against the floor and a relay ring, memory per node.
    pub rings: bool,
    /// Every election algorithm's time and message counts beside the formulas.
    pub elections: bool,
    /// Every mutual-exclusion algorithm under full contention at n = 5, 20, 64.
    pub mutex: bool,
    /// A junk flood at a ring's leader and what it cost.
    pub flood: bool,
    /// Start-up: launch to exit, first hops, start-up and election time per n, with a plot.
    pub startup: bool,
    /// Cristian and Berkeley on skewed clocks.
    pub clocks: bool,
    /// The network faults: the user filter per datagram, a kernel partition of 4,096 nodes.
    pub net: bool,
    /// The failure detectors side by side on one fault schedule (run apart: [`run_detectors`]).
    pub detectors: bool,
}

impl Sections {
    /// Everything.
    pub(crate) const ALL: Sections = Sections {
        floor: true,
        rings: true,
        elections: true,
        mutex: true,
        flood: true,
        startup: true,
        clocks: true,
        net: true,
        detectors: true,
    };

    /// Parses `floor,rings,elections` (any of them, or `all`).
    pub fn parse(s: &str) -> Result<Self, CliError> {
        let none = Sections {
            floor: false,
            rings: false,
            elections: false,
            mutex: false,
            flood: false,
            startup: false,
            clocks: false,
            net: false,
            detectors: false,
        };
        let mut out = none;
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match part {
                "all" => out = Sections::ALL,
                "floor" => out.floor = true,
                "rings" => out.rings = true,
                "elections" => out.elections = true,
                "mutex" => out.mutex = true,
                "flood" => out.flood = true,
                "startup" => out.startup = true,
                "clocks" => out.clocks = true,
                "net" => out.net = true,
                "detectors" => out.detectors = true,
                other => {
                    return Err(usage(format!(
                    "--only: '{other}' is not a section (floor, rings, elections, mutex, flood, startup, clocks, net, detectors, all)"
                )))
                }
            }
        }
        if out == none {
            return Err(usage(
                "--only: name at least one section (floor, rings, elections, mutex, flood, startup, clocks, net, detectors, all)",
            ));
        }
        Ok(out)
    }
}

/// Runs the chosen benchmarks and prints their tables. The rings table is read against the
/// floor, so `rings` measures the floor too. (`startup` runs apart: [`run_startup`].)
pub fn run(sizes: &[usize], rounds: usize, sections: Sections, seed: u64) -> Result<(), CliError> {
    if sizes.is_empty() {
        return Err(usage("--sizes: name at least one size, e.g. 8,64,256"));
    }
    if sections.floor || sections.rings {
        rings_and_floor(sizes, rounds, sections.rings)?;
    }
    if sections.mutex {
        let f = floor(rounds.min(5000))?;
        let hop = f.median_us / 2.0;
        println!("== mutual exclusion ({BUILD}, one process per node plus the resource, loopback; full contention:");
        println!("   --think-ms 0 --hold-ms 0 --requests 20 (10 at n = 64) --until done)");
        run_mutex(hop)?;
        println!();
        println!("entries/s: entries / (first cs_request to last cs_exit). sync us: median from an exit to the next");
        println!("entry; sync/hop: against the one-hop floor ({hop:.1} us, half a plain UDP ping-pong). msgs/entry:");
        println!("protocol messages from the stop counters (BEGIN/END to the resource left out) / entries. central:");
        println!("the coordinator's own entries cost nothing. quorum/maekawa: FAILED/INQUIRE/RELINQUISH and retries");
        println!("come on top of 3 per voter under contention. viol: violations the resource saw (must be 0).");
        println!();
        println!(
            "== side by side with DistAlgo: launch to exit, median of 3 (one run at n = 64), full contention as above"
        );
        run_side_by_side()?;
        println!();
        println!("coordlab: `coordlab mesh N --topology complete --algo ALGO --requests K --think-ms 0 --hold-ms 0");
        println!("--until done`, its check at the end included. DistAlgo: `scripts/distalgo.sh EXAMPLE N K`, its own");
        println!("examples (Python 3.7, interpreter start-up included). floor: the message pattern alone, n bare");
        println!(
            "processes sending what Ricart-Agrawala sends (replies and the next request in one datagram, a step's"
        );
        println!(
            "datagrams in one sendmmsg) with no trace, MAC, vector clock, event loop, resource or check, timed from"
        );
        println!("the go to the last entry (start-up and exit left out): the kernel's price for the pattern on this");
        println!("machine. All vary from run to run and with the load.");
        println!();
    }
    if sections.elections {
        println!("== elections ({BUILD}, one process per node, loopback; --timeout-ms 2000 --heartbeat-ms 500,");
        println!("   --until elected; counts from the nodes' stop counters, protocol messages only)");
        run_elections(sizes, seed, rounds)?;
        println!();
        println!("{}", table::NOTES);
    }
    if sections.clocks {
        println!();
        println!("== clock sync ({BUILD}, one process per node, loopback, complete mesh, --clock-skew random:200,100)");
        clock::run_clocks(sizes, seed)?;
    }
    if sections.flood {
        flood::print_flood(BUILD)?;
    }
    if sections.net {
        println!();
        println!("== network faults ({BUILD})");
        net::run_net(rounds.min(5000))?;
    }
    Ok(())
}

fn rings_and_floor(sizes: &[usize], rounds: usize, with_rings: bool) -> Result<(), CliError> {
    let f = floor(rounds)?;
    println!("== loopback floor: plain UDP ping-pong between two processes ({rounds} rounds)");
    println!(
        "round trip: median {:.1} us, p99 {:.1} us; one-hop floor (half) {:.1} us",
        f.median_us,
        f.p99_us,
        f.median_us / 2.0
    );
    println!();
    if !with_rings {
        return Ok(());
    }
    let figs = run_rings(sizes)?;
    let one_hop = f.median_us / 2.0;
    println!("== chang-roberts rings ({BUILD}, one process per node, loopback)");
    println!(
        "per hop, microseconds: chang-roberts cold (ELECTION lap / n; cold med: the lap's median hop, each a node's first"
    );
    println!("message, and med/relay against the relay ring) and warm (ELECTED lap / n); the runtime in steady state");
    println!("(ring-probe token, median of 190 laps); a plain UDP relay ring of n processes (median of 190 laps)");
    println!(
        "{:>5}  {:>6}  {:>8}  {:>10}  {:>6}  {:>7}  {:>7}  {:>8}  {:>9}  {:>10}  {:>9}  {:>6}  {:>10}  {:>10}  {:>7}  {:>9}",
        "n",
        "cold",
        "cold med",
        "med/relay",
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
        "PSS/priv KiB"
    );
    for r in &figs {
        let n = r.n as u64;
        println!(
            "{:>5}  {:>6.1}  {:>8.1}  {:>10.2}  {:>6.1}  {:>7.1}  {:>7.1}  {:>8.2}  {:>9.2}  {:>10.1}  {:>9}  {:>6}  {:>10}  {:>10}  {:>7}  {:>9}",
            r.n,
            r.hop_cold_us,
            r.hop_cold_median_us,
            r.hop_cold_median_us / r.relay_floor_us,
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
            memory::Memory::cell(r.memory),
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
        "initiating (n(n+1)/2). ELECTED: the announcement lap (n). PSS/priv: the largest node's proportional set size"
    );
    println!(
        "(shared pages divided among the processes sharing them) and private memory, KiB, of up to 64 nodes sampled."
    );
    println!(
        "cold includes the lap's first hops, which wait for nodes still starting after the go; cold med leaves them out."
    );
    println!();
    Ok(())
}
