//! The mutual-exclusion wrapper: every node runs the same loop -- think (exponential around
//! the mean), request, hold the shared resource, release -- and a textbook [`Protocol`] decides
//! when it may enter. The wrapper owns the workload, the trace events (`cs_request`,
//! `cs_enter`, `cs_exit`) and the talk with the resource (`BEGIN` with the fencing token on
//! entry, `END` on exit, sent before the protocol's release so the resource hears of the exit
//! first). All of its plumbing -- wrapping and unwrapping messages and timers -- is in [`MCx`].
//!
//! A protocol that assumes reliable FIFO channels ([`Protocol::RELIABLE`]) gets them here, from
//! the shared layer [`crate::algo::reliable`]: its messages travel numbered, acknowledged
//! (`CH_ACK`, counted apart from the protocol's own messages) and sent again until they are.
//! A node that restarted says HELLO to every participant, so that each learns at once that
//! its old boot is gone ([`Protocol::peer_restarted`]).

use super::options::Workload;
use super::resource::Resource;
use super::RESOURCE_ID;
use crate::algo::reliable::{Channels, Frame};
use crate::algo::{Algorithm, Context, Event, Message, NodeId, Setup};
use crate::rng::Rng;
use serde::{Deserialize, Serialize};
use std::fmt::Debug;
use std::hash::Hash;
use std::time::Duration;

/// A mutual-exclusion protocol, as the textbook gives it; [`Mutex`] runs the workload around it.
pub trait Protocol: Sized {
    /// Whether its rules assume reliable FIFO channels: the wrapper then carries its messages
    /// on the shared reliable layer (numbered, acknowledged, sent again, in order).
    const RELIABLE: bool = false;
    /// Its messages.
    type Msg: Message;
    /// Its own named timers (`()` when it has none).
    type Timer: Copy + Eq + Hash + Debug;
    /// Builds the protocol state; `peers` are the participants in ring order (this node included).
    fn new(setup: &Setup, peers: &[NodeId]) -> Self;
    /// Checks its own options; the error is one line.
    fn check(_setup: &Setup) -> Result<(), String> {
        Ok(())
    }
    /// The node is up.
    fn start(&mut self, _mcx: &mut MCx<'_, '_, Self>) {}
    /// The node wants the section for request `req`: call [`MCx::enter`] once it may.
    fn request(&mut self, mcx: &mut MCx<'_, '_, Self>, req: u64);
    /// The node left the section of request `req`.
    fn release(&mut self, mcx: &mut MCx<'_, '_, Self>, req: u64);
    /// A protocol message.
    fn on_msg(&mut self, mcx: &mut MCx<'_, '_, Self>, from: NodeId, msg: Self::Msg);
    /// One of its timers expired.
    fn on_timer(&mut self, _mcx: &mut MCx<'_, '_, Self>, _timer: Self::Timer) {}
    /// Participant `peer` came back as a new boot, which remembers only what it persisted:
    /// forget what its old boot asked or promised, and tell the new one what it must know.
    /// Called before the newcomer's first message is handled.
    fn peer_restarted(&mut self, _mcx: &mut MCx<'_, '_, Self>, _peer: NodeId) {}
}

/// The wire messages of a mutual-exclusion run. The resource's two come first, so that the
/// resource process, which knows no protocol, decodes them identically.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum MxMsg<M> {
    /// To the resource: I start using you, with this fencing token.
    Begin {
        /// The request id.
        req: u64,
        /// The fencing token the protocol gave (None: it has none).
        token: Option<u64>,
    },
    /// To the resource: I am done.
    End {
        /// The request id.
        req: u64,
    },
    /// A protocol message.
    Proto(M),
    /// A protocol message on the reliable channel layer, or its acknowledgement.
    Link(Frame<M>),
    /// A restarted participant's first word to every other: my old boot is gone.
    Hello,
}

impl<M: Message> Message for MxMsg<M> {
    fn name(&self) -> &'static str {
        match self {
            MxMsg::Begin { .. } => "BEGIN",
            MxMsg::End { .. } => "END",
            MxMsg::Proto(m) | MxMsg::Link(Frame::Data { item: m, .. }) => m.name(),
            MxMsg::Link(Frame::Ack { .. }) => "CH_ACK",
            MxMsg::Hello => "HELLO",
        }
    }
    fn brief(&self) -> String {
        match self {
            MxMsg::Proto(m) => m.brief(),
            MxMsg::Link(Frame::Data { item, n, .. }) => format!("{} #{n}", item.brief()),
            MxMsg::Link(Frame::Ack { inc, upto }) => format!("CH_ACK(upto={upto}, inc={inc})"),
            _ => crate::algo::brief_from_debug(self.name(), &format!("{self:?}")),
        }
    }
}

/// The wrapper's timers around the protocol's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MxTimer<T> {
    /// Thinking is over: request.
    Think,
    /// Holding is over: release.
    Hold,
    /// A protocol timer.
    Proto(T),
    /// The reliable layer's: send again what is unacknowledged.
    Resend,
}

/// Where the node is in its loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Between requests (or not running the workload).
    Thinking,
    /// Requested, not yet in.
    Waiting(u64),
    /// In the critical section.
    Holding(u64),
    /// Every request served.
    Done,
}

/// The protocol's view during one call: its own messages and timers, and `enter`.
pub struct MCx<'a, 'c, P: Protocol> {
    cx: &'a mut Context<'c, MxMsg<P::Msg>, MxTimer<P::Timer>>,
    peers: &'a [NodeId],
    entered: &'a mut Option<Option<u64>>,
    link: Option<&'a mut Channels<P::Msg>>,
}

impl<'a, 'c, P: Protocol> MCx<'a, 'c, P> {
    /// This node.
    pub fn me(&self) -> NodeId {
        self.cx.me
    }
    /// Monotonic time (passed in).
    pub fn now(&self) -> Duration {
        self.cx.now
    }
    /// The participants in ring order (this node included; never the resource).
    pub fn peers(&self) -> &[NodeId] {
        self.peers
    }
    /// Seeded random numbers.
    pub fn rng(&mut self) -> &mut Rng {
        self.cx.rng
    }
    /// Sends a protocol message.
    pub fn send(&mut self, to: NodeId, msg: P::Msg) {
        let now = self.cx.now;
        match self.link.as_mut() {
            Some(link) => self.cx.send(to, MxMsg::Link(link.send(to, msg, now))),
            None => self.cx.send(to, MxMsg::Proto(msg)),
        }
    }
    /// Sends a protocol message to every other participant.
    pub fn send_others(&mut self, msg: P::Msg) {
        let me = self.me();
        let peers = self.peers;
        for &p in peers.iter().filter(|&&p| p != me) {
            self.send(p, msg.clone());
        }
    }
    /// Sets (or replaces) a protocol timer.
    pub fn set_timer(&mut self, t: P::Timer, after: Duration) {
        self.cx.set_timer(MxTimer::Proto(t), after);
    }
    /// Cancels a protocol timer.
    pub fn cancel_timer(&mut self, t: P::Timer) {
        self.cx.cancel_timer(MxTimer::Proto(t));
    }
    /// Writes a trace event.
    pub fn record(&mut self, ev: Event) {
        self.cx.record(ev);
    }
    /// Notes a state change in words (a `note` event, info level in the human log).
    pub fn state_change(&mut self, text: impl Into<String>) {
        self.cx.state_change(text);
    }
    /// Records that a message was ignored on purpose, naming why (counted).
    pub fn discard(&mut self, from: NodeId, reason: impl Into<String>) {
        self.cx.discard(from, reason);
    }
    /// Replaces this node's durable state (written and fsynced before this call's messages leave).
    pub fn persist(&mut self, bytes: Vec<u8>) {
        self.cx.persist(bytes);
    }
    /// The protocol lets this node in now, with fencing token `token` (None: it has none).
    pub fn enter(&mut self, token: Option<u64>) {
        *self.entered = Some(token);
    }
}

/// A participant: the workload around protocol `P`.
struct Member<P: Protocol> {
    proto: P,
    peers: Vec<NodeId>,
    work: Workload,
    runs_workload: bool,
    resource: bool,
    phase: Phase,
    next_req: u64,
    /// The reliable channels (used when `P::RELIABLE`).
    link: Channels<P::Msg>,
    /// Whether the resend timer is set (setting it again would put it off).
    resend_armed: bool,
    /// The retransmission period of the reliable layer.
    rto: Duration,
    /// This node restarted: it greets every participant on start.
    restarted: bool,
}

/// One node of a mutual-exclusion run: a participant running protocol `P`, or -- when its id
/// is [`RESOURCE_ID`] -- the shared resource, so that the simulator can hold both.
pub struct Mutex<P: Protocol> {
    role: Role<P>,
}

enum Role<P: Protocol> {
    Member(Box<Member<P>>),
    Resource(Resource),
}

impl<P: Protocol> Mutex<P> {
    /// The node of `setup` (call [`Mutex::check`] first: a bad option falls back to defaults here).
    pub fn new(setup: &Setup) -> Self {
        let work = Workload::parse(setup).unwrap_or_default();
        if setup.me == RESOURCE_ID {
            return Mutex {
                role: Role::Resource(Resource::restored(work.fencing, setup)),
            };
        }
        let peers: Vec<NodeId> = setup.members.iter().copied().filter(|&m| m != RESOURCE_ID).collect();
        Mutex {
            role: Role::Member(Box::new(Member {
                proto: P::new(setup, &peers),
                resource: setup.members.contains(&RESOURCE_ID),
                peers,
                work,
                runs_workload: setup.initiator,
                phase: Phase::Thinking,
                next_req: 1,
                link: Channels::default(),
                resend_armed: false,
                rto: setup.heartbeat.max(Duration::from_millis(10)),
                restarted: setup.restarted,
            })),
        }
    }

    /// Checks the options of `setup` for protocol `P` (`algo` names it in errors).
    pub fn check(setup: &Setup, algo: &str) -> Result<(), String> {
        Workload::parse(setup)?;
        let peers = setup.members.iter().filter(|&&m| m != RESOURCE_ID).count();
        if peers < 2 {
            return Err(format!("{algo} needs at least 2 participants, not {peers}"));
        }
        P::check(setup)
    }

    /// The protocol state (None for the resource).
    pub fn protocol(&self) -> Option<&P> {
        match &self.role {
            Role::Member(m) => Some(&m.proto),
            Role::Resource(_) => None,
        }
    }

    /// Where this participant is in its loop (None for the resource).
    pub fn phase(&self) -> Option<Phase> {
        match &self.role {
            Role::Member(m) => Some(m.phase),
            Role::Resource(_) => None,
        }
    }

    /// The resource state (None for a participant).
    pub fn resource(&self) -> Option<&Resource> {
        match &self.role {
            Role::Resource(r) => Some(r),
            Role::Member(_) => None,
        }
    }
}

type Cx<'c, P> = Context<'c, MxMsg<<P as Protocol>::Msg>, MxTimer<<P as Protocol>::Timer>>;

impl<P: Protocol> Member<P> {
    /// Runs `f` on the protocol with a scoped context, then enters the section if it said so.
    fn with(&mut self, cx: &mut Cx<'_, P>, f: impl FnOnce(&mut P, &mut MCx<'_, '_, P>)) {
        let mut entered = None;
        {
            let mut mcx = MCx {
                cx,
                peers: &self.peers,
                entered: &mut entered,
                link: P::RELIABLE.then_some(&mut self.link),
            };
            f(&mut self.proto, &mut mcx);
        }
        if let Some(token) = entered {
            self.enter(cx, token);
        }
        self.arm_resend(cx);
    }

    fn arm_resend(&mut self, cx: &mut Cx<'_, P>) {
        if !self.resend_armed && self.link.pending() {
            self.resend_armed = true;
            cx.set_timer(MxTimer::Resend, self.rto);
        }
    }

    /// A frame of the reliable layer from participant `from`.
    fn on_frame(&mut self, cx: &mut Cx<'_, P>, from: NodeId, frame: Frame<P::Msg>) {
        let arrival = self.link.arrive(from, frame);
        if let Some(ack) = arrival.ack {
            cx.send(from, MxMsg::Link(ack));
        }
        if let Some(why) = arrival.ignored {
            cx.discard(from, why);
        }
        for msg in arrival.deliver {
            self.with(cx, |p, mcx| p.on_msg(mcx, from, msg));
        }
    }

    fn enter(&mut self, cx: &mut Cx<'_, P>, token: Option<u64>) {
        let Phase::Waiting(req) = self.phase else {
            // A protocol bug, never a peer's doing: say so in the trace rather than hold twice.
            cx.discard(
                cx.me,
                format!("protocol granted entry while {:?}: not entered", self.phase),
            );
            return;
        };
        self.phase = Phase::Holding(req);
        cx.record(Event::CsEnter { req, token });
        if self.resource {
            cx.send(RESOURCE_ID, MxMsg::Begin { req, token });
        }
        cx.set_timer(MxTimer::Hold, self.work.hold);
    }

    fn think(&mut self, cx: &mut Cx<'_, P>) {
        if self.work.requests.is_some_and(|k| self.next_req > k) {
            self.phase = Phase::Done;
            return;
        }
        self.phase = Phase::Thinking;
        let mean = self.work.think.as_secs_f64();
        // Exponential around the mean; 1 - u is in (0, 1], so the log is finite.
        let u = (cx.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let wait = -mean * (1.0 - u).ln();
        cx.set_timer(MxTimer::Think, Duration::from_secs_f64(wait));
    }
}

impl<P: Protocol> Algorithm for Mutex<P> {
    type Msg = MxMsg<P::Msg>;
    type Timer = MxTimer<P::Timer>;

    fn on_start(&mut self, cx: &mut Cx<'_, P>) {
        let Role::Member(m) = &mut self.role else { return };
        if m.restarted {
            let me = cx.me;
            for &p in m.peers.iter().filter(|&&p| p != me) {
                cx.send(p, MxMsg::Hello);
            }
        }
        m.with(cx, |p, mcx| p.start(mcx));
        if m.runs_workload {
            m.think(cx);
        }
    }

    fn on_msg(&mut self, cx: &mut Cx<'_, P>, from: NodeId, msg: Self::Msg) {
        match (&mut self.role, msg) {
            (Role::Resource(r), MxMsg::Begin { req, token }) => r.begin(cx, from, req, token),
            (Role::Resource(r), MxMsg::End { req }) => r.end(cx, from, req),
            (Role::Resource(_), MxMsg::Proto(m)) => cx.discard(
                from,
                format!(
                    "{} is a protocol message; the resource takes part in no protocol",
                    m.name()
                ),
            ),
            (Role::Member(_), m @ (MxMsg::Begin { .. } | MxMsg::End { .. })) => {
                cx.discard(from, format!("{} is for the resource, not a participant", m.name()))
            }
            (Role::Resource(_), MxMsg::Hello) => {}
            (Role::Resource(_), m @ MxMsg::Link(_)) => cx.discard(
                from,
                format!(
                    "{} is between participants; the resource takes part in no protocol",
                    m.name()
                ),
            ),
            (Role::Member(_), _) if from == RESOURCE_ID => {
                cx.discard(from, "a protocol message from the resource, which is not a participant")
            }
            (Role::Member(m), _) if !m.peers.contains(&from) => {
                cx.discard(from, format!("node {from} is not a participant"))
            }
            // Its work is done by `on_peer_restart`, which the host called before this.
            (Role::Member(_), MxMsg::Hello) => {}
            (Role::Member(m), MxMsg::Link(frame)) => m.on_frame(cx, from, frame),
            (Role::Member(m), MxMsg::Proto(msg)) => m.with(cx, |p, mcx| p.on_msg(mcx, from, msg)),
        }
    }

    fn on_peer_restart(&mut self, cx: &mut Cx<'_, P>, peer: NodeId) {
        let m = match &mut self.role {
            Role::Resource(r) => return r.peer_restarted(cx, peer),
            Role::Member(m) => m,
        };
        if !m.peers.contains(&peer) {
            return;
        }
        let lost = m.link.peer_restarted(peer);
        if !lost.is_empty() {
            cx.note(format!(
                "{} message(s) to node {peer}'s old boot never acknowledged: dropped",
                lost.len()
            ));
        }
        m.with(cx, |p, mcx| p.peer_restarted(mcx, peer));
    }

    fn on_timer(&mut self, cx: &mut Cx<'_, P>, timer: Self::Timer) {
        let Role::Member(m) = &mut self.role else { return };
        match timer {
            MxTimer::Think => {
                let req = m.next_req;
                m.next_req += 1;
                m.phase = Phase::Waiting(req);
                cx.record(Event::CsRequest { req });
                m.with(cx, |p, mcx| p.request(mcx, req));
            }
            MxTimer::Hold => {
                let Phase::Holding(req) = m.phase else { return };
                if m.resource {
                    cx.send(RESOURCE_ID, MxMsg::End { req });
                }
                cx.record(Event::CsExit { req });
                m.think(cx);
                m.with(cx, |p, mcx| p.release(mcx, req));
            }
            MxTimer::Proto(t) => m.with(cx, |p, mcx| p.on_timer(mcx, t)),
            MxTimer::Resend => {
                m.resend_armed = false;
                for (to, frame) in m.link.due(cx.now, m.rto) {
                    cx.send(to, MxMsg::Link(frame));
                }
                m.arm_resend(cx);
            }
        }
    }
}
