//! The arguments of one node or resource process, and the options they make.

use super::*;

#[derive(Args)]
pub(crate) struct ResourceArgs {
    /// The resource's node id.
    #[arg(long, default_value_t = 0)]
    pub(crate) id: u64,
    #[command(flatten)]
    pub(crate) process: ProcessArgs,
}

#[derive(Args)]
pub(crate) struct NodeArgs {
    /// This node's id.
    #[arg(long)]
    pub(crate) id: u64,
    /// The ids this node may talk to (default: its ring predecessor and successor).
    #[arg(long)]
    pub(crate) neighbours: Option<String>,
    /// Start the first election at once.
    #[arg(long)]
    pub(crate) initiator: bool,
    /// This node ran before in this run (the launcher says so when it restarts a node).
    #[arg(long)]
    pub(crate) restarted: bool,
    #[arg(long, default_value = registry::DEFAULT_ALGO, help = algo_help())]
    pub(crate) algo: String,
    /// Heartbeat period in milliseconds.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) heartbeat_ms: u64,
    /// Failure-detector timeout in milliseconds.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) timeout_ms: u64,
    /// Seed of this node's random choices.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// This node's physical clock offset from true time, microseconds.
    #[arg(long, default_value_t = 0, allow_hyphen_values = true)]
    pub(crate) clock_offset_us: i64,
    /// This node's physical clock drift, parts per million.
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    pub(crate) clock_drift_ppm: f64,
    #[command(flatten)]
    pub(crate) process: ProcessArgs,
}

/// What a node and the resource are both told: where they are, who the others are, where to
/// write, the run's options and key, and what the launcher hands down.
#[derive(Args)]
pub(crate) struct ProcessArgs {
    /// The UDP address to bind.
    #[arg(long)]
    pub(crate) listen: std::net::SocketAddr,
    /// Every member as ID=ADDR, comma-separated, in ring order (this process included).
    #[arg(long)]
    pub(crate) members: String,
    /// Directory for this process's trace, node-<id>.jsonl or resource.jsonl (no machine trace
    /// without it).
    #[arg(long)]
    pub(crate) log_dir: Option<PathBuf>,
    /// An option of the run (KEY=VALUE; repeatable; `coordlab algos` lists the algorithms'
    /// keys; the resource reads fencing=true|false).
    #[arg(long = "set")]
    pub(crate) set: Vec<String>,
    /// The run's key file (32 bytes, mode 0600; the launcher writes logs/<run>/key).
    #[arg(long)]
    pub(crate) key: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) inherited: Inherited,
}

/// The members as `--members` gives them: (id, address) pairs.
pub(crate) type Members = Vec<(u64, std::net::SocketAddr)>;

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
            warmed: false,
        })
    }
}

/// What a node or the resource inherits from the launcher that spawned it.
#[derive(Args)]
pub(crate) struct Inherited {
    /// Use this inherited descriptor, a UDP socket bound to --listen, instead of binding
    /// (the launcher binds every node's socket itself and passes it down).
    #[arg(long)]
    pub(crate) fd: Option<i32>,
    /// The read end of the launcher's go pipe: the node's algorithm and its clock (its timers)
    /// start when it reads end-of-file, once every node of the launch has warmed up.
    #[arg(long)]
    pub(crate) go_fd: Option<i32>,
    /// The write end of the launcher's ready pipe: the node closes it once it has warmed up.
    #[arg(long)]
    pub(crate) ready_fd: Option<i32>,
    /// Die with this process (the launcher): the node sets its parent-death signal and checks
    /// that its parent is still this pid.
    #[arg(long)]
    pub(crate) parent_pid: Option<i32>,
}

pub(crate) fn node_options(a: NodeArgs) -> Result<NodeOptions, CliError> {
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

pub(crate) fn resource_options(a: ResourceArgs) -> Result<NodeOptions, CliError> {
    let (members, ids) = a.process.members()?;
    if !ids.contains(&a.id) {
        return Err(usage(format!("--id {} is not in --members", a.id)));
    }
    let others = ids.iter().copied().filter(|&x| x != a.id).collect();
    let setup = Setup::new(a.id, ids, others);
    a.process
        .options(setup, coordlab::node::runtime::RESOURCE_ALGO.into(), members)
}
