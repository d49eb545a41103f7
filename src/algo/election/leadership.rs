//! Leadership: runs any election protocol inside terms, watches the leader with heartbeats,
//! and repairs the ring around nodes that do not answer.
//!
//! Rules, event by event:
//! - on start: an initiator starts an election at once; any other node waits one timeout
//!   (plus jitter) for a leader to be announced, then starts one itself.
//! - start election: move to term + 1, forget the leader (stepping down if it was this node),
//!   record `election_start`, and let the protocol begin.
//! - on HEARTBEAT(t) from L: t older than ours: discard, answer NEWER. Otherwise adopt t and
//!   follow L: the leader timeout starts again.
//! - on protocol message (t): acknowledge it when asked; t older: discard, answer NEWER;
//!   t newer: adopt t and join that election; then hand it to the protocol.
//! - on NEWER(t, L): t newer than ours: adopt it and follow L if known. This is how a node
//!   that was paused learns, on waking, that the world moved on, and steps down.
//! - protocol decides L: L leads this term here. The leader sends HEARTBEAT to every member
//!   each heartbeat period; every other node watches it with a fixed timeout.
//! - on leader timeout: suspect the leader, start an election.
//! - on election timeout (no leader learned in this term): start an election in a new term.
//! - ring forwarding (`send_next`): send to the first successor not suspected and wait one
//!   timeout for its ACK; none: suspect it and send to the one after. When every other member
//!   is suspected the message is delivered to this node itself.
//! - any message from a suspected node withdraws the suspicion.
//!
//! Every member watches the leader directly (rather than only its ring neighbours) so that
//! detection does not depend on a path through other possibly-dead nodes, and so that every
//! log shows the suspicion: the cost is one heartbeat per member per period.

use crate::algo::detector::Silence;
use crate::algo::{Algorithm, Context, Event, Message, NodeId, Setup};
use crate::rng::Rng;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
use std::fmt::Debug;
use std::hash::Hash;
use std::time::Duration;

/// An election protocol, as the textbook gives it; [`Leadership`] supplies terms,
/// failure detection and ring repair around it.
pub trait Election: Sized {
    /// Its messages.
    type Msg: Message;
    /// Its own named timers (use `()` when it has none).
    type Timer: Copy + Eq + Hash + Debug;
    /// Builds the protocol state for a node.
    fn new(setup: &Setup) -> Self;
    /// This node starts an election in `ecx.term()`.
    fn start(&mut self, ecx: &mut ECx<'_, '_, Self>);
    /// A protocol message of the current term.
    fn on_msg(&mut self, ecx: &mut ECx<'_, '_, Self>, from: NodeId, msg: Self::Msg);
    /// One of its timers expired.
    fn on_timer(&mut self, _ecx: &mut ECx<'_, '_, Self>, _timer: Self::Timer) {}
    /// A new term began: forget the state of the last election.
    fn reset(&mut self);
    /// A leader became known at this node (by the protocol or by a heartbeat).
    fn on_leader(&mut self, _ecx: &mut ECx<'_, '_, Self>, _leader: NodeId) {}
}

/// The wrapper's messages around the protocol's.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum LMsg<M> {
    /// The leader is alive, in `term`.
    Heartbeat {
        /// The leader's term.
        term: u64,
    },
    /// Your term is old: this is mine, and who leads it if known.
    Newer {
        /// The newer term.
        term: u64,
        /// Its leader, if decided.
        leader: Option<NodeId>,
    },
    /// A protocol message of `term`; `ack` is nonzero when the sender waits for an ACK.
    Inner {
        /// The sender's term.
        term: u64,
        /// Sequence number to acknowledge, or 0.
        ack: u64,
        /// The protocol's message.
        msg: M,
    },
    /// Acknowledges `Inner` number `seq` (ring repair).
    Ack {
        /// The acknowledged sequence number.
        seq: u64,
    },
}

impl<M: Message> Message for LMsg<M> {
    fn name(&self) -> &'static str {
        match self {
            LMsg::Heartbeat { .. } => "HEARTBEAT",
            LMsg::Newer { .. } => "NEWER",
            LMsg::Inner { msg, .. } => msg.name(),
            LMsg::Ack { .. } => "ACK",
        }
    }
}

/// The wrapper's timers around the protocol's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LTimer<T> {
    /// The leader's heartbeat period.
    Heartbeat,
    /// No heartbeat from the leader for a timeout.
    LeaderTimeout,
    /// No leader learned in this term.
    ElectionTimeout,
    /// No ACK for ring message `seq`.
    Ack(u64),
    /// The protocol's own timer.
    Inner(T),
}

struct Pending<M> {
    to: NodeId,
    term: u64,
    msg: M,
}

/// The wrapper's state, apart from the protocol's (so both can be borrowed at once).
struct Core<M> {
    setup: Setup,
    term: u64,
    leader: Option<NodeId>,
    silence: Silence,
    next_seq: u64,
    pending: HashMap<u64, Pending<M>>,
    /// Ring messages that came back to this node because everyone else is suspected.
    local: VecDeque<M>,
    wants_election: bool,
}

type LCx<'b, E> = Context<'b, LMsg<<E as Election>::Msg>, LTimer<<E as Election>::Timer>>;

/// An election protocol made into a long-running leader service.
pub struct Leadership<E: Election> {
    core: Core<E::Msg>,
    inner: E,
}

/// What an election protocol may do during one handler call.
pub struct ECx<'a, 'b, E: Election> {
    core: &'a mut Core<E::Msg>,
    cx: &'a mut LCx<'b, E>,
}

impl<E: Election> ECx<'_, '_, E> {
    /// This node's id.
    pub fn me(&self) -> NodeId {
        self.core.setup.me
    }
    /// The current term.
    pub fn term(&self) -> u64 {
        self.core.term
    }
    /// The node's setup (members in ring order, neighbours, options).
    pub fn setup(&self) -> &Setup {
        &self.core.setup
    }
    /// Who leads this term, as far as this node knows.
    pub fn leader(&self) -> Option<NodeId> {
        self.core.leader
    }
    /// Monotonic time.
    pub fn now(&self) -> Duration {
        self.cx.now
    }
    /// Seeded random numbers.
    pub fn rng(&mut self) -> &mut Rng {
        self.cx.rng
    }
    /// Whether this node suspects `node`.
    pub fn is_suspected(&self, node: NodeId) -> bool {
        self.core.silence.is_suspected(node)
    }
    /// Sends `msg` to `to` in the current term, without waiting for an ACK.
    pub fn send(&mut self, to: NodeId, msg: E::Msg) {
        let term = self.core.term;
        self.cx.send(to, LMsg::Inner { term, ack: 0, msg });
    }
    /// Sends `msg` to the next live node around the ring (skipping nodes that do not answer).
    pub fn send_next(&mut self, msg: E::Msg) {
        let me = self.me();
        self.core.forward_after(self.cx, me, msg);
    }
    /// The first successor this node does not suspect (None when it suspects everyone).
    pub fn successor(&self) -> Option<NodeId> {
        self.core.live_after(self.me())
    }
    /// Sets one of the protocol's timers.
    pub fn set_timer(&mut self, t: E::Timer, after: Duration) {
        self.cx.set_timer(LTimer::Inner(t), after);
    }
    /// Cancels one of the protocol's timers.
    pub fn cancel_timer(&mut self, t: E::Timer) {
        self.cx.cancel_timer(LTimer::Inner(t));
    }
    /// Writes a trace event.
    pub fn record(&mut self, ev: Event) {
        self.cx.record(ev);
    }
    /// Records that a message was ignored on purpose.
    pub fn discard(&mut self, from: NodeId, reason: impl Into<String>) {
        self.cx.discard(from, reason);
    }
    /// The protocol decided: `leader` leads the current term.
    pub fn elected(&mut self, leader: NodeId) {
        self.core.follow(self.cx, leader);
    }
    /// Tells `to` the current term and its leader (for a message about an election already over).
    pub fn tell_decided(&mut self, to: NodeId) {
        let (term, leader) = (self.core.term, self.core.leader);
        self.cx.send(to, LMsg::Newer { term, leader });
    }
    /// Asks for a fresh election in a new term once this handler returns.
    pub fn start_election(&mut self) {
        self.core.wants_election = true;
    }
}

impl<M: Message> Core<M> {
    fn me(&self) -> NodeId {
        self.setup.me
    }

    fn live_after(&self, node: NodeId) -> Option<NodeId> {
        let m = &self.setup.members;
        let i = m.iter().position(|&x| x == node)?;
        (1..m.len())
            .map(|k| m[(i + k) % m.len()])
            .find(|&x| x != self.me() && !self.silence.is_suspected(x))
    }

    fn forward_after<T>(&mut self, cx: &mut Context<'_, LMsg<M>, LTimer<T>>, after: NodeId, msg: M) {
        let Some(to) = self.live_after(after) else {
            self.local.push_back(msg);
            return;
        };
        self.next_seq += 1;
        let seq = self.next_seq;
        let term = self.term;
        cx.send(
            to,
            LMsg::Inner {
                term,
                ack: seq,
                msg: msg.clone(),
            },
        );
        cx.set_timer(LTimer::Ack(seq), self.setup.timeout);
        self.pending.insert(seq, Pending { to, term, msg });
    }

    fn election_timeout(&self, rng: &mut Rng) -> Duration {
        let t = self.setup.timeout;
        let jitter = Duration::from_micros(rng.range(0, t.as_micros() as u64 + 1));
        3 * t + Duration::from_millis(self.setup.members.len() as u64) + jitter
    }

    /// Moves to a newer term `t`; false when `t` is not newer.
    fn adopt<T>(&mut self, cx: &mut Context<'_, LMsg<M>, LTimer<T>>, t: u64, why: String) -> bool {
        if t <= self.term {
            return false;
        }
        if self.leader == Some(self.me()) {
            cx.record(Event::StepDown {
                term: self.term,
                reason: why,
            });
            cx.cancel_timer(LTimer::Heartbeat);
        }
        self.term = t;
        self.leader = None;
        self.pending.clear();
        self.local.clear();
        cx.cancel_timer(LTimer::LeaderTimeout);
        let d = self.election_timeout(cx.rng);
        cx.set_timer(LTimer::ElectionTimeout, d);
        true
    }

    /// `leader` leads the current term, as far as this node now knows.
    fn follow<T>(&mut self, cx: &mut Context<'_, LMsg<M>, LTimer<T>>, leader: NodeId) {
        let me = self.me();
        if self.leader != Some(leader) {
            if self.leader == Some(me) {
                let reason = format!("node {leader} also leads term {}", self.term);
                cx.record(Event::StepDown {
                    term: self.term,
                    reason,
                });
                cx.cancel_timer(LTimer::Heartbeat);
            }
            self.leader = Some(leader);
            cx.record(Event::Leader {
                leader,
                term: self.term,
            });
            cx.cancel_timer(LTimer::ElectionTimeout);
            if leader == me {
                cx.set_timer(LTimer::Heartbeat, self.setup.heartbeat);
            }
        }
        if leader != me {
            self.silence.reset(leader, cx.now);
            cx.set_timer(LTimer::LeaderTimeout, self.setup.timeout);
        }
    }
}

impl<E: Election> Leadership<E> {
    /// A node running protocol `E` under leadership.
    pub fn new(setup: &Setup) -> Self {
        Leadership {
            core: Core {
                setup: setup.clone(),
                term: 0,
                leader: None,
                silence: Silence::default(),
                next_seq: 0,
                pending: HashMap::new(),
                local: VecDeque::new(),
                wants_election: false,
            },
            inner: E::new(setup),
        }
    }

    /// Who this node believes leads, and in which term.
    pub fn belief(&self) -> (u64, Option<NodeId>) {
        (self.core.term, self.core.leader)
    }

    /// The protocol's state, for tests.
    pub fn protocol(&self) -> &E {
        &self.inner
    }

    /// Runs `f` on the protocol, then whatever it left to do: messages that came back to this
    /// node, a requested election, and the leader hook.
    fn with_inner(&mut self, cx: &mut LCx<'_, E>, f: impl FnOnce(&mut E, &mut ECx<'_, '_, E>)) {
        let before = self.core.leader;
        f(
            &mut self.inner,
            &mut ECx {
                core: &mut self.core,
                cx,
            },
        );
        let me = self.core.me();
        while let Some(m) = self.core.local.pop_front() {
            self.inner.on_msg(
                &mut ECx {
                    core: &mut self.core,
                    cx,
                },
                me,
                m,
            );
        }
        self.after(cx, before);
    }

    fn after(&mut self, cx: &mut LCx<'_, E>, before: Option<NodeId>) {
        if std::mem::take(&mut self.core.wants_election) {
            self.start_election(cx);
        } else if let Some(l) = self.core.leader.filter(|&l| Some(l) != before) {
            self.inner.on_leader(
                &mut ECx {
                    core: &mut self.core,
                    cx,
                },
                l,
            );
            if std::mem::take(&mut self.core.wants_election) {
                self.start_election(cx);
            }
        }
    }

    fn start_election(&mut self, cx: &mut LCx<'_, E>) {
        let t = self.core.term + 1;
        self.core.adopt(cx, t, "starting a new election".into());
        cx.record(Event::ElectionStart { term: t });
        self.inner.reset();
        self.with_inner(cx, |e, ecx| e.start(ecx));
    }

    /// Moves to `t` if newer, joining that term's election; true when it did.
    fn join(&mut self, cx: &mut LCx<'_, E>, t: u64, from: NodeId) -> bool {
        if !self.core.adopt(cx, t, format!("heard of term {t} from node {from}")) {
            return false;
        }
        self.inner.reset();
        cx.record(Event::ElectionStart { term: t });
        true
    }

    fn stale(&mut self, cx: &mut LCx<'_, E>, from: NodeId, t: u64) {
        cx.discard(from, format!("stale term {t} < {}", self.core.term));
        cx.send(
            from,
            LMsg::Newer {
                term: self.core.term,
                leader: self.core.leader,
            },
        );
    }
}

impl<E: Election> Algorithm for Leadership<E> {
    type Msg = LMsg<E::Msg>;
    type Timer = LTimer<E::Timer>;

    fn on_start(&mut self, cx: &mut LCx<'_, E>) {
        if self.core.setup.initiator {
            self.start_election(cx);
        } else {
            let t = self.core.setup.timeout;
            let jitter = Duration::from_micros(cx.rng.range(0, t.as_micros() as u64 + 1));
            cx.set_timer(LTimer::ElectionTimeout, t + jitter);
        }
    }

    fn on_msg(&mut self, cx: &mut LCx<'_, E>, from: NodeId, msg: LMsg<E::Msg>) {
        if let Some(ev) = self.core.silence.heard(from, cx.now) {
            cx.record(ev);
        }
        let before = self.core.leader;
        match msg {
            LMsg::Ack { seq } => {
                self.core.pending.remove(&seq);
                cx.cancel_timer(LTimer::Ack(seq));
            }
            LMsg::Heartbeat { term } if term < self.core.term => self.stale(cx, from, term),
            LMsg::Heartbeat { term } => {
                self.join(cx, term, from);
                self.core.follow(cx, from);
                self.after(cx, before);
            }
            LMsg::Newer { term, leader } => {
                let newer = self.join(cx, term, from);
                if let Some(l) = leader.filter(|_| newer || (term == self.core.term && before.is_none())) {
                    self.core.follow(cx, l);
                }
                self.after(cx, before);
            }
            LMsg::Inner { term, ack, msg } => {
                if ack != 0 {
                    cx.send(from, LMsg::Ack { seq: ack });
                }
                if term < self.core.term {
                    self.stale(cx, from, term);
                } else {
                    self.join(cx, term, from);
                    self.with_inner(cx, |e, ecx| e.on_msg(ecx, from, msg));
                }
            }
        }
    }

    fn on_timer(&mut self, cx: &mut LCx<'_, E>, timer: LTimer<E::Timer>) {
        let me = self.core.me();
        match timer {
            LTimer::Heartbeat if self.core.leader == Some(me) => {
                let term = self.core.term;
                for &m in self.core.setup.members.iter().filter(|&&m| m != me) {
                    cx.send(m, LMsg::Heartbeat { term });
                }
                cx.set_timer(LTimer::Heartbeat, self.core.setup.heartbeat);
            }
            LTimer::Heartbeat => {}
            LTimer::LeaderTimeout => {
                if let Some(l) = self.core.leader.filter(|&l| l != me) {
                    if let Some(ev) = self.core.silence.suspect(l, cx.now, self.core.setup.timeout) {
                        cx.record(ev);
                    }
                    self.start_election(cx);
                }
            }
            LTimer::ElectionTimeout => {
                if self.core.leader.is_none() {
                    self.start_election(cx);
                }
            }
            LTimer::Ack(seq) => {
                let Some(p) = self.core.pending.remove(&seq) else {
                    return;
                };
                if p.term != self.core.term {
                    return;
                }
                if let Some(ev) = self.core.silence.suspect(p.to, cx.now, self.core.setup.timeout) {
                    cx.record(ev);
                }
                self.core.forward_after(cx, p.to, p.msg);
                self.with_inner(cx, |_, _| {});
            }
            LTimer::Inner(t) => self.with_inner(cx, |e, ecx| e.on_timer(ecx, t)),
        }
    }

    fn term(&self) -> u64 {
        self.core.term
    }
}
