//! The arguments of a launch (`ring`, `mesh`, `chaos`), and the options they make.

use super::*;

#[derive(Args)]
pub(crate) struct LaunchArgs {
    #[arg(long, help = launch_algo_help())]
    pub(crate) algo: Option<String>,
    /// The ids around the ring, in ring order (default 1..N).
    #[arg(long)]
    pub(crate) ids: Option<String>,
    /// Who starts the first election: ids (2,5), all, or none.
    #[arg(long, default_value = "all")]
    pub(crate) initiators: String,
    /// Heartbeat period in milliseconds [default: 100, times ceil((N-1)/200) above 201 nodes, so that
    /// the leader sends at most 2,000 heartbeats a second].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) heartbeat_ms: Option<u64>,
    /// Failure-detector timeout in milliseconds [default: 300, times ceil((N-1)/200) above 201 nodes].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) timeout_ms: Option<u64>,
    /// First UDP port; the node at ring position k (from 1) gets base+k-1 (0: any free ports).
    #[arg(long, default_value_t = 0)]
    pub(crate) base_port: u16,
    /// Run this many seconds, then stop cleanly.
    #[arg(long)]
    pub(crate) duration: Option<f64>,
    /// Stop cleanly as soon as the condition holds: done (the family's goal; elected for elections).
    #[arg(long)]
    pub(crate) until: Option<String>,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Where run directories are written.
    #[arg(long, default_value = "logs")]
    pub(crate) logs: PathBuf,
    /// The run's key file (32 bytes, mode 0600), for a cluster spread over hosts; default: a
    /// fresh random key written to the run directory.
    #[arg(long)]
    pub(crate) key: Option<PathBuf>,
    /// Run a scripted story without a human: false-suspicion, split-brain, snapshot, regrant,
    /// quorum-amnesia, link-cut (`mesh 10`: groups 1-4 and 5-10, each fully linked, joined only
    /// by the link 2-10; echo elects, 2-10 is cut, each side elects, heal) or partition (central:
    /// the coordinator cut off from the holder regrants it).
    #[arg(long)]
    pub(crate) demo: Option<String>,
    /// An option of the algorithm passed to every node (KEY=VALUE; repeatable; `coordlab algos`
    /// lists each algorithm's keys).
    #[arg(long = "set")]
    pub(crate) set: Vec<String>,
    /// Same as --set stable=true (bully: a recovered node follows a live leader).
    #[arg(long)]
    pub(crate) stable: bool,
    /// Same as --set majority=true (elections: votes of a weighted majority, check-quorum, pre-vote).
    #[arg(long)]
    pub(crate) majority: bool,
    /// Same as --set pick=... (ring-list: the winner is the max or min id of the list).
    #[arg(long)]
    pub(crate) pick: Option<String>,
    /// Same as --set weights=ID:W,... (node weights under majority; echo's capabilities).
    #[arg(long)]
    pub(crate) weights: Option<String>,
    /// Nodes whose physical clocks start off true time: ID:MS,ID:MS,... (negative: behind).
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) clock_offset_ms: Option<String>,
    /// Nodes whose physical clocks run fast (positive) or slow: ID:PPM,ID:PPM,...
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) clock_drift_ppm: Option<String>,
    /// Every clock off by up to MAXMS and drifting by up to MAXPPM, at random from the seed:
    /// random:MAXMS,MAXPPM.
    #[arg(long)]
    pub(crate) clock_skew: Option<String>,
    /// Mutual exclusion: mean think time between requests, ms; same as --set think_ms=...
    #[arg(long)]
    pub(crate) think_ms: Option<u64>,
    /// Mutual exclusion: how long a node holds the resource, ms; same as --set hold_ms=...
    #[arg(long)]
    pub(crate) hold_ms: Option<u64>,
    /// Mutual exclusion: requests per node; same as --set requests=...
    #[arg(long)]
    pub(crate) requests: Option<u64>,
    /// Mutual exclusion: the resource rejects stale fencing tokens; same as --set fencing=true.
    #[arg(long)]
    pub(crate) fencing: bool,
    /// Quorum, Maekawa: coordinators persist their grants (stored before answering); same as --set durable=true.
    #[arg(long)]
    pub(crate) durable: bool,
    /// The console prints only agreement and faults, not the running story.
    #[arg(long)]
    pub(crate) quiet: bool,
    /// Who enforces network faults: kernel (nftables, root only) or user (the nodes' receive
    /// filter) [default: kernel when root and nftables works, else user].
    #[arg(long)]
    pub(crate) net: Option<String>,
    /// A fault schedule FILE: one action a line, SECONDS VERB ARGS (`1.5 pause 8`,
    /// `3.0 net cut 2 10`, `6 net heal`); chaos also takes `process`, `network` or `all`:
    /// which random faults it draws (default all).
    #[arg(long)]
    pub(crate) faults: Option<String>,
}

pub(crate) fn launch_options(n: usize, topology: Layout, a: LaunchArgs) -> Result<LaunchOptions, CliError> {
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
