//! The network stories `--demo link-cut` and `--demo partition`: real processes, a real broken
//! channel (the run's network backend, through the launcher's own `net` code path, as the
//! console's `net cut 2 10` does), and the checker's reading of it at the end.
//!
//! **link-cut** (`coordlab mesh 10 --demo link-cut`, an election that runs on any two-way graph:
//! echo by default, or yoyo). The course's picture: two groups of processes, 1-4 and 5-10, each
//! fully linked inside, and one channel between them, 2-10:
//!
//! ```text
//!   { 1 2 3 4 }  every pair linked            { 5 6 7 8 9 10 }  every pair linked
//!       2 ------------------------------------------- 10      the only link between them
//! ```
//! 1. wait until all 10 agree on a leader;
//! 2. cut the channel 2-10 (`net cut 2 10`): the graph falls in two;
//! 3. wait until each side has settled: without majority mode, each side agrees on a leader of
//!    its own (two leaders: split-brain by partition, which no election can avoid when it
//!    cannot tell a cut channel from dead nodes); with `--set majority=true` only 5-10 (6 of 10
//!    votes) has a leader, and no node of 1-4 leads: they cannot reach a majority (a leader
//!    there steps down: it lost its quorum);
//! 4. heal (`net heal`) and wait until all 10 agree on one leader again, for a while;
//! 5. stop; the checker's explanation, the sides' leaderless stretches and the cut-off
//!    suspicions close the story.
//!
//! Majority mode sends votes and acknowledgements directly between members, so it needs a
//! complete mesh: there the groups talk only through the channel 2-10 (the course's picture
//! routes every message between the groups over it), and cutting it is, for the processes,
//! the partition 1-4 | 5-10 (`net partition 1,2,3,4 5,6,7,8,9,10`): the story says so.
//!
//! **partition** (`coordlab mesh 4 --algo central --demo partition [--fencing]`, with
//! `regrant_ms=300`, `hold_ms=1000`, `think_ms=100` unless set): the coordinator (the highest
//! id) regrants a holder it has not heard from within `regrant_ms`.
//! 1. wait until a participant other than the coordinator holds the section; cut the link
//!    between it and the coordinator (the shared resource still hears both);
//! 2. wait until the coordinator, hearing nothing, grants another: two holders by their own
//!    traces; the resource sees both (or, with `--fencing`, fences the older token off);
//! 3. wait until the cut-off holder has left, heal, and stop after a while; the checker says
//!    what the resource saw.
//!
//! Every wait has a deadline; a step that does not happen ends the run with status 1, naming it.

use super::chaos_net::apply;
use super::goal::{node_ended, patience, Ending};
use super::net::NetControl;
use super::nodes::Fleet;
use crate::check::network::group_words;
use crate::check::Analysis;
use crate::net::NetAction;
use crate::topology::Graph;
use crate::trace::{wall_us, NodeId};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// `--demo link-cut`.
pub(crate) const LINK_CUT: &str = "link-cut";
/// `--demo partition`.
pub(crate) const PARTITION: &str = "partition";

/// The network stories.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetDemo {
    /// Cut the only channel between two groups; watch each side elect.
    LinkCut,
    /// Cut the central coordinator off from the holder; watch it regrant.
    Partition,
}

/// The link-cut graph's groups and its bridge.
pub(crate) const LEFT: [NodeId; 4] = [1, 2, 3, 4];
/// The other group.
pub(crate) const RIGHT: [NodeId; 6] = [5, 6, 7, 8, 9, 10];
/// The one channel between them.
pub(crate) const BRIDGE: (NodeId, NodeId) = (2, 10);

/// The elections link-cut runs: those the registry says run on any two-way graph.
fn link_cut_algos() -> Vec<&'static str> {
    use crate::catalog::{Fit, ELECTION, ENTRIES};
    ENTRIES
        .iter()
        .filter(|e| e.family.name == ELECTION.name && e.runs_on == Fit::AnyGraph)
        .map(|e| e.name)
        .collect()
}

/// `--set` options the partition story sets unless the user did.
const PARTITION_DEFAULTS: &[(&str, &str)] = &[("regrant_ms", "300"), ("hold_ms", "1000"), ("think_ms", "100")];

impl NetDemo {
    /// The story `name` names, if it is a network story.
    pub fn named(name: Option<&str>) -> Option<NetDemo> {
        match name? {
            LINK_CUT => Some(NetDemo::LinkCut),
            PARTITION => Some(NetDemo::Partition),
            _ => None,
        }
    }

    /// Checks the launch for the story (one line naming the problem) and sets its defaults in
    /// `set`; returns the graph and its label for link-cut (None: the mesh's own).
    pub(crate) fn prepare(
        self,
        algo: &str,
        mesh_spec: Option<&str>,
        ids: &[NodeId],
        set: &mut BTreeMap<String, String>,
    ) -> Result<Option<(String, Graph)>, String> {
        match self {
            NetDemo::LinkCut => {
                let Some(spec) = mesh_spec else {
                    return Err(format!(
                        "--demo {LINK_CUT} runs on a mesh: coordlab mesh 10 --demo {LINK_CUT}"
                    ));
                };
                if !link_cut_algos().contains(&algo) {
                    return Err(format!(
                        "--demo {LINK_CUT} needs an election that runs on any two-way graph ({}); {algo} cannot run \
                         two groups joined by one link",
                        link_cut_algos().join(", ")
                    ));
                }
                let want: Vec<NodeId> = (1..=10).collect();
                if ids != want.as_slice() {
                    return Err(format!(
                        "--demo {LINK_CUT} runs on 10 nodes with ids 1-10 (groups 1-4 and 5-10 joined by the link 2-10)"
                    ));
                }
                if !matches!(spec, "complete" | LINK_CUT) {
                    return Err(format!(
                        "--demo {LINK_CUT} builds its own graph (groups 1-4 and 5-10 joined by the link 2-10): leave \
                         --topology out"
                    ));
                }
                if majority(set) {
                    let g = crate::topology::build("complete", ids, 0)?;
                    return Ok(Some(("complete".into(), g)));
                }
                Ok(Some((LINK_CUT.into(), link_cut_graph()?)))
            }
            NetDemo::Partition => {
                if algo != crate::catalog::CENTRAL.name {
                    return Err(format!(
                        "--demo {PARTITION} is a story of --algo {}, not {algo}",
                        crate::catalog::CENTRAL.name
                    ));
                }
                if ids.len() < 3 {
                    return Err(format!(
                        "--demo {PARTITION} needs at least 3 nodes: a coordinator, a holder and another to be granted"
                    ));
                }
                for (k, v) in PARTITION_DEFAULTS {
                    set.entry(k.to_string()).or_insert_with(|| v.to_string());
                }
                Ok(None)
            }
        }
    }
}

fn majority(set: &BTreeMap<String, String>) -> bool {
    set.get("majority")
        .is_some_and(|v| crate::algo::options::boolean(v) == Some(true))
}

/// Two cliques, 1-4 and 5-10, joined only by the link 2-10.
pub(crate) fn link_cut_graph() -> Result<Graph, String> {
    let mut edges = Vec::new();
    for group in [&LEFT[..], &RIGHT[..]] {
        for (i, &a) in group.iter().enumerate() {
            for &b in &group[i + 1..] {
                edges.push((a, b));
            }
        }
    }
    edges.push(BRIDGE);
    let ids: Vec<NodeId> = (1..=10).collect();
    crate::topology::undirected(&ids, &edges)
}

fn list(ns: &[NodeId]) -> String {
    ns.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

/// What one side agrees on: (leader, term), or nothing.
mod link_cut;
mod partition;
use link_cut::Step;
use partition::MStep;

/// A network story, stepped by the launcher's goal.
pub(crate) struct NetStory {
    kind: NetDemo,
    majority: bool,
    step: Step,
    mstep: MStep,
    deadline: Instant,
    settle: Duration,
    patience: Duration,
}

impl NetStory {
    /// Story `kind` on `n` nodes with failure-detector `timeout`, starting at `t0`; `set` is
    /// the run's options.
    pub fn new(kind: NetDemo, n: usize, timeout: Duration, t0: Instant, set: &BTreeMap<String, String>) -> Self {
        let patience = patience(n, timeout);
        NetStory {
            kind,
            majority: majority(set),
            step: Step::Elect,
            mstep: MStep::Hold,
            deadline: t0 + patience,
            // Several timeouts: a side's view must hold past any election a late suspicion starts.
            settle: (6 * timeout).max(Duration::from_millis(1500)),
            patience,
        }
    }

    /// The step the story is at, in words (for a failure).
    pub(crate) fn where_now(&self) -> &'static str {
        match (self.kind, &self.step, &self.mstep) {
            (NetDemo::LinkCut, Step::Elect, _) => "at step 1 (the first election)",
            (NetDemo::LinkCut, Step::Split { .. }, _) => "at step 3 (each side settling after the cut)",
            (NetDemo::LinkCut, Step::Rejoin { .. }, _) => "at step 4 (one leader after the heal)",
            (NetDemo::Partition, _, MStep::Hold) => "at step 1 (waiting for a holder)",
            (NetDemo::Partition, _, MStep::Cut { .. }) => "at step 2 (waiting for the coordinator to regrant)",
            (NetDemo::Partition, _, MStep::Two { .. }) => "at step 3 (waiting for the cut-off holder to leave)",
            (NetDemo::Partition, _, MStep::Healed { .. }) => "at step 3 (healed)",
        }
    }

    /// Advances the story after a tick; `Some` ends the run.
    pub fn step(&mut self, fleet: &mut Fleet, net: &mut NetControl, now: Instant) -> Option<Ending> {
        if let Some(end) = node_ended(fleet, None, self.where_now()) {
            return Some(end);
        }
        let r = match self.kind {
            NetDemo::LinkCut => self.link_cut(fleet, net, now),
            NetDemo::Partition => self.partition(fleet, net, now),
        };
        match r {
            Ok(Some(end)) => Some(end),
            Ok(None) if now >= self.deadline => Some(Ending::failed(format!(
                "demo failed {}: it did not happen within {:.1} s",
                self.where_now(),
                self.patience.as_secs_f64()
            ))),
            Ok(None) => None,
            Err(e) => Some(Ending::failed(format!("demo failed {}: {e}", self.where_now()))),
        }
    }

    /// The story's closing lines, from the checker's facts of the whole run.
    pub(crate) fn conclude(&self, a: &Analysis) -> Vec<String> {
        let mut out = Vec::new();
        let cut: Vec<_> = a
            .suspicions
            .iter()
            .filter(|s| s.cut_off.is_some() && s.target_state.alive())
            .collect();
        match self.kind {
            NetDemo::LinkCut => {
                let Some(e) = &a.election else {
                    return vec!["5. from the traces: no election was recorded".into()];
                };
                out.push(format!(
                    "5. from the traces: two nodes each believed they led for {} in all; {} of a running node the \
                     network cut off",
                    crate::check::summary::dur(e.overlap_us),
                    match cut.len() {
                        1 => "1 suspicion".to_string(),
                        k => format!("{k} suspicions"),
                    }
                ));
                if let Some(s) = cut.first() {
                    out.push(format!("   e.g. {}", crate::check::summary::narrate(s, a.start_us)));
                }
                for x in &e.explanations {
                    out.push(format!(
                        "   term {}: {}{}",
                        x.term,
                        if x.inherent { "explained: " } else { "NOT explained: " },
                        x.words
                    ));
                }
                for g in &a.side_gaps {
                    let words = match g.longest {
                        None => "a leader throughout".to_string(),
                        Some((f, t)) if (f, t) == (g.split_from, g.split_to) => {
                            format!("no leader for the whole split ({})", crate::check::summary::dur(t - f))
                        }
                        Some((f, t)) => {
                            format!("longest stretch without a leader {}", crate::check::summary::dur(t - f))
                        }
                    };
                    out.push(format!("   while split, {}: {words}", group_words(&g.side)));
                }
            }
            NetDemo::Partition => {
                let facts = a
                    .sections
                    .iter()
                    .find_map(|s| s.as_any().downcast_ref::<crate::check::mutex::Section>())
                    .map(|s| &s.facts);
                let Some(f) = facts else {
                    return vec!["4. from the traces: no mutual-exclusion section".into()];
                };
                if let Some(o) = f.resource_violations.first() {
                    out.push(format!(
                        "4. from the traces: the resource caught two holders at once, nodes {:?} at {} ({} in all): \
                         mutual exclusion VIOLATED",
                        o.nodes,
                        crate::check::summary::at(a.start_us, o.t),
                        f.resource_violations.len()
                    ));
                } else if f.fencing && f.rejected > 0 {
                    out.push(format!(
                        "4. from the traces: with --fencing the resource rejected {} stale write(s) of the cut-off \
                         holder (an older token than one it had seen): the data stayed safe",
                        f.rejected
                    ));
                } else {
                    out.push("4. from the traces: the resource saw no two holders and rejected nothing".into());
                }
                if let Some(o) = f.node_overlaps.first() {
                    out.push(format!(
                        "   by their own traces nodes {:?} were in the section at once at {}",
                        o.nodes,
                        crate::check::summary::at(a.start_us, o.t)
                    ));
                }
            }
        }
        out
    }
}
