//! The central coordinator with a FIFO queue (the course's first mutual-exclusion algorithm).
//!
//! The coordinator is the participant with the highest id (fixed: this lab does not combine
//! it with an election). Rules:
//! - request: send REQUEST(req) to the coordinator (the coordinator queues its own at once);
//!   `req` carries the node's boot count above the request's number, so that a restarted
//!   node's requests are new to the coordinator.
//! - coordinator, on REQUEST(req) from j: if j holds the grant of req, its GRANT was lost:
//!   send it again. If j holds the grant of an older request, j left that section (a node
//!   asks for its next one only after leaving) and its RELEASE was lost: take the grant back
//!   as if released. Then a request id j already sent is a duplicate, ignored; otherwise
//!   append (j, req) to the queue; if nobody holds, grant the head.
//! - grant: counter := counter + 1; send GRANT(req, token) to the head, where the fencing
//!   token is (epoch, counter) in one u64 (32 bits each): the epoch is the coordinator's boot
//!   count, kept on stable storage, so every token of a restarted coordinator is above all the
//!   tokens it granted before (its counter starts again at 1).
//! - on GRANT(req, token) for the request this node waits on: enter with that token.
//! - a participant that waits a failure-detector timeout (`--timeout-ms`) without a grant
//!   sends its REQUEST again, and again after each further timeout: a coordinator that
//!   restarted lost its queue, and a lost datagram would otherwise stall the participant for
//!   ever. The coordinator ignores a request it already queued or served.
//! - release: send RELEASE(req) to the coordinator.
//! - coordinator, on RELEASE(req) from the current holder: grant the next; a RELEASE of any
//!   other request (never granted, or already taken back) is ignored and counted.
//! - coordinator, on learning that j came back as a new boot (its HELLO, or any first message
//!   of the new boot): the old boot is no longer inside, nor waiting: if j held the grant, free
//!   it and grant the next; drop j's queued requests. Without `regrant_ms` a holder that stays
//!   dead still blocks everyone (the course's lesson); one that restarted never does.
//! - participant, on learning that the coordinator came back as a new boot: it lost its queue,
//!   so send the pending REQUEST again at once.
//! - `--set regrant_ms=T` (the course's "fix" of a slow holder, and its flaw): a holder that
//!   the coordinator has not heard from within T is suspected dead and the next is granted.
//!   While inside, a holder sends HOLDING(req) every T/3 (a lease it renews, so a long hold
//!   alone is no reason to regrant); on HOLDING from the current holder the coordinator starts
//!   T again. A holder that was only paused, or that the network cut off from the coordinator,
//!   is then still inside: two holders, which the resource catches; with `--fencing` the stale
//!   holder's writes carry the lower token and are rejected.
//! - `--set detector=fixed|phi|swim` (instead of `regrant_ms`; both given is refused): the
//!   coordinator judges the holder with the family's failure detector, the `Liveness`
//!   component the election family hosts ([`central_detector`](super::central_detector)):
//!   when it suspects the holder (SWIM: declares it dead), the next is granted. No HOLDING
//!   lease: the detector's own traffic (PROBE/ALIVE, BEATs, SWIM's PINGs) is the evidence, and
//!   its stall rule keeps a coordinator that was itself paused from regranting on the silence
//!   it slept through. A paused or cut-off holder taken for dead teaches the lease's lesson:
//!   two holders, caught the same way.
//!
//! Messages: 3 per entry of a participant other than the coordinator (REQUEST, GRANT,
//! RELEASE), plus a repeated REQUEST per timeout waited and, with `regrant_ms`, a HOLDING per
//! T/3 held (with `detector`, the detector's own traffic instead); the coordinator's own
//! entries cost none. A coordinator that restarts forgets its holder: it may grant the next
//! while the old holder is still inside (the amnesia of the quorum's coordinators), which the
//! resource catches, and under `--fencing` the old holder's late writes carry a lower token.

use super::central_detector::{self as detector, HolderWatch};
use super::peer_watch::{self, PeerWatch};
use super::wrapper::{Ask, MutexCx, Protocol};
use crate::algo::detector::{LiveMsg, LiveTimer};
use crate::algo::options::{options, Kind};
use crate::algo::{Event, Message, NodeId, Setup};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

options! {
    /// Central's own keys.
    pub(crate) struct CentralOptions {
        regrant_ms: u64 = 0, Kind::Int { min: 0, max: 3_600_000 },
            "the course's timeout fix: a holder silent this long is taken for dead and the next is granted (0: never)";
    }
}

/// Central-coordinator messages.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum CentralMsg {
    /// A participant wants the section.
    Request {
        /// Its request id.
        req: u64,
    },
    /// The coordinator lets it in.
    Grant {
        /// The request granted.
        req: u64,
        /// The fencing token (the grant counter).
        token: u64,
    },
    /// The participant left.
    Release {
        /// The request released.
        req: u64,
    },
    /// The participant is still inside (with `regrant_ms`: it renews its grant).
    Holding {
        /// The request it holds.
        req: u64,
    },
    /// The failure detector's (with `--set detector`).
    Live(LiveMsg),
}

impl Message for CentralMsg {
    fn name(&self) -> &'static str {
        match self {
            CentralMsg::Request { .. } => "REQUEST",
            CentralMsg::Grant { .. } => "GRANT",
            CentralMsg::Release { .. } => "RELEASE",
            CentralMsg::Holding { .. } => "HOLDING",
            CentralMsg::Live(m) => m.name(),
        }
    }
}

/// Central's timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CentralTimer {
    /// The coordinator's: the holder of this grant (token) took too long.
    Regrant(u64),
    /// A participant's: its request still waits; send it again.
    Retry,
    /// A holder's (with `regrant_ms`): tell the coordinator it is still inside.
    Renew,
    /// The failure detector's (with `--set detector`).
    Live(LiveTimer),
}
use CentralTimer::{Regrant, Renew, Retry};

/// What a node keeps on stable storage: its boot count, the epoch of its tokens (at the
/// coordinator) and of its request ids (everywhere).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
struct Boots {
    boots: u64,
}

/// One node's state (the coordinator's part is used only at the coordinator).
#[derive(Debug, Clone)]
pub struct Central {
    coordinator: NodeId,
    waiting: Option<u64>,
    regrant: Option<Duration>,
    queue: VecDeque<(NodeId, u64)>,
    holder: Option<(NodeId, u64, u64)>,
    counter: u64,
    /// This node's boot count: the epoch of its tokens, when it coordinates, and of its
    /// request ids.
    epoch: u64,
    seen: BTreeMap<NodeId, u64>,
    retry: Duration,
    /// The request this participant holds the section for (renewed while `regrant` is set).
    holding: Option<u64>,
    /// The request this participant is inside the section for.
    inside: Option<u64>,
    /// At the coordinator: the holders it took for dead (regrant), until it hears from them.
    taken_for_dead: BTreeSet<NodeId>,
    /// The failure detector, when `--set detector` asks for one.
    watch: Option<Box<HolderWatch>>,
}

impl Central {
    /// The coordinator.
    pub fn coordinator(&self) -> NodeId {
        self.coordinator
    }

    /// The failure detector's name, when the run hosts one (`--set detector`).
    pub fn detector(&self) -> Option<&'static str> {
        self.watch.as_ref().map(|w| w.detector())
    }

    /// The node holding the grant, as the coordinator knows it (None elsewhere).
    pub fn holder(&self) -> Option<NodeId> {
        self.holder.map(|h| h.0)
    }

    /// The detector (tests read its opinions).
    #[cfg(test)]
    pub(super) fn watch(&self) -> Option<&HolderWatch> {
        self.watch.as_deref()
    }

    fn enqueue(&mut self, cx: &mut MutexCx<'_, Self>, from: NodeId, req: u64) {
        if let Some((h, r, token)) = self.holder.filter(|h| h.0 == from) {
            if r == req {
                // The holder asks again for what it was granted: its GRANT was lost.
                if from != cx.me {
                    cx.send(from, CentralMsg::Grant { req, token });
                }
                return;
            }
            if req > r {
                // A node asks for its next section only after leaving the last one: its
                // RELEASE was lost, and waiting for it would block everyone for ever.
                cx.state_change(format!(
                    "node {h} asks again (request {req}) while holding request {r}'s grant (token {token}): it left, its RELEASE was lost; granting the next"
                ));
                self.holder = None;
                cx.cancel_timer(Regrant(token));
            }
        }
        if self.seen.get(&from).is_some_and(|&r| r >= req) {
            return cx.discard(from, format!("REQUEST {req} again: already queued or served"));
        }
        self.seen.insert(from, req);
        self.queue.push_back((from, req));
        if self.holder.is_none() {
            self.grant_next(cx);
        }
    }

    fn grant_next(&mut self, cx: &mut MutexCx<'_, Self>) {
        let Some((node, req)) = self.queue.pop_front() else {
            return;
        };
        self.counter += 1;
        let token = (self.epoch << 32) | (self.counter & 0xffff_ffff);
        self.holder = Some((node, req, token));
        // The coordinator knows it is alive: it never takes its own hold for dead.
        if let (Some(t), false) = (self.regrant, node == cx.me) {
            cx.set_timer(Regrant(token), t);
        }
        if node == cx.me {
            self.granted(cx, req, token);
        } else {
            cx.send(node, CentralMsg::Grant { req, token });
        }
    }

    /// Request `req` of this boot as the coordinator knows it: a restarted node numbers its
    /// requests from 1 again, and its boot count above them keeps the coordinator from taking
    /// them for ones already served.
    fn wire(&self, req: u64) -> u64 {
        (self.epoch << 32) | (req & 0xffff_ffff)
    }

    fn granted(&mut self, cx: &mut MutexCx<'_, Self>, req: u64, token: u64) {
        if self.waiting == Some(req) {
            self.waiting = None;
            self.inside = Some(req);
            cx.cancel_timer(Retry);
            if let (Some(t), false) = (self.regrant, cx.me == self.coordinator) {
                self.holding = Some(req);
                cx.set_timer(Renew, t / 3);
            }
            cx.ask(Ask::Enter(Some(token)));
        } else if self.inside == Some(req) {
            cx.discard(
                self.coordinator,
                format!("GRANT of request {req} again, while inside with it"),
            );
        } else {
            // A grant taken back and given again after this node asked again, reaching it after
            // it was served: given straight back, or the coordinator would wait on a holder
            // that is not inside. The coordinator acts on it only if it thinks so.
            cx.discard(
                self.coordinator,
                format!("GRANT of request {req}, which this node does not wait for: given straight back"),
            );
            cx.send(self.coordinator, CentralMsg::Release { req });
        }
    }

    fn released(&mut self, cx: &mut MutexCx<'_, Self>, from: NodeId, req: u64) {
        match self.holder {
            Some((h, r, token)) if h == from && r == req => {
                self.holder = None;
                cx.cancel_timer(Regrant(token));
                self.grant_next(cx);
            }
            _ => cx.discard(from, format!("RELEASE of request {req}, which does not hold a grant")),
        }
    }

    /// The holder renews its grant: the coordinator hears from it, so it is not dead.
    fn renewed(&mut self, cx: &mut MutexCx<'_, Self>, from: NodeId, req: u64) {
        match (self.holder, self.regrant) {
            (Some((h, r, token)), Some(t)) if h == from && r == req => cx.set_timer(Regrant(token), t),
            _ => cx.discard(from, format!("HOLDING of request {req}, which does not hold a grant")),
        }
    }
}

impl Protocol for Central {
    type Msg = CentralMsg;
    type Timer = CentralTimer;

    fn new(setup: &Setup, peers: &[NodeId]) -> Self {
        let regrant = CentralOptions::read(setup).regrant_ms;
        let before: Boots = setup
            .durable
            .as_ref()
            .and_then(|b| serde_json::from_slice(b).ok())
            .unwrap_or_default();
        Central {
            coordinator: peers.iter().copied().max().unwrap_or(setup.me),
            waiting: None,
            regrant: (regrant > 0).then(|| Duration::from_millis(regrant)),
            queue: VecDeque::new(),
            holder: None,
            counter: 0,
            epoch: before.boots + 1,
            seen: BTreeMap::new(),
            retry: setup.timeout,
            holding: None,
            inside: None,
            taken_for_dead: BTreeSet::new(),
            watch: detector::wanted(setup).then(|| Box::new(HolderWatch::new(setup, peers))),
        }
    }

    fn start(&mut self, cx: &mut MutexCx<'_, Self>) {
        // Before any grant or request leaves: no token or request id of this boot may repeat
        // one of the last.
        cx.persist(serde_json::to_vec(&Boots { boots: self.epoch }).unwrap_or_default());
        if let Some(w) = &mut self.watch {
            w.start(cx);
        }
    }

    fn check(setup: &Setup) -> Result<(), String> {
        let o = CentralOptions::from_setup(setup)?;
        detector::check(setup, o.regrant_ms)
    }

    fn request(&mut self, cx: &mut MutexCx<'_, Self>, req: u64) {
        peer_watch::handle(self, cx, |me, cx| me.on_request(cx, req));
    }

    fn release(&mut self, cx: &mut MutexCx<'_, Self>, req: u64) {
        peer_watch::handle(self, cx, |me, cx| me.on_release(cx, req));
    }

    fn on_msg(&mut self, cx: &mut MutexCx<'_, Self>, from: NodeId, msg: CentralMsg) {
        peer_watch::handle(self, cx, |me, cx| me.on_message(cx, from, msg));
    }

    fn peer_restarted(&mut self, cx: &mut MutexCx<'_, Self>, peer: NodeId) {
        peer_watch::handle(self, cx, |me, cx| me.on_peer_restarted(cx, peer));
    }

    fn on_timer(&mut self, cx: &mut MutexCx<'_, Self>, timer: CentralTimer) {
        match timer {
            CentralTimer::Live(t) => peer_watch::on_timer(self, cx, t),
            timer => peer_watch::handle(self, cx, |me, cx| me.on_expiry(cx, timer)),
        }
    }
}

impl peer_watch::Hosted for Central {
    type Slot = detector::LiveSlot;

    fn watch_mut(&mut self) -> &mut Option<Box<HolderWatch>> {
        &mut self.watch
    }

    /// At the coordinator, the holder.
    fn waits_on(&self, cx: &MutexCx<'_, Self>) -> Vec<NodeId> {
        self.holder
            .map(|h| h.0)
            .filter(|_| cx.me == self.coordinator)
            .into_iter()
            .collect()
    }

    /// At the coordinator: while the detector takes the holder for dead, grant the next.
    fn settle(&mut self, cx: &mut MutexCx<'_, Self>) {
        if cx.me != self.coordinator {
            return;
        }
        while let Some((h, req, token)) = self.holder {
            let Some(w) = self.watch.as_ref().filter(|w| h != cx.me && w.takes_for_dead(h)) else {
                return;
            };
            cx.state_change(format!(
                "detector={} suspects holder {h} (request {req}, token {token}): taken for dead, granting the next",
                w.detector()
            ));
            self.take_back(cx, h, req);
        }
    }
}

/// The handlers, each run inside [`peer_watch::handle`].
impl Central {
    fn on_request(&mut self, cx: &mut MutexCx<'_, Self>, req: u64) {
        let req = self.wire(req);
        self.waiting = Some(req);
        if cx.me == self.coordinator {
            let me = cx.me;
            self.enqueue(cx, me, req);
        } else {
            cx.send(self.coordinator, CentralMsg::Request { req });
            cx.set_timer(Retry, self.retry);
        }
    }

    fn on_release(&mut self, cx: &mut MutexCx<'_, Self>, req: u64) {
        let req = self.wire(req);
        if self.holding.take().is_some() {
            cx.cancel_timer(Renew);
        }
        self.inside = None;
        if cx.me == self.coordinator {
            let me = cx.me;
            self.released(cx, me, req);
        } else {
            cx.send(self.coordinator, CentralMsg::Release { req });
        }
    }

    fn on_message(&mut self, cx: &mut MutexCx<'_, Self>, from: NodeId, msg: CentralMsg) {
        let live = match &msg {
            CentralMsg::Live(m) => Some(m),
            _ => None,
        };
        PeerWatch::hear(&mut self.watch, cx, from, live, "central");
        if live.is_some() {
            return;
        }
        let at_coordinator = cx.me == self.coordinator;
        // A holder taken for dead speaks again: the suspicion was false, and is withdrawn.
        if at_coordinator && self.taken_for_dead.remove(&from) {
            cx.record(Event::Unsuspect { target: from });
        }
        match msg {
            CentralMsg::Request { .. } | CentralMsg::Release { .. } | CentralMsg::Holding { .. } if !at_coordinator => {
                cx.discard(
                    from,
                    format!("{} sent to node {}, which is not the coordinator", msg.name(), cx.me),
                )
            }
            CentralMsg::Request { req } => self.enqueue(cx, from, req),
            CentralMsg::Holding { req } => self.renewed(cx, from, req),
            CentralMsg::Release { req } => self.released(cx, from, req),
            CentralMsg::Grant { .. } if from != self.coordinator => {
                cx.discard(from, format!("GRANT from node {from}, which is not the coordinator"))
            }
            CentralMsg::Grant { req, token } => self.granted(cx, req, token),
            CentralMsg::Live(_) => {}
        }
    }

    fn on_peer_restarted(&mut self, cx: &mut MutexCx<'_, Self>, peer: NodeId) {
        if cx.me != self.coordinator {
            if let (Some(req), true) = (self.waiting, peer == self.coordinator) {
                cx.send(self.coordinator, CentralMsg::Request { req });
                cx.set_timer(Retry, self.retry);
            }
            return;
        }
        self.queue.retain(|q| q.0 != peer);
        if let Some((h, req, token)) = self.holder.filter(|h| h.0 == peer) {
            cx.state_change(format!(
                "node {h} came back as a new boot: it no longer holds request {req}'s grant (token {token}); granting the next"
            ));
            self.holder = None;
            cx.cancel_timer(Regrant(token));
            self.grant_next(cx);
        }
    }

    fn on_expiry(&mut self, cx: &mut MutexCx<'_, Self>, timer: CentralTimer) {
        let token = match timer {
            Regrant(token) => token,
            // Run by `peer_watch::on_timer`.
            CentralTimer::Live(_) => return,
            Renew => {
                if let (Some(req), Some(t)) = (self.holding, self.regrant) {
                    cx.send(self.coordinator, CentralMsg::Holding { req });
                    cx.set_timer(Renew, t / 3);
                }
                return;
            }
            Retry => {
                if let Some(req) = self.waiting {
                    cx.send(self.coordinator, CentralMsg::Request { req });
                    cx.set_timer(Retry, self.retry);
                }
                return;
            }
        };
        let Some((holder, req, t)) = self.holder else { return };
        if t != token {
            return;
        }
        let ms = self.regrant.map_or(0, |d| d.as_millis() as u64);
        // The course's timeout "fix": the holder is assumed dead, which a paused one is not.
        cx.record(Event::Suspect {
            target: holder,
            silence_ms: ms,
            timeout_ms: ms,
            cause: "regrant".into(),
            phi: None,
            incarnation: None,
        });
        self.taken_for_dead.insert(holder);
        self.take_back(cx, holder, req);
    }

    /// Takes the grant of `holder`'s request `req` back and grants the next. The holder may
    /// never have had the GRANT (lost, or cut off): asking again for `req`, it is queued again.
    fn take_back(&mut self, cx: &mut MutexCx<'_, Self>, holder: NodeId, req: u64) {
        self.holder = None;
        if self.seen.get(&holder) == Some(&req) {
            self.seen.insert(holder, req.saturating_sub(1));
        }
        self.grant_next(cx);
    }
}

#[cfg(test)]
#[path = "central_lease_tests.rs"]
mod tests;
