//! Checks a launch's options before anything starts and turns them into a plan: which node
//! runs where, who it talks to, who starts, what every node is told, and what the run is for.
//!
//! Every check a node would make at its start is made here first, for every node, on the same
//! [`Setup`] the node will build: a bad option is refused up front (exit 2), not found later
//! in a node's log.

use super::{LaunchOptions, Layout};
use crate::algo::Setup;
use crate::catalog::{self as registry, SetBy};
use crate::error::{usage, CliError};
use crate::node::config::parse_ids;
use crate::topology;
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

/// The option that tells a node it runs on a mesh (the election wrapper then floods leader
/// heartbeats over its neighbours): set by the launcher, never by the user, for the
/// algorithms whose registry entry takes it.
pub(crate) const MESH_KEY: &str = "mesh";

/// One node as it will be launched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodePlan {
    /// Its id.
    pub id: u64,
    /// Its UDP address.
    pub addr: SocketAddr,
    /// Whom it may talk to: its ring predecessor and successor, or its mesh neighbours.
    pub neighbours: Vec<u64>,
    /// Whether it starts the first election.
    pub initiator: bool,
}

/// The scripted stories `--demo` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DemoKind {
    /// Pause the leader, let the others elect, resume it, watch it step down.
    FalseSuspicion,
    /// Pause the leader, let a new one win, resume the old one: two leaders at once, then one.
    SplitBrain,
}

/// `--demo` names and their stories.
const DEMOS: &[(&str, DemoKind)] = &[
    ("false-suspicion", DemoKind::FalseSuspicion),
    ("split-brain", DemoKind::SplitBrain),
];

/// `--demo snapshot`: a bank on skewed clocks, Chandy-Lamport snapshots right, clock ones wrong
/// (told by `snapshot_demo`, not by the election stories' runner).
pub(crate) const SNAPSHOT_DEMO: &str = "snapshot";

/// The mutual-exclusion stories `--demo` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MutexDemo {
    /// central with `regrant_ms`: pause a holder past the timeout; the coordinator grants the
    /// next, and the resource sees two holders (or, with `--fencing`, rejects the stale one).
    Regrant,
    /// quorum on 3 nodes with m = 2: restart the coordinators in the intersection of a holder's
    /// quorum and a waiter's; they forget their grants and let another in (not with `--durable`).
    QuorumAmnesia,
}

/// `--set` options a story sets unless the user did.
type Defaults = &'static [(&'static str, &'static str)];

/// Mutual-exclusion `--demo` names, their stories, the algorithm they need, and the options
/// they set unless the user set them.
const MUTEX_DEMOS: &[(&str, MutexDemo, &str, Defaults)] = &[
    (
        "regrant",
        MutexDemo::Regrant,
        registry::CENTRAL.name,
        &[("regrant_ms", "300"), ("hold_ms", "150"), ("think_ms", "100")],
    ),
    (
        "quorum-amnesia",
        MutexDemo::QuorumAmnesia,
        registry::QUORUM.name,
        &[("quorum", "2"), ("hold_ms", "1000"), ("think_ms", "0")],
    ),
];

/// A checked launch.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The nodes in ring order (`--ids` order).
    pub nodes: Vec<NodePlan>,
    /// The topology as `run.json` names it (`ring`, `mesh:grid`).
    pub topology: String,
    /// The `--set` options every node gets (the user's, plus `mesh=true` on a mesh).
    pub set: BTreeMap<String, String>,
    /// `--until done` (or its election spelling `--until elected`): end when the family's goal holds.
    pub until_elected: bool,
    /// `--duration`.
    pub duration: Option<Duration>,
    /// `--demo`.
    pub demo: Option<DemoKind>,
    /// `--demo snapshot`.
    pub snapshot_demo: bool,
    /// Every node's physical clock (`--clock-offset-ms`, `--clock-drift-ppm`, `--clock-skew`).
    pub clocks: BTreeMap<u64, crate::clock::ClockSpec>,
    /// `--until done` (mutual exclusion: every request served).
    pub until_done: bool,
    /// A mutual-exclusion `--demo`.
    pub mutex_demo: Option<MutexDemo>,
    /// `coordlab chaos`: the seed of its faults.
    pub chaos: Option<u64>,
    /// A network `--demo` (`link-cut`, `partition`).
    pub net_demo: Option<super::net_demo::NetDemo>,
    /// `--demo slow-vs-dead`.
    pub slow_vs_dead: bool,
    /// `coordlab chaos --faults process|network|all`: what the soak draws (default all).
    pub chaos_faults: super::schedule::FaultKinds,
}

impl Plan {
    /// The setup node `node` will build from its command line (see `bin/coordlab.rs`).
    pub fn setup(&self, opts: &LaunchOptions, node: &NodePlan) -> Setup {
        let ids: Vec<u64> = self.nodes.iter().map(|n| n.id).collect();
        let mut s = Setup::new(node.id, ids, node.neighbours.clone());
        s.initiator = node.initiator;
        s.heartbeat = Duration::from_millis(opts.heartbeat_ms);
        s.timeout = Duration::from_millis(opts.timeout_ms);
        s.seed = opts.seed;
        s.opts = self.set.clone();
        s.clock = self.clocks.get(&node.id).copied().unwrap_or_default();
        s
    }
}

/// Checks `opts` (every problem is one line naming it) and plans the ring or mesh.
pub fn plan(opts: &LaunchOptions) -> Result<Plan, CliError> {
    let n = opts.n;
    let noun = opts.topology.noun();
    if n < 2 {
        return Err(usage(format!("a {noun} needs at least 2 nodes (got {n})")));
    }
    crate::node::config::check_timing(opts.heartbeat_ms, opts.timeout_ms)?;
    if let Some(path) = &opts.key {
        crate::node::keyfile::load(path).map_err(usage)?;
    }
    let ids = launch_ids(n, opts.ids.as_deref(), noun)?;
    let entry = registry::lookup(&opts.algo).map_err(usage)?;
    if let Some(k) = opts
        .set
        .keys()
        .find_map(|k| entry.key(k).filter(|k| k.set_by == SetBy::Launcher))
    {
        return Err(usage(format!(
            "--set {}: the launcher sets this itself (coordlab mesh sets it, coordlab ring does not)",
            k.name
        )));
    }
    let mut set = opts.set.clone();
    let net_demo = super::net_demo::NetDemo::named(opts.demo.as_deref());
    let mesh_spec = match &opts.topology {
        Layout::Ring => None,
        Layout::Mesh(spec) => Some(spec.as_str()),
    };
    let demo_graph = match net_demo {
        Some(d) => d.prepare(&opts.algo, mesh_spec, &ids, &mut set).map_err(usage)?,
        None => None,
    };
    let graph = match (&opts.topology, &demo_graph) {
        (Layout::Ring, _) => None,
        (Layout::Mesh(_), Some((label, g))) => Some((label.as_str(), g.clone())),
        (Layout::Mesh(spec), None) => Some((spec.as_str(), topology::build(spec, &ids, opts.seed).map_err(usage)?)),
    };
    entry
        .runs_on
        .check(&opts.algo, graph.as_ref().map(|(s, g)| (*s, g)))
        .map_err(usage)?;
    let initiators = initiators(&opts.initiators, &ids, noun)?;
    let mutex = crate::catalog::is_mutex(&opts.algo);
    let (until_elected, until_done) = match opts.until.as_deref() {
        None => (false, false),
        Some("elected") if mutex => {
            return Err(usage(format!(
                "--until elected: {} elects no leader (use --until done)",
                opts.algo
            )))
        }
        Some("elected") if entry.family.name == registry::ELECTION.name => (true, false),
        Some("elected") => {
            return Err(usage(format!(
                "--until elected: {} is not an election; use --until done",
                opts.algo
            )))
        }
        Some("done")
            if entry.family.name == registry::SNAPSHOT.name && super::progress::snapshot_methods(&set).is_empty() =>
        {
            return Err(usage(format!(
                "--until done waits for the requested snapshots, and {} takes none by default: add --set \
                 snapshot=chandy-lamport|clock|both",
                opts.algo
            )))
        }
        // Every other family's goal: the launcher follows its progress (see cluster::progress).
        Some("done") if !mutex => (true, false),
        Some("done") if set.get("requests").is_none_or(|k| k.trim() == "0") => {
            return Err(usage("--until done needs --requests K (else the requests never end)"))
        }
        Some("done") => (false, true),
        Some(other) => {
            return Err(usage(format!(
                "--until: unknown condition '{other}' (known: done, and elected for elections)"
            )))
        }
    };
    let snapshot_demo = opts.demo.as_deref() == Some(SNAPSHOT_DEMO);
    if mutex && ids.contains(&crate::algo::mutex::RESOURCE_ID) {
        return Err(usage(format!(
            "--ids: id {} is the shared resource's; give the nodes other ids",
            crate::algo::mutex::RESOURCE_ID
        )));
    }
    let mutex_demo = match opts.demo.as_deref().and_then(|d| MUTEX_DEMOS.iter().find(|m| m.0 == d)) {
        Some((name, _, algo, _)) if *algo != opts.algo => {
            return Err(usage(format!(
                "--demo {name} is a story of --algo {algo}, not {}",
                opts.algo
            )));
        }
        Some((_, kind, _, defaults)) => {
            for (k, v) in defaults.iter() {
                set.entry(k.to_string()).or_insert_with(|| v.to_string());
            }
            Some(*kind)
        }
        None => None,
    };
    let slow_vs_dead = opts.demo.as_deref() == Some(super::slow_vs_dead::SLOW_VS_DEAD);
    let demo = match opts.demo.as_deref() {
        _ if mutex_demo.is_some() || net_demo.is_some() || slow_vs_dead => None,
        None => None,
        Some(SNAPSHOT_DEMO) => None,
        Some(name) => match DEMOS.iter().find(|(d, _)| *d == name) {
            Some(&(_, kind)) => Some(kind),
            None => {
                let mut known: Vec<&str> = DEMOS.iter().map(|(d, _)| *d).collect();
                known.push(SNAPSHOT_DEMO);
                known.extend(MUTEX_DEMOS.iter().map(|m| m.0));
                known.extend([
                    super::net_demo::LINK_CUT,
                    super::net_demo::PARTITION,
                    super::slow_vs_dead::SLOW_VS_DEAD,
                ]);
                return Err(usage(format!(
                    "--demo: unknown story '{name}' (known: {})",
                    known.join(", ")
                )));
            }
        },
    };
    let duration = match opts.duration {
        None => None,
        Some(s) if s.is_finite() && s > 0.0 && s < 1e9 => Some(Duration::from_secs_f64(s)),
        Some(s) => return Err(usage(format!("--duration: {s} is not a positive number of seconds"))),
    };
    // Central hosts the detector only when asked for one (src/algo/mutex/central_detector.rs).
    let central_detector = entry.name == "central" && set.contains_key("detector");
    if slow_vs_dead
        && !central_detector
        && (entry.key("detector").is_none() || entry.family.name != registry::ELECTION.name)
    {
        return Err(usage(format!(
            "--demo {} tells its story with an election that hosts the failure detector (--set detector=...), or \
             central with --set detector=fixed|phi|swim, and {} does not",
            super::slow_vs_dead::SLOW_VS_DEAD,
            entry.name
        )));
    }
    if slow_vs_dead && n < super::slow_vs_dead::MIN_NODES {
        return Err(usage(format!(
            "--demo {} needs at least {} nodes (a leader, a lossy link's two ends, a paused, a starved and a killed \
             node), not {n}",
            super::slow_vs_dead::SLOW_VS_DEAD,
            super::slow_vs_dead::MIN_NODES
        )));
    }
    if demo.is_some() && entry.family.name != registry::ELECTION.name {
        return Err(usage(format!(
            "--demo tells an election story, and {} is a {} algorithm, not an election",
            entry.name, entry.family.name
        )));
    }
    if opts.chaos
        && (demo.is_some()
            || mutex_demo.is_some()
            || net_demo.is_some()
            || slow_vs_dead
            || until_elected
            || until_done
            || duration.is_none())
    {
        return Err(usage(
            "chaos runs for --duration SECS; it cannot be combined with --demo or --until",
        ));
    }
    let snapshot_algo = crate::catalog::demo_default("snapshot").map_or("", |e| e.name);
    if snapshot_demo && opts.algo != snapshot_algo {
        return Err(usage(format!(
            "--demo snapshot runs the bank (--algo {snapshot_algo}), not {}",
            opts.algo
        )));
    }
    if (demo.is_some() || mutex_demo.is_some() || net_demo.is_some() || snapshot_demo || slow_vs_dead)
        && (until_elected || until_done || duration.is_some())
    {
        return Err(usage(
            "--demo runs its own story; it cannot be combined with --until or --duration",
        ));
    }
    if mutex_demo == Some(MutexDemo::QuorumAmnesia) && n != 3 {
        return Err(usage(format!("--demo quorum-amnesia runs on 3 nodes, not {n}")));
    }
    let neighbours = |k: usize| match &graph {
        Some((_, g)) => g.neighbours(ids[k]).to_vec(),
        None => {
            let mut nb = vec![ids[(k + n - 1) % n], ids[(k + 1) % n]];
            nb.dedup();
            nb
        }
    };
    let clocks = crate::clock::skew::plan_clocks(
        &ids,
        opts.clock_offset_ms.as_deref(),
        opts.clock_drift_ppm.as_deref(),
        opts.clock_skew.as_deref(),
        opts.seed,
    )
    .map_err(usage)?;
    // A soak of the bank judges its snapshots: it takes Chandy-Lamport ones unless told otherwise.
    if opts.chaos && entry.family.name == registry::SNAPSHOT.name {
        set.entry("snapshot".into()).or_insert_with(|| "chandy-lamport".into());
    }
    if graph.is_some() && entry.key(MESH_KEY).is_some() {
        set.insert(MESH_KEY.into(), "true".into());
    }
    let last = opts.base_port as usize + n - 1;
    if opts.base_port != 0 && last > u16::MAX as usize {
        return Err(usage(format!(
            "--base-port {}: {n} nodes need ports up to {last}, past 65535",
            opts.base_port
        )));
    }
    // Ports are filled in when the launcher binds the sockets (`sockets::bind_all`), once
    // every check passed.
    let unbound = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    let mut plan = Plan {
        nodes: (0..n)
            .map(|k| NodePlan {
                id: ids[k],
                addr: unbound,
                neighbours: neighbours(k),
                initiator: initiators.contains(&ids[k]),
            })
            .collect(),
        topology: match (&demo_graph, &opts.topology) {
            (Some((label, _)), Layout::Mesh(_)) => format!("mesh:{label}"),
            _ => opts.topology.label(),
        },
        set,
        until_elected,
        duration,
        demo,
        snapshot_demo,
        clocks,
        until_done,
        mutex_demo,
        chaos: opts.chaos.then_some(opts.seed),
        net_demo,
        slow_vs_dead,
        chaos_faults: match &opts.faults {
            Some(super::schedule::FaultsArg::Kinds(k)) => *k,
            _ => super::schedule::FaultKinds::All,
        },
    };
    if mutex {
        // The shared resource is a member like any node, spawned first.
        plan.nodes.insert(
            0,
            NodePlan {
                id: crate::algo::mutex::RESOURCE_ID,
                addr: unbound,
                neighbours: ids.clone(),
                initiator: false,
            },
        );
    }
    for node in &plan.nodes {
        registry::check_setup(&opts.algo, &plan.setup(opts, node)).map_err(usage)?;
    }
    Ok(plan)
}

/// The algorithm a launch runs when `--algo` is not given: the registry's default on a ring;
/// on a mesh, the first election in registry order that runs on its graph (bully on complete,
/// yoyo on grid), so that `coordlab mesh N` with every default works.
pub fn default_algo(layout: &Layout, n: usize, ids: Option<&[u64]>, seed: u64) -> String {
    let Layout::Mesh(spec) = layout else {
        return registry::DEFAULT_ALGO.to_string();
    };
    let ids: Vec<u64> = ids.map_or_else(|| (1..=n as u64).collect(), <[u64]>::to_vec);
    let Ok(graph) = topology::build(spec, &ids, seed) else {
        // The plan refuses the topology itself, naming the problem.
        return registry::DEFAULT_ALGO.to_string();
    };
    registry::ENTRIES
        .iter()
        .filter(|e| e.family.name == registry::ELECTION.name)
        .find(|e| e.runs_on.check(e.name, Some((spec, &graph))).is_ok())
        .map_or(registry::DEFAULT_ALGO, |e| e.name)
        .to_string()
}

/// The ids in ring order: `--ids` (exactly n, no duplicates) or 1..=n.
fn launch_ids(n: usize, given: Option<&[u64]>, noun: &str) -> Result<Vec<u64>, CliError> {
    let Some(ids) = given else {
        return Ok((1..=n as u64).collect());
    };
    if ids.len() != n {
        return Err(usage(format!(
            "--ids lists {} ids but the {noun} has {n} nodes",
            ids.len()
        )));
    }
    for (i, id) in ids.iter().enumerate() {
        if ids[..i].contains(id) {
            return Err(usage(format!("--ids: id {id} appears twice")));
        }
    }
    Ok(ids.to_vec())
}

/// `all`, `none`, or a list of ids that are in the ring or mesh.
fn initiators(spec: &str, ids: &[u64], noun: &str) -> Result<Vec<u64>, CliError> {
    match spec.trim() {
        "all" => Ok(ids.to_vec()),
        "none" => Ok(Vec::new()),
        list => {
            let chosen = parse_ids("--initiators", list)?;
            if chosen.is_empty() {
                return Err(usage("--initiators is empty (say none for no initiator)"));
            }
            if let Some(x) = chosen.iter().find(|x| !ids.contains(x)) {
                return Err(usage(format!("--initiators: node {x} is not in the {noun}")));
            }
            Ok(chosen)
        }
    }
}

/// Options of a plain ring of `n` for tests (chang-roberts, default timing, `logs`).
#[cfg(test)]
pub(crate) fn test_options(n: usize) -> LaunchOptions {
    LaunchOptions {
        quiet: false,
        chaos: false,
        n,
        topology: Layout::Ring,
        algo: "chang-roberts".into(),
        ids: None,
        initiators: "all".into(),
        heartbeat_ms: 100,
        timeout_ms: 300,
        timing_note: None,
        base_port: 0,
        duration: None,
        until: None,
        seed: 1,
        logs: std::path::PathBuf::from("logs"),
        key: None,
        demo: None,
        set: std::collections::BTreeMap::new(),
        clock_offset_ms: None,
        clock_drift_ppm: None,
        clock_skew: None,
        net: None,
        faults: None,
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
