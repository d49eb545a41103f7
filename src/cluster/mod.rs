//! The launcher: spawns a ring or a mesh of node processes, injects faults with signals, keeps
//! a console, and writes the run directory of `docs/trace.md`.
//!
//! `launch` checks every option before anything starts ([`plan`], with the algorithm's registry
//! entry: its keys and where it runs), writes `run.json` and points
//! `logs/latest` at the new run ([`rundir`]), spawns the nodes ([`spawn`]), then runs one mio
//! loop ([`launcher`]): console lines from stdin ([`console`]), one command per connection on a
//! Unix control socket ([`control`]), SIGINT/SIGTERM/SIGHUP/SIGCHLD through a signalfd
//! ([`signals`]), and a 2-50 ms tick that tails every `node-<id>.jsonl` ([`watch`]) into a model
//! of each node ([`model`], kept by [`nodes`]). What the run is for -- a console, `--until done`, a `--duration`,
//! the `--demo` story or the [`chaos`] soak -- is a [`goal`] stepped on every tick.
//!
//! Every fault the launcher causes is written to `faults.jsonl` before the signal is sent. The
//! clean stop writes `shutdown` first; the SIGTERM that follows is the stop itself, not a fault,
//! so it is not recorded as `kill` (a straggler's SIGKILL is).

/// Prints a line for the user (above the console's prompt while one is shown); a closed
/// stdout must not kill the launcher mid-run.
macro_rules! say {
    ($($arg:tt)*) => {{
        $crate::cluster::prompt::say(format!($($arg)*));
    }};
}

mod behind;
mod chaos;
pub mod chaos_judge;
mod chaos_net;
mod console;
pub mod control;
mod demo;
mod detector_view;
mod fork;
mod fork_code;
mod gate;
mod goal;
mod launcher;
mod model;
mod mutex_goal;
mod narrate;
pub mod net;
mod net_demo;
mod nodes;
mod phases;
pub mod plan;
mod progress;
mod prompt;
mod rundir;
pub mod schedule;
mod signals;
mod slow_vs_dead;
mod snapshot_demo;
mod sockets;
mod spawn;
pub mod timing;
mod watch;

use crate::error::CliError;

/// The node id of the shared resource in a mutual-exclusion launch.
const RESOURCE_NODE: u64 = crate::algo::mutex::RESOURCE_ID;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The nodes network rules may name, with their UDP ports: every node but the shared resource.
fn net_members(opts: &LaunchOptions, plan: &plan::Plan) -> Vec<(u64, u16)> {
    let mutex = crate::catalog::is_mutex(&opts.algo);
    plan.nodes
        .iter()
        .filter(|p| !(mutex && p.id == RESOURCE_NODE))
        .map(|p| (p.id, p.addr.port()))
        .collect()
}

/// What the nodes are laid out on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// `coordlab ring N`: a ring in id order; each node's neighbours are its predecessor and
    /// successor.
    Ring,
    /// `coordlab mesh N --topology SPEC`: a connected graph built by [`crate::topology::build`]
    /// (`complete`, `ring`, `bidirectional-ring`, `grid`, `random:K`, an edge-list file).
    Mesh(String),
}

impl Layout {
    /// The layout of `coordlab mesh N --topology SPEC`: a ring spec (`ring`,
    /// `bidirectional-ring`) is the very launch `coordlab ring N` makes (the same neighbours,
    /// the same options), so the two spellings cannot behave differently.
    pub fn mesh(spec: &str) -> Layout {
        match spec {
            "ring" | "bidirectional-ring" => Layout::Ring,
            _ => Layout::Mesh(spec.to_string()),
        }
    }

    /// The word for the launch: `ring` or `mesh`.
    pub(crate) fn noun(&self) -> &'static str {
        match self {
            Layout::Ring => "ring",
            Layout::Mesh(_) => "mesh",
        }
    }

    /// The topology as `run.json` names it: `ring` or `mesh:<spec>`.
    pub(crate) fn label(&self) -> String {
        match self {
            Layout::Ring => "ring".into(),
            Layout::Mesh(spec) => format!("mesh:{spec}"),
        }
    }
}

/// Everything `coordlab ring N` / `coordlab mesh N` was asked to do.
#[derive(Debug, Clone)]
pub struct LaunchOptions {
    /// How many nodes.
    pub n: usize,
    /// A ring, or a mesh of some topology.
    pub topology: Layout,
    /// The algorithm name (`--algo`).
    pub algo: String,
    /// Ids in ring order (`--ids`); default 1..=n.
    pub ids: Option<Vec<u64>>,
    /// `--initiators`: `all`, `none`, or a list of ids.
    pub initiators: String,
    /// Heartbeat period, ms.
    pub heartbeat_ms: u64,
    /// Failure-detector timeout, ms.
    pub timeout_ms: u64,
    /// How the default timing was scaled for `n`, for the banner (None: not scaled).
    pub timing_note: Option<String>,
    /// First UDP port (0: pick free ports).
    pub base_port: u16,
    /// Run this long, then stop cleanly.
    pub duration: Option<f64>,
    /// `elected`: stop cleanly once every live node agrees on one leader.
    pub until: Option<String>,
    /// Seed of every random choice.
    pub seed: u64,
    /// Where run directories go (`logs`).
    pub logs: PathBuf,
    /// A scripted story to run instead of the console (`false-suspicion`, `split-brain`).
    pub demo: Option<String>,
    /// `--key FILE`: the run's key (None: a fresh random key in the run directory).
    pub key: Option<PathBuf>,
    /// Algorithm options passed to every node (`--set key=value`).
    pub set: BTreeMap<String, String>,
    /// `--quiet`: the console prints agreement and faults only, not the running story.
    pub quiet: bool,
    /// `coordlab chaos`: inject random faults for `duration`, then judge the soak.
    pub chaos: bool,
    /// `--clock-offset-ms ID:MS,...`: nodes whose clocks start off true time.
    pub clock_offset_ms: Option<String>,
    /// `--clock-drift-ppm ID:PPM,...`: nodes whose clocks run fast or slow.
    pub clock_drift_ppm: Option<String>,
    /// `--clock-skew random:MAXMS,MAXPPM`: every clock off and drifting at random (from the seed).
    pub clock_skew: Option<String>,
    /// `--net kernel|user`: who enforces network faults (None: kernel when root and nftables
    /// works, else user).
    pub net: Option<String>,
    /// `--faults`: a schedule file, or (chaos) the kinds of fault to draw.
    pub faults: Option<schedule::FaultsArg>,
}

/// Runs a launch; returns the process exit status.
pub fn launch(opts: LaunchOptions) -> Result<i32, CliError> {
    phases::mark("launch");
    let plan = plan::plan(&opts)?;
    // Checked before anything starts: a bad backend or schedule line leaves nothing behind.
    let backend = net::Backend::choose(opts.net.as_deref()).map_err(crate::error::usage)?;
    let nodes: Vec<u64> = plan.nodes.iter().map(|p| p.id).collect();
    let members = net_members(&opts, &plan);
    let sched = match &opts.faults {
        Some(schedule::FaultsArg::File(path)) => {
            let ids: Vec<u64> = members.iter().map(|m| m.0).collect();
            schedule::Schedule::load(path, &nodes, &ids).map_err(crate::error::usage)?
        }
        Some(schedule::FaultsArg::Kinds(_)) if !opts.chaos => {
            return Err(crate::error::usage(
                "--faults process|network|all chooses chaos's faults; ring and mesh take a schedule FILE",
            ))
        }
        _ => schedule::Schedule::default(),
    };
    rundir::check_writable(&opts.logs)?;
    let r = launcher::run(opts, plan, backend, sched);
    phases::report();
    r
}

/// Sends a console command (`pause 8`, `status`, ...) to the launcher of the run in `run_dir`
/// and returns its answer.
pub fn control(run_dir: &std::path::Path, command: &str) -> Result<String, CliError> {
    control::send(run_dir, command)
}

/// `coordlab logs ID [LINES]`: the running launcher's answer, or once the run has ended, the
/// last lines of node `id`'s human log read from the run directory itself.
pub fn logs(run_dir: &std::path::Path, id: u64, lines: usize) -> Result<String, CliError> {
    let live = control::send(run_dir, &format!("logs {id} {lines}"));
    let ended = match &live {
        Ok(_) => return live,
        // A refusal by a running launcher (no such node) stands; only "not running" falls back.
        Err(CliError::Usage(m)) => m.contains("the run has ended"),
        Err(_) => false,
    };
    if !ended {
        return live;
    }
    let path = match id == RESOURCE_NODE && run_dir.join("resource.log").exists() {
        true => run_dir.join("resource.log"),
        false => run_dir.join(format!("node-{id}.log")),
    };
    if !path.exists() {
        return Err(crate::error::usage(format!(
            "node {id} has no log in {} (the run has ended; its nodes' logs are node-ID.log there)",
            run_dir.display()
        )));
    }
    let text = nodes::tail_lines(&path, lines)
        .map_err(|e| crate::error::failed(format!("cannot read {}: {e}", path.display())))?;
    Ok(match text.is_empty() {
        true => format!("({} is empty)", path.display()),
        false => text.trim_end().to_string(),
    })
}
