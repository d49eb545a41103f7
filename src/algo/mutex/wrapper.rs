//! The mutual-exclusion wrapper: every node runs the same loop -- think (exponential around
//! the mean), request, hold the shared resource, release -- and a textbook [`Protocol`] decides
//! when it may enter. The wrapper owns the workload, the trace events (`cs_request`,
//! `cs_enter`, `cs_exit`) and the talk with the resource (`BEGIN` with the fencing token on
//! entry, `END` on exit, sent before the protocol's release so the resource hears of the exit
//! first). All of its plumbing -- wrapping and unwrapping messages and timers -- is in [`MCx`].

use super::options::Workload;
use super::resource::Resource;
use super::RESOURCE_ID;
use crate::algo::{Algorithm, Context, Event, Message, NodeId, Setup};
use crate::rng::Rng;
use serde::{Deserialize, Serialize};
use std::fmt::Debug;
use std::hash::Hash;
use std::time::Duration;

/// A mutual-exclusion protocol, as the textbook gives it; [`Mutex`] runs the workload around it.
pub trait Protocol: Sized {
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
}

impl<M: Message> Message for MxMsg<M> {
    fn name(&self) -> &'static str {
        match self {
            MxMsg::Begin { .. } => "BEGIN",
            MxMsg::End { .. } => "END",
            MxMsg::Proto(m) => m.name(),
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
        self.cx.send(to, MxMsg::Proto(msg));
    }
    /// Sends a protocol message to every other participant.
    pub fn send_others(&mut self, msg: P::Msg) {
        let me = self.me();
        for &p in self.peers.iter().filter(|&&p| p != me) {
            self.cx.send(p, MxMsg::Proto(msg.clone()));
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
                role: Role::Resource(Resource::new(work.fencing)),
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
            };
            f(&mut self.proto, &mut mcx);
        }
        if let Some(token) = entered {
            self.enter(cx, token);
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
            (Role::Member(_), MxMsg::Proto(_)) if from == RESOURCE_ID => {
                cx.discard(from, "a protocol message from the resource, which is not a participant")
            }
            (Role::Member(m), MxMsg::Proto(msg)) => {
                if !m.peers.contains(&from) {
                    return cx.discard(from, format!("node {from} is not a participant"));
                }
                m.with(cx, |p, mcx| p.on_msg(mcx, from, msg))
            }
        }
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
        }
    }
}
