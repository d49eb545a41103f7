//! Ricart and Agrawala's algorithm (1981): permission from every other participant, requests
//! ordered by Lamport timestamps with ties broken by id, replies deferred.
//!
//! Rules (each node: Lamport clock `c`, its request `(ts, me)` while it wants or holds):
//! - request: c := c + 1; ts := c; send REQUEST(ts) to every other participant; wait for n-1
//!   REPLY(ts).
//! - on REQUEST(t) from j: c := max(c, t) + 1; if this node holds the section, or wants it
//!   and (ts, me) < (t, j): defer the reply; else send REPLY(t) at once. A REQUEST not newer
//!   than the last one from j is a duplicate, ignored.
//! - on REPLY(t) from j for the pending request: count j once; with n-1, enter with fencing
//!   token (ts, me) (entries happen in that order, so it grows).
//! - release: send the deferred REPLYs.
//! - on learning that j came back as a new boot: its old boot's request is void (drop its
//!   deferred reply) and so is the REPLY it gave (it no longer knows it promised anything):
//!   take it out of the replies and send the pending REQUEST to j again.
//! - a node keeps a ceiling of its clock on stable storage (moved
//!   [`CLOCK_STEP`](super::lamport::CLOCK_STEP) ahead whenever the clock reaches it, before
//!   any message of that step leaves), and a restarted node's clock starts at it: its requests,
//!   and so its fencing tokens, stay above every one it made or saw before. (Safety does not
//!   need it -- each pair of requesters sees the other's request and one defers -- but a
//!   token that started low again after a restart was refused as stale by a fencing
//!   resource, though nobody else held.)
//!
//! The rules assume reliable channels: the messages ride the shared reliable layer
//! ([`crate::algo::reliable`]: acknowledged on the messages back, or by a bare `CH_ACK` when none
//! goes back within the delay, counted apart; sent again).
//!
//! Messages: 2(n-1) per entry (the REPLY carries the REQUEST's acknowledgement), plus the bare
//! `CH_ACK`s and resends.

use super::wrapper::{Ask, MutexCx, Protocol};
use crate::algo::{Message, NodeId, Setup};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Ricart-Agrawala messages.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum RaMsg {
    /// I want the section; my request's timestamp.
    Request {
        /// Lamport timestamp of the request.
        ts: u64,
    },
    /// Permission for the request of timestamp `ts`.
    Reply {
        /// The request's timestamp.
        ts: u64,
    },
}

impl Message for RaMsg {
    fn name(&self) -> &'static str {
        match self {
            RaMsg::Request { .. } => "REQUEST",
            RaMsg::Reply { .. } => "REPLY",
        }
    }
}

/// The fencing token of the request (ts, id): ordered like the pair.
pub fn fencing(ts: u64, id: NodeId) -> u64 {
    (ts << 16) | (id & 0xffff)
}

/// One node's Ricart-Agrawala state.
#[derive(Debug, Clone, Default)]
pub(crate) struct RicartAgrawala {
    clock: u64,
    ceiling: u64,
    mine: Option<u64>,
    holding: bool,
    replies: BTreeSet<NodeId>,
    deferred: Vec<(NodeId, u64)>,
    last: BTreeMap<NodeId, u64>,
}

impl RicartAgrawala {
    /// Moves the stored ceiling ahead once the clock reaches it (stored before any message of
    /// this call leaves, so no timestamp sent is above what a restart would start from).
    fn keep_ceiling(&mut self, cx: &mut MutexCx<'_, Self>) {
        if let Some(bytes) = super::ceiling::raise(self.clock, &mut self.ceiling) {
            cx.persist(bytes);
        }
    }

    fn maybe_enter(&mut self, cx: &mut MutexCx<'_, Self>) {
        if let (Some(ts), false) = (self.mine, self.holding) {
            if self.replies.len() + 1 >= cx.view().peers.len() {
                self.holding = true;
                let me = cx.me;
                cx.ask(Ask::Enter(Some(fencing(ts, me))));
            }
        }
    }
}

impl Protocol for RicartAgrawala {
    const RELIABLE: bool = true;
    type Msg = RaMsg;
    type Timer = ();

    fn new(setup: &Setup, _peers: &[NodeId]) -> Self {
        let clock = super::ceiling::restored(setup);
        RicartAgrawala {
            clock,
            ceiling: clock,
            ..RicartAgrawala::default()
        }
    }

    fn request(&mut self, cx: &mut MutexCx<'_, Self>, _req: u64) {
        self.clock += 1;
        self.keep_ceiling(cx);
        self.mine = Some(self.clock);
        self.replies.clear();
        cx.send_others(RaMsg::Request { ts: self.clock });
        self.maybe_enter(cx);
    }

    fn release(&mut self, cx: &mut MutexCx<'_, Self>, _req: u64) {
        self.mine = None;
        self.holding = false;
        for (j, ts) in std::mem::take(&mut self.deferred) {
            cx.send(j, RaMsg::Reply { ts });
        }
    }

    fn peer_restarted(&mut self, cx: &mut MutexCx<'_, Self>, peer: NodeId) {
        self.deferred.retain(|d| d.0 != peer);
        self.last.remove(&peer);
        if let (Some(ts), false) = (self.mine, self.holding) {
            self.replies.remove(&peer);
            cx.state_change(format!(
                "node {peer} restarted: its REPLY is void; REQUEST({ts}) sent to it again"
            ));
            cx.send(peer, RaMsg::Request { ts });
        }
    }

    fn on_msg(&mut self, cx: &mut MutexCx<'_, Self>, from: NodeId, msg: RaMsg) {
        match msg {
            RaMsg::Request { ts } => {
                if self.last.get(&from).is_some_and(|&l| l >= ts) {
                    return cx.discard(from, format!("REQUEST({ts}) again: a duplicate"));
                }
                self.last.insert(from, ts);
                self.clock = self.clock.max(ts) + 1;
                self.keep_ceiling(cx);
                let me = cx.me;
                let defer = self.holding || self.mine.is_some_and(|mine| (mine, me) < (ts, from));
                if defer {
                    self.deferred.push((from, ts));
                } else {
                    cx.send(from, RaMsg::Reply { ts });
                }
            }
            RaMsg::Reply { ts } => {
                if self.mine != Some(ts) || self.holding {
                    return cx.discard(from, format!("REPLY for request {ts}, which is not pending"));
                }
                self.replies.insert(from);
                self.maybe_enter(cx);
            }
        }
    }
}
