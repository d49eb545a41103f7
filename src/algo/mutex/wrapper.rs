//! The mutual-exclusion wrapper: every node runs the same loop -- think (exponential around
//! the mean), request, hold the shared resource, release -- and a textbook [`Protocol`] decides
//! when it may enter. The wrapper owns the workload, the trace events (`cs_request`,
//! `cs_enter`, `cs_exit`) and the talk with the resource (`BEGIN` with the fencing token on
//! entry, `END` on exit, sent before the protocol's release so the resource hears of the exit
//! first).
//!
//! The protocol runs with the plain [`Context`] over its own messages and timers
//! ([`MutexCx`]): it reads the participants in [`MutexView`] (`cx.view()`) and asks to enter
//! with `cx.ask(Ask::Enter(token))`. The wrapper maps everything it issued, in order, in one
//! function (`Member::process`): messages and timers are wrapped (and carried on the
//! reliable layer when asked), and the entry happens once the call is done.
//!
//! A protocol that assumes reliable FIFO channels ([`Protocol::RELIABLE`]) gets them here, from
//! the shared layer [`crate::algo::reliable`]: its messages travel numbered, acknowledged and
//! sent again until they are. The acknowledgement rides on the next protocol message back to
//! the sender; a bare one (`CH_ACK`, counted apart from the protocol's own messages) goes only
//! when no message went back within the acknowledgement delay (a quarter of the
//! retransmission period), or at once when many wait on one channel.
//! A node that restarted says HELLO to every participant, so that each learns at once that
//! its old boot is gone ([`Protocol::peer_restarted`]).

use super::options::Workload;
use super::resource::Resource;
use super::RESOURCE_ID;
use crate::algo::brief::push_decimal;
use crate::algo::reliable::{ack_delay, Channels, Frame};
use crate::algo::{Algorithm, Command, Context, Event, Message, NodeId, Setup};
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
    /// Whether `msg` rides the reliable layer when [`Protocol::RELIABLE`] is set: a hosted
    /// failure detector's messages do not, since a detector's evidence is the silence that
    /// sending again would hide, and a PING to a dead node would be sent again for ever.
    fn on_link(_msg: &Self::Msg) -> bool {
        true
    }
    /// Its own named timers (`()` when it has none).
    type Timer: Copy + Eq + Hash + Debug;
    /// Builds the protocol state; `peers` are the participants in ring order (this node included).
    fn new(setup: &Setup, peers: &[NodeId]) -> Self;
    /// Checks its own options; the error is one line.
    fn check(_setup: &Setup) -> Result<(), String> {
        Ok(())
    }
    /// The node is up.
    fn start(&mut self, _cx: &mut MutexCx<'_, Self>) {}
    /// The node wants the section for request `req`: ask [`Ask::Enter`] once it may.
    fn request(&mut self, cx: &mut MutexCx<'_, Self>, req: u64);
    /// The node left the section of request `req`.
    fn release(&mut self, cx: &mut MutexCx<'_, Self>, req: u64);
    /// A protocol message.
    fn on_msg(&mut self, cx: &mut MutexCx<'_, Self>, from: NodeId, msg: Self::Msg);
    /// One of its timers expired.
    fn on_timer(&mut self, _cx: &mut MutexCx<'_, Self>, _timer: Self::Timer) {}
    /// Participant `peer` came back as a new boot, which remembers only what it persisted:
    /// forget what its old boot asked or promised, and tell the new one what it must know.
    /// Called before the newcomer's first message is handled.
    fn peer_restarted(&mut self, _cx: &mut MutexCx<'_, Self>, _peer: NodeId) {}
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
            MxMsg::Link(Frame::Data { item, n, ack, .. }) => {
                // Appended to the item's own brief: no second string and copy per message.
                let mut b = item.brief();
                b.push_str(" #");
                push_decimal(&mut b, *n);
                if let Some((_, upto)) = ack {
                    b.push_str(" ack ");
                    push_decimal(&mut b, *upto);
                }
                b
            }
            MxMsg::Link(Frame::Ack { inc, upto }) => format!("CH_ACK(upto={upto}, inc={inc})"),
            _ => crate::algo::brief_of(self.name(), self),
        }
    }
    /// A holder's END must reach the resource before the message that lets the next node in
    /// (and so before that node's BEGIN) does.
    fn fence(&self) -> bool {
        matches!(self, MxMsg::Begin { .. } | MxMsg::End { .. })
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
    /// The reliable layer's: send the acknowledgements no protocol message carried.
    Ack,
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

/// What a mutex protocol asks of the wrapper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ask {
    /// Let this node into the section now, with this fencing token (None: it has none).
    Enter(Option<u64>),
}

/// What a mutex protocol reads of the wrapper's state.
#[derive(Debug, Clone)]
pub struct MutexView {
    /// The participants in ring order (this node included; never the resource).
    pub peers: Vec<NodeId>,
}

/// The context of mutex protocol `P`: its own messages and timers, [`Ask`], [`MutexView`].
pub type MutexCx<'a, P> = Context<'a, <P as Protocol>::Msg, <P as Protocol>::Timer, Ask, MutexView>;

impl<M: Clone, T> Context<'_, M, T, Ask, MutexView> {
    /// Sends `msg` to every other participant.
    pub(crate) fn send_others(&mut self, msg: M) {
        let me = self.me;
        for &p in self.view().peers.iter().filter(|&&p| p != me) {
            self.send(p, msg.clone());
        }
    }
}

/// A participant: the workload around protocol `P`.
struct Member<P: Protocol> {
    proto: P,
    view: MutexView,
    work: Workload,
    runs_workload: bool,
    resource: bool,
    phase: Phase,
    next_req: u64,
    /// The reliable channels (used when `P::RELIABLE`).
    link: Channels<P::Msg>,
    /// Whether the resend timer is set (setting it again would put it off).
    resend_armed: bool,
    /// Whether the acknowledgement timer is set.
    ack_armed: bool,
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
                view: MutexView { peers },
                work,
                runs_workload: setup.initiator,
                phase: Phase::Thinking,
                next_req: 1,
                link: Channels::default(),
                resend_armed: false,
                ack_armed: false,
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

    /// Whether any item of the reliable layer waits for its acknowledgement.
    #[cfg(test)]
    pub(crate) fn link_pending(&self) -> bool {
        matches!(&self.role, Role::Member(m) if m.link.pending())
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
    /// Runs `f` on the protocol with its own context, then maps what it issued.
    fn with(&mut self, cx: &mut Cx<'_, P>, f: impl FnOnce(&mut P, &mut MutexCx<'_, P>)) {
        let ((), out) = cx.run_inner(&self.view, |pcx| f(&mut self.proto, pcx));
        self.process(cx, out);
    }

    /// Maps the protocol's commands, in the order it issued them, onto the wrapper's.
    fn process(&mut self, cx: &mut Cx<'_, P>, out: Vec<Command<P::Msg, P::Timer, Ask>>) {
        let mut entered = None;
        for c in out {
            match c {
                Command::Send(to, msg) if P::RELIABLE && P::on_link(&msg) => {
                    let frame = self.link.send(to, msg, cx.now);
                    cx.send(to, MxMsg::Link(frame));
                }
                Command::Send(to, msg) => cx.send(to, MxMsg::Proto(msg)),
                Command::SetTimer(t, after) => cx.set_timer(MxTimer::Proto(t), after),
                Command::CancelTimer(t) => cx.cancel_timer(MxTimer::Proto(t)),
                Command::Record(ev) => cx.record(ev),
                Command::Persist(bytes) => cx.persist(bytes),
                Command::AdjustClock(c) => cx.adjust_clock(c),
                // The entry waits for the end of the call, so that what the protocol sent in
                // it (a voter's answers, a token's release) leaves before BEGIN.
                Command::Ask(Ask::Enter(token)) => entered = Some(token),
            }
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
        let arrival = self.link.arrive(from, frame, cx.now);
        if arrival.ack_now {
            if let Some(ack) = self.link.take_ack(from) {
                cx.send(from, MxMsg::Link(ack));
            }
        }
        if let Some(why) = arrival.ignored {
            cx.discard(from, why);
        }
        for msg in arrival.deliver {
            self.with(cx, |p, pcx| p.on_msg(pcx, from, msg));
        }
        // What the protocol answered carried the acknowledgement; the rest waits for the
        // delay, in case a later message carries it.
        if !self.ack_armed && self.link.owes_ack() {
            self.ack_armed = true;
            cx.set_timer(MxTimer::Ack, ack_delay(self.rto));
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
        m.link.start(cx.pt);
        if m.restarted {
            let me = cx.me;
            for &p in m.view.peers.iter().filter(|&&p| p != me) {
                cx.send(p, MxMsg::Hello);
            }
        }
        m.with(cx, |p, pcx| p.start(pcx));
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
            (Role::Member(m), _) if !m.view.peers.contains(&from) => {
                cx.discard(from, format!("node {from} is not a participant"))
            }
            // Its work is done by `on_peer_restart`, which the host called before this.
            (Role::Member(_), MxMsg::Hello) => {}
            (Role::Member(m), MxMsg::Link(frame)) => m.on_frame(cx, from, frame),
            (Role::Member(m), MxMsg::Proto(msg)) => m.with(cx, |p, pcx| p.on_msg(pcx, from, msg)),
        }
    }

    fn on_peer_restart(&mut self, cx: &mut Cx<'_, P>, peer: NodeId) {
        let m = match &mut self.role {
            Role::Resource(r) => return r.peer_restarted(cx, peer),
            Role::Member(m) => m,
        };
        if !m.view.peers.contains(&peer) {
            return;
        }
        let lost = m.link.peer_restarted(peer);
        if !lost.is_empty() {
            cx.note(format!(
                "{} message(s) to node {peer}'s old boot never acknowledged: dropped",
                lost.len()
            ));
        }
        m.with(cx, |p, pcx| p.peer_restarted(pcx, peer));
    }

    fn on_timer(&mut self, cx: &mut Cx<'_, P>, timer: Self::Timer) {
        let Role::Member(m) = &mut self.role else { return };
        match timer {
            MxTimer::Think => {
                let req = m.next_req;
                m.next_req += 1;
                m.phase = Phase::Waiting(req);
                cx.record(Event::CsRequest { req });
                m.with(cx, |p, pcx| p.request(pcx, req));
            }
            MxTimer::Hold => {
                let Phase::Holding(req) = m.phase else { return };
                if m.resource {
                    cx.send(RESOURCE_ID, MxMsg::End { req });
                }
                cx.record(Event::CsExit { req });
                m.think(cx);
                m.with(cx, |p, pcx| p.release(pcx, req));
            }
            MxTimer::Proto(t) => m.with(cx, |p, pcx| p.on_timer(pcx, t)),
            MxTimer::Resend => {
                m.resend_armed = false;
                for (to, frame) in m.link.due(cx.now, m.rto) {
                    cx.send(to, MxMsg::Link(frame));
                }
                m.arm_resend(cx);
            }
            MxTimer::Ack => {
                m.ack_armed = false;
                let delay = ack_delay(m.rto);
                for (to, frame) in m.link.owed_acks(cx.now, delay) {
                    cx.send(to, MxMsg::Link(frame));
                }
                // Owed for less than the delay: a message back may still carry it.
                if let Some(since) = m.link.owed_since() {
                    m.ack_armed = true;
                    cx.set_timer(MxTimer::Ack, (since + delay).saturating_sub(cx.now));
                }
            }
        }
    }
}
