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
//!   every edge it had. A source votes to nobody: it just takes the answers.
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

use super::neighbours::{Check, Neighbours, Probing, Waits};
use super::{ECx, Election};
use crate::algo::{Message, NodeId, Setup};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Yo-Yo messages.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum YyMsg {
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
    /// Are you there?
    Probe,
    /// Yes.
    Alive,
}

impl Message for YyMsg {
    fn name(&self) -> &'static str {
        match self {
            YyMsg::Id(_) => "ID",
            YyMsg::Yo { .. } => "YO",
            YyMsg::Vote { yes: true, .. } => "YES",
            YyMsg::Vote { yes: false, .. } => "NO",
            YyMsg::Leader(_) => "LEADER",
            YyMsg::Probe => "PROBE",
            YyMsg::Alive => "ALIVE",
        }
    }
}

impl Probing for YyMsg {
    fn probe() -> Self {
        YyMsg::Probe
    }
    fn alive() -> Self {
        YyMsg::Alive
    }
    fn is_probe(&self) -> bool {
        matches!(self, YyMsg::Probe)
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
pub struct YoYo {
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
    fn begin(&mut self, ecx: &mut ECx<'_, '_, Self>) {
        if self.phase != Phase::Idle {
            return;
        }
        self.phase = Phase::Orient;
        let me = self.me;
        for n in self.nb.live() {
            ecx.send(n, YyMsg::Id(me));
        }
        self.orient(ecx);
    }

    fn orient(&mut self, ecx: &mut ECx<'_, '_, Self>) {
        if self.phase != Phase::Orient || self.nb.live().iter().any(|n| !self.ids.contains(n)) {
            return;
        }
        let me = self.me;
        let live = self.nb.live();
        self.ins = live.iter().copied().filter(|&n| n < me).collect();
        self.outs = live.iter().copied().filter(|&n| n > me).collect();
        self.iteration(ecx, 1);
    }

    fn iteration(&mut self, ecx: &mut ECx<'_, '_, Self>, k: u64) {
        self.iter = k;
        self.values.clear();
        self.votes.clear();
        if self.ins.is_empty() && self.outs.is_empty() {
            self.phase = Phase::Out;
            let me = self.me;
            self.nb.flood(ecx, None, me, YyMsg::Leader(me));
            return;
        }
        if self.ins.is_empty() {
            self.phase = Phase::Up;
            let me = self.me;
            for &o in &self.outs {
                ecx.send(o, YyMsg::Yo { iter: k, value: me });
            }
            return;
        }
        self.phase = Phase::Down;
        let (now, later) = std::mem::take(&mut self.later).into_iter().partition(|m| m.0 == k);
        self.later = later;
        for (_, from, value) in now {
            self.on_yo(ecx, from, k, value);
        }
    }

    fn on_yo(&mut self, ecx: &mut ECx<'_, '_, Self>, from: NodeId, k: u64, value: NodeId) {
        if k > self.iter || self.phase == Phase::Orient {
            self.later.push((k, from, value));
            return;
        }
        if k < self.iter || self.phase != Phase::Down || !self.ins.contains(&from) {
            ecx.discard(from, format!("unexpected YO of iteration {k} (at iteration {})", self.iter));
            return;
        }
        self.values.insert(from, value);
        self.down(ecx);
    }

    /// YO-: once every in-neighbour's value is in, pass the smallest down, or vote at a sink.
    fn down(&mut self, ecx: &mut ECx<'_, '_, Self>) {
        if self.phase != Phase::Down || self.ins.iter().any(|i| !self.values.contains_key(i)) {
            return;
        }
        let Some(&m) = self.values.values().min() else {
            return;
        };
        if self.outs.is_empty() {
            return self.vote(ecx, true, false);
        }
        self.phase = Phase::Up;
        let k = self.iter;
        for &o in &self.outs {
            ecx.send(o, YyMsg::Yo { iter: k, value: m });
        }
    }

    fn on_vote(&mut self, ecx: &mut ECx<'_, '_, Self>, from: NodeId, k: u64, yes: bool, prune: bool) {
        if k != self.iter || self.phase != Phase::Up || !self.outs.contains(&from) {
            ecx.discard(from, format!("unexpected vote of iteration {k} (at iteration {})", self.iter));
            return;
        }
        self.votes.insert(from, (yes, prune));
        self.up(ecx);
    }

    /// -YO: once every out-neighbour has voted, apply the votes and vote in turn.
    fn up(&mut self, ecx: &mut ECx<'_, '_, Self>) {
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
        self.vote(ecx, false, any_no);
    }

    /// Votes to the in-neighbours of this iteration (none at a source), then the next one.
    fn vote(&mut self, ecx: &mut ECx<'_, '_, Self>, sink: bool, no_below: bool) {
        let k = self.iter;
        let min = self.values.values().min().copied();
        // One kept edge per value: the one from the smallest sender of it.
        let mut keep: BTreeMap<NodeId, NodeId> = BTreeMap::new();
        for (&from, &v) in &self.values {
            keep.entry(v).or_insert(from);
        }
        let leaf = sink && keep.len() == 1;
        for (&from, &v) in &self.values {
            let yes = !no_below && Some(v) == min;
            let prune = leaf || keep[&v] != from;
            ecx.send(from, YyMsg::Vote { iter: k, yes, prune });
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
            self.iteration(ecx, k + 1);
        }
    }
}

impl Election for YoYo {
    type Msg = YyMsg;
    type Timer = Check;

    fn new(setup: &Setup) -> Self {
        YoYo {
            nb: Neighbours::new(setup),
            ..YoYo::blank(setup.me)
        }
    }

    fn start(&mut self, ecx: &mut ECx<'_, '_, Self>) {
        self.begin(ecx);
        Neighbours::watch(self, ecx);
    }

    fn on_msg(&mut self, ecx: &mut ECx<'_, '_, Self>, from: NodeId, msg: YyMsg) {
        if !self.nb.receive(ecx, from, &msg) {
            return;
        }
        if let YyMsg::Leader(l) = msg {
            self.phase = Phase::Out;
            return self.nb.flood(ecx, Some(from), l, YyMsg::Leader(l));
        }
        if self.phase == Phase::Idle {
            if ecx.leader().is_some() {
                if !matches!(msg, YyMsg::Probe | YyMsg::Alive) {
                    ecx.discard(from, format!("election of term {} is already decided", ecx.term()));
                    ecx.tell_decided(from);
                }
                return;
            }
            self.begin(ecx);
        }
        match msg {
            YyMsg::Id(_) if self.phase == Phase::Orient => {
                self.ids.insert(from);
                self.orient(ecx);
            }
            YyMsg::Id(_) => ecx.discard(from, "ID after the orientation phase"),
            YyMsg::Yo { iter, value } => self.on_yo(ecx, from, iter, value),
            YyMsg::Vote { iter, yes, prune } => self.on_vote(ecx, from, iter, yes, prune),
            YyMsg::Leader(_) | YyMsg::Probe | YyMsg::Alive => {}
        }
        Neighbours::watch(self, ecx);
    }

    fn on_timer(&mut self, ecx: &mut ECx<'_, '_, Self>, _timer: Check) {
        Neighbours::check(self, ecx);
    }

    fn reset(&mut self) {
        let nb = std::mem::take(&mut self.nb);
        *self = YoYo { nb, ..YoYo::blank(self.me) };
        self.nb.reset();
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

impl Waits for YoYo {
    fn neighbours(&mut self) -> &mut Neighbours {
        &mut self.nb
    }

    fn waiting(&self) -> Vec<NodeId> {
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

    fn lost(&mut self, ecx: &mut ECx<'_, '_, Self>, n: NodeId) {
        match self.phase {
            Phase::Orient => self.orient(ecx),
            // Its edge is still there: it sent its ID, so this cannot happen; be safe all the same.
            Phase::Down | Phase::Up => ecx.start_election(),
            Phase::Idle | Phase::Out => {}
        }
    }
}
