//! The node processes of a launch: spawning, signalling and reaping them, reading their traces
//! into each node's [`Node`] view, their agreement, and the faults the launcher caused them,
//! written to `faults.jsonl` before each signal is sent.

use super::fork::Zygotes;
use super::gate::{Gate, Inherited};
use super::model::{describe_state, Node, State};
use super::plan::NodePlan;
use super::spawn::NodeArgs;
use crate::check::beliefs::Beliefs;
use crate::check::section::Progress;
use crate::check::timeline::Proc;
use crate::node::socket::bind_std;
use crate::trace::{wall_us, Event, JsonlWriter, Record};
use nix::errno::Errno;
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use std::io;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod reading;
use reading::last_words;

mod spawning;
pub(super) use reading::tail_lines;

/// Every live node believes the same leader in the same term, and that leader is live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Agreement {
    /// The leader.
    pub leader: u64,
    /// The term.
    pub term: u64,
    /// The live nodes that agree (all of them).
    pub nodes: Vec<u64>,
    /// When the last of them came to believe it (trace time).
    pub at_us: u64,
    /// When the leader itself came to believe it (trace time).
    pub leader_since_us: u64,
}

/// The launch's nodes, its faults log, and the process group they share.
pub(crate) struct Fleet {
    /// The nodes in ring order.
    pub nodes: Vec<Node>,
    /// The run directory.
    pub dir: PathBuf,
    /// When the nodes' algorithms begin (wall clock, microseconds).
    pub start_us: u64,
    /// Set when a node of the first launch ended before its `start` event: what it said.
    pub start_failure: Option<String>,
    /// Every node of the first launch has written its `start` event.
    pub all_started: bool,
    /// Writes of the run's evidence that failed (a node's trace, `faults.jsonl`): a full disk,
    /// most likely. The first one stops the run, which then exits with status 3.
    pub write_failures: Vec<String>,
    /// Whom each node believes leads: the checker's replay, fed as the traces grow.
    pub beliefs: Beliefs,
    /// The family's own progress toward its goal (None for elections: see `beliefs`).
    pub progress: Option<Box<dyn Progress>>,
    /// The network rules in force (set by the launcher's network control), so that the
    /// narration can tell a node cut off from one that is merely slow.
    pub net_rules: crate::net::NetRules,
    /// What each node's failure detector thinks, from its trace (phi per peer, SWIM state).
    pub detectors: super::detector_view::Views,
    args: NodeArgs,
    faults: JsonlWriter,
    group: Option<Pid>,
    /// The index of each node process not reaped yet, by pid: a stop reaps thousands, and
    /// finding each by a search made it quadratic.
    by_pid: std::collections::HashMap<Pid, usize>,
    /// In the clean stop: each exit is only recorded (the traces are read once all are
    /// reaped, and `faults.jsonl` is flushed once per batch of exits).
    stopping: bool,
    /// Lines written to `faults.jsonl` and not flushed yet.
    unflushed: bool,
    /// The node whose trace the next budgeted reading starts with (`refresh_until`).
    read_next: usize,
    /// The thread parsing the lines no view needs while the run goes on (`behind.rs`), when
    /// the tails leave them unparsed.
    behind: Option<super::behind::Parsing>,
}

/// How long a clean stop waits for `n` running nodes after SIGTERM before SIGKILL: 2 s, and
/// half a millisecond more a node, since each node's stop takes its turn on the same cores (a
/// ring of 16,384 that had run for 14 s needed more than 2 s: 2,352 and 2,822 of its nodes
/// were killed in two runs, their traces left without their `stop`).
fn stop_grace(n: usize) -> Duration {
    Duration::from_secs(2) + Duration::from_micros(500) * n as u32
}

/// The stragglers of a stop, in one line whatever their number.
fn stragglers_line(ids: &[u64], grace: Duration) -> String {
    const SHOWN: usize = 8;
    let mut named: Vec<String> = ids.iter().take(SHOWN).map(u64::to_string).collect();
    if ids.len() > SHOWN {
        named.push(format!("and {} more", ids.len() - SHOWN));
    }
    let who = match ids.len() {
        1 => format!("node {}", ids[0]),
        n => format!("{n} nodes ({})", named.join(", ")),
    };
    format!(
        "coordlab: {who} did not stop within {:.1} s of SIGTERM: SIGKILL",
        grace.as_secs_f64()
    )
}

impl Fleet {
    /// A fleet of `plan` nodes, not started yet, writing into `dir`.
    pub fn new(plan: &[NodePlan], args: NodeArgs, dir: &Path, start_us: u64) -> io::Result<Self> {
        let faults = JsonlWriter::append(&dir.join("faults.jsonl"))?;
        let nodes = plan
            .iter()
            .map(|p| Node::new(p.clone(), State::Exited("not started".into()), args.trace_path(p.id)))
            .collect();
        Ok(Fleet {
            nodes,
            dir: dir.to_path_buf(),
            start_us,
            start_failure: None,
            all_started: false,
            write_failures: Vec::new(),
            beliefs: Beliefs::default(),
            progress: None,
            net_rules: crate::net::NetRules::default(),
            detectors: args.detector_views(plan),
            args,
            faults,
            group: None,
            by_pid: std::collections::HashMap::with_capacity(plan.len()),
            stopping: false,
            unflushed: false,
            read_next: 0,
            behind: None,
        })
    }

    /// Milliseconds from the nodes' start to trace time `t`, as `+312 ms`.
    pub fn rel(&self, t: u64) -> String {
        let ms = (t as i64 - self.start_us as i64) / 1000;
        format!("{ms:+} ms")
    }

    /// Writes one line of `faults.jsonl` now (flushed: other processes poll it).
    pub fn fault(&mut self, node: Option<u64>, event: Event) {
        self.fault_at(wall_us(), node, event);
    }

    /// Writes one line of `faults.jsonl` stamped `t` (a fault that took effect at `t`).
    pub(crate) fn fault_at(&mut self, t: u64, node: Option<u64>, event: Event) {
        self.fault_unflushed(t, node, event);
        self.flush_faults();
    }

    /// Writes one line of `faults.jsonl` stamped `t`, flushed by the next [`Self::flush_faults`].
    fn fault_unflushed(&mut self, t: u64, node: Option<u64>, event: Event) {
        let rec = Record::unstamped(t, node, event);
        self.unflushed = true;
        if let Err(e) = self.faults.write(&rec) {
            self.fault_failed(e);
        }
    }

    /// Flushes what [`Self::fault_unflushed`] wrote.
    fn flush_faults(&mut self) {
        if std::mem::take(&mut self.unflushed) {
            if let Err(e) = self.faults.flush() {
                self.fault_failed(e);
            }
        }
    }

    fn fault_failed(&mut self, e: io::Error) {
        eprintln!("coordlab: cannot write faults.jsonl: {e}");
        self.write_failures.push(format!("cannot write faults.jsonl: {e}"));
    }

    /// The index of node `id`, or a line saying there is no such node.
    pub fn find(&self, id: u64) -> Result<usize, String> {
        self.nodes.iter().position(|n| n.plan.id == id).ok_or_else(|| {
            let ids: Vec<String> = self.nodes.iter().map(|n| n.plan.id.to_string()).collect();
            format!("there is no node {id} (nodes: {})", ids.join(", "))
        })
    }

    /// SIGSTOP node `id`.
    pub fn pause(&mut self, id: u64) -> Result<String, String> {
        let record = |pid| Event::Pause { pid };
        self.act(
            id,
            |s| *s == State::Running,
            "running",
            Signal::SIGSTOP,
            record,
            State::Paused,
        )?;
        Ok(format!("paused node {id} (SIGSTOP): slow, not dead"))
    }

    /// SIGCONT node `id`.
    pub fn resume(&mut self, id: u64) -> Result<String, String> {
        let record = |pid| Event::Resume { pid };
        self.act(
            id,
            |s| *s == State::Paused,
            "paused",
            Signal::SIGCONT,
            record,
            State::Running,
        )?;
        Ok(format!("resumed node {id} (SIGCONT)"))
    }

    /// SIGKILL node `id` (running or paused).
    pub fn kill(&mut self, id: u64) -> Result<String, String> {
        let record = |pid| Event::Kill {
            pid,
            signal: "SIGKILL".into(),
        };
        let i = self.find(id)?;
        if matches!(self.nodes[i].state, State::Killed | State::Exited(_)) {
            return Err(format!(
                "node {id} is already dead ({}); `restart {id}` starts it again",
                describe_state(&self.nodes[i])
            ));
        }
        let running = |s: &State| matches!(s, State::Running | State::Paused);
        self.act(id, running, "running", Signal::SIGKILL, record, State::Killed)?;
        Ok(format!("killed node {id} (SIGKILL): dead"))
    }

    /// Records then sends `sig` to node `id` if its state allows (`must_be` names what it
    /// must be otherwise), and moves it to `after`.
    fn act(
        &mut self,
        id: u64,
        allowed: impl Fn(&State) -> bool,
        must_be: &str,
        sig: Signal,
        record: impl FnOnce(u32) -> Event,
        after: State,
    ) -> Result<Pid, String> {
        let i = self.find(id)?;
        let n = &self.nodes[i];
        let pid = match n.pid {
            Some(pid) if allowed(&n.state) => pid,
            _ => return Err(format!("node {id} is not {must_be} ({})", describe_state(n))),
        };
        self.fault(Some(id), record(pid.as_raw() as u32));
        kill(pid, sig).map_err(|e| format!("cannot send {} to node {id} (pid {pid}): {e}", sig.as_str()))?;
        if after == State::Killed {
            let t = wall_us();
            self.beliefs.process_ended(id, t, Proc::Killed);
            self.nodes[i].died_at = Some(t);
        }
        self.nodes[i].state = after;
        Ok(pid)
    }

    /// Starts node `id` again after it died, as an initiator (a recovered node announces
    /// itself), on a socket bound afresh to its same address, appending to its same log files.
    pub fn restart(&mut self, id: u64) -> Result<String, String> {
        let i = self.find(id)?;
        if self.nodes[i].state == State::Killed {
            self.reap_until(Duration::from_secs(1), |f| matches!(f.nodes[i].state, State::Exited(_)));
        }
        let n = &self.nodes[i];
        if !matches!(n.state, State::Exited(_)) {
            return Err(format!(
                "node {id} is {}; only a dead node can be restarted (kill it first)",
                describe_state(n)
            ));
        }
        // Whatever the old process wrote last is read now, so it cannot land after the reset.
        self.refresh_node(i);
        self.nodes[i].tail.restarted();
        let plan = self.nodes[i].plan.clone();
        let socket = bind_std(plan.addr).map_err(|e| format!("cannot restart node {id}: {e}"))?;
        // A recovered election node announces itself; a mutual-exclusion node keeps its role.
        let initiator = !self.args.is_resource(super::RESOURCE_NODE) || plan.initiator;
        let pid = self.spawn_one(&plan, initiator, socket, None)?;
        self.nodes[i].restarted_at = Some(wall_us());
        self.fault(
            Some(id),
            Event::Restart {
                pid: pid.as_raw() as u32,
            },
        );
        Ok(format!("restarted node {id} (pid {pid}) on {}", plan.addr))
    }

    /// Reaps every node process that ended; returns a line for each that ended on its own.
    pub fn reap(&mut self) -> Vec<String> {
        let mut news = Vec::new();
        loop {
            let (pid, status) = match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(pid, code)) => (pid, format!("exit {code}")),
                Ok(WaitStatus::Signaled(pid, sig, _)) => (pid, format!("signal {}", sig.as_str())),
                Ok(WaitStatus::StillAlive) | Err(_) => {
                    self.flush_faults();
                    return news;
                }
                Ok(_) => continue,
            };
            if let Some(line) = self.reaped(pid, status) {
                news.push(line);
            }
        }
    }

    fn reaped(&mut self, pid: Pid, status: String) -> Option<String> {
        let i = self.by_pid.remove(&pid)?;
        if self.nodes[i].pid != Some(pid) || matches!(self.nodes[i].state, State::Exited(_)) {
            return None;
        }
        let id = self.nodes[i].plan.id;
        self.fault_unflushed(
            wall_us(),
            Some(id),
            Event::Exit {
                pid: pid.as_raw() as u32,
                status: status.clone(),
            },
        );
        let expected = self.nodes[i].state == State::Killed;
        if !expected {
            let t = wall_us();
            self.beliefs.process_ended(id, t, Proc::Exited);
            self.nodes[i].died_at = Some(t);
        }
        // A node exits with this status only when it could not write its trace (runtime.rs).
        if status == format!("exit {}", crate::error::WRITE_FAILED) {
            self.write_failures.push(format!(
                "node {id} could not write its trace {} (full disk?) and stopped",
                self.args.trace_path(id).display()
            ));
        }
        self.nodes[i].state = State::Exited(status.clone());
        if self.stopping {
            // Every trace is read to its end once all are reaped (`stop_all`).
            return None;
        }
        // Its last trace lines are read now: a node that started and then failed is not one
        // that never started.
        self.refresh_node(i);
        let log = self.args.log_path(id);
        if !expected && !self.nodes[i].started {
            let said = last_words(&log);
            let line = format!("node {id} failed to start ({status}): {}", said.trim());
            if !self.all_started && self.start_failure.is_none() {
                self.start_failure = Some(line.clone());
            }
            return Some(format!("{line}; see {}", log.display()));
        }
        (!expected).then(|| {
            format!(
                "node {id} (pid {pid}) ended on its own: {status}; see {}",
                log.display()
            )
        })
    }

    /// Reaps for up to `limit`, until `done` holds.
    fn reap_until(&mut self, limit: Duration, done: impl Fn(&Fleet) -> bool) {
        let deadline = Instant::now() + limit;
        while !done(self) && Instant::now() < deadline {
            self.reap();
            // Short: a launch ends only when its last node is reaped, and a check costs one
            // waitpid (the fleet's view is updated only for the nodes that ended).
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn all_reaped(&self) -> bool {
        self.unreaped().next().is_none()
    }

    /// The clean stop: `shutdown` recorded, paused nodes continued, SIGTERM to all, SIGKILL to
    /// any still there after the grace period, every process reaped and its exit recorded.
    pub(crate) fn stop_all(&mut self) {
        self.fault(None, Event::Shutdown {});
        self.stopping = true;
        let paused: Vec<u64> = self
            .nodes
            .iter()
            .filter(|n| n.state == State::Paused)
            .map(|n| n.plan.id)
            .collect();
        for id in paused {
            let _ = self.resume(id);
        }
        // One signal to the nodes' process group first: sent node by node, each woken node ran
        // its stop on the launcher's core before the next signal went out (measured: 1.1 s for
        // 4,096 nodes, the other core idle). Only while a running node is in it, so that the
        // group is surely still this launch's. Then each node, for any outside the group.
        let running = || {
            self.nodes
                .iter()
                .filter(|n| n.state == State::Running)
                .filter_map(|n| n.pid)
        };
        let group = self
            .group
            .filter(|&g| running().any(|p| nix::unistd::getpgid(Some(p)) == Ok(g)));
        // Found before any node is woken: once the group's thousands of nodes run their stop,
        // the launcher gets a small share of the cores, and a signal to each node after the
        // group's took it 1.8-4.1 s at 16,384 nodes.
        let outside: Vec<_> = running()
            .filter(|&p| group.is_none_or(|g| nix::unistd::getpgid(Some(p)) != Ok(g)))
            .collect();
        if let Some(g) = group {
            let _ = nix::sys::signal::killpg(g, Signal::SIGTERM);
        }
        for pid in outside {
            let _ = kill(pid, Signal::SIGTERM);
        }
        super::phases::mark("sigterm");
        let grace = stop_grace(self.unreaped().count());
        self.reap_until(grace, Fleet::all_reaped);
        let stragglers: Vec<u64> = self
            .unreaped()
            .filter(|n| n.state == State::Running)
            .map(|n| n.plan.id)
            .collect();
        if !stragglers.is_empty() {
            eprintln!("{}", stragglers_line(&stragglers, grace));
        }
        for id in stragglers {
            let _ = self.kill(id);
        }
        // SIGKILL cannot be refused; the bound only guards against a process stuck in the kernel.
        self.reap_until(grace, Fleet::all_reaped);
        for n in self.unreaped() {
            eprintln!("coordlab: node {} (pid {:?}) could not be reaped", n.plan.id, n.pid);
        }
        super::phases::mark("reaped");
        self.stopping = false;
        self.refresh();
    }

    fn unreaped(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter().filter(|n| !matches!(n.state, State::Exited(_)))
    }
}

impl Drop for Fleet {
    /// A fleet dropped without its clean stop (an error or a panic in the launcher) still
    /// leaves no process behind: SIGKILL to every unreaped node (an unreaped pid cannot have
    /// been reused, so this never hits a stranger), then reap.
    fn drop(&mut self) {
        for n in self.unreaped() {
            if let Some(pid) = n.pid {
                let _ = kill(pid, Signal::SIGKILL);
            }
        }
        for n in &mut self.nodes {
            if let (false, Some(pid)) = (matches!(n.state, State::Exited(_)), n.pid) {
                let _ = waitpid(pid, None);
                n.state = State::Exited("killed with the launcher".into());
            }
        }
    }
}

#[cfg(test)]
#[path = "nodes_tests.rs"]
mod tests;
