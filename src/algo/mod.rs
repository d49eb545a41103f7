//! The algorithms: pure state machines that never touch a socket, a clock or the environment.
//!
//! Each one receives its start, messages and named timers, and answers with commands through
//! its [`Context`]. The same code runs in the simulator (`crate::sim`) and as a real process
//! (`crate::node::runtime`).

pub(crate) mod brief;
pub mod clocksync;
pub mod compose;
pub mod detector;
pub mod election;
pub mod mutex;
pub mod options;
pub mod reliable;
pub mod ring_probe;
pub mod ring_repair;
pub mod snapshot;
pub mod weights;

use crate::rng::Rng;
pub use crate::trace::{Event, NodeId};
pub(crate) use brief::{brief_of, Brief};
use serde::{de::DeserializeOwned, Serialize};
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

/// What goes on the wire: any serde type that can name its variant for the traces.
pub trait Message: Serialize + DeserializeOwned + Clone + Debug {
    /// The message type name written in `send`/`recv` events (`ELECTION`, `HEARTBEAT`, ...).
    fn name(&self) -> &'static str;
    /// The message's content in brief, for traces and logs: `ELECTION(3)`,
    /// `ECHO(wave=1, best=...)`. The default renders the variant's fields after its type name.
    fn brief(&self) -> String {
        brief_of(self.name(), self)
    }
    /// Whether the order in which this message and the step's others leave is evidence, so it
    /// shares no datagram and keeps its place among them (see `engine::bundle`): the
    /// resource's BEGIN and END, whose order of arrival is the lab's record of who held it.
    fn fence(&self) -> bool {
        false
    }
}

/// An event-driven distributed algorithm.
pub trait Algorithm {
    /// Its messages.
    type Msg: Message;
    /// Its named timers: setting one that is already set replaces it.
    type Timer: Copy + Eq + Hash + Debug;
    /// Called once when the node is up.
    fn on_start(&mut self, cx: &mut Context<'_, Self::Msg, Self::Timer>);
    /// Called for every message that decoded and came from a member.
    fn on_msg(&mut self, cx: &mut Context<'_, Self::Msg, Self::Timer>, from: NodeId, msg: Self::Msg);
    /// Called when a named timer expires.
    fn on_timer(&mut self, cx: &mut Context<'_, Self::Msg, Self::Timer>, timer: Self::Timer);
    /// Peer `peer` came back as a new boot (it crashed and restarted, remembering only what it
    /// persisted): called before its first datagram of that boot is delivered, so that what
    /// was agreed with its old boot (channel numbers, promises, requests) is forgotten rather
    /// than held against the newcomer.
    fn on_peer_restart(&mut self, _cx: &mut Context<'_, Self::Msg, Self::Timer>, _peer: NodeId) {}
}

/// The heartbeat period when none is given, ms (the launcher's base before it scales with n).
pub(crate) const DEFAULT_HEARTBEAT_MS: u64 = 100;

/// The failure-detector timeout when none is given, ms.
pub(crate) const DEFAULT_TIMEOUT_MS: u64 = 300;

/// How a node is set up: who it is, whom it knows, and the options it was given.
#[derive(Debug, Clone)]
pub struct Setup {
    /// This node's id.
    pub me: NodeId,
    /// Every member, in ring order for rings (this node included). Shared, never copied: the
    /// launcher builds it once before forking, so a node of a large ring keeps no copy of its
    /// own (at 16,384 members each copy was 128 KiB of a node's private memory).
    pub members: Arc<[NodeId]>,
    /// The nodes this one may talk to directly.
    pub neighbours: Vec<NodeId>,
    /// Whether this node starts the first election (or request) at once.
    pub initiator: bool,
    /// Heartbeat period.
    pub heartbeat: Duration,
    /// Failure-detector timeout.
    pub timeout: Duration,
    /// Seed of this node's random choices.
    pub seed: u64,
    /// Algorithm-specific options (`--set key=value`).
    pub opts: BTreeMap<String, String>,
    /// How this node's physical clock disagrees with true time (`--clock-offset-ms`, ...).
    pub clock: crate::clock::ClockSpec,
    /// What this node persisted (`Context::persist`) before it last stopped, if anything.
    pub durable: Option<Vec<u8>>,
    /// This node ran before in this run and was restarted: it missed what happened meanwhile.
    pub restarted: bool,
    /// Why the state this node persisted before was refused (it did not verify): it ran
    /// before, but what it kept is unknown; the host notes it in the trace at start.
    pub durable_refused: Option<String>,
    /// When this start of the node began, us (the wall clock in a process, the simulated time
    /// in the simulator): a later start of the same node has a larger boot, so a count that
    /// goes on from it orders everything the node said across restarts.
    pub boot: u64,
}

impl Setup {
    /// A setup with default timing, for tests and simple uses.
    pub fn new(me: NodeId, members: impl Into<Arc<[NodeId]>>, neighbours: Vec<NodeId>) -> Self {
        Setup {
            me,
            members: members.into(),
            neighbours,
            initiator: false,
            heartbeat: Duration::from_millis(DEFAULT_HEARTBEAT_MS),
            timeout: Duration::from_millis(DEFAULT_TIMEOUT_MS),
            seed: me,
            opts: BTreeMap::new(),
            clock: crate::clock::ClockSpec::default(),
            durable: None,
            restarted: false,
            durable_refused: None,
            boot: 0,
        }
    }

    /// A boolean option (`true`/`false`/`1`/`0`), `default` when absent.
    pub fn flag(&self, key: &str, default: bool) -> bool {
        self.opts
            .get(key)
            .map(|v| options::boolean(v) == Some(true))
            .unwrap_or(default)
    }

    /// The ring successor of this node in `members` (itself when alone).
    pub fn successor(&self) -> NodeId {
        let i = self.members.iter().position(|&m| m == self.me).unwrap_or(0);
        self.members[(i + 1) % self.members.len()]
    }
}

/// What an algorithm asks its driver to do. `R` is what a protocol hosted by a family wrapper
/// may ask of that wrapper (`Ask(R)`: elected, enter, ...); a top-level algorithm has none.
#[derive(Debug, Clone)]
pub enum Command<M, T, R = Infallible> {
    /// Send a message to a node.
    Send(NodeId, M),
    /// Set (or replace) a named timer to fire after a delay.
    SetTimer(T, Duration),
    /// Cancel a named timer (no-op when not set).
    CancelTimer(T),
    /// Write a trace event.
    Record(Event),
    /// Replace this node's durable state: the driver writes it to stable storage before any
    /// message of the same call leaves, and hands it back in `Setup::durable` after a restart.
    Persist(Vec<u8>),
    /// Correct this node's physical clock (slewed, or stepped with `--set step=true`); the
    /// engine records the `clock_adjust` event.
    AdjustClock(ClockCorrection),
    /// A request to the family wrapper hosting this protocol, which maps it when the call
    /// returns, in its place among the other commands.
    Ask(R),
}

/// A correction of the node's physical clock, with the claim it rests on (checked afterwards
/// against true time by `coordlab check`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClockCorrection {
    /// How far to move the clock from its reading in this handler (`Context::pt`), microseconds.
    pub offset_us: i64,
    /// The round trip of the sample the estimate came from, microseconds.
    pub rtt_us: u64,
    /// The claimed error bound of the corrected clock against the reference, microseconds.
    pub bound_us: u64,
    /// The node whose clock the estimate refers to.
    pub reference: Option<NodeId>,
    /// The `seq` of the reference's message the estimate rests on.
    pub ref_seq: Option<u64>,
    /// The corrected clock aims at the reference's clock plus this.
    pub ref_offset_us: i64,
}

/// The algorithm's view of the world during one handler call: the same plain context for a
/// top-level algorithm, a component and a protocol inside a family wrapper. A hosted protocol
/// also reads its family's state through [`view`](Self::view) (`V`) and asks things of the
/// family with [`ask`](Self::ask) (`R`); both are nothing (`()`, no value) elsewhere.
pub struct Context<'a, M, T, R = Infallible, V = ()> {
    /// Monotonic time since this node started (passed in, never read by the algorithm itself).
    pub now: Duration,
    /// This node's id.
    pub me: NodeId,
    /// Seeded random numbers.
    pub rng: &'a mut Rng,
    /// This node's own physical clock, microseconds, as read once for this handler call (never
    /// the host's clock: it has the node's offset, drift and corrections).
    pub pt: u64,
    /// The sender's `seq` of the message being handled (0 outside `on_msg`).
    pub msg_seq: u64,
    view: &'a V,
    out: &'a mut Vec<Command<M, T, R>>,
}

impl<'a, M, T> Context<'a, M, T> {
    /// A context that collects commands into `out`.
    pub fn new(now: Duration, me: NodeId, rng: &'a mut Rng, out: &'a mut Vec<Command<M, T>>) -> Self {
        Context {
            now,
            me,
            rng,
            pt: 0,
            msg_seq: 0,
            view: &(),
            out,
        }
    }
}

impl<'a, M, T, R, V> Context<'a, M, T, R, V> {
    /// The hosting family's state, read-only, as it was when this call began.
    pub fn view(&self) -> &'a V {
        self.view
    }
    /// Asks the hosting family wrapper for `r` (mapped by the wrapper once this call returns).
    pub(crate) fn ask(&mut self, r: R) {
        self.out.push(Command::Ask(r));
    }
    /// Asks the engine to correct this node's physical clock.
    pub(crate) fn adjust_clock(&mut self, c: ClockCorrection) {
        self.out.push(Command::AdjustClock(c));
    }
    fn push(&mut self, c: Command<M, T, R>) {
        self.out.push(c);
    }
    /// Sends `msg` to `to`.
    pub fn send(&mut self, to: NodeId, msg: M) {
        self.out.push(Command::Send(to, msg));
    }
    /// Sets (or replaces) timer `t` to fire after `after`.
    pub fn set_timer(&mut self, t: T, after: Duration) {
        self.out.push(Command::SetTimer(t, after));
    }
    /// Cancels timer `t`.
    pub(crate) fn cancel_timer(&mut self, t: T) {
        self.out.push(Command::CancelTimer(t));
    }
    /// Writes a trace event.
    pub fn record(&mut self, ev: Event) {
        self.out.push(Command::Record(ev));
    }
    /// Replaces this node's durable state (stored before any message of this call leaves).
    pub fn persist(&mut self, bytes: Vec<u8>) {
        self.out.push(Command::Persist(bytes));
    }
    /// Notes a decision in words (debug level in the human log): `ELECTION(3) swallowed: 3 < my id 5`.
    pub fn note(&mut self, text: impl Into<String>) {
        self.record(Event::Note {
            text: text.into(),
            level: String::new(),
        });
    }
    /// Notes a state change in words (info level in the human log): `Seguidor -> Candidato`.
    pub(crate) fn state_change(&mut self, text: impl Into<String>) {
        self.record(Event::Note {
            text: text.into(),
            level: "info".into(),
        });
    }
    /// Records that a message was ignored on purpose (stale term, unexpected), naming why; counted
    /// apart from datagrams the engine refused.
    pub(crate) fn discard(&mut self, from: NodeId, reason: impl Into<String>) {
        self.record(Event::Ignore {
            from,
            reason: reason.into(),
        });
    }
}

/// The context type of algorithm `A`.
pub(crate) type Cx<'a, A> = Context<'a, <A as Algorithm>::Msg, <A as Algorithm>::Timer>;
