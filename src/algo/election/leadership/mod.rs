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
//! - a leader that moves to a newer term (it heard of it first) sends NEWER(t) to the members
//!   it sent heartbeats to: its followers join t instead of suspecting the running node whose
//!   heartbeats stopped (a ring protocol would leave a suspect out of its list).
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
//!   first hears a leader's heartbeat (hearsay, like a NEWER naming a leader, may be stale) or
//!   leads a term itself: a term it joins through another node's message may have been
//!   won while it was dead (bully: a higher node back from a crash answers a straggler's
//!   ELECTION of a term node 4 already won), so it never claims one; it starts a new term.
//! - terms survive restarts: every move to a newer term is kept on stable storage (stored
//!   by the runtime before any message of the same step leaves), and a restarted
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

mod handlers;
mod majority;
#[cfg(test)]
mod mesh_tests;
mod messages;
mod terms;
#[cfg(test)]
mod tests;

use crate::algo::compose::Embed;
use crate::algo::detector::liveness::LiveCx;
use crate::algo::detector::{LiveMsg, LiveTimer, Liveness};
use crate::algo::election::options::ElectionOptions;
use crate::algo::ring_repair::{Expiry, RingCx, RingMsg, RingRepair, RingTimer};
use crate::algo::weights::Weights;
use crate::algo::{Algorithm, Command, Context, Event, Message, NodeId, Setup};
use crate::rng::Rng;
use majority::Majority;
pub use majority::{MajorityMsg, MajorityTimer};
pub use messages::{LMsg, LTimer};
use messages::{LiveSlot, RingSlot};
use serde::{Deserialize, Serialize};
use std::fmt::Debug;
use std::hash::Hash;
use std::marker::PhantomData;
use std::time::Duration;

/// How far above its own term a node accepts a term (see "terms cannot be forced").
pub(crate) const MAX_TERM_LEAP: u64 = 1 << 20;

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
    fn node_named_by(_msg: &Self::Msg) -> Option<NodeId> {
        None
    }
    /// The nodes whose message this node needs before it can go on: the detector probes them
    /// when they stay silent (graph protocols; none by default).
    fn awaited(&self) -> Vec<NodeId> {
        Vec::new()
    }
    /// Nodes of [`awaited`](Self::awaited) that did not answer a probe (now suspected).
    fn awaited_silent(&mut self, _cx: &mut ElectionCx<'_, Self>, _nodes: Vec<NodeId>) {}
    /// A PROBE (`probe`) or ALIVE of the current term came from `from`.
    fn on_liveness(&mut self, _cx: &mut ElectionCx<'_, Self>, _from: NodeId, _probe: bool) {}
}

/// Checks the options this wrapper reads (`mesh`, `majority`, `weights`): the launcher and the
/// node front door call it so that a bad option is refused rather than ignored.
pub fn validate(setup: &Setup) -> Result<(), String> {
    crate::algo::detector::config::check_watch(&setup.opts)?;
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
    majority: Option<Majority>,
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

impl<M: Message, T> ElectionContext<'_, M, T> {
    /// A message about an election, when this term is already decided: discards it and asks
    /// the wrapper to tell `from` the leader. True when the term was decided.
    pub fn refuse_if_decided(&mut self, from: NodeId) -> bool {
        if self.view().leader().is_none() {
            return false;
        }
        let term = self.view().term();
        self.discard(from, format!("election of term {term} is already decided"));
        self.ask(Ask::TellDecided(from));
        true
    }
}

impl<E: Election> Leadership<E> {
    /// A node running protocol `E` under leadership. The options are assumed checked by
    /// [`validate`]; weights that do not parse count 1 each here.
    pub fn new(setup: &Setup) -> Self {
        let opts = ElectionOptions::read(setup);
        let majority = opts.majority.then(|| Majority::new(setup));
        let sparse = unreachable(setup).is_some();
        let live = match opts.mesh {
            true => Liveness::new(setup, setup.neighbours.iter().copied()),
            false => Liveness::over_members(setup),
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
                live,
                ring: RingRepair::new(setup, sparse),
                wants_election: false,
                starting: false,
                sparse,
                leader_seen: Duration::ZERO,
                majority,
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
}
