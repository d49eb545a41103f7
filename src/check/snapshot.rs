//! The snapshot section of `coordlab check` (bank runs): every recorded global state summed
//! over all nodes (balances plus money counted in channels) against the initial total. A
//! Chandy-Lamport snapshot that does not sum to it is a violation; a clock snapshot's error is
//! reported, since with skewed clocks it is expected. Self-contained: [`analyse`], [`summary`].
//!
//! Money is counted, not assumed: an account is counted once, at its first boot. A restarted
//! account that took back its stored state records it (`snapshot snap 0 method restored`):
//! the money must not change, so the snapshots after it are held to the same total. One that
//! came back without it (no state file, or one that did not verify) records its starting
//! balance again (`method initial`): that begins a new epoch, in which the money may differ
//! (what the restart created or destroyed). Each epoch's snapshots are compared with the money
//! of that epoch, which the first complete Chandy-Lamport snapshot of the epoch measures; a
//! change across such a restart is reported (explained: the state was lost), a change within
//! an epoch is a violation, and snapshots that stop after any restart are one too.

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
    /// The epoch (0 before any restart; k after the k-th restart) all its parts were recorded in.
    pub epoch: usize,
    /// When its last part was recorded.
    pub t: u64,
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
    /// Global states some node never finished (the run ended first, a node was dead, or a
    /// restart fell in the middle of it).
    pub incomplete: usize,
    /// Each restart of an account without its stored state, which begins an epoch: (node,
    /// when, the balance it came back with).
    pub restarts: Vec<(NodeId, u64, u64)>,
    /// Each restart of an account that took back its stored state: (node, when, its balance,
    /// the money in its transfers not yet acknowledged).
    pub restored: Vec<(NodeId, u64, u64, u64)>,
    /// Per epoch after the first: the money the epoch's first complete Chandy-Lamport snapshot
    /// counted (None: none completed in it).
    pub epoch_money: Vec<Option<u64>>,
    /// Chandy-Lamport snapshots completed before a restart (of either kind) but none in the
    /// time after the last one: (the restart's time, how long the run went on after it), when that time exceeds
    /// [`STOPPED_PERIODS`] periods and 2 s.
    pub stopped: Option<(u64, u64)>,
    /// The zero of the times in the words: the run's start (or the first record's time).
    pub start_us: u64,
    /// What the network was doing while the first broken snapshot was recorded (None: nothing).
    pub network: Option<String>,
}

/// Snapshot periods after a restart with no Chandy-Lamport snapshot completed that count as
/// snapshots having stopped.
pub(crate) const STOPPED_PERIODS: u64 = 3;

impl SnapshotFacts {
    /// The money that exists in `epoch`: the initial total before any restart, then what the
    /// epoch's first complete Chandy-Lamport snapshot counted (None: not known).
    pub fn money(&self, epoch: usize) -> Option<u64> {
        match epoch {
            0 => Some(self.initial),
            k => self.epoch_money.get(k - 1).copied().flatten(),
        }
    }

    /// The Chandy-Lamport states that do not sum to the money of their epoch.
    pub fn broken(&self) -> Vec<&GlobalState> {
        self.complete
            .iter()
            .filter(|g| g.method == "chandy-lamport" && self.money(g.epoch).is_some_and(|m| g.total() != m))
            .collect()
    }

    /// The clock states' errors (recorded minus the money of their epoch, where it is known).
    pub fn clock_errors(&self) -> Vec<i64> {
        self.complete
            .iter()
            .filter(|g| g.method == "clock")
            .filter_map(|g| self.money(g.epoch).map(|m| g.total() as i64 - m as i64))
            .collect()
    }

    /// The epochs after a restart whose money differs from the initial total: (epoch, money).
    pub(crate) fn changed_by_restarts(&self) -> Vec<(usize, u64)> {
        (1..=self.epoch_money.len())
            .filter_map(|k| self.money(k).filter(|&m| m != self.initial).map(|m| (k, m)))
            .collect()
    }
}

/// The facts of a loaded run.
pub fn analyse(run: &RunDir) -> SnapshotFacts {
    let period_ms = run.info.options["set"]["snapshot_ms"]
        .as_str()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_PERIOD_MS);
    let end = Timeline::build(run).end_us;
    let mut f = SnapshotFacts {
        start_us: run.info.start_us,
        ..analyse_until(&run.node_events, end, period_ms)
    };
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

/// One global state's parts as recorded: each node's (balance, in_flight), and the last part's time.
type Parts = (BTreeMap<NodeId, (u64, u64)>, u64);

/// The bank's default snapshot period (`snapshot_ms`).
const DEFAULT_PERIOD_MS: u64 = 1000;

/// The facts of node records (a run's, or the simulator's trace), the run ending at its last
/// record.
#[cfg(test)]
pub(crate) fn analyse_records(records: &[Record]) -> SnapshotFacts {
    let end = records.iter().map(|r| r.t).max().unwrap_or(0);
    analyse_until(records, end, DEFAULT_PERIOD_MS)
}

/// One node's `snapshot` record: its recording of a global state (or, with method `initial`
/// or `restored`, its account as it started).
pub(crate) struct Recorded<'a> {
    pub node: NodeId,
    pub t: u64,
    pub snap: u64,
    pub method: &'a str,
    pub balance: u64,
    pub in_flight: u64,
}

/// The `snapshot` records of nodes among `records`, in their order.
pub(crate) fn recorded<'a>(records: impl IntoIterator<Item = &'a Record>) -> impl Iterator<Item = Recorded<'a>> {
    records.into_iter().filter_map(|r| match (r.node, &r.event) {
        (
            Some(node),
            Event::Snapshot {
                snap,
                method,
                balance,
                in_flight,
            },
        ) => Some(Recorded {
            node,
            t: r.t,
            snap: *snap,
            method,
            balance: *balance,
            in_flight: *in_flight,
        }),
        _ => None,
    })
}

/// The facts of node records of a run that ended at `end`, snapshots taken every `period_ms`.
pub(crate) fn analyse_until(records: &[Record], end: u64, period_ms: u64) -> SnapshotFacts {
    let mut f = SnapshotFacts {
        start_us: records.iter().map(|r| r.t).min().unwrap_or(0),
        ..SnapshotFacts::default()
    };
    let mut booted: BTreeMap<NodeId, u64> = BTreeMap::new();
    // The times epochs begin: each restart's starting-balance record.
    let mut epochs: Vec<u64> = Vec::new();
    for Recorded {
        node: n,
        t,
        method,
        balance,
        in_flight,
        ..
    } in recorded(records)
    {
        if method == "restored" {
            f.restored.push((n, t, balance, in_flight));
            // A restored account not seen starting (its first trace lost) still counts once.
            if let std::collections::btree_map::Entry::Vacant(v) = booted.entry(n) {
                v.insert(balance + in_flight);
                f.initial += balance + in_flight;
                f.nodes += 1;
            }
        } else if method == "initial" {
            if let std::collections::btree_map::Entry::Vacant(v) = booted.entry(n) {
                v.insert(balance);
                f.initial += balance;
                f.nodes += 1;
            } else {
                f.restarts.push((n, t, balance));
                epochs.push(t);
            }
        }
    }
    epochs.sort();
    let epoch_of = |t: u64| epochs.partition_point(|&e| e <= t);
    // (method, snap, epoch) -> each node's (balance, in_flight), and the last part's time.
    let mut parts: BTreeMap<(String, u64, usize), Parts> = BTreeMap::new();
    for r in recorded(records).filter(|r| r.method != "initial" && r.method != "restored") {
        let e = parts.entry((r.method.to_string(), r.snap, epoch_of(r.t))).or_default();
        e.0.insert(r.node, (r.balance, r.in_flight));
        e.1 = e.1.max(r.t);
    }
    for ((method, snap, epoch), (p, t)) in parts {
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
            epoch,
            t,
        });
    }
    f.complete.sort_by_key(|g| g.t);
    f.epoch_money = (1..=epochs.len())
        .map(|k| {
            f.complete
                .iter()
                .find(|g| g.epoch == k && g.method == "chandy-lamport")
                .map(GlobalState::total)
        })
        .collect();
    let last_restart = epochs.iter().chain(f.restored.iter().map(|r| &r.1)).max().copied();
    let cl_before =
        last_restart.is_some_and(|last| f.complete.iter().any(|g| g.method == "chandy-lamport" && g.t < last));
    if let (true, Some(last)) = (cl_before, last_restart) {
        let after = end.saturating_sub(last);
        let none = !f.complete.iter().any(|g| g.method == "chandy-lamport" && g.t > last);
        if none && after > (STOPPED_PERIODS * period_ms * 1000).max(2_000_000) {
            f.stopped = Some((last, after));
        }
    }
    f
}

/// The snapshot section in words (empty when the run recorded no snapshot).
pub fn summary(f: &SnapshotFacts) -> String {
    if f.nodes == 0 {
        return String::new();
    }
    let mut s = format!("\nsnapshots: {} accounts, {} in all at the start\n", f.nodes, f.initial);
    for &(n, t, b, out) in &f.restored {
        s += &format!(
            "  node {n} restarted at {} and took back its stored state: a balance of {b} and {out} in transfers not yet acknowledged; the money must not change\n",
            super::summary::at(f.start_us, t)
        );
    }
    for &(n, t, b) in &f.restarts {
        s += &format!(
            "  node {n} restarted at {} without its stored state (no state file, or one that did not verify) and with the starting balance of {b}: a new epoch, whose money its snapshots count\n",
            super::summary::at(f.start_us, t)
        );
    }
    for (k, m) in f.changed_by_restarts() {
        s += &format!(
            "  EXPLAINED: after restart {k} the snapshots count {m}, {:+} against the {} at the start: the restart created or destroyed money (its stored state was missing or refused)\n",
            m as i64 - f.initial as i64,
            f.initial
        );
    }
    if let Some((_, after)) = f.stopped {
        s += &format!(
            "  VIOLATION: snapshots stopped: none completed in the {:.1} s after the last restart\n",
            after as f64 / 1e6
        );
    }
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
                "  VIOLATION: {} of {} chandy-lamport snapshots do not sum to the money of their epoch ({} at the start):\n",
                broken.len(),
                cl.len(),
                f.initial
            );
            for g in broken.iter().take(10) {
                s += &format!(
                    "    snapshot {} (epoch {}): {} + {} in channels = {}, not {}\n",
                    g.snap,
                    g.epoch,
                    g.balances,
                    g.in_flight,
                    g.total(),
                    f.money(g.epoch).unwrap_or(0)
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
        let mut out = Vec::new();
        let broken = self.broken();
        if !broken.is_empty() {
            out.push(Finding::violation(
                "conservation",
                format!(
                    "snapshot: {} Chandy-Lamport snapshots do not sum to the money of their epoch ({} at the start){}",
                    broken.len(),
                    self.initial,
                    self.network
                        .as_ref()
                        .map_or(String::new(), |n| format!("; the network then (the first): {n}"))
                ),
            ));
        }
        if let Some((_, after)) = self.stopped {
            out.push(Finding::violation(
                "snapshots after a restart",
                format!(
                    "snapshot: none completed in the {:.1} s after the last restart",
                    after as f64 / 1e6
                ),
            ));
        }
        for (k, m) in self.changed_by_restarts() {
            let (n, _, b) = self.restarts[k - 1];
            out.push(Finding {
                property: "money across a restart".into(),
                what: format!(
                    "snapshot: after restart {k} the bank holds {m}, {:+} against the {} at the start",
                    m as i64 - self.initial as i64,
                    self.initial
                ),
                violation: true,
                explanation: Some(super::explain::Explanation {
                    term: 0,
                    inherent: true,
                    by_design: false,
                    words: format!(
                        "node {n} came back without its stored state (no state file, or one that did not verify) and with a balance of {b}, not what it held when it died: a restart without stable storage creates or destroys money"
                    ),
                }),
            });
        }
        out
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
