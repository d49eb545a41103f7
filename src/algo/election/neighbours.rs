//! What the graph election protocols (Franklin, Yo-Yo, Echo) share: they talk only to their
//! graph neighbours, so the wrapper's ring repair does not apply, and the textbook versions
//! assume that no neighbour ever dies. This is how they find out that one has.
//!
//! Rules (per term; a new term forgets every verdict):
//! - while the protocol waits for a message from some neighbours, a check timer runs every
//!   timeout. On the check timer: a neighbour waited on that sent nothing since the last check
//!   gets a PROBE; one that has sent nothing since its PROBE is declared dead (a `suspect`
//!   event). If it never sent anything in this term, it was dead before the election began:
//!   the protocol carries on without it. If it did, it took part, and what it knew may be lost
//!   with it (a round it won, the claims of its subtree): this node starts a new term, in
//!   which the dead node is left out from the start.
//! - on PROBE: answer ALIVE, even to a neighbour declared dead (so that it keeps waiting
//!   instead of concluding that it is alone), and treat it as a message of the term (a node
//!   that had not started the election yet joins it).
//! - any other message from a neighbour declared dead in this term is discarded: the protocol
//!   has already carried on without it. Messages from non-neighbours are discarded too.
//! - the first message of a later term from a neighbour once declared dead records `unsuspect`.
//!
//! In a run where nobody fails and every message arrives within a timeout, no PROBE is ever
//! sent, so message counts are the textbook's. A lost message is not repaired: the wait turns
//! into PROBE/ALIVE until the wrapper's election timeout starts a new term.
//!
//! Also here: the winner's flood over the edges (LEADER), shared by Yo-Yo and Echo.

use super::{ECx, Election};
use crate::algo::{NodeId, Setup};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// The timer of the graph protocols: the periodic check on silent neighbours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Check {
    /// Time to look at the neighbours this node waits on.
    Silence,
}

/// Messages that carry the liveness probe and its answer.
pub trait Probing: Sized {
    /// "Are you there?"
    fn probe() -> Self;
    /// "Yes."
    fn alive() -> Self;
    /// Whether this is a PROBE.
    fn is_probe(&self) -> bool;
}

/// A protocol that waits on its neighbours and can carry on without a dead one.
pub trait Waits: Election<Timer = Check, Msg: Probing> {
    /// Its view of the neighbours.
    fn neighbours(&mut self) -> &mut Neighbours;
    /// The neighbours whose message this node needs before it can go on.
    fn waiting(&self) -> Vec<NodeId>;
    /// Neighbour `n`, never heard from in this term, was declared dead: carry on without it.
    fn lost(&mut self, ecx: &mut ECx<'_, '_, Self>, n: NodeId);
}

/// A node's graph neighbours and what it knows of them in the current term.
#[derive(Debug, Clone, Default)]
pub struct Neighbours {
    list: Vec<NodeId>,
    dead: BTreeSet<NodeId>,
    /// Declared dead in an earlier term and not heard from since.
    dead_before: BTreeSet<NodeId>,
    /// Heard from since the last check.
    heard: BTreeSet<NodeId>,
    /// Sent a PROBE at the last check.
    probed: BTreeSet<NodeId>,
    /// Heard from in this term.
    spoke: BTreeSet<NodeId>,
    armed: bool,
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
    pub fn is_dead(&self, n: NodeId) -> bool {
        self.dead.contains(&n)
    }

    /// A new term: every neighbour is presumed alive again.
    pub fn reset(&mut self) {
        self.dead_before.append(&mut self.dead);
        self.heard.clear();
        self.probed.clear();
        self.spoke.clear();
        self.armed = false;
        self.announced = false;
    }

    /// Sorts out a message from `from` before the protocol sees it (see the rules above);
    /// true when the protocol should handle it.
    pub fn receive<E: Waits>(&mut self, ecx: &mut ECx<'_, '_, E>, from: NodeId, msg: &E::Msg) -> bool {
        if !self.list.contains(&from) {
            ecx.discard(from, format!("node {from} is not a neighbour of node {}", ecx.me()));
            return false;
        }
        if msg.is_probe() {
            ecx.send(from, E::Msg::alive());
        }
        if self.dead.contains(&from) {
            if !msg.is_probe() {
                ecx.discard(from, format!("node {from} was declared dead in term {}", ecx.term()));
            }
            return false;
        }
        self.heard.insert(from);
        self.spoke.insert(from);
        // The wrapper's detector records the `unsuspect` (it saw the datagram first).
        self.dead_before.remove(&from);
        true
    }

    /// Runs the check timer while the protocol waits on someone (call after every handler).
    pub fn watch<E: Waits>(e: &mut E, ecx: &mut ECx<'_, '_, E>) {
        let waits = ecx.leader().is_none() && !e.waiting().is_empty();
        let n = e.neighbours();
        if waits && !n.armed {
            n.armed = true;
            n.heard.clear();
            let t = ecx.setup().timeout;
            ecx.set_timer(Check::Silence, t);
        }
    }

    /// The check timer: probes silent neighbours, declares dead the ones silent since their
    /// PROBE and lets the protocol carry on without them.
    pub fn check<E: Waits>(e: &mut E, ecx: &mut ECx<'_, '_, E>) {
        let waiting = if ecx.leader().is_none() {
            e.waiting()
        } else {
            Vec::new()
        };
        let n = e.neighbours();
        n.armed = false;
        n.probed.retain(|x| waiting.contains(x));
        let mut lost = Vec::new();
        let mut restart = false;
        for &x in &waiting {
            if n.dead.contains(&x) || n.heard.contains(&x) {
                n.probed.remove(&x);
            } else if n.probed.remove(&x) {
                n.dead.insert(x);
                ecx.suspect(x, "probe");
                if n.spoke.contains(&x) {
                    restart = true;
                } else {
                    lost.push(x);
                }
            } else {
                n.probed.insert(x);
                ecx.send(x, E::Msg::probe());
            }
        }
        n.heard.clear();
        if restart {
            return ecx.start_election();
        }
        for x in lost {
            e.lost(ecx, x);
        }
        Self::watch(e, ecx);
    }

    /// The winner's flood: the first time this node decides or hears that `leader` won, it
    /// adopts it and passes `msg` on to every live neighbour except `from`; later copies stop here.
    pub fn flood<E: Election>(&mut self, ecx: &mut ECx<'_, '_, E>, from: Option<NodeId>, leader: NodeId, msg: E::Msg) {
        if std::mem::replace(&mut self.announced, true) {
            return;
        }
        ecx.elected(leader);
        for n in self.live() {
            if Some(n) != from {
                ecx.send(n, msg.clone());
            }
        }
    }

    /// Marks the winner as known without flooding (for protocols that announce their own way);
    /// false when it was already known.
    pub fn announce(&mut self) -> bool {
        !std::mem::replace(&mut self.announced, true)
    }
}
