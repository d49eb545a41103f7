//! Majority mode of [`Leadership`], a component the wrapper hosts as it hosts liveness and ring
//! repair (its own messages and timers, in its place in the wrapper's): majority mode (`majority=true`, weights from `weights=1:5,2:3`, default 1 each). Nothing
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

use super::{Core, Election, LCx, LMsg, LTimer, Leadership, WCx};
use crate::algo::weights::Weights;
use crate::algo::{Context, Message, NodeId, Setup};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// Majority mode's messages (between members directly).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum MajorityMsg {
    /// Answers a heartbeat (the leader's check-quorum).
    HbAck {
        /// The heartbeat's term.
        term: u64,
    },
    /// The protocol's winner of `term` asks for a vote.
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
    /// May the sender start `term`? (asked before leaving the current term)
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

impl MajorityMsg {
    /// The term the message is about.
    pub fn term(&self) -> u64 {
        match self {
            MajorityMsg::HbAck { term }
            | MajorityMsg::VoteReq { term }
            | MajorityMsg::Vote { term, .. }
            | MajorityMsg::PreVote { term }
            | MajorityMsg::PreVoteReply { term, .. } => *term,
        }
    }
}

impl Message for MajorityMsg {
    fn name(&self) -> &'static str {
        match self {
            MajorityMsg::HbAck { .. } => "HB_ACK",
            MajorityMsg::VoteReq { .. } => "VOTE_REQ",
            MajorityMsg::Vote { .. } => "VOTE",
            MajorityMsg::PreVote { .. } => "PRE_VOTE",
            MajorityMsg::PreVoteReply { .. } => "PRE_VOTE_REPLY",
        }
    }
}

/// Majority mode's timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MajorityTimer {
    /// Ask again for the votes not yet answered.
    Votes,
    /// The pre-vote round is over.
    PreVote,
}

crate::algo::compose::slot! {
    /// Majority mode's place in the wrapper's enums.
    pub(super) struct MajoritySlot;
    impl<M, T> for LMsg<M>, LTimer<T>: MajorityMsg => LMsg::Majority, MajorityTimer => LTimer::Majority
}

/// The context majority mode runs in.
type MajorityCx<'a> = Context<'a, MajorityMsg, MajorityTimer>;

/// What majority mode asks of the wrapper when a call returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub(super) enum Outcome {
    /// Nothing.
    Nothing,
    /// This node's votes are a majority: it leads the current term.
    Lead,
    /// The pre-votes are a majority: the election may begin.
    Begin,
    /// The pre-vote round failed: try again after an election timeout.
    Later,
}

/// Majority mode's state.
pub(super) struct Majority {
    me: NodeId,
    others: Vec<NodeId>,
    heartbeat: Duration,
    timeout: Duration,
    weights: Weights,
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

impl Majority {
    pub(super) fn new(setup: &Setup) -> Self {
        Majority {
            me: setup.me,
            others: setup.members.iter().copied().filter(|&m| m != setup.me).collect(),
            heartbeat: setup.heartbeat,
            timeout: setup.timeout,
            weights: Weights::parse(setup).unwrap_or_else(|_| Weights::equal(&setup.members)),
            voted: None,
            decided: None,
            gathering: None,
            prevote: None,
            acks: BTreeMap::new(),
        }
    }

    /// The protocol's winner of the current term, if it decided (not necessarily established).
    pub(super) fn decided(&self) -> Option<NodeId> {
        self.decided
    }

    /// A new term: no vote, no winner, no count under way.
    pub(super) fn new_term(&mut self, c: &mut MajorityCx<'_>) {
        self.voted = None;
        self.decided = None;
        self.gathering = None;
        self.prevote = None;
        self.acks.clear();
        c.cancel_timer(MajorityTimer::Votes);
        c.cancel_timer(MajorityTimer::PreVote);
    }

    /// The protocol decided `leader` in `term`: noted; as the winner (not leading yet), this
    /// node votes for itself and asks the others.
    pub(super) fn decide(&mut self, c: &mut MajorityCx<'_>, leader: NodeId, leading: bool, term: u64) -> Outcome {
        if self.decided == Some(leader) {
            return Outcome::Nothing;
        }
        self.decided = Some(leader);
        if leader != self.me || leading {
            return Outcome::Nothing;
        }
        let mut yes = BTreeSet::new();
        if self.voted.is_none_or(|v| v == self.me) {
            self.voted = Some(self.me);
            yes.insert(self.me);
        }
        self.gathering = Some((yes, BTreeSet::new()));
        self.count(c, true, term)
    }

    /// As the protocol's winner: leads once the votes are a majority; otherwise, when `ask`,
    /// asks those that have not answered (again after a heartbeat period).
    fn count(&mut self, c: &mut MajorityCx<'_>, ask: bool, term: u64) -> Outcome {
        let Some((yes, no)) = &self.gathering else {
            return Outcome::Nothing;
        };
        if self.weights.has_majority(yes) {
            let now = c.now;
            self.acks = yes.iter().map(|&n| (n, now)).collect();
            self.gathering = None;
            c.cancel_timer(MajorityTimer::Votes);
            return Outcome::Lead;
        }
        if ask {
            for &m in self.others.iter().filter(|m| !yes.contains(m) && !no.contains(m)) {
                c.send(m, MajorityMsg::VoteReq { term });
            }
            c.set_timer(MajorityTimer::Votes, self.heartbeat);
        }
        Outcome::Nothing
    }

    /// As the leader: whether it heard, within one timeout, from nodes that with itself make a
    /// majority of weight.
    pub(super) fn has_quorum(&self, now: Duration) -> bool {
        let heard = self
            .acks
            .iter()
            .filter(|&(_, &t)| now.saturating_sub(t) <= self.timeout)
            .map(|(n, _)| n);
        self.weights.has_majority(heard.chain([&self.me]))
    }

    /// Asks every member whether this node may start term `t` (`Begin`: its own weight is a
    /// majority already).
    pub(super) fn ask_pre_votes(&mut self, c: &mut MajorityCx<'_>, t: u64) -> Outcome {
        self.prevote = Some((t, BTreeSet::from([self.me])));
        if self.weights.has_majority([&self.me]) {
            self.prevote = None;
            return Outcome::Begin;
        }
        for &m in &self.others {
            c.send(m, MajorityMsg::PreVote { term: t });
        }
        c.set_timer(MajorityTimer::PreVote, self.timeout);
        Outcome::Nothing
    }

    /// A live leader makes a pre-vote round of this node pointless.
    pub(super) fn drop_pre_votes(&mut self, c: &mut MajorityCx<'_>) {
        if self.prevote.take().is_some() {
            c.cancel_timer(MajorityTimer::PreVote);
        }
    }

    /// Follows `leader`'s heartbeat of `term` with an acknowledgement (its check-quorum).
    pub(super) fn acknowledge(&mut self, c: &mut MajorityCx<'_>, leader: NodeId, term: u64) {
        c.send(leader, MajorityMsg::HbAck { term });
    }

    /// A message of majority mode, already known to be of the current term where that
    /// matters; `leading`: this node leads `term`; `leader_live`: it leads or heard its leader
    /// within the timeout; `current`: this node's term.
    pub(super) fn on_msg(
        &mut self,
        c: &mut MajorityCx<'_>,
        from: NodeId,
        msg: MajorityMsg,
        current: u64,
        leading: bool,
        leader_live: bool,
    ) -> Outcome {
        match msg {
            MajorityMsg::HbAck { term } => {
                if term == current && leading {
                    self.acks.insert(from, c.now);
                }
            }
            MajorityMsg::VoteReq { term } => {
                let granted = *self.voted.get_or_insert(from) == from;
                c.send(from, MajorityMsg::Vote { term, granted });
            }
            MajorityMsg::Vote { term, granted } => {
                let Some((yes, no)) = self.gathering.as_mut().filter(|_| term == current) else {
                    return Outcome::Nothing;
                };
                if granted {
                    yes.insert(from);
                } else {
                    no.insert(from);
                }
                return self.count(c, false, current);
            }
            MajorityMsg::PreVote { term } => {
                let granted = term > current && !leader_live;
                c.send(from, MajorityMsg::PreVoteReply { term, granted });
            }
            MajorityMsg::PreVoteReply { term, granted } => {
                let Some((_, yes)) = self.prevote.as_mut().filter(|(t, _)| *t == term && granted) else {
                    return Outcome::Nothing;
                };
                yes.insert(from);
                if self.weights.has_majority(yes.iter()) {
                    self.prevote = None;
                    c.cancel_timer(MajorityTimer::PreVote);
                    return Outcome::Begin;
                }
            }
        }
        Outcome::Nothing
    }

    /// One of majority mode's timers, in `term`.
    pub(super) fn on_timer(&mut self, c: &mut MajorityCx<'_>, t: MajorityTimer, term: u64) -> Outcome {
        match t {
            MajorityTimer::Votes => self.count(c, true, term),
            MajorityTimer::PreVote if self.prevote.take().is_some() => Outcome::Later,
            MajorityTimer::PreVote => Outcome::Nothing,
        }
    }
}

impl<M: Message> Core<M> {
    /// Runs `f` on majority mode, inside its scope; None without majority mode.
    pub(super) fn majority<T, R>(
        &mut self,
        cx: &mut WCx<'_, M, T>,
        f: impl FnOnce(&mut Majority, &mut MajorityCx<'_>) -> R,
    ) -> Option<R> {
        let m = self.majority.as_mut()?;
        Some(cx.within::<MajoritySlot, _>(|c| f(m, c)))
    }

    /// The protocol decided `leader`: majority mode notes it; the winner asks for votes.
    pub(super) fn decide_by_votes<T>(&mut self, cx: &mut WCx<'_, M, T>, leader: NodeId) {
        let (leading, term) = (self.leader == Some(self.me()), self.term);
        let outcome = self.majority(cx, |m, c| m.decide(c, leader, leading, term));
        self.carry_out(cx, outcome);
    }

    /// Majority mode's own outcomes, that act on the wrapper's state alone.
    pub(super) fn carry_out<T>(&mut self, cx: &mut WCx<'_, M, T>, outcome: Option<Outcome>) -> Option<Outcome> {
        match outcome? {
            Outcome::Lead => {
                self.follow(cx, self.me());
                self.send_heartbeats(cx);
                None
            }
            Outcome::Later => {
                let d = self.election_timeout(cx.rng);
                cx.set_timer(LTimer::ElectionTimeout, d);
                None
            }
            Outcome::Nothing => None,
            Outcome::Begin => Some(Outcome::Begin),
        }
    }

    /// Whether the leader may go on leading: without majority mode always; with it, when it
    /// heard from a majority of weight within one timeout.
    pub(super) fn has_quorum(&self, now: Duration) -> bool {
        self.majority.as_ref().is_none_or(|m| m.has_quorum(now))
    }
}

impl<E: Election> Leadership<E> {
    /// Asks every member whether this node may start term `t`.
    pub(super) fn ask_pre_votes(&mut self, cx: &mut LCx<'_, E>, t: u64) {
        let outcome = self.core.majority(cx, |m, c| m.ask_pre_votes(c, t));
        if self.core.carry_out(cx, outcome) == Some(Outcome::Begin) {
            self.begin_election(cx);
        }
    }

    /// A message of majority mode from `from`.
    pub(super) fn on_majority(&mut self, cx: &mut LCx<'_, E>, from: NodeId, msg: MajorityMsg) {
        let (me, before) = (self.core.me(), self.core.leader);
        match msg {
            // A newer term's vote request is joined first, as any message of a newer term.
            MajorityMsg::VoteReq { term } if term < self.core.term => return self.stale(cx, from, term),
            MajorityMsg::VoteReq { term } => {
                self.join(cx, term, from);
            }
            MajorityMsg::PreVote { term } if term <= self.core.term && self.core.majority.is_some() => {
                // Not newer: refused, and the asker learns the current term.
                let current = self.core.term;
                let _ = self
                    .core
                    .majority(cx, |m, c| m.on_msg(c, from, msg, current, false, true));
                let (term, leader) = (self.core.term, self.core.leader);
                return cx.send(from, LMsg::Newer { term, leader });
            }
            _ => {}
        }
        let (current, leading, leader_live) = (
            self.core.term,
            self.core.leader == Some(me),
            self.core.leader_live(cx.now),
        );
        let outcome = self
            .core
            .majority(cx, |m, c| m.on_msg(c, from, msg.clone(), current, leading, leader_live));
        if outcome.is_none() {
            return self.refuse_majority(cx, from, msg, before);
        }
        if self.core.carry_out(cx, outcome) == Some(Outcome::Begin) {
            self.begin_election(cx);
        }
        if matches!(msg, MajorityMsg::VoteReq { .. } | MajorityMsg::Vote { .. }) {
            self.after(cx, before);
        }
    }

    /// A message of majority mode at a node that does not run it: requests are refused.
    fn refuse_majority(&mut self, cx: &mut LCx<'_, E>, from: NodeId, msg: MajorityMsg, before: Option<NodeId>) {
        let (what, reply) = match msg {
            MajorityMsg::VoteReq { term } => ("vote request", MajorityMsg::Vote { term, granted: false }),
            MajorityMsg::PreVote { term } => ("pre-vote request", MajorityMsg::PreVoteReply { term, granted: false }),
            _ => return,
        };
        cx.discard(from, format!("{what}, but this node does not run majority=true"));
        cx.send(from, LMsg::Majority(reply));
        if matches!(msg, MajorityMsg::VoteReq { .. }) {
            self.after(cx, before);
        }
    }

    /// One of majority mode's timers.
    pub(super) fn on_majority_timer(&mut self, cx: &mut LCx<'_, E>, t: MajorityTimer) {
        let (before, term) = (self.core.leader, self.core.term);
        let outcome = self.core.majority(cx, |m, c| m.on_timer(c, t, term));
        let _ = self.core.carry_out(cx, outcome);
        if t == MajorityTimer::Votes {
            self.after(cx, before);
        }
    }
}
