//! Leadership: runs any election protocol inside terms, watches the leader with heartbeats,
//! and repairs the ring around nodes that do not answer; optionally floods heartbeats over a
//! mesh, and contains split-brain with weighted majorities (`--set majority=true`).
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
//! - ring forwarding (`send_next`): the [`RingRepair`] component (ACK, skip a suspected
//!   successor; a message carrying a suspected node's id dies). When every other member is
//!   suspected the message is delivered to this node itself; one that keeps coming back is
//!   dropped after 2n+2 such hops in one handler, and a new election is asked for.
//! - liveness is the [`Liveness`] component: any message from a suspected node withdraws the
//!   suspicion, a suspect is probed again until it answers, and the graph protocols' waits on
//!   neighbours are its probes (PROBE/ALIVE carry the term, like protocol messages).
//! - stalls: a node that finds it was itself stopped for longer than a timeout (SIGSTOP; the
//!   detector sees the gap) does not act on the silence it slept through: its leader timeout
//!   and pending ACKs start again from now. And it takes part only in terms it hears of after
//!   waking: for one timeout after waking (long enough to drain what queued up meanwhile),
//!   the terms it joins are marked stale, and it never claims a stale term (the protocol asks
//!   [`Core::may_claim`] through `cx.view()`; the wrapper refuses too): it starts a new term instead. So a node
//!   that wakes up with another term's ELECTION in its socket buffer cannot claim a term that
//!   was decided without it. Nor does it start a term of its own within that window (the
//!   number it would pick may be taken by a message still queued): an election asked for
//!   meanwhile waits for the window's end, and then starts only if no leader is known by then
//!   (a known one is handed to the protocol again, so bully still deposes a lower id).
//! - restarts: a restarted node (term 0, told so by `--restarted`) does the same until it
//!   first hears a leader's heartbeat (hearsay, like a NEWER naming a leader, may be stale): a term it joins through another node's message may have been
//!   won while it was dead (bully: a higher node back from a crash answers a straggler's
//!   ELECTION of a term node 4 already won), so it never claims one; it starts a new term.
//! - terms survive restarts: every move to a newer term is kept on stable storage (written
//!   and fsynced by the runtime before any message of the same step leaves), and a restarted
//!   node starts from the term it kept, so it never claims a term it took part in before --
//!   a leaf whose only neighbour is dead used to come back at term 0 and claim term 1, which
//!   another node had won. What it cannot know is a term the others reached while it was
//!   dead: one it starts itself before hearing anyone may still be one they used (only
//!   `majority` closes that, by asking a majority first).
//! - terms cannot be forced: a message whose term is more than [`MAX_TERM_LEAP`] above this
//!   node's is ignored ("term X is implausibly far ahead"), so no term ever comes near 2^64
//!   and `term + 1` cannot wrap; the arithmetic is checked all the same. A restarted node
//!   (term 0) still catches up at once with any cluster below term 2^20, which at one
//!   election a second takes twelve days of continuous elections to reach.
//!
//! Every member watches the leader directly (rather than only its ring neighbours) so that
//! detection does not depend on a path through other possibly-dead nodes, and so that every
//! log shows the suspicion: the cost is one heartbeat per member per period.
//!
//! Meshes (`mesh=true`, which `coordlab mesh` passes). The rule is the option, not a guess from
//! the neighbour list: with `mesh=true`, a node sends only to its neighbours, and replies (ACK,
//! NEWER) go back to the node whose message they answer. When the neighbours are every other
//! member (a complete mesh) nothing changes from the rules above. Otherwise (a sparse mesh):
//! - the leader sends HEARTBEAT(t, L, seq) to its neighbours, seq growing each period; on
//!   receiving one whose (t, seq) is newer than any seen from L, a node handles it as a
//!   heartbeat of L (stale: NEWER to the neighbour that sent it) and forwards it to its other
//!   neighbours; copies already seen are ignored. Followers watch for any fresh heartbeat of L.
//! - `send_next` goes to the ring successor (next in `members`) only, and only if it is a
//!   neighbour: there is no path around a silent successor, so an unanswered message is sent to
//!   it again every timeout while the term lasts; a successor that is not a neighbour gets
//!   nothing (recorded as an `ignore`). Ring protocols run on `ring`/`bidirectional-ring` meshes.
//!
//! Majority mode (`majority=true`): see [`majority`](self::majority) for its rules.
//!
//! Composition: the wrapper hosts three components, each with its own messages and timers in
//! one variant of [`LMsg`] / [`LTimer`]: the liveness detector and ring repair, mapped in one
//! place each (the `Embed` impls below), and the protocol itself. The protocol runs with the
//! plain [`Context`] over its own messages and timers ([`ElectionCx`]); it reads the wrapper's
//! state through `cx.view()` (a [`Core`], read-only, as it was when the call began) and asks
//! for what changes it with `cx.ask(`[`Ask`]`)` (`Elected`, `SendNext`, `TellDecided`,
//! `StartElection`, `Suspect`). The wrapper maps everything the protocol issued, in the order
//! it issued it, in one function (`process`), so the trace keeps the protocol's order.

mod majority;
#[cfg(test)]
mod tests;

use crate::algo::compose::Embed;
use crate::algo::detector::liveness::LiveCx;
use crate::algo::detector::{LiveMsg, LiveTimer, Liveness};
use crate::algo::election::options::ElectionOptions;
use crate::algo::quorum::Weights;
use crate::algo::ring_repair::{Expiry, RingCx, RingMsg, RingRepair, RingTimer};
use crate::algo::{Algorithm, Command, Context, Event, Message, NodeId, Setup};
use crate::rng::Rng;
use majority::Quorum;
use serde::{Deserialize, Serialize};
use std::fmt::Debug;
use std::hash::Hash;
use std::marker::PhantomData;
use std::time::Duration;

/// How far above its own term a node accepts a term (see "terms cannot be forced").
pub const MAX_TERM_LEAP: u64 = 1 << 20;

/// An election protocol, as the textbook gives it; [`Leadership`] supplies terms,
/// failure detection and ring repair around it.
pub trait Election: Sized {
    /// Its messages.
    type Msg: Message;
    /// Its own named timers (use `()` when it has none).
    type Timer: Copy + Eq + Hash + Debug;
    /// Builds the protocol state for a node.
    fn new(setup: &Setup) -> Self;
    /// This node starts an election in `cx.view().term()`.
    fn start(&mut self, cx: &mut ElectionCx<'_, Self>);
    /// A protocol message of the current term.
    fn on_msg(&mut self, cx: &mut ElectionCx<'_, Self>, from: NodeId, msg: Self::Msg);
    /// One of its timers expired.
    fn on_timer(&mut self, _cx: &mut ElectionCx<'_, Self>, _timer: Self::Timer) {}
    /// A new term began: forget the state of the last election.
    fn reset(&mut self);
    /// A leader became known at this node (by the protocol or by a heartbeat).
    fn on_leader(&mut self, _cx: &mut ElectionCx<'_, Self>, _leader: NodeId) {}
    /// The node whose id a ring message carries (its candidate, its winner), if any: a ring
    /// message carrying a suspected node dies instead of circling (see [`RingRepair`]).
    fn carried(_msg: &Self::Msg) -> Option<NodeId> {
        None
    }
    /// The nodes whose message this node needs before it can go on: the detector probes them
    /// when they stay silent (graph protocols; none by default).
    fn waiting(&self) -> Vec<NodeId> {
        Vec::new()
    }
    /// Nodes of [`waiting`](Self::waiting) that did not answer a probe (now suspected).
    fn silent(&mut self, _cx: &mut ElectionCx<'_, Self>, _nodes: Vec<NodeId>) {}
    /// A PROBE (`probe`) or ALIVE of the current term came from `from`.
    fn on_liveness(&mut self, _cx: &mut ElectionCx<'_, Self>, _from: NodeId, _probe: bool) {}
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
    /// Acknowledges `Inner` numbers `seqs` (ring repair).
    Ack {
        /// The acknowledged sequence numbers.
        seqs: Vec<u64>,
    },
    /// A leader's heartbeat flooded over a sparse mesh: each node forwards it once.
    Flood {
        /// The leader's term.
        term: u64,
        /// The leader.
        leader: NodeId,
        /// Grows with every heartbeat the leader sends.
        seq: u64,
    },
    /// Answers a heartbeat (majority mode: the leader's check-quorum).
    HbAck {
        /// The heartbeat's term.
        term: u64,
    },
    /// The protocol's winner of `term` asks for a vote (majority mode).
    VoteReq {
        /// The term.
        term: u64,
    },
    /// The answer to `VoteReq`.
    Vote {
        /// The term.
        term: u64,
        /// Whether the vote was given.
        granted: bool,
    },
    /// May the sender start `term`? (majority mode, asked before leaving the current term)
    PreVote {
        /// The term the sender would start.
        term: u64,
    },
    /// The answer to `PreVote`.
    PreVoteReply {
        /// The term asked about.
        term: u64,
        /// Whether the pre-vote was given.
        granted: bool,
    },
    /// The liveness detector's PROBE and ALIVE.
    Live(LiveMsg),
}

impl<M> LMsg<M> {
    /// The term a message carries.
    fn term(&self) -> Option<u64> {
        match self {
            LMsg::Heartbeat { term }
            | LMsg::Newer { term, .. }
            | LMsg::Inner { term, .. }
            | LMsg::Flood { term, .. }
            | LMsg::HbAck { term }
            | LMsg::VoteReq { term }
            | LMsg::Vote { term, .. }
            | LMsg::PreVote { term }
            | LMsg::PreVoteReply { term, .. } => Some(*term),
            LMsg::Live(m) => Some(m.epoch()),
            LMsg::Ack { .. } => None,
        }
    }
}

impl<M: Message> Message for LMsg<M> {
    fn name(&self) -> &'static str {
        match self {
            LMsg::Heartbeat { .. } | LMsg::Flood { .. } => "HEARTBEAT",
            LMsg::Newer { .. } => "NEWER",
            LMsg::Inner { msg, .. } => msg.name(),
            LMsg::Ack { .. } => "ACK",
            LMsg::HbAck { .. } => "HB_ACK",
            LMsg::VoteReq { .. } => "VOTE_REQ",
            LMsg::Vote { .. } => "VOTE",
            LMsg::PreVote { .. } => "PRE_VOTE",
            LMsg::PreVoteReply { .. } => "PRE_VOTE_REPLY",
            LMsg::Live(m) => m.name(),
        }
    }
    fn brief(&self) -> String {
        match self {
            LMsg::Inner { term, msg, .. } => with_term(msg.brief(), *term),
            LMsg::Live(m) => crate::algo::brief_from_debug(m.name(), &format!("{m:?}")),
            other => crate::algo::brief_from_debug(other.name(), &format!("{other:?}")),
        }
    }
}

/// `ELECTION(3)` in term 2 is `ELECTION(3, term=2)`; `TOKEN` is `TOKEN(term=2)`.
fn with_term(brief: String, term: u64) -> String {
    match brief.strip_suffix(')') {
        Some(open) => format!("{open}, term={term})"),
        None => format!("{brief}(term={term})"),
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
    /// Ring repair's: no ACK for a ring message, or ACKs to send.
    Ring(RingTimer),
    /// The protocol's own timer.
    Inner(T),
    /// Ask again for the votes not yet answered (majority mode).
    Votes,
    /// The pre-vote round is over (majority mode).
    PreVote,
    /// The liveness detector's timers.
    Live(LiveTimer),
    /// The waking window after a stall is over: an election deferred meanwhile may start.
    Settled,
}

/// The liveness detector's place in the wrapper's enums.
struct LiveSlot;

impl<M, T> Embed<LMsg<M>, LTimer<T>> for LiveSlot {
    type Msg = LiveMsg;
    type Timer = LiveTimer;
    fn msg(m: LiveMsg) -> LMsg<M> {
        LMsg::Live(m)
    }
    fn timer(t: LiveTimer) -> LTimer<T> {
        LTimer::Live(t)
    }
}

/// Ring repair's place in the wrapper's enums: its hops are the protocol's `Inner` messages.
struct RingSlot<M>(PhantomData<M>);

impl<M, T> Embed<LMsg<M>, LTimer<T>> for RingSlot<M> {
    type Msg = RingMsg<M>;
    type Timer = RingTimer;
    fn msg(m: RingMsg<M>) -> LMsg<M> {
        match m {
            RingMsg::Hop { epoch, ack, msg } => LMsg::Inner { term: epoch, ack, msg },
            RingMsg::Ack { seqs } => LMsg::Ack { seqs },
        }
    }
    fn timer(t: RingTimer) -> LTimer<T> {
        LTimer::Ring(t)
    }
}

/// Checks the options this wrapper reads (`mesh`, `majority`, `weights`): the launcher and the
/// node front door call it so that a bad option is refused rather than ignored.
pub fn validate(setup: &Setup) -> Result<(), String> {
    for key in ["mesh", "majority"] {
        if let Some(v) = setup.opts.get(key) {
            if crate::algo::options::boolean(v).is_none() {
                return Err(format!("{key}={v}: expected true or false"));
            }
        }
    }
    if !ElectionOptions::read(setup).majority {
        return Ok(());
    }
    Weights::parse(setup)?;
    if let Some(x) = unreachable(setup) {
        return Err(format!(
            "majority=true needs every member reachable directly (coordlab ring, or a mesh with --topology \
             complete): node {x} is not a neighbour of node {}",
            setup.me
        ));
    }
    Ok(())
}

/// In a mesh, a member this node may not send to directly (None: it reaches everyone).
fn unreachable(setup: &Setup) -> Option<NodeId> {
    if !ElectionOptions::read(setup).mesh {
        return None;
    }
    setup
        .members
        .iter()
        .copied()
        .find(|&m| m != setup.me && !setup.neighbours.contains(&m))
}

type WCx<'b, M, T> = Context<'b, LMsg<M>, LTimer<T>>;

/// What a node keeps on stable storage: the newest term it moved to.
#[derive(Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
struct KeptTerm {
    term: u64,
}

/// The wrapper's state, apart from the protocol's (so both can be borrowed at once); the
/// protocol reads it, and only reads it, as its view (`cx.view()`).
pub struct Core<M> {
    setup: Setup,
    term: u64,
    leader: Option<NodeId>,
    live: Liveness,
    ring: RingRepair<M>,
    wants_election: bool,
    /// Inside `begin_election` (the protocol's `start`).
    starting: bool,
    /// A mesh where some member is not a neighbour: heartbeats are flooded.
    sparse: bool,
    /// When the leader was last heard from (its heartbeat, or when it was learned).
    leader_seen: Duration,
    quorum: Option<Quorum>,
    /// When this node last woke from a stall (None: never stalled).
    woke: Option<Duration>,
    /// Terms up to this one were joined while waking: never claimed (see "stalls").
    stale_upto: u64,
    /// Restarted and not yet heard a leader's heartbeat: terms it joins may have been decided
    /// while it was dead (see "restarts").
    catching_up: bool,
    /// An election was asked for while waking: it waits for the window to end.
    deferred: bool,
}

type LCx<'b, E> = WCx<'b, <E as Election>::Msg, <E as Election>::Timer>;

/// An election protocol made into a long-running leader service.
pub struct Leadership<E: Election> {
    core: Core<E::Msg>,
    inner: E,
}

/// What an election protocol asks of the wrapper; mapped in the order asked once its call
/// returns (see `Leadership::process`).
#[derive(Debug, Clone)]
pub enum Ask<M> {
    /// The protocol decided: this node leads the current term (in majority mode, once a
    /// majority of weight has voted for it).
    Elected(NodeId),
    /// Send this to the next live node around the ring (ring repair skips nodes that do not
    /// answer).
    SendNext(M),
    /// Tell this node the current term and its leader (for a message about an election
    /// already over).
    TellDecided(NodeId),
    /// A fresh election in a new term, once this handler is done.
    StartElection,
    /// Suspect this node after a timeout without the answer named by the text (e.g. `probe`):
    /// one detector for the wrapper and the protocol, so a node is suspected once and its
    /// silence counts from the last datagram of any kind.
    Suspect(NodeId, String),
}

/// The context of an election protocol over messages `M` and timers `T`.
pub type ElectionContext<'a, M, T> = Context<'a, M, T, Ask<M>, Core<M>>;

/// The context of election protocol `E`.
pub type ElectionCx<'a, E> = ElectionContext<'a, <E as Election>::Msg, <E as Election>::Timer>;

impl<M: Message> Core<M> {
    /// The current term.
    pub fn term(&self) -> u64 {
        self.term
    }
    /// The node's setup (members in ring order, neighbours, options).
    pub fn setup(&self) -> &Setup {
        &self.setup
    }
    /// The nodes this one may send to.
    pub fn neighbours(&self) -> &[NodeId] {
        &self.setup.neighbours
    }
    /// Who leads this term, as far as this node knows (in majority mode: the protocol's
    /// winner, even before a majority has established it).
    pub fn leader(&self) -> Option<NodeId> {
        self.known_leader()
    }
    /// When this node last started running without a gap: its start, or the end of its last
    /// stall (as after SIGSTOP).
    pub fn running_since(&self) -> Duration {
        self.live.running_since()
    }
    /// Whether this node suspects `node`.
    pub fn is_suspected(&self, node: NodeId) -> bool {
        self.live.is_suspected(node)
    }
    /// The first successor this node does not suspect (None when it suspects everyone); in a
    /// sparse mesh, the ring successor if it is a neighbour.
    pub fn successor(&self) -> Option<NodeId> {
        let live = &self.live;
        self.ring.next_hop(self.me(), |x| live.is_suspected(x))
    }
}

impl<M: Message> Core<M> {
    /// This node's id.
    pub fn me(&self) -> NodeId {
        self.setup.me
    }

    fn others(&self) -> Vec<NodeId> {
        let me = self.me();
        self.setup.members.iter().copied().filter(|&m| m != me).collect()
    }

    fn known_leader(&self) -> Option<NodeId> {
        self.leader.or(self.quorum.as_ref().and_then(|q| q.decided))
    }

    /// Whether this node may claim to lead the current term: not when it joined the term while
    /// waking from a stall (see "stalls"); it should then ask for a new election instead.
    pub fn may_claim(&self) -> bool {
        self.term > self.stale_upto
    }

    /// Within one timeout of waking from a stall: still draining what queued up meanwhile.
    fn waking(&self, now: Duration) -> bool {
        self.woke.is_some_and(|w| now.saturating_sub(w) <= self.setup.timeout)
    }

    /// Runs `f` on the liveness detector, inside its scope.
    fn live<T, R>(&mut self, cx: &mut WCx<'_, M, T>, f: impl FnOnce(&mut Liveness, &mut LiveCx<'_>) -> R) -> R {
        cx.within::<LiveSlot, _>(|c| f(&mut self.live, c))
    }

    /// Runs `f` on ring repair, inside its scope, with the detector's suspicions.
    fn ring<T, R>(
        &mut self,
        cx: &mut WCx<'_, M, T>,
        f: impl FnOnce(&mut RingRepair<M>, &mut RingCx<'_, M>, &Liveness) -> R,
    ) -> R {
        let (ring, live) = (&mut self.ring, &self.live);
        cx.within::<RingSlot<M>, _>(|c| f(ring, c, live))
    }

    /// True when `node` is now suspected (phi or SWIM may disagree with a timeout).
    fn suspect<T>(&mut self, cx: &mut WCx<'_, M, T>, node: NodeId, cause: &str) -> bool {
        self.live(cx, |l, c| l.suspect(c, node, cause))
    }

    fn forward<T>(&mut self, cx: &mut WCx<'_, M, T>, after: NodeId, msg: M, carried: Option<NodeId>) {
        self.ring(cx, |r, c, live| {
            r.forward(c, after, msg, carried, |x| live.is_suspected(x))
        });
    }

    fn election_timeout(&self, rng: &mut Rng) -> Duration {
        let t = self.setup.timeout;
        let jitter = Duration::from_micros(rng.range(0, t.as_micros() as u64 + 1));
        3 * t + Duration::from_millis(self.setup.members.len() as u64) + jitter
    }

    /// Whether `t` is so far above this node's term that it can only be forged or corrupt.
    fn implausible(&self, t: u64) -> bool {
        t > self.term.saturating_add(MAX_TERM_LEAP)
    }

    /// This node was stopped for longer than a timeout: restart the watches (the silence it
    /// slept through is no evidence) and mark the current term stale.
    fn woke_up<T>(&mut self, cx: &mut WCx<'_, M, T>) {
        cx.state_change("stalled: this node was stopped for longer than a timeout; watches start again");
        self.woke = Some(cx.now);
        self.stale_upto = self.stale_upto.max(self.term);
        if self.leader.is_some_and(|l| l != self.me()) {
            self.leader_seen = cx.now;
            cx.set_timer(LTimer::LeaderTimeout, self.setup.timeout);
        }
        self.ring(cx, |r, c, _| r.restart_timers(c));
    }

    /// Moves to a newer term `t`; false when `t` is not newer.
    fn adopt<T>(&mut self, cx: &mut WCx<'_, M, T>, t: u64, why: String) -> bool {
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
        cx.persist(serde_json::to_vec(&KeptTerm { term: t }).unwrap_or_default());
        self.leader = None;
        self.ring.new_epoch(t);
        self.live.new_epoch(t);
        self.live(cx, |l, c| l.forget_unreachable(c, None));
        if let Some(q) = self.quorum.as_mut() {
            q.new_term();
            cx.cancel_timer(LTimer::Votes);
            cx.cancel_timer(LTimer::PreVote);
        }
        cx.cancel_timer(LTimer::LeaderTimeout);
        let d = self.election_timeout(cx.rng);
        cx.set_timer(LTimer::ElectionTimeout, d);
        true
    }

    /// `leader` leads the current term, as far as this node now knows.
    fn follow<T>(&mut self, cx: &mut WCx<'_, M, T>, leader: NodeId) {
        let me = self.me();
        // Two claimants of one term (possible only without majority mode) must not both step
        // down to the other, or nobody leads and both suspect each other: the higher id keeps
        // the term, and the lower follows it on hearing its heartbeat.
        if self.leader == Some(me) && leader < me {
            cx.record(Event::Ignore {
                from: leader,
                reason: format!("node {leader} also claims term {}; the higher id keeps it", self.term),
            });
            return;
        }
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
            self.live(cx, |l, c| l.forget_unreachable(c, Some(leader)));
            cx.cancel_timer(LTimer::ElectionTimeout);
            if leader == me {
                cx.set_timer(LTimer::Heartbeat, self.setup.heartbeat);
            }
        }
        if leader != me {
            self.live.reset(leader, cx.now);
            self.leader_seen = cx.now;
            cx.set_timer(LTimer::LeaderTimeout, self.setup.timeout);
            // A live leader makes a pre-vote round of this node pointless.
            if let Some(q) = self.quorum.as_mut().filter(|q| q.prevote.is_some()) {
                q.prevote = None;
                cx.cancel_timer(LTimer::PreVote);
            }
        }
    }

    /// Whether this node leads, or heard its leader within the timeout.
    fn leader_live(&self, now: Duration) -> bool {
        match self.leader {
            Some(l) if l == self.me() => true,
            Some(_) => now.saturating_sub(self.leader_seen) < self.setup.timeout,
            None => false,
        }
    }

    /// The protocol's decision: followed at once, or (majority mode) put to a vote. A claim of
    /// a term joined while waking from a stall is refused: a new term is asked for instead.
    fn decide<T>(&mut self, cx: &mut WCx<'_, M, T>, leader: NodeId) {
        let me = self.me();
        if leader == me && !self.may_claim() {
            let why = format!(
                "not claiming term {}: joined while waking from a stall, it may have been decided without this node",
                self.term
            );
            cx.discard(me, why);
            self.wants_election = true;
            return;
        }
        if self.quorum.is_none() {
            return self.follow(cx, leader);
        }
        self.decide_by_votes(cx, leader);
    }

    /// One heartbeat of this leader: to every member, or flooded to the neighbours in a sparse mesh.
    fn send_heartbeats<T>(&mut self, cx: &mut WCx<'_, M, T>) {
        let (me, term) = (self.me(), self.term);
        if self.sparse {
            let seq = self.live.beacon(me, term);
            for &n in &self.setup.neighbours {
                cx.send(n, LMsg::Flood { term, leader: me, seq });
            }
        } else {
            for m in self.others() {
                cx.send(m, LMsg::Heartbeat { term });
            }
        }
    }
}

impl<E: Election> Leadership<E> {
    /// A node running protocol `E` under leadership. The options are assumed checked by
    /// [`validate`]; weights that do not parse count 1 each here.
    pub fn new(setup: &Setup) -> Self {
        let opts = ElectionOptions::read(setup);
        let quorum = opts.majority.then(|| Quorum::new(setup));
        let sparse = unreachable(setup).is_some();
        let reach: Vec<NodeId> = if opts.mesh {
            setup.neighbours.clone()
        } else {
            setup.members.clone()
        };
        Leadership {
            core: Core {
                setup: setup.clone(),
                term: setup
                    .durable
                    .as_ref()
                    .and_then(|b| serde_json::from_slice::<KeptTerm>(b).ok())
                    .map_or(0, |k| k.term),
                leader: None,
                live: Liveness::new(setup, reach),
                ring: RingRepair::new(setup, sparse),
                wants_election: false,
                starting: false,
                sparse,
                leader_seen: Duration::ZERO,
                quorum,
                woke: None,
                stale_upto: 0,
                catching_up: setup.restarted,
                deferred: false,
            },
            inner: E::new(setup),
        }
    }

    /// Who this node believes leads, and in which term.
    pub fn belief(&self) -> (u64, Option<NodeId>) {
        (self.core.term, self.core.leader)
    }

    /// Its failure detector (suspicions, phi values, SWIM's view).
    pub fn liveness(&self) -> &Liveness {
        &self.core.live
    }

    /// The protocol's state, for tests.
    pub fn protocol(&self) -> &E {
        &self.inner
    }

    /// Whom this node suspects now.
    pub fn suspected(&self) -> Vec<NodeId> {
        self.core.live.suspected().iter().copied().collect()
    }

    /// Runs `f` on the protocol, then whatever it left to do: messages that came back to this
    /// node, a requested election, and the leader hook.
    fn with_inner(&mut self, cx: &mut LCx<'_, E>, f: impl FnOnce(&mut E, &mut ElectionCx<'_, E>)) {
        let before = self.core.leader;
        self.run_protocol(cx, f);
        let me = self.core.me();
        // Every other member suspected: a ring message for someone else (ELECTED(j) of a
        // suspected j) would come back here forever. Past two laps' worth of hops it is
        // dropped, and a new election asked for.
        let mut laps = 2 * self.core.setup.members.len() + 2;
        while let Some(m) = self.core.ring.take_local() {
            if laps == 0 {
                let why = format!("{} keeps coming back: every other member is suspected", m.name());
                cx.discard(me, why);
                self.core.ring.clear_local();
                // Not while starting one: a protocol whose own start loops would recurse.
                self.core.wants_election |= !self.core.starting;
                break;
            }
            laps -= 1;
            self.run_protocol(cx, |e, pcx| e.on_msg(pcx, me, m));
        }
        self.after(cx, before);
    }

    /// Runs `f` on the protocol with its own context, which reads the wrapper's state as it is
    /// now, then maps what the protocol issued.
    fn run_protocol(&mut self, cx: &mut LCx<'_, E>, f: impl FnOnce(&mut E, &mut ElectionCx<'_, E>)) {
        let inner = &mut self.inner;
        let ((), out) = cx.run_inner(&self.core, |pcx| f(inner, pcx));
        self.process(cx, out);
    }

    /// Maps the protocol's commands onto the wrapper's, in the order it issued them: its
    /// messages travel in the current term, and its requests act on the wrapper's state here.
    /// No protocol reads the view after a request in the same call that would change what it
    /// reads (a decision or a suspicion), so acting after the call is acting at once.
    fn process(&mut self, cx: &mut LCx<'_, E>, out: Vec<Command<E::Msg, E::Timer, Ask<E::Msg>>>) {
        let me = self.core.me();
        for c in out {
            match c {
                Command::Send(to, msg) => {
                    let term = self.core.term;
                    cx.send(to, LMsg::Inner { term, ack: 0, msg });
                }
                Command::SetTimer(t, after) => cx.set_timer(LTimer::Inner(t), after),
                Command::CancelTimer(t) => cx.cancel_timer(LTimer::Inner(t)),
                Command::Record(ev) => cx.record(ev),
                Command::Persist(bytes) => cx.persist(bytes),
                Command::AdjustClock(c) => cx.adjust_clock(c),
                Command::Ask(Ask::Elected(leader)) => self.core.decide(cx, leader),
                Command::Ask(Ask::SendNext(msg)) => {
                    let carried = E::carried(&msg);
                    self.core.forward(cx, me, msg, carried);
                }
                Command::Ask(Ask::TellDecided(to)) => {
                    let (term, leader) = (self.core.term, self.core.leader);
                    cx.send(to, LMsg::Newer { term, leader });
                }
                Command::Ask(Ask::StartElection) => self.core.wants_election = true,
                Command::Ask(Ask::Suspect(node, cause)) => {
                    self.core.suspect(cx, node, &cause);
                }
            }
        }
    }

    fn after(&mut self, cx: &mut LCx<'_, E>, before: Option<NodeId>) {
        if std::mem::take(&mut self.core.wants_election) {
            self.start_election(cx);
        } else if let Some(l) = self.core.leader.filter(|&l| Some(l) != before) {
            self.hand_leader(cx, l);
        }
    }

    /// Tells the protocol who leads (bully deposes a lower id), then starts the election it
    /// may have asked for.
    fn hand_leader(&mut self, cx: &mut LCx<'_, E>, l: NodeId) {
        self.run_protocol(cx, |e, pcx| e.on_leader(pcx, l));
        if std::mem::take(&mut self.core.wants_election) {
            self.start_election(cx);
        }
    }

    /// Starts an election; in majority mode, first asks for pre-votes. Not while waking from a
    /// stall: the term it would pick may already be taken by messages still queued, so it waits
    /// for the window to end and then decides again ([`settled`](Self::settled)).
    fn start_election(&mut self, cx: &mut LCx<'_, E>) {
        if self.core.waking(cx.now) {
            if !std::mem::replace(&mut self.core.deferred, true) {
                let w = self.core.woke.unwrap_or(cx.now) + self.core.setup.timeout;
                cx.set_timer(LTimer::Settled, w.saturating_sub(cx.now) + Duration::from_millis(1));
            }
            return;
        }
        let Some(t) = self.core.term.checked_add(1) else {
            return cx.discard(self.core.me(), "no term after 2^64-1: not starting an election");
        };
        if self.core.quorum.is_none() {
            return self.begin_election(cx);
        }
        self.ask_pre_votes(cx, t);
    }

    /// Moves to a new term and lets the protocol begin.
    fn begin_election(&mut self, cx: &mut LCx<'_, E>) {
        let Some(t) = self.core.term.checked_add(1) else {
            return;
        };
        self.core.adopt(cx, t, "starting a new election".into());
        cx.record(Event::ElectionStart { term: t });
        self.inner.reset();
        self.core.starting = true;
        self.with_inner(cx, |e, pcx| e.start(pcx));
        self.core.starting = false;
    }

    /// Moves to `t` if newer, joining that term's election; true when it did.
    fn join(&mut self, cx: &mut LCx<'_, E>, t: u64, from: NodeId) -> bool {
        if !self.core.adopt(cx, t, format!("heard of term {t} from node {from}")) {
            return false;
        }
        // Joined while draining what queued up during a stall, or after a restart before it
        // knew a leader: maybe decided without this node.
        if self.core.catching_up
            || self
                .core
                .woke
                .is_some_and(|w| cx.now.saturating_sub(w) <= self.core.setup.timeout)
        {
            self.core.stale_upto = self.core.stale_upto.max(t);
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

    /// A heartbeat of `leader` in `term` (direct or flooded), already known not to be stale.
    fn heartbeat(&mut self, cx: &mut LCx<'_, E>, from: NodeId, term: u64, leader: NodeId) {
        // A leader heard at first hand: a restarted node has caught up.
        self.core.catching_up = false;
        let before = self.core.leader;
        self.join(cx, term, from);
        self.core.follow(cx, leader);
        if self.core.quorum.is_some() {
            cx.send(leader, LMsg::HbAck { term });
        }
        self.after(cx, before);
    }

    fn on_flood(&mut self, cx: &mut LCx<'_, E>, from: NodeId, term: u64, leader: NodeId, seq: u64) {
        if !self.core.live.fresh_beacon(leader, term, seq) {
            return;
        }
        if term < self.core.term {
            return self.stale(cx, from, term);
        }
        if leader == self.core.me() {
            // Sent by an earlier life of this node (before a restart): only its term is news.
            self.join(cx, term, from);
            return;
        }
        // A fresh beacon is news of the leader itself, not only of the neighbour that passed it.
        self.core.live(cx, |l, c| l.heard(c, leader));
        self.heartbeat(cx, from, term, leader);
        for &n in self.core.setup.neighbours.iter().filter(|&&n| n != from && n != leader) {
            cx.send(n, LMsg::Flood { term, leader, seq });
        }
    }

    fn on_live(&mut self, cx: &mut LCx<'_, E>, from: NodeId, m: LiveMsg) {
        self.core.live(cx, |l, c| l.on_msg(c, from, &m));
        if m.detector_only() {
            return;
        }
        let t = m.epoch();
        if t < self.core.term {
            return self.stale(cx, from, t);
        }
        let probe = match m {
            // A re-probe of a suspect is no part of any election: it only asks for ALIVE.
            LiveMsg::Probe { wait: false, .. } => return,
            LiveMsg::Probe { .. } => true,
            LiveMsg::Alive { .. } => false,
            LiveMsg::Beat | LiveMsg::Swim(_) => return,
        };
        self.join(cx, t, from);
        self.with_inner(cx, |e, pcx| e.on_liveness(pcx, from, probe));
    }

    /// The detector's check: probes the nodes the protocol waits on, and tells it who is silent.
    fn check(&mut self, cx: &mut LCx<'_, E>) {
        let waiting = if self.core.known_leader().is_none() {
            self.inner.waiting()
        } else {
            Vec::new()
        };
        let silent = self.core.live(cx, |l, c| l.check(c, &waiting));
        if !silent.is_empty() {
            self.with_inner(cx, |e, pcx| e.silent(pcx, silent));
        }
    }

    /// After every handler: the check runs while the protocol waits on someone.
    fn watch(&mut self, cx: &mut LCx<'_, E>) {
        let waits = self.core.known_leader().is_none() && !self.inner.waiting().is_empty();
        self.core.live(cx, |l, c| l.watch(c, waits));
    }

    /// Phi and SWIM suspect on their own timers and gossip: a suspected leader is carried on
    /// without, as after a leader timeout (the fixed detector never has news).
    fn detector_news(&mut self, cx: &mut LCx<'_, E>) {
        if !self.core.live.judges_alone() {
            return;
        }
        let news = self.core.live.take_news();
        let me = self.core.me();
        if self.core.leader.is_some_and(|l| l != me && news.contains(&l)) {
            self.start_election(cx);
        }
    }

    /// Runs first in every handler: notices a stall of this node; true when there was one.
    fn enter(&mut self, cx: &mut LCx<'_, E>) -> bool {
        let stalled = self.core.live.enter(cx.now);
        if stalled {
            self.core.woke_up(cx);
        }
        stalled
    }

    fn on_message(&mut self, cx: &mut LCx<'_, E>, from: NodeId, msg: LMsg<E::Msg>) {
        if let Some(t) = msg.term().filter(|&t| self.core.implausible(t)) {
            return cx.discard(
                from,
                format!(
                    "term {t} is implausibly far ahead (this node is at term {}; at most {MAX_TERM_LEAP} more is accepted)",
                    self.core.term
                ),
            );
        }
        self.core.live(cx, |l, c| l.heard(c, from));
        let before = self.core.leader;
        match msg {
            LMsg::Ack { seqs } => self.core.ring(cx, |r, c, _| r.acked(c, &seqs)),
            LMsg::Heartbeat { term } if term < self.core.term => self.stale(cx, from, term),
            LMsg::Heartbeat { term } => self.heartbeat(cx, from, term, from),
            LMsg::Flood { term, leader, seq } => self.on_flood(cx, from, term, leader, seq),
            LMsg::Newer { term, leader } => {
                let newer = self.join(cx, term, from);
                // In majority mode this node leads only on its own count of votes, never on hearsay
                // (a NEWER naming it is about an earlier life, before a restart); nor, in any
                // mode, in a term it may not claim (joined while waking from a stall).
                let me = self.core.me();
                let hearsay = leader == Some(me) && (self.core.quorum.is_some() || !self.core.may_claim());
                let fits = newer || (term == self.core.term && before.is_none());
                if let Some(l) = leader.filter(|_| fits && !hearsay) {
                    self.core.follow(cx, l);
                }
                self.after(cx, before);
            }
            LMsg::Inner { term, ack, msg } => {
                // Owed, and sent later with the others (see `ring_repair`): a forward is on the
                // ring's critical path, the ACK is not. A retried hop already handled (its ACK
                // was lost) is only acknowledged again.
                if !self.core.ring(cx, |r, c, _| r.received(c, from, ack)) {
                    return;
                }
                if term < self.core.term {
                    self.stale(cx, from, term);
                } else {
                    self.join(cx, term, from);
                    self.with_inner(cx, |e, pcx| e.on_msg(pcx, from, msg));
                }
            }
            LMsg::HbAck { term } => self.on_hb_ack(cx, from, term),
            LMsg::VoteReq { term } => self.on_vote_req(cx, from, term),
            LMsg::Vote { term, granted } => self.on_vote(cx, from, term, granted),
            LMsg::PreVote { term } => self.on_pre_vote(cx, from, term),
            LMsg::PreVoteReply { term, granted } => self.on_pre_vote_reply(cx, from, term, granted),
            LMsg::Live(m) => self.on_live(cx, from, m),
        }
    }

    fn on_timeout(&mut self, cx: &mut LCx<'_, E>, timer: LTimer<E::Timer>, stalled: bool) {
        let me = self.core.me();
        match timer {
            LTimer::Heartbeat if self.core.leader == Some(me) => self.lead(cx),
            LTimer::Heartbeat => {}
            // Overdue because this node itself was stopped: `woke_up` started it again.
            LTimer::Ring(RingTimer::SendAcks) => self.core.ring(cx, |r, c, _| r.send_acks(c)),
            LTimer::LeaderTimeout | LTimer::Ring(_) | LTimer::Live(LiveTimer::Check) if stalled => {}
            LTimer::LeaderTimeout => {
                // Phi and SWIM may not agree yet: their own judgement then starts the election
                // (see `detector_news`).
                if let Some(l) = self.core.leader.filter(|&l| l != me) {
                    if self.core.suspect(cx, l, "heartbeat") {
                        self.start_election(cx);
                    }
                }
            }
            LTimer::ElectionTimeout => {
                let wanted = match self.core.quorum {
                    // A failed pre-vote round leaves the suspected leader believed: try again
                    // while it stays silent.
                    Some(_) => !self.core.leader_live(cx.now),
                    None => self.core.leader.is_none(),
                };
                if wanted {
                    self.start_election(cx);
                }
            }
            LTimer::Ring(RingTimer::NoAck(seq)) => {
                let now = cx.now;
                let expiry = self.core.ring(cx, |r, c, live| {
                    let to = r.pending_to(seq);
                    let alive = to.is_some_and(|to| live.heard_within_timeout(to, now));
                    r.expired(c, seq, alive)
                });
                let Some(Expiry::GiveUp(to, msg)) = expiry else {
                    return;
                };
                self.core.suspect(cx, to, "ack");
                let carried = E::carried(&msg);
                self.core.forward(cx, to, msg, carried);
                self.with_inner(cx, |_, _| {});
            }
            LTimer::Inner(t) => self.with_inner(cx, |e, pcx| e.on_timer(pcx, t)),
            LTimer::Votes => {
                let before = self.core.leader;
                self.core.count_votes(cx, true);
                self.after(cx, before);
            }
            LTimer::PreVote => self.pre_vote_over(cx),
            LTimer::Settled => self.settled(cx),
            LTimer::Live(LiveTimer::Check) => self.check(cx),
            LTimer::Live(t) => self.core.live(cx, |l, c| l.on_timer(c, t)),
        }
    }

    /// The waking window is over: an election deferred meanwhile starts, unless a leader is
    /// known by now; then the protocol is asked about it again (bully deposes a lower id).
    fn settled(&mut self, cx: &mut LCx<'_, E>) {
        if !std::mem::take(&mut self.core.deferred) {
            return;
        }
        match self.core.leader {
            None => self.start_election(cx),
            Some(l) => self.hand_leader(cx, l),
        }
    }

    /// The leader's heartbeat period: a heartbeat to everyone, unless (majority mode) it lost
    /// its quorum and steps down.
    fn lead(&mut self, cx: &mut LCx<'_, E>) {
        if !self.core.has_quorum(cx.now) {
            cx.record(Event::StepDown {
                term: self.core.term,
                reason: "lost quorum".into(),
            });
            self.core.leader = None;
            let d = self.core.election_timeout(cx.rng);
            cx.set_timer(LTimer::ElectionTimeout, d);
            return;
        }
        self.core.send_heartbeats(cx);
        cx.set_timer(LTimer::Heartbeat, self.core.setup.heartbeat);
    }
}

impl<E: Election> Algorithm for Leadership<E> {
    type Msg = LMsg<E::Msg>;
    type Timer = LTimer<E::Timer>;

    fn on_start(&mut self, cx: &mut LCx<'_, E>) {
        self.core.live(cx, |l, c| l.start(c));
        if self.core.setup.initiator {
            self.start_election(cx);
        } else {
            let t = self.core.setup.timeout;
            let jitter = Duration::from_micros(cx.rng.range(0, t.as_micros() as u64 + 1));
            cx.set_timer(LTimer::ElectionTimeout, t + jitter);
        }
        self.watch(cx);
    }

    fn on_msg(&mut self, cx: &mut LCx<'_, E>, from: NodeId, msg: LMsg<E::Msg>) {
        self.enter(cx);
        self.on_message(cx, from, msg);
        self.detector_news(cx);
        self.watch(cx);
    }

    fn on_timer(&mut self, cx: &mut LCx<'_, E>, timer: LTimer<E::Timer>) {
        let stalled = self.enter(cx);
        self.on_timeout(cx, timer, stalled);
        self.detector_news(cx);
        self.watch(cx);
    }
    fn on_peer_restart(&mut self, _cx: &mut LCx<'_, E>, peer: NodeId) {
        self.core.ring.peer_restarted(peer);
    }
}
