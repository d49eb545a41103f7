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
//! The rule "a later message from j means nothing earlier from j is coming" needs reliable
//! FIFO channels, which UDP does not give: the messages ride the shared reliable layer
//! ([`crate::algo::reliable`]: numbered per channel, acknowledged, sent again, delivered in
//! order), whose acknowledgements ride on the messages back, or go bare (`CH_ACK`, counted apart).
//!
//! Restarts. A node that crashes forgets its queue and clock:
//! - its clock would start again at 0 and its next request could be ordered before one it
//!   already acknowledged (and whose holder may be inside): so it keeps a ceiling of its clock
//!   on stable storage, moved [`CLOCK_STEP`] ahead whenever the clock reaches it, and a
//!   restarted node's clock starts at that ceiling, above every timestamp it sent or saw.
//! - on learning that j came back as a new boot: remove j's request from Q (its old boot will
//!   never release it), forget latest[j] (the new boot has promised nothing), and send the own
//!   pending or held request again to j, so that j's new queue has it before this node's
//!   acknowledgement of anything j asks.
//!
//! Messages: 3(n-1) per entry, plus resends under loss and a bare `CH_ACK` for a message that no
//! message back carried the acknowledgement of within the delay (see [`crate::algo::reliable`]).

use super::wrapper::{Ask, MutexCx, Protocol};
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

/// A Lamport message: kind and timestamp.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LamportMsg {
    /// What it says.
    pub kind: Kind,
    /// The sender's Lamport timestamp.
    pub ts: u64,
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

pub use super::ceiling::CLOCK_STEP;

/// One node's state.
#[derive(Debug, Clone, Default)]
pub struct Lamport {
    clock: u64,
    ceiling: u64,
    queue: BTreeSet<(u64, NodeId)>,
    mine: Option<u64>,
    holding: bool,
    latest: BTreeMap<NodeId, u64>,
}

impl Lamport {
    fn broadcast(&mut self, cx: &mut MutexCx<'_, Self>, kind: Kind) {
        let me = cx.me;
        let peers: Vec<NodeId> = cx.view().peers.iter().copied().filter(|&p| p != me).collect();
        for p in peers {
            self.send(cx, p, kind);
        }
    }

    fn send(&mut self, cx: &mut MutexCx<'_, Self>, to: NodeId, kind: Kind) {
        self.keep_ceiling(cx);
        cx.send(to, LamportMsg { kind, ts: self.clock });
    }

    /// Moves the stored ceiling ahead once the clock reaches it (stored before any message of
    /// this call leaves, so no timestamp sent is above what a restart would start from).
    fn keep_ceiling(&mut self, cx: &mut MutexCx<'_, Self>) {
        if let Some(bytes) = super::ceiling::raise(self.clock, &mut self.ceiling) {
            cx.persist(bytes);
        }
    }

    fn deliver(&mut self, cx: &mut MutexCx<'_, Self>, from: NodeId, msg: LamportMsg) {
        self.clock = self.clock.max(msg.ts) + 1;
        self.keep_ceiling(cx);
        self.latest.insert(from, msg.ts);
        match msg.kind {
            Kind::Request => {
                self.queue.insert((msg.ts, from));
                self.send(cx, from, Kind::Ack);
            }
            Kind::Ack => {}
            Kind::Release => self.queue.retain(|q| q.1 != from),
        }
    }

    fn maybe_enter(&mut self, cx: &mut MutexCx<'_, Self>) {
        let Some(ts) = self.mine.filter(|_| !self.holding) else {
            return;
        };
        let me = cx.me;
        let head = self.queue.first() == Some(&(ts, me));
        let heard = cx
            .view()
            .peers
            .iter()
            .filter(|&&p| p != me)
            .all(|p| self.latest.get(p).is_some_and(|&l| l > ts));
        if head && heard {
            self.holding = true;
            cx.ask(Ask::Enter(Some(super::ricart_agrawala::fencing(ts, me))));
        }
    }
}

impl Protocol for Lamport {
    const RELIABLE: bool = true;
    type Msg = LamportMsg;
    type Timer = ();

    fn new(setup: &Setup, _peers: &[NodeId]) -> Self {
        let clock = super::ceiling::restored(setup);
        Lamport {
            clock,
            ceiling: clock,
            ..Lamport::default()
        }
    }

    fn peer_restarted(&mut self, cx: &mut MutexCx<'_, Self>, peer: NodeId) {
        self.queue.retain(|q| q.1 != peer);
        self.latest.remove(&peer);
        if let Some(ts) = self.mine {
            cx.state_change(format!(
                "node {peer} restarted: its old request and acknowledgements are void; REQUEST({ts}) sent to it again"
            ));
            cx.send(
                peer,
                LamportMsg {
                    kind: Kind::Request,
                    ts,
                },
            );
        }
        self.maybe_enter(cx);
    }

    fn request(&mut self, cx: &mut MutexCx<'_, Self>, _req: u64) {
        self.clock += 1;
        self.keep_ceiling(cx);
        let me = cx.me;
        self.mine = Some(self.clock);
        self.queue.insert((self.clock, me));
        self.broadcast(cx, Kind::Request);
        self.maybe_enter(cx);
    }

    fn release(&mut self, cx: &mut MutexCx<'_, Self>, _req: u64) {
        let me = cx.me;
        self.queue.retain(|q| q.1 != me);
        self.mine = None;
        self.holding = false;
        self.clock += 1;
        self.broadcast(cx, Kind::Release);
    }

    fn on_msg(&mut self, cx: &mut MutexCx<'_, Self>, from: NodeId, msg: LamportMsg) {
        self.deliver(cx, from, msg);
        self.maybe_enter(cx);
    }
}
