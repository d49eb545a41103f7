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
//! With `--set detector=fixed|phi|swim` (the family's detector,
//! [`peer_watch`](super::peer_watch)): a node taken for dead counts for neither rule -- its
//! requests are passed over at the head of Q and no later message is awaited from it -- so a
//! dead node no longer blocks every request for ever. Its requests stay in Q, and count again
//! once it is heard from. The detector cannot tell a paused holder from a dead one: two nodes
//! may then hold, and the later request's fencing token is above the paused holder's, so a
//! fencing resource refuses the stale write. Without the key there is no detector and no
//! detector traffic.
//!
//! Messages: 3(n-1) per entry, plus resends under loss and a bare `CH_ACK` for a message that no
//! message back carried the acknowledgement of within the delay (see [`crate::algo::reliable`]).

use super::peer_watch::{self, PeerWatch};
use super::wrapper::{Ask, MutexCx, Protocol};
use crate::algo::detector::{LiveMsg, LiveTimer};
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

/// A Lamport message: what it says and the sender's timestamp, or the failure detector's.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum LamportMsg {
    /// The algorithm's own.
    Stamped {
        /// What it says.
        kind: Kind,
        /// The sender's Lamport timestamp.
        ts: u64,
    },
    /// The failure detector's (with `--set detector`).
    Live(LiveMsg),
}

impl Message for LamportMsg {
    fn name(&self) -> &'static str {
        match self {
            LamportMsg::Stamped {
                kind: Kind::Request, ..
            } => "REQUEST",
            LamportMsg::Stamped { kind: Kind::Ack, .. } => "ACK",
            LamportMsg::Stamped {
                kind: Kind::Release, ..
            } => "RELEASE",
            LamportMsg::Live(m) => m.name(),
        }
    }
    fn brief(&self) -> String {
        match self {
            LamportMsg::Stamped { ts, .. } => crate::algo::Brief::new(self.name()).field("ts", *ts).done(),
            LamportMsg::Live(m) => m.brief(),
        }
    }
}

/// Lamport's timers: the failure detector's only (with `--set detector`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LamportTimer {
    /// The failure detector's.
    Live(LiveTimer),
}

crate::algo::compose::slot! {
    /// The detector's slot in Lamport's messages and timers.
    pub(super) struct LamportLive;
    impl for LamportMsg, LamportTimer: LiveMsg => LamportMsg::Live, LiveTimer => LamportTimer::Live
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
    /// The failure detector, when `--set detector` asks for one.
    watch: Option<Box<PeerWatch<LamportLive>>>,
    /// The nodes the last entry went on without (told in the log when it changes).
    skipped: Vec<NodeId>,
}

impl Lamport {
    fn broadcast(&mut self, cx: &mut MutexCx<'_, Self>, kind: Kind) {
        let me = cx.me;
        // The queue's nodes first, the head first: after a RELEASE the head is the one that may
        // enter next, and a step's datagrams leave in the order of their first messages.
        let rank: std::collections::HashMap<NodeId, usize> =
            self.queue.iter().enumerate().map(|(i, q)| (q.1, i)).collect();
        let mut peers: Vec<NodeId> = cx.view().peers.iter().copied().filter(|&p| p != me).collect();
        peers.sort_by_key(|p| rank.get(p).copied().unwrap_or(usize::MAX));
        for p in peers {
            self.send(cx, p, kind);
        }
    }

    fn send(&mut self, cx: &mut MutexCx<'_, Self>, to: NodeId, kind: Kind) {
        self.keep_ceiling(cx);
        cx.send(to, LamportMsg::Stamped { kind, ts: self.clock });
    }

    /// Moves the stored ceiling ahead once the clock reaches it (stored before any message of
    /// this call leaves, so no timestamp sent is above what a restart would start from).
    fn keep_ceiling(&mut self, cx: &mut MutexCx<'_, Self>) {
        if let Some(bytes) = super::ceiling::raise(self.clock, &mut self.ceiling) {
            cx.persist(bytes);
        }
    }

    fn deliver(&mut self, cx: &mut MutexCx<'_, Self>, from: NodeId, kind: Kind, ts: u64) {
        self.clock = self.clock.max(ts) + 1;
        self.keep_ceiling(cx);
        self.latest.insert(from, ts);
        match kind {
            Kind::Request => {
                self.queue.insert((ts, from));
                self.send(cx, from, Kind::Ack);
            }
            Kind::Ack => {}
            Kind::Release => self.queue.retain(|q| q.1 != from),
        }
    }

    /// Whether the detector takes `node` for dead (never without a detector).
    fn taken_for_dead(&self, node: NodeId) -> bool {
        self.watch.as_ref().is_some_and(|w| w.takes_for_dead(node))
    }

    /// The other participants the pending request still waits to hear from (a message later
    /// than its timestamp), those taken for dead included.
    fn unheard(&self, cx: &MutexCx<'_, Self>, ts: u64) -> Vec<NodeId> {
        let me = cx.me;
        cx.view()
            .peers
            .iter()
            .copied()
            .filter(|&p| p != me && self.latest.get(&p).is_none_or(|&l| l <= ts))
            .collect()
    }

    fn maybe_enter(&mut self, cx: &mut MutexCx<'_, Self>) {
        let Some(ts) = self.mine.filter(|_| !self.holding) else {
            return;
        };
        let me = cx.me;
        let head = self.queue.iter().find(|q| q.1 == me || !self.taken_for_dead(q.1)) == Some(&(ts, me));
        let unheard = self.unheard(cx, ts);
        if !head || !unheard.iter().all(|&p| self.taken_for_dead(p)) {
            return;
        }
        let mut skipped: Vec<NodeId> = self.queue.iter().take_while(|q| q.1 != me).map(|q| q.1).collect();
        skipped.extend(unheard);
        skipped.sort_unstable();
        skipped.dedup();
        if let Some(w) = &self.watch {
            w.tell_skips(
                cx,
                skipped,
                &mut self.skipped,
                "entering past their requests and without their word",
                "entering with every node's word again",
            );
        }
        self.holding = true;
        cx.ask(Ask::Enter(Some(super::ricart_agrawala::fencing(ts, me))));
    }

    /// The detector (tests read its opinions).
    #[cfg(test)]
    pub(super) fn watch(&self) -> Option<&PeerWatch<LamportLive>> {
        self.watch.as_deref()
    }
}

impl Protocol for Lamport {
    const RELIABLE: bool = true;
    type Msg = LamportMsg;
    type Timer = LamportTimer;

    fn new(setup: &Setup, peers: &[NodeId]) -> Self {
        let clock = super::ceiling::restored(setup);
        Lamport {
            clock,
            ceiling: clock,
            watch: peer_watch::wanted(setup).then(|| Box::new(PeerWatch::new(setup, peers))),
            ..Lamport::default()
        }
    }

    fn check(setup: &Setup) -> Result<(), String> {
        peer_watch::check_keys(setup, "lamport").map(|_| ())
    }

    fn on_link(msg: &LamportMsg) -> bool {
        !matches!(msg, LamportMsg::Live(_))
    }

    fn start(&mut self, cx: &mut MutexCx<'_, Self>) {
        if let Some(w) = &mut self.watch {
            w.start(cx);
        }
    }

    fn peer_restarted(&mut self, cx: &mut MutexCx<'_, Self>, peer: NodeId) {
        peer_watch::handle(self, cx, |me, cx| me.on_peer_restarted(cx, peer));
    }

    fn request(&mut self, cx: &mut MutexCx<'_, Self>, _req: u64) {
        peer_watch::handle(self, cx, |me, cx| me.on_request(cx));
    }

    fn release(&mut self, cx: &mut MutexCx<'_, Self>, _req: u64) {
        peer_watch::handle(self, cx, |me, cx| me.on_release(cx));
    }

    fn on_msg(&mut self, cx: &mut MutexCx<'_, Self>, from: NodeId, msg: LamportMsg) {
        peer_watch::handle(self, cx, |me, cx| {
            let live = match &msg {
                LamportMsg::Live(m) => Some(m),
                LamportMsg::Stamped { .. } => None,
            };
            PeerWatch::hear(&mut me.watch, cx, from, live, "lamport");
            if let LamportMsg::Stamped { kind, ts } = msg {
                me.deliver(cx, from, kind, ts);
                me.maybe_enter(cx);
            }
        });
    }

    fn on_timer(&mut self, cx: &mut MutexCx<'_, Self>, LamportTimer::Live(t): LamportTimer) {
        peer_watch::on_timer(self, cx, t);
    }
}

impl peer_watch::Hosted for Lamport {
    type Slot = LamportLive;

    fn watch_mut(&mut self) -> &mut Option<Box<PeerWatch<LamportLive>>> {
        &mut self.watch
    }

    /// Those it has not heard from since its request, and those whose request is ahead of it.
    fn waits_on(&self, cx: &MutexCx<'_, Self>) -> Vec<NodeId> {
        let me = cx.me;
        match self.mine.filter(|_| !self.holding) {
            None => Vec::new(),
            Some(ts) => {
                let mut w = self.unheard(cx, ts);
                w.extend(self.queue.iter().take_while(|q| q.1 != me).map(|q| q.1));
                w.sort_unstable();
                w.dedup();
                w
            }
        }
    }

    /// A waiting node enters if what it waits on is only nodes now taken for dead.
    fn settle(&mut self, cx: &mut MutexCx<'_, Self>) {
        self.maybe_enter(cx);
    }
}

/// The handlers, each run inside [`peer_watch::handle`].
impl Lamport {
    fn on_peer_restarted(&mut self, cx: &mut MutexCx<'_, Self>, peer: NodeId) {
        self.queue.retain(|q| q.1 != peer);
        self.latest.remove(&peer);
        if let Some(ts) = self.mine {
            cx.state_change(format!(
                "node {peer} restarted: its old request and acknowledgements are void; REQUEST({ts}) sent to it again"
            ));
            cx.send(
                peer,
                LamportMsg::Stamped {
                    kind: Kind::Request,
                    ts,
                },
            );
        }
        self.maybe_enter(cx);
    }

    fn on_request(&mut self, cx: &mut MutexCx<'_, Self>) {
        self.clock += 1;
        self.keep_ceiling(cx);
        let me = cx.me;
        self.mine = Some(self.clock);
        self.queue.insert((self.clock, me));
        self.broadcast(cx, Kind::Request);
        self.maybe_enter(cx);
    }

    fn on_release(&mut self, cx: &mut MutexCx<'_, Self>) {
        let me = cx.me;
        self.queue.retain(|q| q.1 != me);
        self.mine = None;
        self.holding = false;
        self.clock += 1;
        self.broadcast(cx, Kind::Release);
    }
}
