//! What the graph election protocols (Franklin, Yo-Yo, Echo) share: they talk only to their
//! graph neighbours, so the wrapper's ring repair does not apply, and the textbook versions
//! assume that no neighbour ever dies. This is how they carry on when one has.
//!
//! Finding out is the wrapper's [`Liveness`](crate::algo::detector::Liveness) detector's job:
//! the protocol says whom it waits on ([`Election::awaited`]), the detector probes a neighbour
//! that stays silent for a timeout and reports it silent when it does not answer the probe
//! either ([`Election::awaited_silent`]). What to do then is decided here, per term (a new term
//! forgets every verdict):
//! - a silent neighbour is declared dead for this term. If it never sent anything in this term,
//!   it was dead before the election began: the protocol carries on without it. If it did, it
//!   took part, and what it knew may be lost with it (a round it won, the claims of its
//!   subtree): this node starts a new term, in which the dead node is left out from the start.
//! - a PROBE or ALIVE of the term counts as a message of the term (a node that had not started
//!   the election yet joins it); the detector answers every PROBE with ALIVE, even from a
//!   neighbour declared dead (so that it keeps waiting instead of concluding that it is alone).
//! - any other message from a neighbour declared dead in this term is discarded: the protocol
//!   has already carried on without it. Messages from non-neighbours are discarded too.
//!
//! In a run where nobody fails and every message arrives within a timeout, no PROBE is ever
//! sent, so message counts are the textbook's. A lost message is not repaired: the wait turns
//! into PROBE/ALIVE until the wrapper's election timeout starts a new term.
//!
//! Also here: the winner's flood over the edges (LEADER), shared by Yo-Yo and Echo.

use super::{Ask, Election, ElectionContext, ElectionCx};
use crate::algo::{Message, NodeId, Setup};
use std::collections::BTreeSet;

/// A protocol that waits on its neighbours and can carry on without a dead one.
pub trait Waits: Election {
    /// Its view of the neighbours.
    fn neighbours(&mut self) -> &mut Neighbours;
    /// Neighbour `n`, never heard from in this term, was declared dead: carry on without it.
    fn lost(&mut self, cx: &mut ElectionCx<'_, Self>, n: NodeId);
}

/// A node's graph neighbours and what it knows of them in the current term.
#[derive(Debug, Clone, Default)]
pub struct Neighbours {
    list: Vec<NodeId>,
    dead: BTreeSet<NodeId>,
    /// Declared dead in an earlier term and not heard from since.
    dead_before: BTreeSet<NodeId>,
    /// Heard from in this term.
    spoke: BTreeSet<NodeId>,
    announced: bool,
}

impl Neighbours {
    /// The neighbours of `setup.me`: its neighbour list without itself, each once, in order.
    pub fn new(setup: &Setup) -> Self {
        let mut list = Vec::new();
        for &n in &setup.neighbours {
            if n != setup.me && !list.contains(&n) {
                list.push(n);
            }
        }
        Neighbours {
            list,
            ..Neighbours::default()
        }
    }

    /// Every neighbour, dead or alive.
    pub fn all(&self) -> &[NodeId] {
        &self.list
    }

    /// The neighbours not declared dead in this term.
    pub fn live(&self) -> Vec<NodeId> {
        self.list.iter().copied().filter(|n| !self.dead.contains(n)).collect()
    }

    /// Whether `n` was declared dead in this term.
    pub(crate) fn is_dead(&self, n: NodeId) -> bool {
        self.dead.contains(&n)
    }

    /// A new term: every neighbour is presumed alive again.
    pub fn reset(&mut self) {
        self.dead_before.append(&mut self.dead);
        self.spoke.clear();
        self.announced = false;
    }

    /// Sorts out a protocol message from `from` before the protocol sees it (see the rules
    /// above); true when the protocol should handle it.
    pub fn receive<M: Message, T>(&mut self, cx: &mut ElectionContext<'_, M, T>, from: NodeId) -> bool {
        if !self.list.contains(&from) {
            cx.discard(from, format!("node {from} is not a neighbour of node {}", cx.me));
            return false;
        }
        if self.dead.contains(&from) {
            cx.discard(
                from,
                format!("node {from} was declared dead in term {}", cx.view().term()),
            );
            return false;
        }
        self.heard(from);
        true
    }

    /// A PROBE or ALIVE of the term from `from`: true when it is a live neighbour (which has
    /// now spoken in this term).
    pub fn liveness(&mut self, from: NodeId) -> bool {
        if !self.list.contains(&from) || self.dead.contains(&from) {
            return false;
        }
        self.heard(from);
        true
    }

    fn heard(&mut self, from: NodeId) {
        self.spoke.insert(from);
        // The wrapper's detector records the `unsuspect` (it saw the datagram first).
        self.dead_before.remove(&from);
    }

    /// Neighbours the detector found silent: declared dead; the protocol carries on without
    /// those that never spoke in this term, or a new term starts if one of them had.
    pub(crate) fn awaited_silent<E: Waits>(e: &mut E, cx: &mut ElectionCx<'_, E>, nodes: Vec<NodeId>) {
        let n = e.neighbours();
        let mut lost = Vec::new();
        let mut restart = false;
        for x in nodes {
            if !n.list.contains(&x) || !n.dead.insert(x) {
                continue;
            }
            if n.spoke.contains(&x) {
                restart = true;
            } else {
                lost.push(x);
            }
        }
        if restart {
            return cx.ask(Ask::StartElection);
        }
        for x in lost {
            e.lost(cx, x);
        }
    }

    /// The winner's flood: the first time this node decides or hears that `leader` won, it
    /// adopts it and passes `msg` on to every live neighbour except `from`; later copies stop here.
    /// A node that may not claim this term (it joined it while waking from a stall) starts a
    /// new one instead of winning it.
    pub fn flood<M: Message, T>(
        &mut self,
        cx: &mut ElectionContext<'_, M, T>,
        from: Option<NodeId>,
        leader: NodeId,
        msg: M,
    ) {
        if leader == cx.me && !cx.view().may_claim() {
            return cx.ask(Ask::StartElection);
        }
        if std::mem::replace(&mut self.announced, true) {
            return;
        }
        cx.ask(Ask::Elected(leader));
        for n in self.live() {
            if Some(n) != from {
                cx.send(n, msg.clone());
            }
        }
    }

    /// Marks the winner as known without flooding (for protocols that announce their own way);
    /// false when it was already known.
    pub(crate) fn announce(&mut self) -> bool {
        !std::mem::replace(&mut self.announced, true)
    }
}
