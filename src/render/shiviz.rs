//! A log ShiViz accepts: its parsing regex on the first line, a blank line, then two lines
//! per event: `nodeN {"nodeN": k, ...}` (the node's vector clock) and the event in words.
//!
//! The clocks follow ShiViz's rules: every node's own entry starts at 1 and grows by one per
//! logged event; a receive merges the sender's clock at its send, then ticks; a clock only
//! names nodes that log (entries arrive only through merges of logged sends). Events are
//! written in an order where every send comes before its receive.

use super::story::{Window, HEARTBEATS};
use crate::trace::messages::{received, sent, Sends};
use crate::trace::{Event, NodeId, Record, RunDir};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt::Write;

/// The parsing regex ShiViz reads from the first line.
pub(crate) const REGEX: &str = r"(?<host>\S*) (?<clock>{.*})\n(?<event>.*)";

/// A vector clock: node -> count.
pub type Clock = BTreeMap<NodeId, u64>;

/// Whether a record is drawn: every node event except heartbeats (unless shown) within the window.
fn logged(r: &Record, w: &Window, start_us: u64) -> bool {
    let t_ms = r.t.saturating_sub(start_us) / 1000;
    if w.from_ms.is_some_and(|f| t_ms < f) || w.to_ms.is_some_and(|to| t_ms > to) {
        return false;
    }
    match &r.event {
        Event::Send { msg, .. } | Event::Recv { msg, .. } => w.heartbeats || !HEARTBEATS.contains(&msg.as_str()),
        _ => true,
    }
}

/// The events of `run` in a causal order, each with its node's vector clock.
pub fn clocks<'a>(run: &'a RunDir, w: &Window) -> Vec<(NodeId, Clock, &'a Record)> {
    let start = run.info.start_us;
    let mut queues: BTreeMap<NodeId, VecDeque<&Record>> = BTreeMap::new();
    // The resource's own trace (resource.jsonl) is node 0's: its receives pair with the sends.
    for r in run.node_events.iter().chain(&run.resource) {
        if let Some(n) = r.node {
            if logged(r, w, start) {
                queues.entry(n).or_default().push_back(r);
            }
        }
    }
    // Which sends will be logged, each by its node and place in that node's queue, so that a
    // receive knows whether to wait for its send.
    let mut sends: Sends<(NodeId, usize)> = Sends::default();
    for (&n, q) in &queues {
        for (i, r) in q.iter().enumerate() {
            if let Some(name) = sent(r) {
                sends.insert(name, r.t, (n, i));
            }
        }
    }
    let send_of = |r: &Record| received(r).and_then(|name| sends.send_of(name, r.t)).copied();
    // The clock of each send logged so far.
    let mut at_send: HashMap<(NodeId, usize), Clock> = HashMap::new();
    let mut popped: HashMap<NodeId, usize> = HashMap::new();
    let mut vc: HashMap<NodeId, Clock> = HashMap::new();
    let mut out = Vec::new();
    loop {
        // The earliest head that is not a receive waiting for its send.
        let ready = |r: &Record| send_of(r).is_none_or(|s| at_send.contains_key(&s));
        let pick = queues
            .iter()
            .filter_map(|(&n, q)| q.front().map(|r| (n, *r)))
            .filter(|&(_, r)| ready(r))
            .min_by_key(|&(n, r)| (r.t, n))
            // Only a receive whose send comes later in true time can block everyone (a broken
            // trace): take the earliest head anyway, as a local event.
            .or_else(|| {
                queues
                    .iter()
                    .filter_map(|(&n, q)| q.front().map(|r| (n, *r)))
                    .min_by_key(|&(n, r)| (r.t, n))
            });
        let Some((n, r)) = pick else { break };
        queues.get_mut(&n).map(VecDeque::pop_front);
        let place = popped.entry(n).or_default();
        let here = (n, *place);
        *place += 1;
        let clock = vc.entry(n).or_default();
        if let Some(theirs) = send_of(r).and_then(|s| at_send.get(&s)) {
            for (&k, &v) in theirs {
                let e = clock.entry(k).or_default();
                *e = (*e).max(v);
            }
        }
        *clock.entry(n).or_default() += 1;
        let clock = clock.clone();
        if sent(r).is_some() {
            at_send.insert(here, clock.clone());
        }
        out.push((n, clock, r));
    }
    out
}

/// The ShiViz log of `run`.
pub fn log(run: &RunDir, w: &Window) -> String {
    let mut s = format!("{REGEX}\n\n");
    for (n, clock, r) in clocks(run, w) {
        let entries: Vec<String> = clock.iter().map(|(k, v)| format!("\"node{k}\":{v}")).collect();
        let ms = (r.t as f64 - run.info.start_us as f64) / 1000.0;
        let _ = writeln!(
            s,
            "node{n} {{{}}}\n+{ms:.3} ms {}",
            entries.join(","),
            super::story::clean_brief(&r.event.describe(n)).replace('\n', " ")
        );
    }
    s
}
