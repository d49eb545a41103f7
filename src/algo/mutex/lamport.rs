//! Lamport's mutual exclusion (1978): every participant keeps a queue of requests ordered by
//! (timestamp, id); acknowledgements; releases to all.
//!
//! Rules (Lamport clock `c`; queue `Q`; `latest[j]`: the timestamp of the last message from j):
//! - request: c := c + 1; put (c, me) in Q; send REQUEST(c) to every other participant.
//! - on REQUEST(t) from j: put (t, j) in Q; send ACK(c) to j.
//! - on ACK or RELEASE or REQUEST from j: latest[j] := its timestamp.
//! - enter when this node's request heads Q and latest[j] > its timestamp for every other j.
//! - release: remove own request; send RELEASE(c) to every other participant.
//! - on RELEASE from j: remove j's request from Q.
//!
//! The rule "a later message from j means nothing earlier from j is coming" needs FIFO
//! channels, which UDP does not give: each message carries a per-channel sequence number
//! (`n`, 1, 2, ... from this sender to that receiver); a receiver delivers them in that order,
//! holding early ones in a reorder buffer and dropping duplicates. A lost message stalls its
//! channel (no retransmission): liveness is lost, never safety.
//!
//! Messages: 3(n-1) per entry.

use super::wrapper::{MCx, Protocol};
use crate::algo::{Message, NodeId, Setup};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// What a Lamport message says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Kind {
    /// I want the section.
    Request,
    /// Your request is in my queue.
    Ack,
    /// I left.
    Release,
}

/// A Lamport message: kind, timestamp, and its sequence number on this FIFO channel.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LamportMsg {
    /// What it says.
    pub kind: Kind,
    /// The sender's Lamport timestamp.
    pub ts: u64,
    /// Its number on the channel from the sender to this receiver (from 1).
    pub n: u64,
}

impl Message for LamportMsg {
    fn name(&self) -> &'static str {
        match self.kind {
            Kind::Request => "REQUEST",
            Kind::Ack => "ACK",
            Kind::Release => "RELEASE",
        }
    }
}

/// The most messages held early per channel before more are dropped.
const REORDER_LIMIT: usize = 1024;

/// One node's state.
#[derive(Debug, Clone, Default)]
pub struct Lamport {
    clock: u64,
    queue: BTreeSet<(u64, NodeId)>,
    mine: Option<u64>,
    holding: bool,
    latest: BTreeMap<NodeId, u64>,
    sent: BTreeMap<NodeId, u64>,
    expected: BTreeMap<NodeId, u64>,
    early: BTreeMap<NodeId, BTreeMap<u64, LamportMsg>>,
}

impl Lamport {
    /// The request queue, head first.
    pub fn queue(&self) -> Vec<NodeId> {
        self.queue.iter().map(|q| q.1).collect()
    }

    fn broadcast(&mut self, mcx: &mut MCx<'_, '_, Self>, kind: Kind) {
        let me = mcx.me();
        let peers: Vec<NodeId> = mcx.peers().iter().copied().filter(|&p| p != me).collect();
        for p in peers {
            self.send(mcx, p, kind);
        }
    }

    fn send(&mut self, mcx: &mut MCx<'_, '_, Self>, to: NodeId, kind: Kind) {
        let n = self.sent.entry(to).or_insert(0);
        *n += 1;
        let msg = LamportMsg {
            kind,
            ts: self.clock,
            n: *n,
        };
        mcx.send(to, msg);
    }

    fn deliver(&mut self, mcx: &mut MCx<'_, '_, Self>, from: NodeId, msg: LamportMsg) {
        self.clock = self.clock.max(msg.ts) + 1;
        self.latest.insert(from, msg.ts);
        match msg.kind {
            Kind::Request => {
                self.queue.insert((msg.ts, from));
                self.send(mcx, from, Kind::Ack);
            }
            Kind::Ack => {}
            Kind::Release => self.queue.retain(|q| q.1 != from),
        }
    }

    fn maybe_enter(&mut self, mcx: &mut MCx<'_, '_, Self>) {
        let Some(ts) = self.mine.filter(|_| !self.holding) else {
            return;
        };
        let me = mcx.me();
        let head = self.queue.first() == Some(&(ts, me));
        let heard = mcx
            .peers()
            .iter()
            .filter(|&&p| p != me)
            .all(|p| self.latest.get(p).is_some_and(|&l| l > ts));
        if head && heard {
            self.holding = true;
            mcx.enter(Some(super::ricart_agrawala::fencing(ts, me)));
        }
    }
}

impl Protocol for Lamport {
    type Msg = LamportMsg;
    type Timer = ();

    fn new(_setup: &Setup, _peers: &[NodeId]) -> Self {
        Lamport::default()
    }

    fn request(&mut self, mcx: &mut MCx<'_, '_, Self>, _req: u64) {
        self.clock += 1;
        let me = mcx.me();
        self.mine = Some(self.clock);
        self.queue.insert((self.clock, me));
        self.broadcast(mcx, Kind::Request);
        self.maybe_enter(mcx);
    }

    fn release(&mut self, mcx: &mut MCx<'_, '_, Self>, _req: u64) {
        let me = mcx.me();
        self.queue.retain(|q| q.1 != me);
        self.mine = None;
        self.holding = false;
        self.clock += 1;
        self.broadcast(mcx, Kind::Release);
    }

    fn on_msg(&mut self, mcx: &mut MCx<'_, '_, Self>, from: NodeId, msg: LamportMsg) {
        let want = *self.expected.get(&from).unwrap_or(&1);
        if msg.n < want {
            return mcx.discard(from, format!("message {} on the channel again: a duplicate", msg.n));
        }
        let early = self.early.entry(from).or_default();
        if msg.n > want {
            if early.len() >= REORDER_LIMIT {
                return mcx.discard(from, "reorder buffer full");
            }
            early.insert(msg.n, msg);
            return;
        }
        let mut next = Some(msg);
        let mut n = want;
        while let Some(m) = next {
            self.deliver(mcx, from, m);
            n += 1;
            next = self.early.get_mut(&from).and_then(|e| e.remove(&n));
        }
        self.expected.insert(from, n);
        self.maybe_enter(mcx);
    }
}
