//! The ring probe's goal: the token went round its laps and every node heard LAPS_DONE (the
//! initiator sends it when its last lap returns). Not an election: no leader is involved.

use super::section::{Finding, Progress, Section};
use super::timeline::Timeline;
use super::Analysis;
use crate::trace::{Event, NodeId, Record, RunDir};
use std::any::Any;
use std::collections::BTreeSet;
use std::fmt::Write;
use std::sync::Arc;

/// Which nodes know the laps are done: the initiator (it sent LAPS_DONE) and every node that
/// received it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Laps {
    /// The nodes that know.
    pub done: BTreeSet<NodeId>,
    /// Whether any TOKEN was sent (the probe ran at all).
    pub tokens: u64,
}

impl Progress for Laps {
    fn feed(&mut self, node: NodeId, rec: &Record) {
        match &rec.event {
            Event::Send { msg, .. } if msg == "LAPS_DONE" => {
                self.done.insert(node);
            }
            Event::Recv { msg, .. } if msg == "LAPS_DONE" => {
                self.done.insert(node);
            }
            Event::Send { msg, .. } if msg == "TOKEN" => self.tokens += 1,
            _ => {}
        }
    }

    fn done(&self, live: &[NodeId]) -> Option<String> {
        (!live.is_empty() && live.iter().all(|n| self.done.contains(n)))
            .then(|| format!("laps done: all {} nodes heard LAPS_DONE", live.len()))
    }
}

/// The probe section of a run.
#[derive(Debug, Clone)]
pub(crate) struct ProbeFacts {
    /// What the traces say.
    pub laps: Laps,
    /// Every node of the run.
    pub nodes: Vec<NodeId>,
}

impl ProbeFacts {
    /// The nodes that never learned the laps were done.
    pub fn missing(&self) -> Vec<NodeId> {
        self.nodes
            .iter()
            .copied()
            .filter(|n| !self.laps.done.contains(n))
            .collect()
    }
}

/// The probe section, when the run sent any TOKEN.
pub fn section(run: &RunDir, _timeline: &Timeline) -> Option<Arc<dyn Section>> {
    let mut laps = Laps::default();
    for r in &run.node_events {
        if let Some(n) = r.node {
            laps.feed(n, r);
        }
    }
    (laps.tokens > 0).then(|| {
        Arc::new(ProbeFacts {
            laps,
            nodes: run.info.nodes.iter().map(|n| n.id).collect(),
        }) as Arc<dyn Section>
    })
}

impl Section for ProbeFacts {
    fn family(&self) -> &'static str {
        "probe"
    }

    fn findings(&self) -> Vec<Finding> {
        let missing = self.missing();
        if missing.is_empty() {
            return Vec::new();
        }
        let ids: Vec<String> = missing.iter().map(u64::to_string).collect();
        vec![Finding::violation(
            "laps done",
            format!("probe: laps not done: nodes {} never heard LAPS_DONE", ids.join(", ")),
        )]
    }

    fn properties(&self, _a: &Analysis) -> Vec<String> {
        let missing = self.missing();
        vec![if missing.is_empty() {
            format!(
                "laps: done, all {} nodes heard LAPS_DONE ({} TOKEN sends)",
                self.nodes.len(),
                self.laps.tokens
            )
        } else {
            format!(
                "laps: NOT done, {} of {} nodes never heard LAPS_DONE",
                missing.len(),
                self.nodes.len()
            )
        }]
    }

    fn details(&self, _a: &Analysis, out: &mut String) {
        let _ = writeln!(out, "Probe: {} TOKEN sends", self.laps.tokens);
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
