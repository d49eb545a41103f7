//! Starting a node process: its command line, its log files, its process group, and the
//! parent-death signal that takes it down with the launcher.

use super::plan::{NodePlan, Plan};
use super::LaunchOptions;
use crate::algo::mutex::{self, RESOURCE_ID};
use nix::errno::Errno;
use nix::sys::prctl;
use nix::sys::signal::{SigSet, Signal};
use nix::unistd::{getppid, Pid};
use std::fs::OpenOptions;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What every node of a launch shares on its command line.
#[derive(Debug, Clone)]
pub struct NodeArgs {
    exe: PathBuf,
    members: String,
    algo: String,
    heartbeat_ms: u64,
    timeout_ms: u64,
    seed: u64,
    log_dir: PathBuf,
    set: Vec<String>,
    clocks: std::collections::BTreeMap<u64, crate::clock::ClockSpec>,
    key: PathBuf,
}

impl NodeArgs {
    /// The shared arguments of a launch of `plan`, logging to `log_dir`, with the key file `key`.
    pub fn new(opts: &LaunchOptions, plan: &Plan, log_dir: &Path, key: &Path) -> io::Result<Self> {
        let members = plan
            .nodes
            .iter()
            .map(|n| format!("{}={}", n.id, n.addr))
            .collect::<Vec<_>>()
            .join(",");
        Ok(NodeArgs {
            exe: std::env::current_exe()?,
            members,
            algo: opts.algo.clone(),
            heartbeat_ms: opts.heartbeat_ms,
            timeout_ms: opts.timeout_ms,
            seed: opts.seed,
            log_dir: log_dir.to_path_buf(),
            set: plan.set.iter().map(|(k, v)| format!("{k}={v}")).collect(),
            clocks: plan.clocks.clone(),
            key: std::path::absolute(key)?,
        })
    }

    /// Whether node `id` is the shared resource of a mutual-exclusion run.
    pub fn is_resource(&self, id: u64) -> bool {
        id == RESOURCE_ID && mutex::is_mutex(&self.algo)
    }

    /// Where node `id`'s human log goes.
    pub fn log_path(&self, id: u64) -> PathBuf {
        match self.is_resource(id) {
            true => self.log_dir.join("resource.log"),
            false => self.log_dir.join(format!("node-{id}.log")),
        }
    }

    /// Where node `id`'s machine trace goes.
    pub fn trace_path(&self, id: u64) -> PathBuf {
        match self.is_resource(id) {
            true => self.log_dir.join("resource.jsonl"),
            false => self.log_dir.join(format!("node-{id}.jsonl")),
        }
    }

    /// Starts `node` in process group `group` (None: a new group led by this node), its
    /// output appended to its log. `start_at_us`: when its algorithm begins.
    ///
    /// Must be called from the launcher's main thread: the parent-death signal fires when the
    /// spawning *thread* ends, and the main thread lives as long as the launcher.
    pub fn spawn(
        &self,
        node: &NodePlan,
        initiator: bool,
        start_at_us: Option<u64>,
        group: Option<Pid>,
    ) -> io::Result<Pid> {
        let mut cmd = Command::new(&self.exe);
        if self.is_resource(node.id) {
            cmd.arg("resource")
                .args(["--id", &node.id.to_string()])
                .args(["--listen", &node.addr.to_string()])
                .args(["--members", &self.members])
                .arg("--log-dir")
                .arg(&self.log_dir)
                .arg("--key")
                .arg(&self.key);
            for kv in &self.set {
                cmd.args(["--set", kv]);
            }
            return self.start(cmd, node, group);
        }
        cmd.arg("node")
            .args(["--id", &node.id.to_string()])
            .args(["--listen", &node.addr.to_string()])
            .args(["--members", &self.members])
            .args(["--algo", &self.algo])
            .args(["--heartbeat-ms", &self.heartbeat_ms.to_string()])
            .args(["--timeout-ms", &self.timeout_ms.to_string()])
            .args(["--seed", &self.seed.to_string()])
            .arg("--log-dir")
            .arg(&self.log_dir)
            .arg("--key")
            .arg(&self.key);
        let neighbours: Vec<String> = node.neighbours.iter().map(u64::to_string).collect();
        cmd.args(["--neighbours", &neighbours.join(",")]);
        if initiator {
            cmd.arg("--initiator");
        }
        if let Some(t) = start_at_us {
            cmd.args(["--start-at-us", &t.to_string()]);
        }
        for kv in &self.set {
            cmd.args(["--set", kv]);
        }
        if let Some(c) = self
            .clocks
            .get(&node.id)
            .filter(|c| **c != crate::clock::ClockSpec::default())
        {
            cmd.args(["--clock-offset-us", &c.offset_us.to_string()])
                .args(["--clock-drift-ppm", &c.drift_ppm.to_string()]);
        }
        self.start(cmd, node, group)
    }

    /// Starts `cmd` for `node`: its output to its log, its group, its parent-death signal.
    fn start(&self, mut cmd: Command, node: &NodePlan, group: Option<Pid>) -> io::Result<Pid> {
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path(node.id))?;
        cmd.stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            // Its own group: a Ctrl-C at the terminal reaches only the launcher, which then
            // stops the nodes in order (shutdown recorded first).
            .process_group(group.map_or(0, Pid::as_raw));
        let launcher = Pid::this();
        // SAFETY: the closure only makes system calls (sigprocmask, prctl, getppid), all
        // async-signal-safe.
        unsafe {
            cmd.pre_exec(move || {
                // The launcher blocks its signals for its signalfd, and a blocked mask survives
                // exec: a node must start with none blocked.
                SigSet::empty().thread_set_mask().map_err(io::Error::from)?;
                prctl::set_pdeathsig(Signal::SIGKILL).map_err(io::Error::from)?;
                // The launcher may have died between fork and prctl: then nobody would send
                // the signal, so give up now.
                if getppid() != launcher {
                    return Err(io::Error::from(Errno::ESRCH));
                }
                Ok(())
            });
        }
        let child = cmd.spawn()?;
        // The Child handle is dropped: the launcher reaps by pid from SIGCHLD (dropping does
        // not wait or kill).
        Ok(Pid::from_raw(child.id() as i32))
    }
}
