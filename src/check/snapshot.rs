//! The snapshot section of `coordlab check` (bank runs): every recorded global state summed
//! over all nodes (balances plus money counted in channels) against the initial total. A
//! Chandy-Lamport snapshot that does not sum to it is a violation; a clock snapshot's error is
//! reported, since with skewed clocks it is expected. Self-contained: [`analyse`], [`summary`].

use super::section::{Finding, Section};
use super::timeline::Timeline;
use super::Analysis;
use crate::trace::{Event, NodeId, Record, RunDir};
use std::any::Any;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One global state: the sum of every node's part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalState {
    /// `chandy-lamport` or `clock`.
    pub method: String,
    /// The snapshot's number (Chandy-Lamport) or clock time in ms (clock).
    pub snap: u64,
    /// Sum of the balances recorded.
    pub balances: u64,
    /// Sum of the money recorded in channels.
    pub in_flight: u64,
    /// How many nodes recorded their part.
    pub parts: usize,
}

impl GlobalState {
    /// Balances plus channels.
    pub fn total(&self) -> u64 {
        self.balances + self.in_flight
    }
}

/// The snapshot facts of a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SnapshotFacts {
    /// The money at the start (sum of the `initial` parts).
    pub initial: u64,
    /// How many nodes there are.
    pub nodes: usize,
    /// Every global state every node recorded its part of.
    pub complete: Vec<GlobalState>,
    /// Global states some node never finished (the run ended first).
    pub incomplete: usize,
    /// What the network was doing while the first broken snapshot was recorded (None: nothing).
    pub network: Option<String>,
}

impl SnapshotFacts {
    /// The Chandy-Lamport states that do not sum to the initial total.
    pub fn broken(&self) -> Vec<&GlobalState> {
        self.complete
            .iter()
            .filter(|g| g.method == "chandy-lamport" && g.total() != self.initial)
            .collect()
    }

    /// The clock states' errors (recorded minus initial).
    pub fn clock_errors(&self) -> Vec<i64> {
        self.complete
            .iter()
            .filter(|g| g.method == "clock")
            .map(|g| g.total() as i64 - self.initial as i64)
            .collect()
    }
}

/// The facts of a loaded run.
pub fn analyse(run: &RunDir) -> SnapshotFacts {
    let mut f = analyse_records(&run.node_events);
    let first = f.broken().first().map(|g| (g.method.clone(), g.snap));
    if let Some((m, k)) = first {
        let times: Vec<u64> = run
            .node_events
            .iter()
            .filter(|r| matches!(&r.event, Event::Snapshot { snap, method, .. } if *snap == k && *method == m))
            .map(|r| r.t)
            .collect();
        if let (Some(&a), Some(&b)) = (times.iter().min(), times.iter().max()) {
            f.network = super::network::Network::of(run).during(a, b);
        }
    }
    f
}

/// The facts of node records (a run's, or the simulator's trace).
pub fn analyse_records(records: &[Record]) -> SnapshotFacts {
    let mut f = SnapshotFacts::default();
    // (method, snap) -> each node's (balance, in_flight).
    let mut parts: BTreeMap<(String, u64), BTreeMap<NodeId, (u64, u64)>> = BTreeMap::new();
    for r in records {
        if let (
            Some(n),
            Event::Snapshot {
                snap,
                method,
                balance,
                in_flight,
            },
        ) = (r.node, &r.event)
        {
            if method == "initial" {
                f.initial += balance;
                f.nodes += 1;
            } else {
                parts
                    .entry((method.clone(), *snap))
                    .or_default()
                    .insert(n, (*balance, *in_flight));
            }
        }
    }
    for ((method, snap), p) in parts {
        if p.len() < f.nodes {
            f.incomplete += 1;
            continue;
        }
        f.complete.push(GlobalState {
            method,
            snap,
            balances: p.values().map(|x| x.0).sum(),
            in_flight: p.values().map(|x| x.1).sum(),
            parts: p.len(),
        });
    }
    f
}

/// The snapshot section in words (empty when the run recorded no snapshot).
pub fn summary(f: &SnapshotFacts) -> String {
    if f.nodes == 0 {
        return String::new();
    }
    let mut s = format!("\nsnapshots: {} accounts, {} in all at the start\n", f.nodes, f.initial);
    let cl: Vec<&GlobalState> = f.complete.iter().filter(|g| g.method == "chandy-lamport").collect();
    let broken = f.broken();
    if !cl.is_empty() {
        if broken.is_empty() {
            s += &format!(
                "  chandy-lamport: all {} snapshots sum to {} (balances plus money in channels, up to {} in channels)\n",
                cl.len(),
                f.initial,
                cl.iter().map(|g| g.in_flight).max().unwrap_or(0)
            );
        } else {
            s += &format!(
                "  VIOLATION: {} of {} chandy-lamport snapshots do not sum to {}:\n",
                broken.len(),
                cl.len(),
                f.initial
            );
            for g in broken.iter().take(10) {
                s += &format!(
                    "    snapshot {}: {} + {} in channels = {}\n",
                    g.snap,
                    g.balances,
                    g.in_flight,
                    g.total()
                );
            }
        }
    }
    let errs = f.clock_errors();
    if !errs.is_empty() {
        let wrong = errs.iter().filter(|&&e| e != 0).count();
        let worst = errs.iter().copied().max_by_key(|e| e.abs()).unwrap_or(0);
        s += &format!(
            "  clock: {wrong} of {} snapshots are wrong; the worst is off by {worst:+} ({:+.1}%)\n",
            errs.len(),
            worst as f64 * 100.0 / f.initial.max(1) as f64
        );
    }
    if f.incomplete > 0 {
        s += &format!(
            "  {} snapshots were not finished by every node before the run ended\n",
            f.incomplete
        );
    }
    s
}

/// The snapshot family's section of `coordlab check`: None when no snapshot was recorded.
pub fn section(run: &RunDir, _timeline: &Timeline) -> Option<Arc<dyn Section>> {
    let f = analyse(run);
    (f.nodes > 0).then(|| Arc::new(f) as Arc<dyn Section>)
}

impl Section for SnapshotFacts {
    fn family(&self) -> &'static str {
        "snapshot"
    }

    fn findings(&self) -> Vec<Finding> {
        let broken = self.broken();
        if broken.is_empty() {
            return Vec::new();
        }
        vec![Finding::violation(
            "conservation",
            format!(
                "snapshot: {} Chandy-Lamport snapshots do not sum to the {} the bank holds{}",
                broken.len(),
                self.initial,
                self.network
                    .as_ref()
                    .map_or(String::new(), |n| format!("; the network then (the first): {n}"))
            ),
        )]
    }

    fn properties(&self, _a: &Analysis) -> Vec<String> {
        summary(self).trim().lines().map(|l| l.trim().to_string()).collect()
    }

    fn details(&self, _a: &Analysis, out: &mut String) {
        out.push_str(summary(self).trim_start());
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
