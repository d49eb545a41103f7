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
//! - ring forwarding (`send_next`): send to the first successor not suspected and wait one
//!   timeout for its ACK; none: suspect it and send to the one after. When every other member
//!   is suspected the message is delivered to this node itself; one that keeps coming back
//!   (e.g. ELECTED(j) of a suspected j) is dropped after 2n+2 such hops in one handler, and a
//!   new election is asked for.
//! - any message from a suspected node withdraws the suspicion.
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
//!   nothing (recorded as a `drop`). Ring protocols run on `ring`/`bidirectional-ring` meshes.
//!
//! Majority mode (`majority=true`, weights from `weights=1:5,2:3`, default 1 each). Nothing
//! leads without more than half of the total weight, so a partitioned minority never has a
//! leader and at most one node leads any term:
//! - protocol decides W: every node notes it; W votes for itself (if it has not voted this
//!   term) and sends VOTE_REQ(t) to every member, again each heartbeat period to those that
//!   have not answered. On VOTE_REQ(t): older: NEWER; otherwise adopt t and grant the vote if
//!   none was granted in t yet (to the first asker; kept in memory only, so a node that crashes
//!   and restarts within a term may vote twice in it); answer VOTE(t, granted).
//! - W leads (records `leader`) once the weight of the granted votes is a majority, and sends a
//!   heartbeat at once. Others record `leader` only from W's heartbeat (or a NEWER naming it).
//! - check-quorum: followers answer each heartbeat with HB_ACK(t). At each heartbeat period the
//!   leader counts its own weight and that of the nodes that acknowledged within one timeout;
//!   no majority: it steps down (`step_down`, "lost quorum") and later seeks a new term.
//! - pre-vote: to start an election a node first sends PRE_VOTE(t+1) to every member, without
//!   changing its term. A node grants it when t+1 is newer than its term and it has not heard
//!   from a live leader within the timeout (a leader never grants); when t+1 is not newer it
//!   refuses and answers NEWER. Granted weight (its own included) a majority: the election
//!   starts. No majority within a timeout: it tries again after an election timeout. So a node
//!   with a stale view (resumed from a pause, cut off from the leader alone) disrupts nothing
//!   while a live leader holds a majority.
//! - votes, pre-votes and acknowledgements go directly between members, so majority mode needs
//!   every member reachable directly: `coordlab ring` or a complete mesh ([`validate`]).

use crate::algo::detector::Silence;
use crate::algo::{Algorithm, Context, Event, Message, NodeId, Setup};
use crate::rng::Rng;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
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
        }
    }
    fn brief(&self) -> String {
        match self {
            LMsg::Inner { term, msg, .. } => with_term(msg.brief(), *term),
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
    /// No ACK for ring message `seq`.
    Ack(u64),
    /// The protocol's own timer.
    Inner(T),
    /// Ask again for the votes not yet answered (majority mode).
    Votes,
    /// The pre-vote round is over (majority mode).
    PreVote,
}

/// Checks the options this wrapper reads (`mesh`, `majority`, `weights`): the launcher and the
/// node front door call it so that a bad option is refused rather than ignored.
pub fn validate(setup: &Setup) -> Result<(), String> {
    for key in ["mesh", "majority"] {
        if let Some(v) = setup.opts.get(key) {
            if !matches!(v.as_str(), "true" | "false" | "1" | "0" | "yes" | "no") {
                return Err(format!("{key}={v}: expected true or false"));
            }
        }
    }
    if !setup.flag("majority", false) {
        return Ok(());
    }
    weights(setup)?;
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
    if !setup.flag("mesh", false) {
        return None;
    }
    setup
        .members
        .iter()
        .copied()
        .find(|&m| m != setup.me && !setup.neighbours.contains(&m))
}

/// The largest weight accepted, so that sums cannot overflow.
const MAX_WEIGHT: u64 = 1_000_000;

/// Every member's weight: 1, unless `weights=ID:W,...` says otherwise.
fn weights(setup: &Setup) -> Result<BTreeMap<NodeId, u64>, String> {
    let mut w: BTreeMap<NodeId, u64> = setup.members.iter().map(|&m| (m, 1)).collect();
    let Some(spec) = setup.opts.get("weights") else {
        return Ok(w);
    };
    let mut given = BTreeSet::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (id, wt) = part
            .split_once(':')
            .ok_or_else(|| format!("weights: '{part}' is not ID:WEIGHT (e.g. weights=1:5,2:3)"))?;
        let id: NodeId = id
            .trim()
            .parse()
            .map_err(|_| format!("weights: '{id}' is not a node id"))?;
        let wt: u64 = wt
            .trim()
            .parse()
            .map_err(|_| format!("weights: '{wt}' is not a whole number"))?;
        if !setup.members.contains(&id) {
            return Err(format!("weights: node {id} is not a member"));
        }
        if !(1..=MAX_WEIGHT).contains(&wt) {
            return Err(format!(
                "weights: node {id} has weight {wt}; a weight is 1 to {MAX_WEIGHT}"
            ));
        }
        if !given.insert(id) {
            return Err(format!("weights: node {id} appears twice"));
        }
        w.insert(id, wt);
    }
    Ok(w)
}

struct Pending<M> {
    to: NodeId,
    term: u64,
    msg: M,
}

/// Majority mode's state.
struct Quorum {
    weights: BTreeMap<NodeId, u64>,
    total: u64,
    /// Whom this node voted for in the current term.
    voted: Option<NodeId>,
    /// The protocol's winner of the current term (not necessarily established).
    decided: Option<NodeId>,
    /// As the protocol's winner, while counting: who granted, who refused.
    gathering: Option<(BTreeSet<NodeId>, BTreeSet<NodeId>)>,
    /// The pre-vote round under way: the term asked for, and who granted.
    prevote: Option<(u64, BTreeSet<NodeId>)>,
    /// As the leader: when each node last acknowledged a heartbeat.
    acks: BTreeMap<NodeId, Duration>,
}

impl Quorum {
    fn weight<'a>(&self, nodes: impl IntoIterator<Item = &'a NodeId>) -> u64 {
        nodes
            .into_iter()
            .map(|n| self.weights.get(n).copied().unwrap_or(0))
            .sum()
    }

    fn is_majority(&self, w: u64) -> bool {
        2 * w > self.total
    }
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
    /// Inside `begin_election` (the protocol's `start`).
    starting: bool,
    /// A mesh where some member is not a neighbour: heartbeats are flooded.
    sparse: bool,
    /// The newest flooded heartbeat seen from each leader: (term, seq).
    floods: BTreeMap<NodeId, (u64, u64)>,
    flood_seq: u64,
    /// When the leader was last heard from (its heartbeat, or when it was learned).
    leader_seen: Duration,
    quorum: Option<Quorum>,
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
    /// The nodes this one may send to.
    pub fn neighbours(&self) -> &[NodeId] {
        &self.core.setup.neighbours
    }
    /// Who leads this term, as far as this node knows (in majority mode: the protocol's
    /// winner, even before a majority has established it).
    pub fn leader(&self) -> Option<NodeId> {
        self.core.leader.or(self.core.quorum.as_ref().and_then(|q| q.decided))
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
    /// Suspects `node` after a timeout without the answer named by `cause` (e.g. `probe`): one
    /// detector for the wrapper and the protocol, so a node is suspected once and its silence
    /// counts from the last datagram of any kind. Any message from it withdraws the suspicion.
    pub fn suspect(&mut self, node: NodeId, cause: &str) {
        let timeout = self.core.setup.timeout;
        if let Some(ev) = self.core.silence.suspect(node, self.cx.now, timeout, cause) {
            self.cx.record(ev);
        }
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
    /// The first successor this node does not suspect (None when it suspects everyone); in a
    /// sparse mesh, the ring successor if it is a neighbour.
    pub fn successor(&self) -> Option<NodeId> {
        self.core.next_hop(self.me())
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
    /// Notes a decision in words (debug level in the human log).
    pub fn note(&mut self, text: impl Into<String>) {
        self.cx.note(text);
    }
    /// Notes a state change in words (info level in the human log).
    pub fn state_change(&mut self, text: impl Into<String>) {
        self.cx.state_change(text);
    }
    /// Records that a message was ignored on purpose.
    pub fn discard(&mut self, from: NodeId, reason: impl Into<String>) {
        self.cx.discard(from, reason);
    }
    /// The protocol decided: `leader` leads the current term (in majority mode, once a
    /// majority of weight has voted for it).
    pub fn elected(&mut self, leader: NodeId) {
        self.core.decide(self.cx, leader);
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

    fn others(&self) -> Vec<NodeId> {
        let me = self.me();
        self.setup.members.iter().copied().filter(|&m| m != me).collect()
    }

    fn live_after(&self, node: NodeId) -> Option<NodeId> {
        let m = &self.setup.members;
        let i = m.iter().position(|&x| x == node)?;
        (1..m.len())
            .map(|k| m[(i + k) % m.len()])
            .find(|&x| x != self.me() && !self.silence.is_suspected(x))
    }

    /// Where a ring message goes after `after` (None: back to this node). In a sparse mesh there
    /// is no path around the successor, so it is always the successor.
    fn next_hop(&self, after: NodeId) -> Option<NodeId> {
        if self.sparse {
            Some(self.setup.successor()).filter(|&s| s != self.me())
        } else {
            self.live_after(after)
        }
    }

    fn forward_after<T>(&mut self, cx: &mut Context<'_, LMsg<M>, LTimer<T>>, after: NodeId, msg: M) {
        let Some(to) = self.next_hop(after) else {
            self.local.push_back(msg);
            return;
        };
        if self.sparse && !self.setup.neighbours.contains(&to) {
            let why = format!(
                "{} not sent: ring successor {to} is not a neighbour in this mesh",
                msg.name()
            );
            cx.discard(to, why);
            return;
        }
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
        if let Some(q) = self.quorum.as_mut() {
            q.voted = None;
            q.decided = None;
            q.gathering = None;
            q.prevote = None;
            q.acks.clear();
            cx.cancel_timer(LTimer::Votes);
            cx.cancel_timer(LTimer::PreVote);
        }
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

    /// The protocol's decision: followed at once, or (majority mode) put to a vote.
    fn decide<T>(&mut self, cx: &mut Context<'_, LMsg<M>, LTimer<T>>, leader: NodeId) {
        let me = self.me();
        let Some(q) = self.quorum.as_mut() else {
            return self.follow(cx, leader);
        };
        if q.decided == Some(leader) {
            return;
        }
        q.decided = Some(leader);
        if leader != me || self.leader == Some(me) {
            return;
        }
        let mut yes = BTreeSet::new();
        if q.voted.is_none_or(|v| v == me) {
            q.voted = Some(me);
            yes.insert(me);
        }
        q.gathering = Some((yes, BTreeSet::new()));
        self.count_votes(cx, true);
    }

    /// As the protocol's winner: leads once the votes are a majority; otherwise, when `ask`,
    /// asks those that have not answered (again after a heartbeat period).
    fn count_votes<T>(&mut self, cx: &mut Context<'_, LMsg<M>, LTimer<T>>, ask: bool) {
        let (others, term) = (self.others(), self.term);
        let Some(q) = self.quorum.as_mut() else { return };
        let Some((yes, no)) = &q.gathering else { return };
        if q.is_majority(q.weight(yes)) {
            let now = cx.now;
            q.acks = yes.iter().map(|&n| (n, now)).collect();
            q.gathering = None;
            cx.cancel_timer(LTimer::Votes);
            self.follow(cx, self.me());
            self.send_heartbeats(cx);
            return;
        }
        if !ask {
            return;
        }
        for m in others.into_iter().filter(|m| !yes.contains(m) && !no.contains(m)) {
            cx.send(m, LMsg::VoteReq { term });
        }
        cx.set_timer(LTimer::Votes, self.setup.heartbeat);
    }

    /// One heartbeat of this leader: to every member, or flooded to the neighbours in a sparse mesh.
    fn send_heartbeats<T>(&mut self, cx: &mut Context<'_, LMsg<M>, LTimer<T>>) {
        let (me, term) = (self.me(), self.term);
        if self.sparse {
            self.flood_seq += 1;
            let seq = self.flood_seq;
            self.floods.insert(me, (term, seq));
            for &n in &self.setup.neighbours {
                cx.send(n, LMsg::Flood { term, leader: me, seq });
            }
        } else {
            for m in self.others() {
                cx.send(m, LMsg::Heartbeat { term });
            }
        }
    }

    /// Marks flooded heartbeat (term, seq) of `leader` seen; false when it was seen already.
    fn fresh_flood(&mut self, leader: NodeId, term: u64, seq: u64) -> bool {
        match self.floods.get(&leader) {
            Some(&seen) if seen >= (term, seq) => false,
            _ => {
                self.floods.insert(leader, (term, seq));
                true
            }
        }
    }

    /// Majority mode: whether the leader has heard, within one timeout, from nodes that with
    /// itself make a majority of weight.
    fn has_quorum(&self, now: Duration) -> bool {
        let Some(q) = &self.quorum else { return true };
        let me = self.me();
        let heard = q
            .acks
            .iter()
            .filter(|&(_, &t)| now.saturating_sub(t) <= self.setup.timeout)
            .map(|(n, _)| n);
        q.is_majority(q.weight(heard.chain([&me])))
    }
}

impl<E: Election> Leadership<E> {
    /// A node running protocol `E` under leadership. The options are assumed checked by
    /// [`validate`]; weights that do not parse count 1 each here.
    pub fn new(setup: &Setup) -> Self {
        let quorum = setup.flag("majority", false).then(|| {
            let weights = weights(setup).unwrap_or_else(|_| setup.members.iter().map(|&m| (m, 1)).collect());
            Quorum {
                total: weights.values().sum(),
                weights,
                voted: None,
                decided: None,
                gathering: None,
                prevote: None,
                acks: BTreeMap::new(),
            }
        });
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
                starting: false,
                sparse: unreachable(setup).is_some(),
                floods: BTreeMap::new(),
                flood_seq: 0,
                leader_seen: Duration::ZERO,
                quorum,
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
        // Every other member suspected: a ring message for someone else (ELECTED(j) of a
        // suspected j) would come back here forever. Past two laps' worth of hops it is
        // dropped, and a new election asked for.
        let mut laps = 2 * self.core.setup.members.len() + 2;
        while let Some(m) = self.core.local.pop_front() {
            if laps == 0 {
                let why = format!("{} keeps coming back: every other member is suspected", m.name());
                cx.discard(me, why);
                self.core.local.clear();
                // Not while starting one: a protocol whose own start loops would recurse.
                self.core.wants_election |= !self.core.starting;
                break;
            }
            laps -= 1;
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

    /// Starts an election; in majority mode, first asks for pre-votes.
    fn start_election(&mut self, cx: &mut LCx<'_, E>) {
        let me = self.core.me();
        let t = self.core.term + 1;
        let Some(q) = self.core.quorum.as_mut() else {
            return self.begin_election(cx);
        };
        q.prevote = Some((t, BTreeSet::from([me])));
        if q.is_majority(q.weight([&me])) {
            q.prevote = None;
            return self.begin_election(cx);
        }
        for m in self.core.others() {
            cx.send(m, LMsg::PreVote { term: t });
        }
        cx.set_timer(LTimer::PreVote, self.core.setup.timeout);
    }

    /// Moves to a new term and lets the protocol begin.
    fn begin_election(&mut self, cx: &mut LCx<'_, E>) {
        let t = self.core.term + 1;
        self.core.adopt(cx, t, "starting a new election".into());
        cx.record(Event::ElectionStart { term: t });
        self.inner.reset();
        self.core.starting = true;
        self.with_inner(cx, |e, ecx| e.start(ecx));
        self.core.starting = false;
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

    /// A heartbeat of `leader` in `term` (direct or flooded), already known not to be stale.
    fn heartbeat(&mut self, cx: &mut LCx<'_, E>, from: NodeId, term: u64, leader: NodeId) {
        let before = self.core.leader;
        self.join(cx, term, from);
        self.core.follow(cx, leader);
        if self.core.quorum.is_some() {
            cx.send(leader, LMsg::HbAck { term });
        }
        self.after(cx, before);
    }

    fn on_flood(&mut self, cx: &mut LCx<'_, E>, from: NodeId, term: u64, leader: NodeId, seq: u64) {
        if !self.core.fresh_flood(leader, term, seq) {
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
        self.heartbeat(cx, from, term, leader);
        for &n in self.core.setup.neighbours.iter().filter(|&&n| n != from && n != leader) {
            cx.send(n, LMsg::Flood { term, leader, seq });
        }
    }

    fn on_vote_req(&mut self, cx: &mut LCx<'_, E>, from: NodeId, term: u64) {
        if term < self.core.term {
            return self.stale(cx, from, term);
        }
        let before = self.core.leader;
        self.join(cx, term, from);
        let granted = match self.core.quorum.as_mut() {
            Some(q) => *q.voted.get_or_insert(from) == from,
            None => {
                cx.discard(from, "vote request, but this node does not run majority=true");
                false
            }
        };
        cx.send(from, LMsg::Vote { term, granted });
        self.after(cx, before);
    }

    fn on_vote(&mut self, cx: &mut LCx<'_, E>, from: NodeId, term: u64, granted: bool) {
        let Some(q) = self.core.quorum.as_mut() else { return };
        let Some((yes, no)) = q.gathering.as_mut().filter(|_| term == self.core.term) else {
            return;
        };
        if granted {
            yes.insert(from);
        } else {
            no.insert(from);
        }
        let before = self.core.leader;
        self.core.count_votes(cx, false);
        self.after(cx, before);
    }

    fn on_pre_vote(&mut self, cx: &mut LCx<'_, E>, from: NodeId, term: u64) {
        if self.core.quorum.is_none() {
            cx.discard(from, "pre-vote request, but this node does not run majority=true");
            return cx.send(from, LMsg::PreVoteReply { term, granted: false });
        }
        if term <= self.core.term {
            cx.send(from, LMsg::PreVoteReply { term, granted: false });
            let (term, leader) = (self.core.term, self.core.leader);
            return cx.send(from, LMsg::Newer { term, leader });
        }
        let granted = !self.core.leader_live(cx.now);
        cx.send(from, LMsg::PreVoteReply { term, granted });
    }

    fn on_pre_vote_reply(&mut self, cx: &mut LCx<'_, E>, from: NodeId, term: u64, granted: bool) {
        let Some(q) = self.core.quorum.as_mut() else { return };
        let Some((_, yes)) = q.prevote.as_mut().filter(|(t, _)| *t == term && granted) else {
            return;
        };
        yes.insert(from);
        let yes = yes.clone();
        if q.is_majority(q.weight(&yes)) {
            q.prevote = None;
            cx.cancel_timer(LTimer::PreVote);
            self.begin_election(cx);
        }
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
            LMsg::Heartbeat { term } => self.heartbeat(cx, from, term, from),
            LMsg::Flood { term, leader, seq } => self.on_flood(cx, from, term, leader, seq),
            LMsg::Newer { term, leader } => {
                let newer = self.join(cx, term, from);
                // In majority mode this node leads only on its own count of votes, never on hearsay
                // (a NEWER naming it is about an earlier life, before a restart).
                let hearsay = self.core.quorum.is_some() && leader == Some(self.core.me());
                let fits = newer || (term == self.core.term && before.is_none());
                if let Some(l) = leader.filter(|_| fits && !hearsay) {
                    self.core.follow(cx, l);
                }
                self.after(cx, before);
            }
            LMsg::Inner { term, ack, msg } => {
                if term < self.core.term {
                    self.stale(cx, from, term);
                } else {
                    self.join(cx, term, from);
                    self.with_inner(cx, |e, ecx| e.on_msg(ecx, from, msg));
                }
                // Acknowledged after the protocol's own sends: a forward is on the ring's
                // critical path, the ACK is not.
                if ack != 0 {
                    cx.send(from, LMsg::Ack { seq: ack });
                }
            }
            LMsg::HbAck { term } => {
                let me = self.core.me();
                let leading = term == self.core.term && self.core.leader == Some(me);
                if let Some(q) = self.core.quorum.as_mut().filter(|_| leading) {
                    q.acks.insert(from, cx.now);
                }
            }
            LMsg::VoteReq { term } => self.on_vote_req(cx, from, term),
            LMsg::Vote { term, granted } => self.on_vote(cx, from, term, granted),
            LMsg::PreVote { term } => self.on_pre_vote(cx, from, term),
            LMsg::PreVoteReply { term, granted } => self.on_pre_vote_reply(cx, from, term, granted),
        }
    }

    fn on_timer(&mut self, cx: &mut LCx<'_, E>, timer: LTimer<E::Timer>) {
        let me = self.core.me();
        match timer {
            LTimer::Heartbeat if self.core.leader == Some(me) => {
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
            LTimer::Heartbeat => {}
            LTimer::LeaderTimeout => {
                if let Some(l) = self.core.leader.filter(|&l| l != me) {
                    if let Some(ev) = self
                        .core
                        .silence
                        .suspect(l, cx.now, self.core.setup.timeout, "heartbeat")
                    {
                        cx.record(ev);
                    }
                    self.start_election(cx);
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
            LTimer::Ack(seq) => {
                let Some(p) = self.core.pending.remove(&seq) else {
                    return;
                };
                if p.term != self.core.term {
                    return;
                }
                if let Some(ev) = self.core.silence.suspect(p.to, cx.now, self.core.setup.timeout, "ack") {
                    cx.record(ev);
                }
                self.core.forward_after(cx, p.to, p.msg);
                self.with_inner(cx, |_, _| {});
            }
            LTimer::Inner(t) => self.with_inner(cx, |e, ecx| e.on_timer(ecx, t)),
            LTimer::Votes => {
                let before = self.core.leader;
                self.core.count_votes(cx, true);
                self.after(cx, before);
            }
            LTimer::PreVote => {
                if let Some(q) = self.core.quorum.as_mut() {
                    if q.prevote.take().is_some() {
                        let d = self.core.election_timeout(cx.rng);
                        cx.set_timer(LTimer::ElectionTimeout, d);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::election::chang_roberts::ChangRoberts;
    use crate::algo::election::testkit::one_leader_per_term;
    use crate::sim::{ring, NetConfig, Sim};
    use crate::topology::{build, mesh_setups, Graph};
    use crate::trace::Record;

    type Cr = Leadership<ChangRoberts>;

    /// A test-only protocol for meshes: the largest member this node does not suspect leads; it
    /// decides alone and everyone else learns it from the (flooded) heartbeat.
    struct Fixed;

    #[derive(Debug, Clone, Serialize, Deserialize)]
    struct Never;

    impl Message for Never {
        fn name(&self) -> &'static str {
            "NEVER"
        }
    }

    impl Election for Fixed {
        type Msg = Never;
        type Timer = ();
        fn new(_: &Setup) -> Self {
            Fixed
        }
        fn start(&mut self, ecx: &mut ECx<'_, '_, Self>) {
            let best = ecx
                .setup()
                .members
                .iter()
                .copied()
                .filter(|&m| !ecx.is_suspected(m))
                .max();
            if best == Some(ecx.me()) {
                ecx.elected(ecx.me());
            }
        }
        fn on_msg(&mut self, _: &mut ECx<'_, '_, Self>, _: NodeId, _: Never) {}
        fn reset(&mut self) {}
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn all(n: u64) -> Vec<NodeId> {
        (1..=n).collect()
    }

    fn majority(mut setups: Vec<Setup>, weights: Option<&str>) -> Vec<Setup> {
        for s in &mut setups {
            s.opts.insert("majority".into(), "true".into());
            if let Some(w) = weights {
                s.opts.insert("weights".into(), w.into());
            }
        }
        setups
    }

    fn net(seed: u64) -> NetConfig {
        NetConfig {
            seed,
            ..NetConfig::default()
        }
    }

    /// Runs until every node of `group` believes the same leader, in `group`, of a term after
    /// `after`; returns (term, leader).
    fn agree<E: Election>(s: &mut Sim<Leadership<E>>, group: &[NodeId], after: u64) -> (u64, NodeId) {
        let limit = s.now() + Duration::from_secs(30);
        let done = s.run_until(limit, |s| {
            let b: Vec<_> = group.iter().map(|&i| s.node(i).belief()).collect();
            b[0].0 > after && b[0].1.is_some_and(|l| group.contains(&l)) && b.iter().all(|x| *x == b[0])
        });
        assert!(done, "{group:?} did not agree by {limit:?}");
        let (t, l) = s.node(group[0]).belief();
        (t, l.unwrap())
    }

    /// Every (term, leader) a node recorded about itself, i.e. every claim to lead.
    fn claims(trace: &[Record]) -> Vec<(u64, NodeId)> {
        trace
            .iter()
            .filter_map(|r| match r.event {
                Event::Leader { leader, term } if Some(leader) == r.node => Some((term, leader)),
                _ => None,
            })
            .collect()
    }

    fn since(s: &Sim<impl Algorithm>, t: Duration) -> Vec<Record> {
        s.trace
            .iter()
            .filter(|r| r.t >= t.as_micros() as u64)
            .cloned()
            .collect()
    }

    fn sent_by(trace: &[Record], node: NodeId, name: &str) -> usize {
        trace
            .iter()
            .filter(|r| r.node == Some(node) && matches!(&r.event, Event::Send { msg, .. } if msg == name))
            .count()
    }

    fn max_term<E: Election>(s: &Sim<Leadership<E>>) -> u64 {
        s.ids().iter().map(|&i| s.node(i).belief().0).max().unwrap()
    }

    #[test]
    fn majority_elects_with_votes_and_others_learn_from_the_heartbeat() {
        let ids = all(5);
        let mut s = Sim::new(net(1), majority(ring(&ids, &ids), None), Cr::new);
        assert_eq!(agree(&mut s, &ids, 0), (1, 5));
        assert!(s.sent("VOTE_REQ") >= 4 && s.sent("PRE_VOTE") > 0);
        // Node 5 claimed term 1 only after the votes; the others only after its heartbeat.
        let first_vote = s
            .trace
            .iter()
            .position(|r| matches!(&r.event, Event::Recv { msg, .. } if msg == "VOTE"));
        let claim = s.trace.iter().position(|r| matches!(r.event, Event::Leader { .. }));
        assert!(first_vote.unwrap() < claim.unwrap());
        for r in s.events("leader") {
            let hb = s
                .trace
                .iter()
                .position(|x| x.node == r.node && matches!(&x.event, Event::Recv { msg, .. } if msg == "HEARTBEAT"));
            if r.node != Some(5) {
                assert!(hb.is_some(), "node {:?} followed without a heartbeat", r.node);
            }
        }
    }

    #[test]
    fn partition_three_two_only_the_three_side_elects_and_the_old_leader_steps_down() {
        for seed in 0..5 {
            let ids = all(5);
            let mut s = Sim::new(net(seed), majority(ring(&ids, &ids), None), Cr::new);
            assert_eq!(agree(&mut s, &ids, 0), (1, 5));
            let cut = s.now();
            s.partition(&[1, 2, 3], &[4, 5]);
            let (t, l) = agree(&mut s, &[1, 2, 3], 1);
            assert_eq!(l, 3, "seed {seed}");
            s.run_for(Duration::from_secs(5));
            let after = since(&s, cut);
            assert!(
                after.iter().any(|r| r.node == Some(5)
                    && matches!(&r.event, Event::StepDown { term: 1, reason } if reason == "lost quorum")),
                "seed {seed}: node 5 did not step down for lost quorum"
            );
            for (term, leader) in claims(&after) {
                assert!(
                    [1, 2, 3].contains(&leader),
                    "seed {seed}: node {leader} led term {term} on the minority side"
                );
            }
            // The minority never even moved to a new term: its pre-votes found no majority.
            assert_eq!(s.node(4).belief(), (1, Some(5)));
            assert_eq!(s.node(5).belief(), (1, None));
            assert!(sent_by(&after, 4, "PRE_VOTE") > 0);
            s.heal();
            assert_eq!(agree(&mut s, &ids, t - 1), (t, 3), "seed {seed}");
            one_leader_per_term(&s);
        }
    }

    #[test]
    fn isolated_leader_steps_down_and_the_rest_elect() {
        let ids = all(5);
        let mut s = Sim::new(net(2), majority(ring(&ids, &ids), None), Cr::new);
        agree(&mut s, &ids, 0);
        s.partition(&[5], &[1, 2, 3, 4]);
        assert_eq!(agree(&mut s, &[1, 2, 3, 4], 1).1, 4);
        // The new leader may be established first (terms differ, so this is no split within a
        // term); the old one steps down within a timeout and a heartbeat of the cut.
        let limit = s.now() + Duration::from_secs(1);
        assert!(s.run_until(limit, |s| s.node(5).belief() == (1, None)));
        let downs: Vec<_> = s
            .events("step_down")
            .into_iter()
            .filter(|r| r.node == Some(5))
            .collect();
        assert!(matches!(&downs[0].event, Event::StepDown { reason, .. } if reason == "lost quorum"));
        one_leader_per_term(&s);
    }

    #[test]
    fn paused_leader_resumes_without_an_extra_election() {
        let ids = all(5);
        let mut s = Sim::new(net(3), majority(ring(&ids, &ids), None), Cr::new);
        agree(&mut s, &ids, 0);
        s.pause(5);
        let (t, l) = agree(&mut s, &[1, 2, 3, 4], 1);
        assert_eq!(l, 4);
        s.run_for(Duration::from_secs(1));
        let resumed = s.now();
        s.resume(5);
        s.run_for(Duration::from_secs(5));
        let after = since(&s, resumed);
        assert_eq!(s.node(5).belief(), (t, Some(4)));
        assert_eq!(max_term(&s), t, "nobody moved past term {t}");
        assert_eq!(sent_by(&after, 5, "PRE_VOTE"), 0);
        assert!(claims(&after).is_empty(), "nobody claimed to lead after the resume");
        one_leader_per_term(&s);
    }

    #[test]
    fn restarted_leader_asks_first_and_follows_the_new_one() {
        let ids = all(5);
        let mut s = Sim::new(net(9), majority(ring(&ids, &ids), None), Cr::new);
        agree(&mut s, &ids, 0);
        s.crash(5);
        let (t, l) = agree(&mut s, &[1, 2, 3, 4], 1);
        let back = s.now();
        s.restart(5);
        assert_eq!(agree(&mut s, &ids, t - 1), (t, l));
        s.run_for(Duration::from_secs(3));
        let after = since(&s, back);
        assert!(
            sent_by(&after, 5, "PRE_VOTE") > 0,
            "the restarted initiator asked before disrupting"
        );
        assert!(claims(&after).is_empty());
        assert_eq!(max_term(&s), t);
    }

    /// Follower 2 is paused and everything sent to it meanwhile is lost (as when a stopped
    /// process's socket buffer overflows): it wakes with a stale view and a leader timeout due.
    fn stale_follower(majority_mode: bool) -> (Sim<Cr>, Vec<Record>) {
        let ids = all(5);
        let setups = if majority_mode {
            majority(ring(&ids, &ids), None)
        } else {
            ring(&ids, &ids)
        };
        let mut s = Sim::new(net(4), setups, Cr::new);
        assert_eq!(agree(&mut s, &ids, 0), (1, 5));
        s.pause(2);
        s.partition(&[2], &[1, 3, 4, 5]);
        s.run_for(Duration::from_secs(2));
        s.heal();
        let resumed = s.now();
        s.resume(2);
        s.run_for(Duration::from_secs(5));
        let after = since(&s, resumed);
        (s, after)
    }

    #[test]
    fn pre_vote_refuses_a_stale_follower_while_the_leader_lives() {
        let (s, after) = stale_follower(true);
        assert!(after
            .iter()
            .any(|r| r.node == Some(2) && matches!(r.event, Event::Suspect { target: 5, .. })));
        assert!(sent_by(&after, 2, "PRE_VOTE") > 0, "node 2 asked");
        assert_eq!(max_term(&s), 1, "no new term");
        assert!(s.ids().iter().all(|&i| s.node(i).belief() == (1, Some(5))));
        assert!(s.events("step_down").is_empty());
        // Without pre-vote the same wake-up deposes the live leader into a new term.
        let (s, _) = stale_follower(false);
        assert!(max_term(&s) > 1);
        assert!(s.events("step_down").iter().any(|r| r.node == Some(5)));
    }

    #[test]
    fn weight_not_numbers_decides_which_side_elects() {
        // Total weight 9: {1, 2} hold 6 with two nodes, {3, 4, 5} hold 3 with three.
        let ids = all(5);
        let setups = majority(ring(&ids, &ids), Some("1:3,2:3"));
        let mut s = Sim::new(net(5), setups, Cr::new);
        agree(&mut s, &ids, 0);
        let cut = s.now();
        s.partition(&[1, 2], &[3, 4, 5]);
        assert_eq!(agree(&mut s, &[1, 2], 1).1, 2);
        s.run_for(Duration::from_secs(5));
        let after = since(&s, cut);
        assert!(claims(&after).iter().all(|&(_, l)| l == 2));
        assert!(after
            .iter()
            .any(|r| r.node == Some(5) && matches!(r.event, Event::StepDown { .. })));
        assert!([3, 4, 5].iter().all(|&i| s.node(i).belief().0 == 1));
    }

    #[test]
    fn majority_keeps_one_leader_per_term_under_loss_crashes_and_partitions() {
        for seed in 0..12 {
            let ids = all(6);
            let lossy = NetConfig {
                seed,
                drop: 0.05,
                duplicate: 0.05,
                min_delay: ms(1),
                max_delay: ms(6),
            };
            let mut s = Sim::new(lossy, majority(ring(&ids, &ids), Some("6:2")), Cr::new);
            agree(&mut s, &ids, 0);
            let mut rng = Rng::new(seed);
            for _ in 0..3 {
                let mut order = ids.clone();
                rng.shuffle(&mut order);
                let (a, b) = order.split_at(rng.range(1, 6) as usize);
                s.partition(a, b);
                s.run_for(ms(rng.range(200, 3000)));
                s.heal();
                s.run_for(ms(rng.range(0, 1000)));
            }
            s.crash(order_max(&s));
            let live = s.live();
            agree(&mut s, &live, 0);
            one_leader_per_term(&s);
        }
    }

    #[test]
    fn a_ring_message_for_a_suspected_node_does_not_loop_forever_at_an_isolated_node() {
        // Cut node 2 off while ring messages are in flight: its ACK timeouts make it suspect
        // everyone, and what it holds (ELECTION(4), ELECTED(4)) comes back to it alone. This
        // used to spin forever inside one handler.
        for cut_at in 0..12 {
            let ids = all(4);
            let mut s = Sim::new(net(cut_at), ring(&ids, &ids), Cr::new);
            s.run_for(Duration::from_micros(cut_at * 700));
            s.partition(&[2], &[1, 3, 4]);
            let (t, l) = agree(&mut s, &[2], 0);
            assert_eq!(l, 2, "alone, without majority=true, node 2 leads its own term {t}");
            assert_eq!(agree(&mut s, &[1, 3, 4], 0).1, 4);
        }
    }

    fn order_max(s: &Sim<Cr>) -> NodeId {
        s.node(1).belief().1.unwrap_or(6)
    }

    fn assert_sends_follow_the_graph(trace: &[Record], g: &Graph, replies: &[&str]) {
        for r in trace {
            if let Event::Send { to, msg, .. } = &r.event {
                let from = r.node.unwrap();
                let ok = g.neighbours(from).contains(to) || replies.contains(&msg.as_str());
                assert!(ok, "node {from} sent {msg} to non-neighbour {to}");
            }
        }
    }

    #[test]
    fn flooded_heartbeats_keep_a_grid_quiet_until_the_leader_dies() {
        let ids = all(9);
        let g = build("grid", &ids, 0).unwrap();
        let jittery = NetConfig {
            seed: 6,
            min_delay: ms(1),
            max_delay: ms(8),
            ..NetConfig::default()
        };
        let mut s = Sim::new(jittery, mesh_setups(&g, &ids), Leadership::<Fixed>::new);
        assert_eq!(agree(&mut s, &ids, 0), (1, 9));
        s.run_for(Duration::from_secs(10));
        assert!(s.ids().iter().all(|&i| s.node(i).belief() == (1, Some(9))));
        assert!(s.events("suspect").is_empty(), "a live leader was suspected");
        assert_eq!(s.events("election_start").len(), 9, "one election, joined once by each");
        // Node 1, two hops from 9's corner... four hops away, heard it only through others.
        assert!(!g.neighbours(9).contains(&1));
        assert_sends_follow_the_graph(&s.trace, &g, &[]);
        s.crash(9);
        let live = s.live();
        assert_eq!(agree(&mut s, &live, 1).1, 8);
        for &i in &live {
            assert!(s
                .events("suspect")
                .iter()
                .any(|r| r.node == Some(i) && matches!(r.event, Event::Suspect { target: 9, .. })));
        }
        assert_sends_follow_the_graph(&s.trace, &g, &[]);
    }

    #[test]
    fn chang_roberts_on_mesh_rings_talks_only_to_neighbours() {
        for topo in ["bidirectional-ring", "ring"] {
            let ids = [3, 7, 1, 5, 8, 2, 6, 4];
            let g = build(topo, &ids, 0).unwrap();
            let mut s = Sim::new(net(7), mesh_setups(&g, &ids), Cr::new);
            assert_eq!(agree(&mut s, &ids, 0), (1, 8), "{topo}");
            s.run_for(Duration::from_secs(10));
            assert!(s.events("suspect").is_empty(), "{topo}: a live leader was suspected");
            assert!(ids.iter().all(|&i| s.node(i).belief() == (1, Some(8))));
            // On the one-way ring, ACKs (and NEWERs) answer the predecessor on its own link.
            assert_sends_follow_the_graph(&s.trace, &g, &["ACK", "NEWER"]);
            // With 8 dead there is no path around it: 5 keeps offering its ring messages to
            // 8 alone, and no election completes until 8 is back.
            let crashed = s.now();
            s.crash(8);
            s.run_for(Duration::from_secs(5));
            let after = since(&s, crashed);
            assert!(
                claims(&after).is_empty(),
                "{topo}: a ring election completed around a dead node"
            );
            assert!(after
                .iter()
                .any(|r| r.node == Some(5) && matches!(&r.event, Event::Send { to: 8, msg, .. } if msg == "ELECTION")));
            assert_sends_follow_the_graph(&s.trace, &g, &["ACK", "NEWER"]);
            s.restart(8);
            assert_eq!(agree(&mut s, &ids, 1).1, 8, "{topo}");
        }
    }

    #[test]
    fn ring_messages_do_not_jump_to_a_successor_that_is_not_a_neighbour() {
        let ids = all(4);
        let g = build("grid", &ids, 0).unwrap(); // 1-2 / 3-4: 2's ring successor 3 is not adjacent
        let mut s = Sim::new(net(8), mesh_setups(&g, &ids), Cr::new);
        s.run_for(Duration::from_secs(2));
        assert!(s.events("ignore").iter().any(|r| r.node == Some(2)
            && matches!(&r.event, Event::Ignore { reason, .. } if reason.contains("ring successor 3 is not a neighbour"))));
        assert_sends_follow_the_graph(&s.trace, &g, &[]);
    }

    #[test]
    fn validate_names_the_bad_option() {
        let g = build("grid", &all(4), 0).unwrap();
        let mut setups = mesh_setups(&g, &[]);
        assert_eq!(validate(&setups[0]), Ok(()));
        setups[0].opts.insert("majority".into(), "true".into());
        assert_eq!(
            validate(&setups[0]).unwrap_err(),
            "majority=true needs every member reachable directly (coordlab ring, or a mesh with --topology \
             complete): node 4 is not a neighbour of node 1"
        );
        let mut c = mesh_setups(&build("complete", &all(4), 0).unwrap(), &[])[0].clone();
        c.opts.insert("majority".into(), "yes".into());
        assert_eq!(validate(&c), Ok(()));
        let bad = |k: &str, v: &str| {
            let mut r = ring(&all(3), &[])[0].clone();
            r.opts.insert("majority".into(), "true".into());
            r.opts.insert(k.into(), v.into());
            validate(&r).unwrap_err()
        };
        assert_eq!(bad("mesh", "maybe"), "mesh=maybe: expected true or false");
        assert_eq!(bad("majority", "2"), "majority=2: expected true or false");
        assert_eq!(
            bad("weights", "1=5"),
            "weights: '1=5' is not ID:WEIGHT (e.g. weights=1:5,2:3)"
        );
        assert_eq!(bad("weights", "x:5"), "weights: 'x' is not a node id");
        assert_eq!(bad("weights", "1:y"), "weights: 'y' is not a whole number");
        assert_eq!(bad("weights", "9:2"), "weights: node 9 is not a member");
        assert_eq!(
            bad("weights", "1:0"),
            "weights: node 1 has weight 0; a weight is 1 to 1000000"
        );
        assert_eq!(bad("weights", "1:2,1:3"), "weights: node 1 appears twice");
        let mut ok = ring(&all(3), &[])[0].clone();
        ok.opts.insert("majority".into(), "true".into());
        ok.opts.insert("weights".into(), "1:5, 3:2".into());
        assert_eq!(validate(&ok), Ok(()));
        assert_eq!(weights(&ok).unwrap(), BTreeMap::from([(1, 5), (2, 1), (3, 2)]));
    }
}
