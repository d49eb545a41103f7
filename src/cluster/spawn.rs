//! Starting a node process: its command line, its socket (inherited), its log files, its
//! process group, and the launcher's pid, for the parent-death signal that takes it down with
//! the launcher.

use super::gate::Inherited;
use super::plan::{NodePlan, Plan};
use super::LaunchOptions;
use crate::algo::mutex::RESOURCE_ID;
use crate::algo::Setup;
use crate::node::config::{Members, NodeOptions};
use nix::fcntl::{fcntl, FcntlArg, FdFlag};
use nix::unistd::Pid;
use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io;
use std::net::UdpSocket;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

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
    /// Every member's id in ring order, their addresses and the options, for nodes forked
    /// without an exec (built once, before the zygote forks: every node's `Setup.members` is
    /// this one table, its pages shared copy-on-write by every node).
    ids: std::sync::Arc<[u64]>,
    addrs: Members,
    set_map: BTreeMap<String, String>,
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
            ids: plan.nodes.iter().map(|n| n.id).collect(),
            addrs: plan.nodes.iter().map(|n| (n.id, n.addr)).collect(),
            set_map: plan.set.clone(),
        })
    }

    /// What each node's failure detector thinks, as its trace will show it (for `status`).
    /// `plan`: the nodes, whose neighbours a sparse mesh's phi watches (on a ring or a complete
    /// mesh it watches every other member).
    pub(crate) fn detector_views(&self, plan: &[NodePlan]) -> super::detector_view::Views {
        let mesh = self.set_map.get("mesh").is_some_and(|v| v == "true");
        let heartbeat = Duration::from_millis(self.heartbeat_ms);
        // Only phi keeps a view per watched peer: listing every other member for every node
        // of a ring otherwise cost n^2 ids for nothing (128 MiB and a tenth of a second at
        // 4,096 nodes, 2 GiB at 16,384).
        let phi = matches!(
            crate::algo::detector::Choice::from_opts(&self.set_map, heartbeat),
            crate::algo::detector::Choice::Phi(_)
        );
        // A mutual-exclusion run's resource runs no detector, and no participant's watches it.
        let watched = plan
            .iter()
            .filter(|p| phi && !self.is_resource(p.id))
            .map(|p| {
                let peers = match mesh {
                    true => p.neighbours.clone(),
                    false => self.ids.iter().copied().filter(|&i| i != p.id).collect(),
                };
                let peers = peers.into_iter().filter(|&i| !self.is_resource(i)).collect();
                (p.id, peers)
            })
            .collect();
        let views = super::detector_view::Views::new(watched, &self.set_map, heartbeat);
        match crate::catalog::is_mutex(&self.algo) {
            true => views.without(RESOURCE_ID),
            false => views,
        }
    }

    /// Whether node `id` is the shared resource of a mutual-exclusion run.
    pub(crate) fn is_resource(&self, id: u64) -> bool {
        id == RESOURCE_ID && crate::catalog::is_mutex(&self.algo)
    }

    /// Where node `id`'s human log goes.
    pub(crate) fn log_path(&self, id: u64) -> PathBuf {
        match self.is_resource(id) {
            true => self.log_dir.join("resource.log"),
            false => self.log_dir.join(format!("node-{id}.log")),
        }
    }

    /// Where node `id`'s machine trace goes.
    pub(crate) fn trace_path(&self, id: u64) -> PathBuf {
        match self.is_resource(id) {
            true => self.log_dir.join("resource.jsonl"),
            false => self.log_dir.join(format!("node-{id}.jsonl")),
        }
    }

    /// What node `node` is told, as `coordlab node` would parse it from the command line that
    /// [`spawn`](Self::spawn) builds: for a node forked without an exec (see `fork`). `fd`: its
    /// socket; `gate`: the start gate's pipes; `launcher`: the launcher's pid.
    pub fn options(
        &self,
        node: &NodePlan,
        initiator: bool,
        fd: RawFd,
        gate: Option<Inherited>,
        launcher: Pid,
    ) -> NodeOptions {
        let ids = self.ids.clone();
        let resource = self.is_resource(node.id);
        let mut setup = match resource {
            true => {
                let others = ids.iter().copied().filter(|&x| x != node.id).collect();
                Setup::new(node.id, ids, others)
            }
            false => Setup::new(node.id, ids, node.neighbours.clone()),
        };
        setup.opts = self.set_map.clone();
        if !resource {
            setup.initiator = initiator;
            // As on the command line: a node started without the start gate is a restart.
            setup.restarted = gate.is_none();
            setup.heartbeat = Duration::from_millis(self.heartbeat_ms);
            setup.timeout = Duration::from_millis(self.timeout_ms);
            setup.seed = self.seed;
            setup.clock = self.clocks.get(&node.id).copied().unwrap_or_default();
        }
        NodeOptions {
            setup,
            algo: match resource {
                true => crate::node::runtime::RESOURCE_ALGO.into(),
                false => self.algo.clone(),
            },
            listen: node.addr,
            fd: Some(fd),
            go_fd: gate.map(|g| g.go),
            ready_fd: gate.map(|g| g.ready),
            parent_pid: Some(launcher.as_raw()),
            addrs: self.addrs.clone(),
            log_dir: Some(self.log_dir.clone()),
            key_file: Some(self.key.clone()),
            warmed: false,
        }
    }

    /// Starts `node` in process group `group` (None: a new group led by this node), its
    /// output appended to its log, on `socket` (bound by the launcher to `node.addr`): the
    /// child inherits it as `--fd N`. The caller closes its own copy once this returns (the
    /// child has exec'd by then), so that the port closes when the node dies.
    ///
    /// Must be called from the launcher's main thread: the parent-death signal fires when the
    /// spawning *thread* ends, and the main thread lives as long as the launcher.
    ///
    /// `gate`: the launch's start gate (close-on-exec already cleared), passed as `--go-fd` and
    /// `--ready-fd`: the node closes the ready end once warmed up, and starts when the launcher
    /// closes the go pipe's write end.
    pub fn spawn(
        &self,
        node: &NodePlan,
        initiator: bool,
        socket: &UdpSocket,
        gate: Option<Inherited>,
        group: Option<Pid>,
    ) -> io::Result<Pid> {
        let fd = socket.as_raw_fd();
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
            inherit(&mut cmd, fd, gate);
            return self.start(cmd, node, socket, group);
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
        // Every first start waits at the launch's start gate; a node spawned without it is a restart.
        if gate.is_none() {
            cmd.arg("--restarted");
        }
        inherit(&mut cmd, fd, gate);
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
        self.start(cmd, node, socket, group)
    }

    /// Opens node `id`'s human log for appending (its stdout and stderr).
    pub(crate) fn open_log(&self, id: u64) -> io::Result<std::fs::File> {
        OpenOptions::new().create(true).append(true).open(self.log_path(id))
    }

    /// Starts `cmd` for `node`: its output to its log, its group, its parent-death signal.
    fn start(&self, mut cmd: Command, node: &NodePlan, socket: &UdpSocket, group: Option<Pid>) -> io::Result<Pid> {
        let log = self.open_log(node.id)?;
        cmd.stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            // Its own group: a Ctrl-C at the terminal reaches only the launcher, which then
            // stops the nodes in order (shutdown recorded first).
            .process_group(group.map_or(0, Pid::as_raw));
        // No pre_exec closure: without one, std spawns with posix_spawn (a vfork, not a copy
        // of the launcher's page tables), several times faster per node. What a closure did
        // is done elsewhere: std's posix_spawn starts the child with no signal blocked; the
        // node sets its own parent-death signal (`--parent-pid`); and the socket crosses exec
        // because its close-on-exec flag is cleared just for this spawn. That is safe because
        // the launcher has one thread, spawns one child at a time, and closes the socket as
        // soon as this returns: no other child can inherit it.
        cmd.args(["--parent-pid", &Pid::this().to_string()]);
        let sock = socket.as_fd();
        fcntl(sock, FcntlArg::F_SETFD(FdFlag::empty())).map_err(io::Error::from)?;
        let spawned = cmd.spawn();
        let _ = fcntl(sock, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC));
        let child = spawned?;
        // The Child handle is dropped: the launcher reaps by pid from SIGCHLD (dropping does
        // not wait or kill).
        Ok(Pid::from_raw(child.id() as i32))
    }
}

/// The descriptors a child inherits: its socket (`--fd`) and the start gate's pipes
/// (`--go-fd`, `--ready-fd`).
fn inherit(cmd: &mut Command, fd: RawFd, gate: Option<Inherited>) {
    cmd.args(["--fd", &fd.to_string()]);
    if let Some(g) = gate {
        cmd.args(["--go-fd", &g.go.to_string()]);
        cmd.args(["--ready-fd", &g.ready.to_string()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{plan, LaunchOptions};

    /// Every forked node's member list is the launcher's one table, not a copy: a copy per node
    /// was 8 bytes a member of each node's private memory, several times over.
    #[test]
    fn every_node_is_given_the_one_member_table_and_its_own_neighbours() {
        let dir = std::env::temp_dir().join(format!("coordlab-shared-members-{}", std::process::id()));
        let opts = LaunchOptions {
            quiet: true,
            logs: dir.clone(),
            ..plan::test_options(5)
        };
        let plan = plan::plan(&opts).unwrap();
        let args = NodeArgs::new(&opts, &plan, &dir, &dir.join("key")).unwrap();
        let pid = Pid::this();
        let setups: Vec<Setup> = plan
            .nodes
            .iter()
            .map(|n| args.options(n, n.initiator, 3, None, pid).setup)
            .collect();
        let ids: Vec<u64> = plan.nodes.iter().map(|n| n.id).collect();
        for (s, n) in setups.iter().zip(&plan.nodes) {
            assert!(std::sync::Arc::ptr_eq(&s.members, &setups[0].members), "node {}", n.id);
            assert_eq!(*s.members, *ids);
            assert_eq!((s.me, &s.neighbours), (n.id, &n.neighbours));
        }
    }
}
