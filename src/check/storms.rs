//! How busy each term was, and how long the cluster went without a leader.
//!
//! A term's window runs from its first `election_start` to the first `election_start` of a
//! newer term (or the end). Protocol messages are every send but the upkeep ones ([`UPKEEP`]:
//! heartbeats, acknowledgements, probes, the pre-votes a node asks while it suspects the
//! leader, and the NEWER answers that bring a stale sender up to date), which a run sends at a
//! rate set by time and faults, not by the election. A term whose protocol messages exceed
//! [`bound`] is a storm.

use super::beliefs::LeadSpan;
use super::timeline::{Proc, Timeline};
use crate::trace::{Event, NodeId, RunDir};
use std::collections::{BTreeMap, BTreeSet};

/// The message types of upkeep, counted apart from the protocol's.
pub(crate) const UPKEEP: &[&str] = &[
    "HEARTBEAT",
    "HB_ACK",
    "ACK",
    "PROBE",
    "ALIVE",
    "PRE_VOTE",
    "PRE_VOTE_REPLY",
    "NEWER",
];

/// Whether `msg` is upkeep: [`UPKEEP`], or a failure detector's own message (phi's BEATs and
/// SWIM's probes and gossip go all along, at a rate set by the detector, not by an election).
pub(crate) fn is_upkeep(msg: &str) -> bool {
    UPKEEP.contains(&msg) || crate::algo::detector::DETECTOR_MESSAGES.contains(&msg)
}

/// One term's protocol traffic.
#[derive(Debug, Clone, PartialEq)]
pub struct TermTraffic {
    /// The term.
    pub term: u64,
    /// Its window, microseconds.
    pub from: u64,
    /// The window's end, microseconds.
    pub to: u64,
    /// Protocol messages sent in the window.
    pub messages: u64,
}

impl TermTraffic {
    /// Messages per second over the window (the window counts as at least 1 ms).
    pub fn rate(&self) -> f64 {
        self.messages as f64 / ((self.to.saturating_sub(self.from)).max(1000) as f64 / 1e6)
    }
}

/// The storm report of a run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Storms {
    /// Every term's traffic, by term.
    pub terms: Vec<TermTraffic>,
    /// The most protocol messages one election may send here (see [`bound`]).
    pub bound: u64,
    /// The terms over the bound.
    pub over: Vec<u64>,
}

impl Storms {
    /// The term with the highest message rate.
    pub(crate) fn busiest(&self) -> Option<&TermTraffic> {
        self.terms.iter().max_by(|a, b| a.rate().total_cmp(&b.rate()))
    }
}

/// The most protocol messages one election may send on `n` nodes and `m` links: above every
/// election's worst case here (Chang-Roberts n(n+1)/2 + n, bully n(n-1) + n, Franklin
/// 2n(log2 n + 1) + n + 1, Yo-Yo and echo a few times 2m) plus votes and repairs (4n).
pub fn bound(n: u64, m: u64) -> u64 {
    2 * n * n + 6 * m + 4 * n
}

/// Counts each term's protocol messages in `run`; `first_starts` is each term's first
/// `election_start` time.
pub fn count(run: &RunDir, first_starts: &BTreeMap<u64, u64>, end: u64) -> Storms {
    let n = run.info.nodes.len() as u64;
    let links: BTreeSet<(NodeId, NodeId)> = run
        .info
        .nodes
        .iter()
        .flat_map(|nd| nd.peers.iter().map(move |&p| (nd.id.min(p), nd.id.max(p))))
        .collect();
    let bound = bound(n, links.len() as u64);
    let sends: Vec<u64> = run
        .node_events
        .iter()
        .filter(|r| matches!(&r.event, Event::Send { msg, .. } if !is_upkeep(msg)))
        .map(|r| r.t)
        .collect();
    let in_window = |from: u64, to: u64| {
        let a = sends.partition_point(|&t| t < from);
        let b = sends.partition_point(|&t| t < to);
        (b - a) as u64
    };
    let list: Vec<(u64, u64)> = first_starts.iter().map(|(&k, &v)| (k, v)).collect();
    let mut terms = Vec::new();
    for (i, &(term, from)) in list.iter().enumerate() {
        let to = list[i + 1..]
            .iter()
            .map(|x| x.1)
            .filter(|&t| t > from)
            .min()
            .unwrap_or(end)
            .max(from);
        terms.push(TermTraffic {
            term,
            from,
            to,
            messages: in_window(from, to),
        });
    }
    let over = terms.iter().filter(|t| t.messages > bound).map(|t| t.term).collect();
    Storms { terms, bound, over }
}

/// A stretch during which no running node believed it led.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leaderless {
    /// From, microseconds.
    pub from: u64,
    /// To, microseconds.
    pub to: u64,
}

/// Every stretch from `start` to the end of `timeline` during which no running node believed
/// it led (a paused leader leads nobody).
pub(crate) fn leaderless(spans: &[LeadSpan], timeline: &Timeline, start: u64) -> Vec<Leaderless> {
    let end = timeline.end_us;
    let mut points: BTreeSet<u64> = BTreeSet::from([start, end]);
    for s in spans {
        points.insert(s.from);
        points.insert(s.to);
    }
    for list in timeline.changes.values() {
        points.extend(list.iter().map(|c| c.t));
    }
    let points: Vec<u64> = points.into_iter().filter(|&t| t >= start && t <= end).collect();
    let mut out: Vec<Leaderless> = Vec::new();
    for w in points.windows(2) {
        let (a, b) = (w[0], w[1]);
        let led = spans
            .iter()
            .any(|s| s.from <= a && s.to >= b && timeline.state_at(s.node, a).0 == Proc::Running);
        if led {
            continue;
        }
        match out.last_mut() {
            Some(l) if l.to == a => l.to = b,
            _ => out.push(Leaderless { from: a, to: b }),
        }
    }
    out
}
