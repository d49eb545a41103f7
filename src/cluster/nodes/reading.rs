//! What the nodes' traces say, read as they grow: each node's view, the agreement, the goal,
//! suspicions and elections seen, and the `status` table.

use super::{Agreement, Fleet};
use crate::cluster::model::{describe_belief, State, Suspicion};
use crate::cluster::watch::Tail;
use crate::trace::{wall_us, Jsonl};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::Instant;

impl Fleet {
    /// Reads what every node wrote to its trace since the last call.
    pub(crate) fn refresh(&mut self) {
        self.refresh_until(None);
    }

    /// Reads what the nodes wrote since the last call, until `deadline` if one is given: then
    /// the next call goes on from the node where this one stopped, so that a flood of trace
    /// delays the reading, not the launcher's schedule, and no node's file is left behind for
    /// ever. At least one node is read each call.
    pub(crate) fn refresh_until(&mut self, deadline: Option<Instant>) {
        let n = self.nodes.len();
        for k in 0..n {
            let i = (self.read_next + k) % n;
            if k > 0 && deadline.is_some_and(|d| Instant::now() >= d) {
                self.read_next = i;
                break;
            }
            self.refresh_node(i);
        }
        // Judged on every call: with thousands of nodes a call may never read them all.
        if !self.all_started {
            self.all_started = self.nodes.iter().all(|n| n.started);
        }
    }

    /// Leaves the nodes' `send`/`recv` lines to the thread parsing behind the run
    /// (`Tail::defer_messages`, `behind.rs`) when no view of the launcher reads them: no family
    /// progress and no phi detector.
    pub(crate) fn defer_messages_if_unwatched(&mut self) {
        if self.progress.is_none() && !self.detectors.watches_messages() {
            for n in &mut self.nodes {
                n.tail.defer_messages();
            }
            self.behind = super::super::behind::Parsing::start();
        }
    }

    /// Hands the lines read and left unparsed to the thread parsing behind the run.
    pub(crate) fn hand_behind(&mut self) {
        let Some(parsing) = &self.behind else { return };
        for n in &mut self.nodes {
            if let Some(file) = n.tail.hand_behind() {
                parsing.wake(file);
            }
        }
    }

    /// Hands over every trace the fleet followed, read to its end, by file name: what the run's
    /// check would otherwise read and parse again.
    pub(crate) fn hand_over_traces(&mut self) -> BTreeMap<String, Jsonl> {
        if let Some(p) = self.behind.as_mut() {
            p.stop();
        }
        // The nodes are gone: what is left to parse is parsed on both cores.
        let half = self.nodes.len().div_ceil(2);
        let (first, second) = self.nodes.split_at_mut(half);
        let finish = |nodes: &mut [super::Node]| -> Vec<(String, Jsonl)> {
            let mut out = Vec::new();
            for n in nodes {
                match n.tail.finish() {
                    Ok(read) => out.push((n.tail.name().to_string(), read)),
                    // Left out, it is read from disk again, and that reading reports the error.
                    Err(e) => eprintln!("coordlab: cannot read the trace of node {}: {e}", n.plan.id),
                }
            }
            out
        };
        let (theirs, mine) = crate::both::both(|| finish(second), || finish(first));
        mine.into_iter().chain(theirs).collect()
    }

    pub(super) fn refresh_node(&mut self, i: usize) {
        let node = &mut self.nodes[i];
        match node.tail.read_new() {
            Ok(new) if new.is_empty() && node.tail.last_deferred().is_none() => {}
            Ok(new) => {
                // The records stay in the tail (the run's check takes them over); lend them out
                // while the node's own view is updated.
                let tail = std::mem::replace(&mut node.tail, Tail::new(PathBuf::new()));
                for r in &tail.records()[new] {
                    node.apply(r);
                    self.beliefs.feed(node.plan.id, r.t, &r.event);
                    self.detectors.feed(node.plan.id, r);
                    if let Some(p) = self.progress.as_mut() {
                        p.feed(node.plan.id, r);
                    }
                }
                node.tail = tail;
                // A message line left unparsed (`Tail::defer_messages`) is still the node's last
                // event for `status`.
                if let Some((kind, t)) = node.tail.take_last_deferred() {
                    if node.last.is_none_or(|(_, last)| last <= t) {
                        node.last = Some((kind, t));
                    }
                    self.detectors.touch(node.plan.id, t);
                }
            }
            Err(e) => eprintln!("coordlab: cannot read the trace of node {}: {e}", node.plan.id),
        }
    }

    /// The agreement of every live node, if there is one: at least one node is live, every live
    /// node follows the same leader in the same term, and that leader is live.
    pub fn agreement(&self) -> Option<Agreement> {
        if self.nodes.iter().any(|n| n.state == State::Running && !n.started) {
            return None;
        }
        let live: Vec<u64> = self.live_ids();
        let a = self.beliefs.agreement(&live)?;
        Some(Agreement {
            leader: a.belief.leader,
            term: a.belief.term,
            nodes: live,
            at_us: a.at_us,
            leader_since_us: a.leader_since_us,
        })
    }

    /// When the run's goal holds, in words: the family's progress, or for elections the
    /// agreement of every live node on a live leader.
    pub fn done(&self) -> Option<String> {
        match &self.progress {
            Some(p) => p.done(&self.live_ids()),
            None => self.agreement().map(|a| {
                format!(
                    "elected: node {} leads term {}; all {} live nodes agree ({} ms after start)",
                    a.leader,
                    a.term,
                    a.nodes.len(),
                    a.at_us.saturating_sub(self.start_us) / 1000
                )
            }),
        }
    }

    /// The ids of the nodes running and started.
    pub(crate) fn live_ids(&self) -> Vec<u64> {
        self.nodes.iter().filter(|n| n.live()).map(|n| n.plan.id).collect()
    }

    /// Every suspicion of `target` recorded at or after `since`, earliest first.
    pub(crate) fn suspicions_of(&self, target: u64, since: u64) -> Vec<Suspicion> {
        let mut s: Vec<Suspicion> = self
            .nodes
            .iter()
            .flat_map(|n| n.suspicions.iter())
            .filter(|s| s.target == target && s.t >= since)
            .cloned()
            .collect();
        s.sort_by_key(|s| s.t);
        s
    }

    /// The first `election_start` of every term above `term` recorded at or after `since`:
    /// (trace time, node, term), by term.
    pub(crate) fn elections_after(&self, term: u64, since: u64) -> Vec<(u64, u64, u64)> {
        let mut first: std::collections::BTreeMap<u64, (u64, u64)> = std::collections::BTreeMap::new();
        for n in &self.nodes {
            for &(t, tm) in n.elections.iter().filter(|&&(t, tm)| tm > term && t >= since) {
                let e = first.entry(tm).or_insert((t, n.plan.id));
                if t < e.0 {
                    *e = (t, n.plan.id);
                }
            }
        }
        first.into_iter().map(|(tm, (t, id))| (t, id, tm)).collect()
    }

    /// The `status` table: node, pid, state, belief, last event.
    pub fn status(&self) -> String {
        let now = wall_us();
        let mut out = format!(
            "{:>5}  {:>8}  {:<8}  {:<34}  {}\n",
            "node", "pid", "state", "believes", "last event"
        );
        for n in &self.nodes {
            let pid = n.pid.map_or("-".to_string(), |p| p.to_string());
            let (state, believes) = match &n.state {
                State::Running | State::Paused => (
                    if n.state == State::Running { "running" } else { "paused" },
                    describe_belief(n, &self.beliefs),
                ),
                State::Killed => ("dead", "-".into()),
                State::Exited(s) => ("dead", format!("- ({s})")),
            };
            let last = match n.last {
                Some((kind, t)) => format!("{kind}, {} ago", ago(now.saturating_sub(t))),
                None => "-".into(),
            };
            let believes = match self.args.is_resource(n.plan.id) {
                true => "(the shared resource)".to_string(),
                false => believes,
            };
            let _ = writeln!(out, "{:>5}  {pid:>8}  {state:<8}  {believes:<34}  {last}", n.plan.id);
            if let Some(d) = self
                .detectors
                .line(n.plan.id, now, n.state == State::Paused)
                .filter(|_| matches!(n.state, State::Running | State::Paused))
            {
                let _ = writeln!(out, "{:>5}  {d}", "");
            }
        }
        let live = self.nodes.iter().filter(|n| n.live()).count();
        if self.args.is_resource(crate::cluster::RESOURCE_NODE) {
            out.push_str(&crate::cluster::mutex_goal::status_line(self));
            return out;
        }
        match self.agreement() {
            Some(a) => {
                let _ = write!(
                    out,
                    "all {live} live nodes agree: node {} leads term {}",
                    a.leader, a.term
                );
            }
            None => {
                let _ = write!(out, "the {live} live nodes do not (yet) agree on a live leader");
            }
        }
        out
    }

    /// The last `lines` lines of node `id`'s human log.
    pub(crate) fn log_tail(&self, id: u64, lines: usize) -> Result<String, String> {
        self.find(id)?;
        let path = self.args.log_path(id);
        let text = tail_lines(&path, lines).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if text.is_empty() {
            return Ok(format!("({} is empty)", path.display()));
        }
        Ok(text.trim_end().to_string())
    }

    /// Where node `id`'s human log is.
    pub(crate) fn log_path(&self, id: u64) -> PathBuf {
        self.args.log_path(id)
    }
}

fn ago(us: u64) -> String {
    if us < 1_000_000 {
        format!("{} ms", us / 1000)
    } else {
        format!("{:.1} s", us as f64 / 1e6)
    }
}

/// What a node that failed said last: its last `coordlab:` or `error:` line (clap's usage
/// errors end with a hint line), else its last line.
pub(super) fn last_words(log: &Path) -> String {
    let text = tail_lines(log, 8).unwrap_or_default();
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    lines
        .iter()
        .rev()
        .find(|l| l.starts_with("coordlab:") || l.starts_with("error:"))
        .or(lines.last())
        .map_or_else(|| "(nothing in its log)".to_string(), |l| l.to_string())
}

/// The last `lines` lines of a file, reading at most its last 1 MiB.
pub(in crate::cluster) fn tail_lines(path: &Path, lines: usize) -> io::Result<String> {
    let mut f = File::open(path)?;
    let len = f.metadata()?.len();
    let from = len.saturating_sub(1 << 20);
    f.seek(SeekFrom::Start(from))?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf)?;
    let text = String::from_utf8_lossy(&buf);
    let all: Vec<&str> = text.lines().collect();
    let keep = &all[all.len().saturating_sub(lines)..];
    Ok(keep.join("\n"))
}
