//! Echo election (Vasudevan, Kurose & Towsley 2004, after Chang's echo algorithm), for
//! networks without a fixed topology: a wave builds a spanning tree, the best (capability, id)
//! climbs it, and the root announces the winner.
//!
//! Rules (each node: the wave it is in, named by its initiator's id; in it, a parent and the
//! neighbours it still waits for; the best (capability, id) heard so far, its own to begin with):
//! - start (an initiator): wave := me, no parent; send ELECTION(me) to every neighbour.
//! - on ELECTION(c) from j, c greater than my wave (or no wave yet): abandon the wave I was in;
//!   wave := c, parent := j, best := mine; send ELECTION(c) to every other neighbour.
//! - on ELECTION(c) from j, c my wave: j's ELECTION crossed mine on our edge: it counts as j's
//!   answer (the echo of a non-tree edge).
//! - on ELECTION(c), c below my wave: that wave dies out here (a higher one has reached me).
//! - on ECHO(c, best) from j, c my wave: j is my child: keep the better of the two bests.
//! - once every neighbour but the parent has answered: send ECHO(c, best) to the parent; the
//!   root instead has the winner, best's id: it floods LEADER(winner).
//! - on LEADER(l), the first time: l leads; pass it on to every other neighbour.
//!
//! With one initiator every edge carries exactly two ELECTION/ECHO messages: 2m on m edges,
//! then 2m - (n - 1) LEADER. With several initiators in one term, the wave of the highest
//! initiator id reaches every node and the others die out: the lower waves can never
//! complete, since the highest initiator never answers them.
//!
//! Capabilities come from `--set weights=ID:CAP,...`; a node not listed there, or every node
//! without the option, gets a seeded random capability from 1 to 100 drawn from the run's
//! seed and its id (so every node, and any reader of the run, computes the same one).
//! Ties are broken by the larger id.
//!
//! Dead neighbours ([`neighbours`](super::neighbours)): a neighbour declared dead before it
//! sent anything in this term no longer needs to answer, so the wave completes without it:
//! after the leader crashes, the new term succeeds as long as the crashed node was not a cut
//! vertex. A node that has echoed keeps waiting on its parent until the winner is known: if the
//! parent dies with the claims of its subtree, the child finds out and starts a new term (as
//! does any node that finds dead a neighbour it had heard from in this term), so the winner is
//! always the best of the live nodes. If the root of the highest wave dies after its children
//! have echoed, nobody waits on it: the wrapper's election timeout starts a new term.
//! Terms, heartbeats and re-election come from [`Leadership`](super::Leadership).

use super::neighbours::{Check, Neighbours, Probing, Waits};
use super::{ECx, Election};
use crate::algo::{Message, NodeId, Setup};
use crate::rng::Rng;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// A node's claim to lead: (capability, id); the larger wins.
pub type Claim = (u64, NodeId);

/// Echo messages.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum EchoMsg {
    /// The wave of initiator `wave` spreads.
    Election {
        /// The wave's initiator.
        wave: NodeId,
    },
    /// The best claim of the sender's subtree, back to its parent.
    Echo {
        /// The wave's initiator.
        wave: NodeId,
        /// The best (capability, id) below and at the sender.
        best: Claim,
    },
    /// The winner, flooded over the edges.
    Leader(NodeId),
    /// Are you there?
    Probe,
    /// Yes.
    Alive,
}

impl Message for EchoMsg {
    fn name(&self) -> &'static str {
        match self {
            EchoMsg::Election { .. } => "ELECTION",
            EchoMsg::Echo { .. } => "ECHO",
            EchoMsg::Leader(_) => "LEADER",
            EchoMsg::Probe => "PROBE",
            EchoMsg::Alive => "ALIVE",
        }
    }
}

impl Probing for EchoMsg {
    fn probe() -> Self {
        EchoMsg::Probe
    }
    fn alive() -> Self {
        EchoMsg::Alive
    }
    fn is_probe(&self) -> bool {
        matches!(self, EchoMsg::Probe)
    }
}

/// The capabilities given with `--set weights=ID:CAP,...` (empty without the option).
pub fn weights(setup: &Setup) -> Result<BTreeMap<NodeId, u64>, String> {
    let Some(spec) = setup.opts.get("weights") else {
        return Ok(BTreeMap::new());
    };
    let mut w = BTreeMap::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let bad = || format!("weights: '{item}' is not ID:CAPABILITY (e.g. weights=1:5,2:3)");
        let (id, cap) = item.split_once(':').ok_or_else(bad)?;
        let id: NodeId = id.trim().parse().map_err(|_| bad())?;
        let cap: u64 = cap.trim().parse().map_err(|_| bad())?;
        if !setup.members.contains(&id) {
            return Err(format!("weights: node {id} is not a member"));
        }
        if w.insert(id, cap).is_some() {
            return Err(format!("weights: node {id} is given twice"));
        }
    }
    Ok(w)
}

/// The seeded random capability of node `id` in a run with seed `seed` (1 to 100).
pub fn default_capability(seed: u64, id: NodeId) -> u64 {
    Rng::new(seed ^ id.wrapping_mul(0x9e37_79b9_7f4a_7c15)).range(1, 101)
}

/// The capability of node `id`: its weight if given, the seeded default otherwise.
pub fn capability(setup: &Setup, id: NodeId) -> Result<u64, String> {
    Ok(weights(setup)?
        .get(&id)
        .copied()
        .unwrap_or_else(|| default_capability(setup.seed, id)))
}

#[derive(Debug, Clone)]
struct Wave {
    id: NodeId,
    parent: Option<NodeId>,
    pending: BTreeSet<NodeId>,
    best: Claim,
    done: bool,
}

/// One node's Echo state.
#[derive(Debug, Clone)]
pub struct Echo {
    me: NodeId,
    capability: u64,
    wave: Option<Wave>,
    nb: Neighbours,
}

impl Echo {
    /// Joins wave `id` (this node's own when `parent` is None) and passes it on.
    fn join(&mut self, ecx: &mut ECx<'_, '_, Self>, id: NodeId, parent: Option<NodeId>) {
        let pending: BTreeSet<NodeId> = self.nb.live().into_iter().filter(|&n| Some(n) != parent).collect();
        for &n in &pending {
            ecx.send(n, EchoMsg::Election { wave: id });
        }
        self.wave = Some(Wave {
            id,
            parent,
            pending,
            best: (self.capability, self.me),
            done: false,
        });
        self.answered(ecx, None, None);
    }

    /// `from` answered in the current wave (with its subtree's best, for an ECHO); once
    /// everyone has, echo to the parent, or at the root announce the winner.
    fn answered(&mut self, ecx: &mut ECx<'_, '_, Self>, from: Option<NodeId>, best: Option<Claim>) {
        let Some(w) = self.wave.as_mut() else {
            return;
        };
        if let Some(f) = from {
            w.pending.remove(&f);
        }
        if let Some(b) = best {
            w.best = w.best.max(b);
        }
        if w.done || !w.pending.is_empty() {
            return;
        }
        w.done = true;
        let (id, best) = (w.id, w.best);
        match w.parent {
            Some(p) => ecx.send(p, EchoMsg::Echo { wave: id, best }),
            None => self.nb.flood(ecx, None, best.1, EchoMsg::Leader(best.1)),
        }
    }
}

impl Election for Echo {
    type Msg = EchoMsg;
    type Timer = Check;

    fn new(setup: &Setup) -> Self {
        // Bad weights are refused before any node is built (registry::check_setup).
        let capability = capability(setup, setup.me).unwrap_or_else(|_| default_capability(setup.seed, setup.me));
        Echo {
            me: setup.me,
            capability,
            wave: None,
            nb: Neighbours::new(setup),
        }
    }

    fn start(&mut self, ecx: &mut ECx<'_, '_, Self>) {
        let me = self.me;
        self.join(ecx, me, None);
        Neighbours::watch(self, ecx);
    }

    fn on_msg(&mut self, ecx: &mut ECx<'_, '_, Self>, from: NodeId, msg: EchoMsg) {
        if !self.nb.receive(ecx, from, &msg) {
            return;
        }
        let current = self.wave.as_ref().map(|w| w.id);
        match msg {
            EchoMsg::Leader(l) => self.nb.flood(ecx, Some(from), l, EchoMsg::Leader(l)),
            EchoMsg::Election { wave } if ecx.leader().is_some() => {
                ecx.discard(
                    from,
                    format!("wave {wave}: election of term {} is already decided", ecx.term()),
                );
            }
            EchoMsg::Election { wave } if current.is_none_or(|c| wave > c) => self.join(ecx, wave, Some(from)),
            EchoMsg::Election { wave } if Some(wave) == current => self.answered(ecx, Some(from), None),
            EchoMsg::Election { wave } => ecx.discard(from, format!("wave {wave} dies out in a higher wave")),
            EchoMsg::Echo { wave, best } if Some(wave) == current => self.answered(ecx, Some(from), Some(best)),
            EchoMsg::Echo { wave, .. } => ecx.discard(from, format!("echo of wave {wave}, not the current one")),
            EchoMsg::Probe | EchoMsg::Alive => {}
        }
        Neighbours::watch(self, ecx);
    }

    fn on_timer(&mut self, ecx: &mut ECx<'_, '_, Self>, _timer: Check) {
        Neighbours::check(self, ecx);
    }

    fn reset(&mut self) {
        self.wave = None;
        self.nb.reset();
    }
}

impl Waits for Echo {
    fn neighbours(&mut self) -> &mut Neighbours {
        &mut self.nb
    }

    fn waiting(&self) -> Vec<NodeId> {
        match &self.wave {
            Some(w) if !w.done => w.pending.iter().copied().collect(),
            Some(w) => w.parent.into_iter().collect(),
            None => Vec::new(),
        }
    }

    fn lost(&mut self, ecx: &mut ECx<'_, '_, Self>, n: NodeId) {
        self.answered(ecx, Some(n), None);
    }
}
