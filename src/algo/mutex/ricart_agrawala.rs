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
//! With `--set detector=fixed|phi|swim` (the family's detector,
//! [`peer_watch`](super::peer_watch)): a waiting node enters once every other participant has
//! replied or is taken for dead, so a dead node no longer blocks every request for ever. The
//! detector cannot tell a paused holder from a dead one: two nodes may then hold, and the
//! later request's fencing token is above the paused holder's, so a fencing resource refuses
//! the stale write. Without the key there is no detector and no detector traffic.
//!
//! Messages: 2(n-1) per entry (the REPLY carries the REQUEST's acknowledgement), plus the bare
//! `CH_ACK`s and resends.

use super::peer_watch::{self, PeerWatch};
use super::wrapper::{Ask, MutexCx, Protocol};
use crate::algo::detector::{LiveMsg, LiveTimer};
use crate::algo::{Brief, Message, NodeId, Setup};
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
    /// The failure detector's (with `--set detector`).
    Live(LiveMsg),
}

/// Ricart-Agrawala's timers: the failure detector's only (with `--set detector`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum RaTimer {
    /// The failure detector's.
    Live(LiveTimer),
}

crate::algo::compose::slot! {
    /// The detector's slot in Ricart-Agrawala's messages and timers.
    pub(super) struct RaLive;
    impl for RaMsg, RaTimer: LiveMsg => RaMsg::Live, LiveTimer => RaTimer::Live
}

impl Message for RaMsg {
    fn name(&self) -> &'static str {
        match self {
            RaMsg::Request { .. } => "REQUEST",
            RaMsg::Reply { .. } => "REPLY",
            RaMsg::Live(m) => m.name(),
        }
    }
    /// By hand: one brief a datagram sent and one a datagram accepted (see `algo::Brief`).
    fn brief(&self) -> String {
        match self {
            RaMsg::Request { ts } | RaMsg::Reply { ts } => Brief::new(self.name()).field("ts", *ts).done(),
            RaMsg::Live(m) => m.brief(),
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
    /// The failure detector, when `--set detector` asks for one.
    watch: Option<Box<PeerWatch<RaLive>>>,
    /// The nodes the last entry went on without (told in the log when it changes).
    skipped: Vec<NodeId>,
}

impl RicartAgrawala {
    /// Moves the stored ceiling ahead once the clock reaches it (stored before any message of
    /// this call leaves, so no timestamp sent is above what a restart would start from).
    fn keep_ceiling(&mut self, cx: &mut MutexCx<'_, Self>) {
        if let Some(bytes) = super::ceiling::raise(self.clock, &mut self.ceiling) {
            cx.persist(bytes);
        }
    }

    /// The other participants whose REPLY the pending request still waits for.
    fn missing(&self, cx: &MutexCx<'_, Self>) -> Vec<NodeId> {
        self.waiting_on(cx).collect()
    }

    /// [`Self::missing`], one at a time (asked at every REPLY, where the first one alive
    /// settles it).
    fn waiting_on<'a>(&'a self, cx: &'a MutexCx<'_, Self>) -> impl Iterator<Item = NodeId> + 'a {
        let me = cx.me;
        cx.view()
            .peers
            .iter()
            .copied()
            .filter(move |&p| p != me && !self.replies.contains(&p))
    }

    fn maybe_enter(&mut self, cx: &mut MutexCx<'_, Self>) {
        let (Some(ts), false) = (self.mine, self.holding) else {
            return;
        };
        let dead = |p: NodeId| self.watch.as_ref().is_some_and(|w| w.takes_for_dead(p));
        if self.waiting_on(cx).any(|p| !dead(p)) {
            return;
        }
        let missing = self.missing(cx);
        if let Some(w) = &self.watch {
            w.tell_skips(
                cx,
                missing,
                &mut self.skipped,
                "entering without their REPLY",
                "entering with every REPLY again",
            );
        }
        self.holding = true;
        let me = cx.me;
        cx.ask(Ask::Enter(Some(fencing(ts, me))));
    }

    /// The detector (tests read its opinions).
    #[cfg(test)]
    pub(super) fn watch(&self) -> Option<&PeerWatch<RaLive>> {
        self.watch.as_deref()
    }
}

impl Protocol for RicartAgrawala {
    const RELIABLE: bool = true;
    type Msg = RaMsg;
    type Timer = RaTimer;

    fn new(setup: &Setup, peers: &[NodeId]) -> Self {
        let clock = super::ceiling::restored(setup);
        RicartAgrawala {
            clock,
            ceiling: clock,
            watch: peer_watch::wanted(setup).then(|| Box::new(PeerWatch::new(setup, peers))),
            ..RicartAgrawala::default()
        }
    }

    fn check(setup: &Setup) -> Result<(), String> {
        peer_watch::check_keys(setup, "ricart-agrawala").map(|_| ())
    }

    fn on_link(msg: &RaMsg) -> bool {
        !matches!(msg, RaMsg::Live(_))
    }

    fn start(&mut self, cx: &mut MutexCx<'_, Self>) {
        if let Some(w) = &mut self.watch {
            w.start(cx);
        }
    }

    fn request(&mut self, cx: &mut MutexCx<'_, Self>, req: u64) {
        peer_watch::handle(self, cx, |me, cx| me.on_request(cx, req));
    }

    fn release(&mut self, cx: &mut MutexCx<'_, Self>, req: u64) {
        peer_watch::handle(self, cx, |me, cx| me.on_release(cx, req));
    }

    fn peer_restarted(&mut self, cx: &mut MutexCx<'_, Self>, peer: NodeId) {
        peer_watch::handle(self, cx, |me, cx| me.on_peer_restarted(cx, peer));
    }

    fn on_msg(&mut self, cx: &mut MutexCx<'_, Self>, from: NodeId, msg: RaMsg) {
        peer_watch::handle(self, cx, |me, cx| me.on_message(cx, from, msg));
    }

    fn on_timer(&mut self, cx: &mut MutexCx<'_, Self>, RaTimer::Live(t): RaTimer) {
        peer_watch::on_timer(self, cx, t);
    }
}

impl peer_watch::Hosted for RicartAgrawala {
    type Slot = RaLive;

    fn watch_mut(&mut self) -> &mut Option<Box<PeerWatch<RaLive>>> {
        &mut self.watch
    }

    /// The nodes whose REPLY the pending request lacks.
    fn waits_on(&self, cx: &MutexCx<'_, Self>) -> Vec<NodeId> {
        match (self.mine, self.holding) {
            (Some(_), false) => self.missing(cx),
            _ => Vec::new(),
        }
    }

    /// A waiting node enters if every REPLY it lacks is from a node now taken for dead.
    fn settle(&mut self, cx: &mut MutexCx<'_, Self>) {
        self.maybe_enter(cx);
    }
}

/// The handlers, each run inside [`peer_watch::handle`].
impl RicartAgrawala {
    fn on_request(&mut self, cx: &mut MutexCx<'_, Self>, _req: u64) {
        self.clock += 1;
        self.keep_ceiling(cx);
        self.mine = Some(self.clock);
        self.replies.clear();
        cx.send_others(RaMsg::Request { ts: self.clock });
        self.maybe_enter(cx);
    }

    fn on_release(&mut self, cx: &mut MutexCx<'_, Self>, _req: u64) {
        self.mine = None;
        self.holding = false;
        // The oldest request first: it is the one that may enter next (every other node has
        // replied to it), and a step's datagrams leave in the order of their first messages, so
        // its datagram is not queued behind the other 18 of a 20-node run's.
        let mut deferred = std::mem::take(&mut self.deferred);
        deferred.sort_unstable_by_key(|&(j, ts)| (ts, j));
        for (j, ts) in deferred {
            cx.send(j, RaMsg::Reply { ts });
        }
    }

    fn on_peer_restarted(&mut self, cx: &mut MutexCx<'_, Self>, peer: NodeId) {
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

    fn on_message(&mut self, cx: &mut MutexCx<'_, Self>, from: NodeId, msg: RaMsg) {
        let live = match &msg {
            RaMsg::Live(m) => Some(m),
            _ => None,
        };
        PeerWatch::hear(&mut self.watch, cx, from, live, "ricart-agrawala");
        match msg {
            RaMsg::Live(_) => {}
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
