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

#[derive(Args)]
struct LaunchArgs {
    #[arg(long, help = launch_algo_help())]
    algo: Option<String>,
    /// The ids around the ring, in ring order (default 1..N).
    #[arg(long)]
    ids: Option<String>,
    /// Who starts the first election: ids (2,5), all, or none.
    #[arg(long, default_value = "all")]
    initiators: String,
    /// Heartbeat period in milliseconds [default: 100, times ceil((N-1)/200) above 201 nodes, so that
    /// the leader sends at most 2,000 heartbeats a second].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    heartbeat_ms: Option<u64>,
    /// Failure-detector timeout in milliseconds [default: 300, times ceil((N-1)/200) above 201 nodes].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    timeout_ms: Option<u64>,
    /// First UDP port; the node at ring position k (from 1) gets base+k-1 (0: any free ports).
    #[arg(long, default_value_t = 0)]
    base_port: u16,
    /// Run this many seconds, then stop cleanly.
    #[arg(long)]
    duration: Option<f64>,
    /// Stop cleanly as soon as the condition holds: done (the family's goal; elected for elections).
    #[arg(long)]
    until: Option<String>,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where run directories are written.
    #[arg(long, default_value = "logs")]
    logs: PathBuf,
    /// The run's key file (32 bytes, mode 0600), for a cluster spread over hosts; default: a
    /// fresh random key written to the run directory.
    #[arg(long)]
    key: Option<PathBuf>,
    /// Run a scripted story without a human: false-suspicion, split-brain, snapshot, regrant,
    /// quorum-amnesia, link-cut (`mesh 10`: groups 1-4 and 5-10, each fully linked, joined only
    /// by the link 2-10; echo elects, 2-10 is cut, each side elects, heal) or partition (central:
    /// the coordinator cut off from the holder regrants it).
    #[arg(long)]
    demo: Option<String>,
    /// An option of the algorithm passed to every node (KEY=VALUE; repeatable; `coordlab algos`
    /// lists each algorithm's keys).
    #[arg(long = "set")]
    set: Vec<String>,
    /// Same as --set stable=true (bully: a recovered node follows a live leader).
    #[arg(long)]
    stable: bool,
    /// Same as --set majority=true (elections: votes of a weighted majority, check-quorum, pre-vote).
    #[arg(long)]
    majority: bool,
    /// Same as --set pick=... (ring-list: the winner is the max or min id of the list).
    #[arg(long)]
    pick: Option<String>,
    /// Same as --set weights=ID:W,... (node weights under majority; echo's capabilities).
    #[arg(long)]
    weights: Option<String>,
    /// Nodes whose physical clocks start off true time: ID:MS,ID:MS,... (negative: behind).
    #[arg(long, allow_hyphen_values = true)]
    clock_offset_ms: Option<String>,
    /// Nodes whose physical clocks run fast (positive) or slow: ID:PPM,ID:PPM,...
    #[arg(long, allow_hyphen_values = true)]
    clock_drift_ppm: Option<String>,
    /// Every clock off by up to MAXMS and drifting by up to MAXPPM, at random from the seed:
    /// random:MAXMS,MAXPPM.
    #[arg(long)]
    clock_skew: Option<String>,
    /// Mutual exclusion: mean think time between requests, ms; same as --set think_ms=...
    #[arg(long)]
    think_ms: Option<u64>,
    /// Mutual exclusion: how long a node holds the resource, ms; same as --set hold_ms=...
    #[arg(long)]
    hold_ms: Option<u64>,
    /// Mutual exclusion: requests per node; same as --set requests=...
    #[arg(long)]
    requests: Option<u64>,
    /// Mutual exclusion: the resource rejects stale fencing tokens; same as --set fencing=true.
    #[arg(long)]
    fencing: bool,
    /// Quorum, Maekawa: coordinators persist their grants (fsync before answering); same as --set durable=true.
    #[arg(long)]
    durable: bool,
    /// The console prints only agreement and faults, not the running story.
    #[arg(long)]
    quiet: bool,
    /// Who enforces network faults: kernel (nftables, root only) or user (the nodes' receive
    /// filter) [default: kernel when root and nftables works, else user].
    #[arg(long)]
    net: Option<String>,
    /// A fault schedule FILE: one action a line, SECONDS VERB ARGS (`1.5 pause 8`,
    /// `3.0 net cut 2 10`, `6 net heal`).
    #[arg(long)]
    faults: Option<String>,
}

#[derive(Args)]
struct ResourceArgs {
    /// The resource's node id.
    #[arg(long, default_value_t = 0)]
    id: u64,
    #[command(flatten)]
    process: ProcessArgs,
}

#[derive(Args)]
struct NodeArgs {
    /// This node's id.
    #[arg(long)]
    id: u64,
    /// The ids this node may talk to (default: its ring predecessor and successor).
    #[arg(long)]
    neighbours: Option<String>,
    /// Start the first election at once.
    #[arg(long)]
    initiator: bool,
    /// This node ran before in this run (the launcher says so when it restarts a node).
    #[arg(long)]
    restarted: bool,
    #[arg(long, default_value = registry::DEFAULT_ALGO, help = algo_help())]
    algo: String,
    /// Heartbeat period in milliseconds.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    heartbeat_ms: u64,
    /// Failure-detector timeout in milliseconds.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..))]
    timeout_ms: u64,
    /// Seed of this node's random choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// This node's physical clock offset from true time, microseconds.
    #[arg(long, default_value_t = 0, allow_hyphen_values = true)]
    clock_offset_us: i64,
    /// This node's physical clock drift, parts per million.
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    clock_drift_ppm: f64,
    #[command(flatten)]
    process: ProcessArgs,
}

/// What a node and the resource are both told: where they are, who the others are, where to
/// write, the run's options and key, and what the launcher hands down.
#[derive(Args)]
struct ProcessArgs {
    /// The UDP address to bind.
    #[arg(long)]
    listen: std::net::SocketAddr,
    /// Every member as ID=ADDR, comma-separated, in ring order (this process included).
    #[arg(long)]
    members: String,
    /// Directory for this process's trace, node-<id>.jsonl or resource.jsonl (no machine trace
    /// without it).
    #[arg(long)]
    log_dir: Option<PathBuf>,
    /// An option of the run (KEY=VALUE; repeatable; `coordlab algos` lists the algorithms'
    /// keys; the resource reads fencing=true|false).
    #[arg(long = "set")]
    set: Vec<String>,
    /// The run's key file (32 bytes, mode 0600; the launcher writes logs/<run>/key).
    #[arg(long)]
    key: Option<PathBuf>,
    #[command(flatten)]
    inherited: Inherited,
}

/// The members as `--members` gives them: (id, address) pairs.
type Members = Vec<(u64, std::net::SocketAddr)>;

impl ProcessArgs {
    /// The members as (id, address) pairs, and their ids in order.
    fn members(&self) -> Result<(Members, Vec<u64>), CliError> {
        let members = parse_members(&self.members)?;
        let ids = members.iter().map(|m| m.0).collect();
        Ok((members, ids))
    }

    /// The process's options around `setup`, running `algo`.
    fn options(self, mut setup: Setup, algo: String, members: Members) -> Result<NodeOptions, CliError> {
        setup.opts = parse_set(&self.set)?;
        Ok(NodeOptions {
            setup,
            algo,
            listen: self.listen,
            addrs: members.into_iter().collect(),
            log_dir: self.log_dir,
            fd: self.inherited.fd,
            parent_pid: self.inherited.parent_pid,
            go_fd: self.inherited.go_fd,
            ready_fd: self.inherited.ready_fd,
            key_file: self.key,
        })
    }
}

/// What a node or the resource inherits from the launcher that spawned it.
#[derive(Args)]
struct Inherited {
    /// Use this inherited descriptor, a UDP socket bound to --listen, instead of binding
    /// (the launcher binds every node's socket itself and passes it down).
    #[arg(long)]
    fd: Option<i32>,
    /// The read end of the launcher's go pipe: the node's algorithm and its clock (its timers)
    /// start when it reads end-of-file, once every node of the launch has warmed up.
    #[arg(long)]
    go_fd: Option<i32>,
    /// The write end of the launcher's ready pipe: the node closes it once it has warmed up.
    #[arg(long)]
    ready_fd: Option<i32>,
    /// Die with this process (the launcher): the node sets its parent-death signal and checks
    /// that its parent is still this pid.
    #[arg(long)]
    parent_pid: Option<i32>,
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

fn node_options(a: NodeArgs) -> Result<NodeOptions, CliError> {
    let (members, ids) = a.process.members()?;
    check_timing(a.heartbeat_ms, a.timeout_ms)?;

    let i = ids
        .iter()
        .position(|&x| x == a.id)
        .ok_or_else(|| usage(format!("--id {} is not in --members", a.id)))?;
    let neighbours = match &a.neighbours {
        Some(s) => {
            let nb = parse_ids("--neighbours", s)?;
            if let Some(x) = nb.iter().find(|x| !ids.contains(x)) {
                return Err(usage(format!("--neighbours: node {x} is not in --members")));
            }
            nb
        }
        None => {
            let n = ids.len();
            let mut nb = vec![ids[(i + n - 1) % n], ids[(i + 1) % n]];
            nb.dedup();
            nb.retain(|&x| x != a.id);
            nb
        }
    };
    let mut setup = Setup::new(a.id, ids, neighbours);
    setup.initiator = a.initiator;
    setup.restarted = a.restarted;
    setup.heartbeat = Duration::from_millis(a.heartbeat_ms);
    setup.timeout = Duration::from_millis(a.timeout_ms);
    setup.seed = a.seed;
    if !a.clock_drift_ppm.is_finite() || a.clock_drift_ppm.abs() >= 100_000.0 {
        return Err(usage(format!(
            "--clock-drift-ppm {}: expected a rate below 100000 ppm either way",
            a.clock_drift_ppm
        )));
    }
    setup.clock = coordlab::clock::ClockSpec {
        offset_us: a.clock_offset_us,
        drift_ppm: a.clock_drift_ppm,
    };
    a.process.options(setup, a.algo, members)
}

fn resource_options(a: ResourceArgs) -> Result<NodeOptions, CliError> {
    let (members, ids) = a.process.members()?;
    if !ids.contains(&a.id) {
        return Err(usage(format!("--id {} is not in --members", a.id)));
    }
    let others = ids.iter().copied().filter(|&x| x != a.id).collect();
    let setup = Setup::new(a.id, ids, others);
    a.process
        .options(setup, coordlab::node::runtime::RESOURCE_ALGO.into(), members)
}

fn launch_options(n: usize, topology: Layout, a: LaunchArgs) -> Result<LaunchOptions, CliError> {
    let ids = a.ids.as_deref().map(|s| parse_ids("--ids", s)).transpose()?;
    let timing = cluster::timing::resolve(n, a.heartbeat_ms, a.timeout_ms)?;
    let mut set = launch_set(&a.set, &a)?;
    let snapshot_demo = a.demo.as_deref() == Some("snapshot");
    let mut clock_skew = a.clock_skew;
    if snapshot_demo {
        // The story needs both kinds of snapshot on clocks that disagree.
        set.entry("snapshot".into()).or_insert_with(|| "both".into());
        if clock_skew.is_none() && a.clock_offset_ms.is_none() && a.clock_drift_ppm.is_none() {
            clock_skew = Some("random:200,100".into());
        }
    }
    // A story runs the algorithm whose registry entry names it, when no other was named.
    let algo = match a.algo {
        Some(algo) => algo,
        None => match a.demo.as_deref().and_then(registry::demo_default) {
            Some(e) => e.name.to_string(),
            None => cluster::plan::default_algo(&topology, n, ids.as_deref(), a.seed),
        },
    };
    Ok(LaunchOptions {
        n,
        topology,
        algo,
        ids,
        initiators: a.initiators,
        heartbeat_ms: timing.heartbeat_ms,
        timeout_ms: timing.timeout_ms,
        timing_note: timing.note(n),
        base_port: a.base_port,
        duration: a.duration,
        until: a.until,
        seed: a.seed,
        logs: a.logs,
        demo: a.demo,
        key: a.key,
        set,
        quiet: a.quiet,
        chaos: false,
        clock_offset_ms: a.clock_offset_ms,
        clock_drift_ppm: a.clock_drift_ppm,
        clock_skew,
        net: a.net,
        faults: a.faults.as_deref().map(cluster::schedule::FaultsArg::parse),
    })
}

/// `--set` values plus the named option flags, refusing a flag that contradicts a `--set`.
fn launch_set(set: &[String], a: &LaunchArgs) -> Result<BTreeMap<String, String>, CliError> {
    let mut out = parse_set(set)?;
    let num = |v: Option<u64>| v.map(|x| x.to_string());
    let flags = [
        ("stable", a.stable.then(|| "true".to_string())),
        ("majority", a.majority.then(|| "true".to_string())),
        ("pick", a.pick.clone()),
        ("weights", a.weights.clone()),
        ("think_ms", num(a.think_ms)),
        ("hold_ms", num(a.hold_ms)),
        ("requests", num(a.requests)),
        ("fencing", a.fencing.then(|| "true".to_string())),
        ("durable", a.durable.then(|| "true".to_string())),
    ];
    for (key, value) in flags {
        let Some(value) = value else { continue };
        match out.get(key) {
            Some(v) if *v != value => {
                return Err(usage(format!("--{key} contradicts --set {key}={v}")));
            }
            _ => {
                out.insert(key.to_string(), value);
            }
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
