//! What the network carried and refused: `drop` events by reason, and the totals of the
//! counters every process wrote in its `stop` event.

use crate::trace::{Event, RunDir};
use std::collections::BTreeMap;

/// Drops that share a reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropGroup {
    /// How many.
    pub count: usize,
    /// The first reason as written, for the reader to see a real one.
    pub example: String,
}

/// Traffic totals of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Traffic {
    /// `drop` events grouped by their reason with numbers masked (see [`reason_kind`]).
    pub drops: BTreeMap<String, DropGroup>,
    /// How many `stop` events the totals come from (a killed process writes none).
    pub stops: usize,
    /// Messages sent, over all `stop` events.
    pub sent: u64,
    /// The datagrams they left in, where counted (a step's messages to one node share one).
    pub datagrams: u64,
    /// Messages accepted.
    pub received: u64,
    /// Messages the engine refused.
    pub dropped: u64,
    /// Messages the protocols accepted and chose to ignore.
    pub ignored: u64,
    /// `ignore` events by reason (numbers masked), with one example each.
    pub ignores: BTreeMap<String, DropGroup>,
    /// Messages sent by type.
    pub by_type: BTreeMap<String, u64>,
}

impl Traffic {
    /// Counts the traffic of `run` (every event, including those after the end).
    pub fn count(run: &RunDir) -> Self {
        let mut tr = Traffic::default();
        for r in &run.node_events {
            match &r.event {
                Event::Drop { reason, count, .. } => {
                    let g = tr.drops.entry(reason_kind(reason)).or_insert_with(|| DropGroup {
                        count: 0,
                        example: reason.clone(),
                    });
                    // One record stands for `count` refused datagrams.
                    g.count += *count as usize;
                }
                Event::Ignore { reason, .. } => {
                    let g = tr.ignores.entry(reason_kind(reason)).or_insert_with(|| DropGroup {
                        count: 0,
                        example: reason.clone(),
                    });
                    g.count += 1;
                }
                Event::Stop {
                    sent,
                    received,
                    dropped,
                    ignored,
                    by_type,
                    datagrams,
                    ..
                } => {
                    tr.stops += 1;
                    tr.sent += sent;
                    tr.datagrams += datagrams;
                    tr.received += received;
                    tr.dropped += dropped;
                    tr.ignored += ignored;
                    for (k, v) in by_type {
                        *tr.by_type.entry(k.clone()).or_default() += v;
                    }
                }
                _ => {}
            }
        }
        tr
    }

    /// How many `drop` events there were.
    pub(crate) fn drop_events(&self) -> usize {
        self.drops.values().map(|g| g.count).sum()
    }
}

/// A drop reason with every number masked as `#`: reasons carry terms, ports and sizes, and
/// "stale term 3 < 5" and "stale term 4 < 5" are the same reason.
pub(crate) fn reason_kind(reason: &str) -> String {
    let mut out = String::with_capacity(reason.len());
    let mut in_number = false;
    for c in reason.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push('#');
            }
            in_number = true;
        } else {
            out.push(c);
            in_number = false;
        }
    }
    out
}
