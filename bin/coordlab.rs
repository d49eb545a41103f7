//! The coordlab command line: parse, then call the library.

use clap::{Args, Parser, Subcommand};
use coordlab::algo::Setup;
use coordlab::catalog as registry;
use coordlab::cluster::{self, LaunchOptions, Layout};
use coordlab::error::{usage, write_failed, CliError};
use coordlab::node::config::{check_timing, parse_ids, parse_kv, parse_members, NodeOptions};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// A node's small allocations come from a region of its own once it runs (`node::arena`);
/// every other process of coordlab allocates through the system allocator underneath.
#[global_allocator]
static ALLOC: coordlab::node::arena::NodeArena = coordlab::node::arena::NodeArena;

#[path = "coordlab/launch.rs"]
mod launch;
#[path = "coordlab/process.rs"]
mod process;

use launch::{launch_options, LaunchArgs};
use process::{node_options, resource_options, NodeArgs, ResourceArgs};

#[derive(Parser)]
#[command(
    name = "coordlab",
    version,
    about = "Classic distributed-coordination algorithms, run as real processes",
    after_help = "`coordlab algos` lists every algorithm (--algo), where it runs, and its --set keys."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run one node process (the launcher spawns these; you can too).
    Node(NodeArgs),
    /// Run the shared resource of a mutual-exclusion run (the launcher spawns it as node 0).
    Resource(ResourceArgs),
    /// Spawn N nodes in a ring and keep a console.
    Ring {
        /// How many nodes (at least 2).
        n: usize,
        #[command(flatten)]
        launch: LaunchArgs,
    },
    /// Spawn N nodes on a connected graph and keep a console.
    Mesh {
        /// How many nodes (at least 2).
        n: usize,
        /// complete | ring | bidirectional-ring | grid | random:K | FILE (an edge list); ring and
        /// bidirectional-ring launch exactly what `coordlab ring N` does.
        #[arg(long, default_value = "complete")]
        topology: String,
        #[command(flatten)]
        launch: LaunchArgs,
    },
    /// Chaos soak: a ring (or --topology SPEC) under a random fault every 0.3-1.5 s for
    /// --duration (default 20) seconds, then the checker and the family's criteria; exit 1 when one fails.
    Chaos {
        /// How many nodes (at least 2).
        n: usize,
        /// Run on a mesh of this topology instead of a ring: complete | ring | bidirectional-ring |
        /// grid | random:K | FILE (an edge list).
        #[arg(long, alias = "mesh")]
        topology: Option<String>,
        #[command(flatten)]
        launch: LaunchArgs,
    },
    /// SIGSTOP node ID of the running launch.
    Pause(Target),
    /// SIGCONT node ID of the running launch.
    Resume(Target),
    /// SIGKILL node ID of the running launch.
    Kill(Target),
    /// Start node ID of the running launch again (after a kill).
    Restart(Target),
    /// Who is alive, paused or dead, and whom each node believes leads.
    Status(RunArg),
    /// The last lines of node ID's human log, from the running launch or a finished run.
    Logs {
        /// The node id.
        id: u64,
        /// How many lines.
        #[arg(default_value_t = 10)]
        lines: usize,
        #[command(flatten)]
        run: RunArg,
    },
    /// Stop the running launch cleanly, as `quit` at its console does.
    Quit(RunArg),
    /// Break the running launch's network: net cut A B [--one-way] | partition 1,2 3,4 | heal [A B]
    /// | loss PCT [A B] | delay MS[:JITTER] [A B] | status  [--run DIR].
    Net {
        /// The verb and its arguments, then optionally --run DIR (default logs/latest).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 1..)]
        words: Vec<String>,
    },
    /// (internal) Deletes nftables table TABLE when process PID, its parent, dies.
    #[command(hide = true)]
    NftWatchdog {
        /// The table (family inet).
        table: String,
        /// The launcher's pid.
        parent: i32,
    },
    /// Measure: loopback floor, cost per hop, election times and counts, memory per node, clock sync.
    Bench {
        /// Ring sizes to measure (default 8,64,256; startup: 8,64,256,1024,4096).
        #[arg(long)]
        sizes: Option<String>,
        /// Ping-pong rounds for the loopback floor.
        #[arg(long, default_value_t = 20_000)]
        rounds: usize,
        /// Sections to run: floor, rings (with the floor), elections, mutex, flood, clocks, net, detectors, or all.
        #[arg(long, default_value = "all")]
        only: String,
        /// Seed of the shuffled id arrangements and random graphs.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// detectors: print one JSON object per detector and topology instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// (internal) The echo process of the benchmark's loopback floor.
    #[command(hide = true)]
    BenchEcho {
        /// Address to answer on.
        #[arg(long)]
        listen: String,
    },
    /// (internal) A relay of the benchmark's plain ring floor.
    #[command(hide = true)]
    BenchRelay {
        /// Address to receive on.
        #[arg(long)]
        listen: String,
        /// Address to forward to.
        #[arg(long)]
        next: String,
        /// Wait in a mio poll like a node, not in a blocking receive.
        #[arg(long)]
        poll: bool,
    },
    /// (internal) A bare process of the benchmark's Ricart-Agrawala floor.
    #[command(hide = true)]
    BenchRaFloor {
        /// The launcher's address (a bare process); without it, this is the launcher of --n
        /// processes, and prints the run's ms.
        #[arg(long, requires = "id")]
        launcher: Option<String>,
        /// This process's index among the others.
        #[arg(long, requires = "launcher")]
        id: Option<usize>,
        /// Processes to launch.
        #[arg(long, default_value_t = 20)]
        n: usize,
        /// Entries to make, each.
        #[arg(long)]
        requests: usize,
        /// Wait in a mio poll like a node, not in a blocking receive.
        #[arg(long)]
        poll: bool,
    },
    /// A global state of a run: each node's last event at a time on its own clock, and whether
    /// that cut is consistent.
    Cut {
        /// The run directory.
        #[arg(default_value = "logs/latest")]
        dir: PathBuf,
        /// Every node's last event whose own clock reads at or before MS after the run's start.
        #[arg(long, value_name = "MS", required_unless_present = "at_vc", conflicts_with = "at_vc")]
        at_pt: Option<f64>,
        /// The causal past (vector clocks) of the frontier of --at-pt MS: a consistent cut.
        #[arg(long, value_name = "MS")]
        at_vc: Option<f64>,
    },
    /// The probability P_v that a majority quorum lets two in when coordinators forget grants.
    QuorumRisk {
        /// Coordinators.
        #[arg(long)]
        n: u64,
        /// Quorum size (a majority of n).
        #[arg(long)]
        m: u64,
        /// Probability that a coordinator restarts and forgets its grant.
        #[arg(long)]
        p: f64,
        /// Also estimate it by running the quorum protocol that many times in the simulator (n at most 16).
        #[arg(long)]
        simulate: Option<u64>,
        /// Seed of the simulated runs.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// List every algorithm: family, where it runs, summary, and its --set keys.
    Algos,
    /// Check a run's traces: termination, uniqueness, agreement, storms, false suspicions.
    Check {
        /// The run directory.
        #[arg(default_value = "logs/latest")]
        dir: PathBuf,
        /// Every detail (every term, leadership interval, suspicion, drop reason, bad line).
        #[arg(long)]
        verbose: bool,
    },
    /// Draw a run's space-time diagram: timeline.svg and timeline.html (or timeline.mmd).
    Timeline {
        #[command(flatten)]
        window: WindowArgs,
        /// Write a Mermaid sequenceDiagram (timeline.mmd) instead.
        #[arg(long)]
        mermaid: bool,
        /// The family's own picture beside it: auto (the run's family's), none, mutex, clock, snapshot.
        #[arg(long, default_value = "auto")]
        view: String,
    },
    /// Draw a run's graph with the election's result on it (graph.svg).
    Graph {
        /// The run directory.
        #[arg(default_value = "logs/latest")]
        dir: PathBuf,
    },
    /// Write a run's events with vector clocks as a ShiViz log (shiviz.log).
    Shiviz {
        #[command(flatten)]
        window: WindowArgs,
    },
}

#[derive(Args)]
struct WindowArgs {
    /// The run directory.
    #[arg(default_value = "logs/latest")]
    dir: PathBuf,
    /// Draw from this many milliseconds after the run's start.
    #[arg(long)]
    from: Option<u64>,
    /// Draw up to this many milliseconds after the run's start.
    #[arg(long)]
    to: Option<u64>,
    /// Also draw what is hidden by default: heartbeats.
    #[arg(long)]
    show: Vec<String>,
}

impl WindowArgs {
    fn window(&self) -> Result<coordlab::render::Window, CliError> {
        coordlab::render::Window::new(self.from, self.to, &self.show)
    }
}

#[derive(Args)]
struct Target {
    /// The node id.
    id: u64,
    #[command(flatten)]
    run: RunArg,
}

#[derive(Args)]
struct RunArg {
    /// The run directory of the launch to act on.
    #[arg(long, default_value = "logs/latest")]
    run: PathBuf,
}

/// The help of `--algo`, from the registry.
fn algo_help() -> String {
    format!("The algorithm: {} (`coordlab algos` describes each)", registry::names())
}

/// The help of a launch's `--algo`: the registry's names and the default per topology.
fn launch_algo_help() -> String {
    format!(
        "{} [default: {} on a ring; on a mesh, the first election of `coordlab algos` that runs on \
         its topology: bully on complete, yoyo on grid or random:K]",
        algo_help(),
        registry::DEFAULT_ALGO
    )
}

/// `--set` pairs; a key given twice is refused rather than one value silently winning.
fn parse_set(set: &[String]) -> Result<BTreeMap<String, String>, CliError> {
    let mut out = BTreeMap::new();
    for s in set {
        let (k, v) = parse_kv(s)?;
        if let Some(old) = out.insert(k.clone(), v) {
            return Err(usage(format!("--set {k} is given twice ({k}={old} first)")));
        }
    }
    Ok(out)
}

/// Writes `text` to stdout. A reader that went away (`coordlab algos | head -1`) is not an
/// error; any other failure (`> /dev/full`: no space) is, with exit status 3, never a panic.
fn emit(text: &str) -> Result<(), CliError> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(write_failed(format!("cannot write the output: {e}")))
        }
        _ => Ok(()),
    }
}

/// [`emit`] with a newline.
fn emit_line(line: impl std::fmt::Display) -> Result<(), CliError> {
    emit(&format!("{line}\n"))
}

fn control(run: &std::path::Path, cmd: String) -> Result<i32, CliError> {
    emit_line(cluster::control(run, &cmd)?)?;
    Ok(coordlab::exit::OK)
}

fn run(cli: Cli) -> Result<i32, CliError> {
    match cli.cmd {
        Cmd::Node(a) => {
            coordlab::node::name_node(a.id);
            coordlab::node::logging::init();
            coordlab::node::runtime::run_node(node_options(a)?)?;
            Ok(coordlab::exit::OK)
        }
        Cmd::Resource(a) => {
            coordlab::node::name_node(a.id);
            coordlab::node::logging::init();
            coordlab::node::runtime::run_resource(resource_options(a)?)?;
            Ok(coordlab::exit::OK)
        }
        Cmd::Ring { n, launch } => cluster::launch(launch_options(n, Layout::Ring, launch)?),
        Cmd::Mesh { n, topology, launch } => cluster::launch(launch_options(n, Layout::mesh(&topology), launch)?),
        Cmd::Chaos {
            n,
            topology,
            mut launch,
        } => {
            launch.duration = launch.duration.or(Some(20.0));
            let layout = topology.as_deref().map_or(Layout::Ring, Layout::mesh);
            let mut opts = launch_options(n, layout, launch)?;
            opts.chaos = true;
            cluster::launch(opts)
        }
        Cmd::Pause(t) => control(&t.run.run, format!("pause {}", t.id)),
        Cmd::Resume(t) => control(&t.run.run, format!("resume {}", t.id)),
        Cmd::Kill(t) => control(&t.run.run, format!("kill {}", t.id)),
        Cmd::Restart(t) => control(&t.run.run, format!("restart {}", t.id)),
        Cmd::Status(r) => control(&r.run, "status".into()),
        Cmd::Logs { id, lines, run } => {
            emit_line(cluster::logs(&run.run, id, lines)?)?;
            Ok(coordlab::exit::OK)
        }
        Cmd::Quit(r) => control(&r.run, "quit".into()),
        Cmd::Net { mut words } => {
            let mut run = PathBuf::from("logs/latest");
            if let Some(i) = words.iter().position(|w| w == "--run") {
                let Some(dir) = words.get(i + 1).cloned() else {
                    return Err(usage("--run needs a run directory"));
                };
                run = PathBuf::from(dir);
                words.drain(i..=i + 1);
            }
            control(&run, format!("net {}", words.join(" ")))
        }
        Cmd::NftWatchdog { table, parent } => Ok(coordlab::net::nft::watchdog(&table, parent)),
        Cmd::Bench {
            sizes,
            rounds,
            only,
            seed,
            json,
        } => {
            let given = sizes.is_some();
            let sizes = parse_ids("--sizes", sizes.as_deref().unwrap_or("8,64,256"))?
                .into_iter()
                .map(|n| n as usize)
                .collect::<Vec<_>>();
            if let Some(n) = sizes.iter().find(|&&n| n < 2) {
                return Err(usage(format!("--sizes: a ring needs at least 2 nodes, not {n}")));
            }
            let sections = coordlab::bench::Sections::parse(&only)?;
            coordlab::bench::run(&sizes, rounds, sections, seed)?;
            if sections.startup {
                let startup_sizes = if given {
                    &sizes[..]
                } else {
                    coordlab::bench::STARTUP_SIZES
                };
                coordlab::bench::run_startup(startup_sizes)?;
            }
            if sections.detectors {
                let detector_sizes = if given {
                    &sizes[..]
                } else {
                    coordlab::bench::DETECTOR_SIZES
                };
                coordlab::bench::run_detectors(detector_sizes, seed, json)?;
            }
            Ok(coordlab::exit::OK)
        }
        Cmd::BenchEcho { listen } => {
            coordlab::bench::echo_server(&listen)?;
            Ok(coordlab::exit::OK)
        }
        Cmd::BenchRelay { listen, next, poll } => {
            coordlab::bench::relay(&listen, &next, poll)?;
            Ok(coordlab::exit::OK)
        }
        Cmd::BenchRaFloor {
            launcher,
            id,
            n,
            requests,
            poll,
        } => {
            match (launcher, id) {
                (Some(launcher), Some(id)) => coordlab::bench::ra_floor_node(&launcher, id, requests, poll)?,
                _ => println!("{:.1} ms", coordlab::bench::ra_floor_ms(n, requests, poll)?),
            }
            Ok(coordlab::exit::OK)
        }
        Cmd::Cut { dir, at_pt, at_vc } => {
            use coordlab::check::cut::{report, CutRule};
            let ms = at_pt.or(at_vc).unwrap_or(0.0);
            if !ms.is_finite() || ms < 0.0 {
                return Err(usage(format!(
                    "--at-pt/--at-vc: {ms} is not a time in ms after the run's start"
                )));
            }
            let us = (ms * 1000.0) as u64;
            let rule = if at_vc.is_some() {
                CutRule::Vc(us)
            } else {
                CutRule::Pt(us)
            };
            let run = coordlab::trace::RunDir::load(&dir).map_err(|e| usage(e.to_string()))?;
            emit(&report(&run, rule).map_err(usage)?)?;
            Ok(coordlab::exit::OK)
        }
        Cmd::QuorumRisk {
            n,
            m,
            p,
            simulate,
            seed,
        } => {
            use coordlab::tools::risk;
            risk::check(n, m, p).map_err(usage)?;
            let l = risk::log10_violation(n, m, p);
            emit_line(format!(
                "P_v = {} (n = {n} coordinators, quorum m = {m}, P = {p}; log10 P_v = {l:.3})",
                risk::format_log10(l)
            ))?;
            if let Some(runs) = simulate {
                if runs == 0 {
                    return Err(usage("--simulate: at least 1 run"));
                }
                let hits = coordlab::tools::risk_sim::simulate(n, m, p, runs, seed).map_err(usage)?;
                emit_line(format!(
                    "simulated: two holders at once in {hits} of {runs} runs = {:.6} (formula {})",
                    hits as f64 / runs as f64,
                    risk::format_log10(l)
                ))?;
                emit_line(format!("  {}", coordlab::tools::risk_sim::assumptions(n, m)))?;
            }
            Ok(coordlab::exit::OK)
        }
        Cmd::Timeline { window, mermaid, view } => {
            for f in coordlab::render::timeline(&window.dir, &window.window()?, mermaid, &view)? {
                emit_line(format!("wrote {}", f.display()))?;
            }
            Ok(coordlab::exit::OK)
        }
        Cmd::Graph { dir } => {
            emit_line(format!("wrote {}", coordlab::render::graph(&dir)?.display()))?;
            Ok(coordlab::exit::OK)
        }
        Cmd::Shiviz { window } => {
            let f = coordlab::render::shiviz(&window.dir, &window.window()?)?;
            emit_line(format!(
                "wrote {} (open it at https://distributedclocks.github.io/shiviz/)",
                f.display()
            ))?;
            Ok(coordlab::exit::OK)
        }
        Cmd::Algos => {
            emit(&registry::listing())?;
            Ok(coordlab::exit::OK)
        }
        Cmd::Check { dir, verbose } => {
            let report = coordlab::check::check(&dir)?;
            let text = if verbose { &report.full } else { &report.text };
            emit(text)?;
            Ok(coordlab::exit::of_verdict(report.violated))
        }
    }
}

fn main() {
    // The bench and the launcher print with println!, which panics (and, with panic = "abort",
    // kills the process with SIGABRT) when stdout cannot be written: that is a write failure
    // (exit status 3), said in one line, not a crash.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let what = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if what.starts_with("failed printing to stdout") {
            let _ = std::io::Write::write_fmt(
                &mut std::io::stderr(),
                format_args!("coordlab: cannot write the output: {what}\n"),
            );
            std::process::exit(coordlab::error::WRITE_FAILED);
        }
        default_hook(info);
    }));
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            // Not eprintln!: a stderr that cannot be written must not turn an error into a panic.
            let _ = std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("coordlab: {e}\n"));
            std::process::exit(e.exit_code());
        }
    }
}
