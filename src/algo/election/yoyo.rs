//! Yo-Yo election on any connected graph (Santoro's formulation): the smallest id wins.
//!
//! Rules (each node: its live edges, each oriented in or out; every YO/YES/NO carries its
//! iteration k):
//! - start, or the first message of a term at a node that has not started: send ID to every
//!   neighbour (the orientation phase).
//! - once the ID of every neighbour is in: orient every edge from the smaller id to the larger
//!   (in-neighbours are smaller, out-neighbours larger), and begin iteration 1.
//! - begin iteration k: no edge left: I am the only node left, the smallest: I win; flood
//!   LEADER(me). No in-neighbour (a source): send YO(k, me) to every out-neighbour.
//! - YO-: on YO(k, v) from an in-neighbour: once every in-neighbour's value is in, with m the
//!   smallest: an internal node sends YO(k, m) to every out-neighbour; a sink votes (-YO).
//!   Messages of a later iteration wait for theirs.
//! - -YO: on YES/NO(k) from an out-neighbour: once every out-neighbour has voted, vote: to each
//!   in-neighbour that sent m, YES, unless a NO came from below; to every other in-neighbour,
//!   NO. Pruning rides on the votes: of the in-neighbours that sent the same value all but one
//!   are told to prune their edge; a sink left with one in-neighbour (a leaf) prunes itself and
//!   every edge it had. So does a node whose out-edges were all pruned with YES in this -YO and
//!   that is left with one in-neighbour: it has become a leaf, and whole dangling trees go in
//!   one iteration instead of one level per iteration (a ring would otherwise take about n
//!   iterations, one leaf per side each time). A source votes to nobody: it just takes the answers.
//! - on a vote: a pruned edge is removed; a NO turns the edge round (both ends do the same).
//!   Then iteration k + 1.
//! - on LEADER(l), the first time: l leads; pass it on to every other neighbour.
//!
//! Only the source with the smallest id hears YES everywhere, every other source eventually
//! hears a NO and stops being one, and pruning (which keeps the graph connected) removes every
//! other node, so the winner is the last node left with no edge. Messages: 2m ID, then per
//! iteration one YO and one vote per edge still there; then 2m - (n - 1) LEADER.
//!
//! Dead neighbours ([`neighbours`](super::neighbours)): a neighbour declared dead before it
//! sent anything in this term is left out, and Yo-Yo runs on the graph without it: after the
//! leader crashes, the new term succeeds as long as the crashed node was not a cut vertex. One
//! that dies after taking part may have split the pruned graph (pruning keeps the graph
//! connected only while nobody dies), so that a node left alone could wrongly believe it is
//! the last one: the neighbour that finds out starts a new term instead. A neighbour that dies
//! after its edge was pruned does not matter.
//! Terms, heartbeats and re-election come from [`Leadership`](super::Leadership).

use super::neighbours::{Neighbours, Waits};
use super::{Ask, Election, ElectionCx};
use crate::algo::{Message, NodeId, Setup};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Yo-Yo messages.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum YyMsg {
    /// The sender's id, for the orientation phase.
    Id(NodeId),
    /// YO-: the smallest source id known to the sender, in iteration `iter`.
    Yo {
        /// The iteration.
        iter: u64,
        /// The smallest value the sender received (its own id at a source).
        value: NodeId,
    },
    /// -YO: YES or NO, and whether the edge is to be pruned.
    Vote {
        /// The iteration.
        iter: u64,
        /// YES (your value is the smallest below) or NO.
        yes: bool,
        /// Remove this edge.
        prune: bool,
    },
    /// The winner, flooded over the edges.
    Leader(NodeId),
}

impl Message for YyMsg {
    fn name(&self) -> &'static str {
        match self {
            YyMsg::Id(_) => "ID",
            YyMsg::Yo { .. } => "YO",
            YyMsg::Vote { yes: true, .. } => "YES",
            YyMsg::Vote { yes: false, .. } => "NO",
            YyMsg::Leader(_) => "LEADER",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Not started in this term.
    Idle,
    /// Waiting for every neighbour's ID.
    Orient,
    /// YO-: waiting for the values of the in-neighbours.
    Down,
    /// -YO: waiting for the votes of the out-neighbours.
    Up,
    /// Pruned, or the winner: nothing left to do in this election.
    Out,
}

/// One node's Yo-Yo state.
#[derive(Debug, Clone)]
pub(crate) struct YoYo {
    me: NodeId,
    phase: Phase,
    iter: u64,
    ids: BTreeSet<NodeId>,
    ins: BTreeSet<NodeId>,
    outs: BTreeSet<NodeId>,
    /// This iteration's values from the in-neighbours.
    values: BTreeMap<NodeId, NodeId>,
    /// This iteration's votes from the out-neighbours: (yes, prune).
    votes: BTreeMap<NodeId, (bool, bool)>,
    /// YO messages of later iterations: (iteration, from, value).
    later: Vec<(u64, NodeId, NodeId)>,
    nb: Neighbours,
}

impl YoYo {
    fn begin(&mut self, cx: &mut ElectionCx<'_, Self>) {
        if self.phase != Phase::Idle {
            return;
        }
        self.phase = Phase::Orient;
        let me = self.me;
        for n in self.nb.live() {
            cx.send(n, YyMsg::Id(me));
        }
        self.orient(cx);
    }

    fn orient(&mut self, cx: &mut ElectionCx<'_, Self>) {
        if self.phase != Phase::Orient || self.nb.live().iter().any(|n| !self.ids.contains(n)) {
            return;
        }
        let me = self.me;
        let live = self.nb.live();
        self.ins = live.iter().copied().filter(|&n| n < me).collect();
        self.outs = live.iter().copied().filter(|&n| n > me).collect();
        self.iteration(cx, 1);
    }

    fn iteration(&mut self, cx: &mut ElectionCx<'_, Self>, k: u64) {
        self.iter = k;
        self.values.clear();
        self.votes.clear();
        self.note_orientation(cx);
        if self.ins.is_empty() && self.outs.is_empty() {
            self.phase = Phase::Out;
            let me = self.me;
            self.nb.flood(cx, None, me, YyMsg::Leader(me));
            return;
        }
        if self.ins.is_empty() {
            self.phase = Phase::Up;
            let me = self.me;
            for &o in &self.outs {
                cx.send(o, YyMsg::Yo { iter: k, value: me });
            }
            return;
        }
        self.phase = Phase::Down;
        let (now, later) = std::mem::take(&mut self.later).into_iter().partition(|m| m.0 == k);
        self.later = later;
        for (_, from, value) in now {
            self.on_yo(cx, from, k, value);
        }
    }

    /// Notes this node's edges as they stand at the start of an iteration, and its role in it.
    /// `coordlab graph` reads these notes (docs/trace.md) to draw the orientation of every
    /// iteration: keep their first part's words.
    fn note_orientation(&self, cx: &mut ElectionCx<'_, Self>) {
        let (k, ins, outs) = (self.iter, &self.ins, &self.outs);
        let role = match (ins.is_empty(), outs.is_empty()) {
            (true, true) => "no edge left: I am the last node, the smallest: I win".to_string(),
            (true, false) => format!("a source: YO({}) to every out-neighbour", self.me),
            (false, true) => "a sink: I vote once every in-neighbour's value is in".to_string(),
            (false, false) => "internal: I pass the smallest value down once every in-neighbour's is in".to_string(),
        };
        let first = if k == 1 {
            " (oriented from the smaller id to the larger)"
        } else {
            ""
        };
        let list = |set: &BTreeSet<NodeId>| format!("{:?}", set.iter().collect::<Vec<_>>());
        cx.note(format!(
            "term {}, iteration {k}: in from {}, out to {}{first}; {role}",
            cx.view().term(),
            list(ins),
            list(outs)
        ));
    }

    fn on_yo(&mut self, cx: &mut ElectionCx<'_, Self>, from: NodeId, k: u64, value: NodeId) {
        if k > self.iter || self.phase == Phase::Orient {
            self.later.push((k, from, value));
            return;
        }
        if k < self.iter || self.phase != Phase::Down || !self.ins.contains(&from) {
            cx.discard(
                from,
                format!("unexpected YO of iteration {k} (at iteration {})", self.iter),
            );
            return;
        }
        self.values.insert(from, value);
        self.down(cx);
    }

    /// YO-: once every in-neighbour's value is in, pass the smallest down, or vote at a sink.
    fn down(&mut self, cx: &mut ElectionCx<'_, Self>) {
        if self.phase != Phase::Down || self.ins.iter().any(|i| !self.values.contains_key(i)) {
            return;
        }
        let Some(&m) = self.values.values().min() else {
            return;
        };
        if self.outs.is_empty() {
            return self.vote(cx, false);
        }
        self.phase = Phase::Up;
        let k = self.iter;
        for &o in &self.outs {
            cx.send(o, YyMsg::Yo { iter: k, value: m });
        }
    }

    fn on_vote(&mut self, cx: &mut ElectionCx<'_, Self>, from: NodeId, k: u64, yes: bool, prune: bool) {
        if k != self.iter || self.phase != Phase::Up || !self.outs.contains(&from) {
            cx.discard(
                from,
                format!("unexpected vote of iteration {k} (at iteration {})", self.iter),
            );
            return;
        }
        self.votes.insert(from, (yes, prune));
        self.up(cx);
    }

    /// -YO: once every out-neighbour has voted, apply the votes and vote in turn.
    fn up(&mut self, cx: &mut ElectionCx<'_, Self>) {
        if self.phase != Phase::Up || self.outs.iter().any(|o| !self.votes.contains_key(o)) {
            return;
        }
        let mut any_no = false;
        for (&o, &(yes, prune)) in &self.votes {
            any_no |= !yes;
            if prune || !yes {
                self.outs.remove(&o);
            }
            if !prune && !yes {
                self.ins.insert(o);
            }
        }
        self.vote(cx, any_no);
    }

    /// Votes to the in-neighbours of this iteration (none at a source), then the next one.
    fn vote(&mut self, cx: &mut ElectionCx<'_, Self>, no_below: bool) {
        let k = self.iter;
        let min = self.values.values().min().copied();
        // One kept edge per value: the one from the smallest sender of it.
        let mut keep: BTreeMap<NodeId, NodeId> = BTreeMap::new();
        for (&from, &v) in &self.values {
            keep.entry(v).or_insert(from);
        }
        // A sink, or a node whose out-edges were all pruned with YES, left with one edge.
        let leaf = self.outs.is_empty() && keep.len() == 1 && !no_below;
        for (&from, &v) in &self.values {
            let yes = !no_below && Some(v) == min;
            let prune = leaf || keep[&v] != from;
            cx.send(from, YyMsg::Vote { iter: k, yes, prune });
            if prune || !yes {
                self.ins.remove(&from);
            }
            if !prune && !yes {
                self.outs.insert(from);
            }
        }
        if leaf {
            self.phase = Phase::Out;
        } else {
            self.iteration(cx, k + 1);
        }
    }
}

impl Election for YoYo {
    type Msg = YyMsg;
    type Timer = ();

    fn new(setup: &Setup) -> Self {
        YoYo {
            nb: Neighbours::new(setup),
            ..YoYo::blank(setup.me)
        }
    }

    fn start(&mut self, cx: &mut ElectionCx<'_, Self>) {
        self.begin(cx);
    }

    fn on_msg(&mut self, cx: &mut ElectionCx<'_, Self>, from: NodeId, msg: YyMsg) {
        if !self.nb.receive(cx, from) {
            return;
        }
        if let YyMsg::Leader(l) = msg {
            self.phase = Phase::Out;
            return self.nb.flood(cx, Some(from), l, YyMsg::Leader(l));
        }
        if self.phase == Phase::Idle {
            if cx.refuse_if_decided(from) {
                return;
            }
            self.begin(cx);
        }
        match msg {
            YyMsg::Id(_) if self.phase == Phase::Orient => {
                self.ids.insert(from);
                self.orient(cx);
            }
            YyMsg::Id(_) => cx.discard(from, "ID after the orientation phase"),
            YyMsg::Yo { iter, value } => self.on_yo(cx, from, iter, value),
            YyMsg::Vote { iter, yes, prune } => self.on_vote(cx, from, iter, yes, prune),
            YyMsg::Leader(_) => {}
        }
    }

    fn on_liveness(&mut self, cx: &mut ElectionCx<'_, Self>, from: NodeId, _probe: bool) {
        // Like any message of the term, a PROBE or ALIVE wakes a node that has not started.
        if self.nb.liveness(from) && self.phase == Phase::Idle && cx.view().leader().is_none() {
            self.begin(cx);
        }
    }

    fn reset(&mut self) {
        let nb = std::mem::take(&mut self.nb);
        *self = YoYo {
            nb,
            ..YoYo::blank(self.me)
        };
        self.nb.reset();
    }

    fn awaited(&self) -> Vec<NodeId> {
        self.waiting_on()
    }

    fn awaited_silent(&mut self, cx: &mut ElectionCx<'_, Self>, nodes: Vec<NodeId>) {
        Neighbours::awaited_silent(self, cx, nodes);
    }
}

impl YoYo {
    /// The state before any election, with no neighbours yet.
    fn blank(me: NodeId) -> Self {
        YoYo {
            me,
            phase: Phase::Idle,
            iter: 0,
            ids: BTreeSet::new(),
            ins: BTreeSet::new(),
            outs: BTreeSet::new(),
            values: BTreeMap::new(),
            votes: BTreeMap::new(),
            later: Vec::new(),
            nb: Neighbours::default(),
        }
    }
}

impl YoYo {
    fn waiting_on(&self) -> Vec<NodeId> {
        let missing = |set: &BTreeSet<NodeId>, has: &dyn Fn(&NodeId) -> bool| -> Vec<NodeId> {
            set.iter().copied().filter(|n| !has(n)).collect()
        };
        match self.phase {
            Phase::Orient => {
                let live: BTreeSet<NodeId> = self.nb.live().into_iter().collect();
                missing(&live, &|n| self.ids.contains(n))
            }
            Phase::Down => missing(&self.ins, &|n| self.values.contains_key(n)),
            Phase::Up => missing(&self.outs, &|n| self.votes.contains_key(n)),
            Phase::Idle | Phase::Out => Vec::new(),
        }
    }
}

impl Waits for YoYo {
    fn neighbours(&mut self) -> &mut Neighbours {
        &mut self.nb
    }

    fn lost(&mut self, cx: &mut ElectionCx<'_, Self>, _n: NodeId) {
        match self.phase {
            Phase::Orient => self.orient(cx),
            // Its edge is still there: it sent its ID, so this cannot happen; be safe all the same.
            Phase::Down | Phase::Up => cx.ask(Ask::StartElection),
            Phase::Idle | Phase::Out => {}
        }
    }
}

#[cfg(test)]
#[path = "yoyo_tests.rs"]
mod tests;
