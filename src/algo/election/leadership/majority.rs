//! Majority mode of [`Leadership`] (`majority=true`, weights from `weights=1:5,2:3`, default 1 each). Nothing
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
use crate::algo::{Message, NodeId, Setup};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// Majority mode's state.
pub(super) struct Quorum {
    weights: Weights,
    /// Whom this node voted for in the current term.
    voted: Option<NodeId>,
    /// The protocol's winner of the current term (not necessarily established).
    pub(super) decided: Option<NodeId>,
    /// As the protocol's winner, while counting: who granted, who refused.
    gathering: Option<(BTreeSet<NodeId>, BTreeSet<NodeId>)>,
    /// The pre-vote round under way: the term asked for, and who granted.
    pub(super) prevote: Option<(u64, BTreeSet<NodeId>)>,
    /// As the leader: when each node last acknowledged a heartbeat.
    acks: BTreeMap<NodeId, Duration>,
}

impl Quorum {
    pub(super) fn new(setup: &Setup) -> Self {
        Quorum {
            weights: Weights::parse(setup).unwrap_or_else(|_| Weights::equal(&setup.members)),
            voted: None,
            decided: None,
            gathering: None,
            prevote: None,
            acks: BTreeMap::new(),
        }
    }

    /// A new term: no vote, no winner, no count under way.
    pub(super) fn new_term(&mut self) {
        self.voted = None;
        self.decided = None;
        self.gathering = None;
        self.prevote = None;
        self.acks.clear();
    }
}

impl<M: Message> Core<M> {
    /// The protocol decided `leader`: every node notes it; the winner asks for votes.
    pub(super) fn decide_by_votes<T>(&mut self, cx: &mut WCx<'_, M, T>, leader: NodeId) {
        let me = self.me();
        let Some(q) = self.quorum.as_mut() else { return };
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
    pub(super) fn count_votes<T>(&mut self, cx: &mut WCx<'_, M, T>, ask: bool) {
        let (others, term) = (self.others(), self.term);
        let Some(q) = self.quorum.as_mut() else { return };
        let Some((yes, no)) = &q.gathering else { return };
        if q.weights.has_majority(yes) {
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

    /// Majority mode: whether the leader has heard, within one timeout, from nodes that with
    /// itself make a majority of weight.
    pub(super) fn has_quorum(&self, now: Duration) -> bool {
        let Some(q) = &self.quorum else { return true };
        let me = self.me();
        let heard = q
            .acks
            .iter()
            .filter(|&(_, &t)| now.saturating_sub(t) <= self.setup.timeout)
            .map(|(n, _)| n);
        q.weights.has_majority(heard.chain([&me]))
    }
}

impl<E: Election> Leadership<E> {
    /// Asks every member whether this node may start term `t`.
    pub(super) fn ask_pre_votes(&mut self, cx: &mut LCx<'_, E>, t: u64) {
        let me = self.core.me();
        let Some(q) = self.core.quorum.as_mut() else { return };
        q.prevote = Some((t, BTreeSet::from([me])));
        if q.weights.has_majority([&me]) {
            q.prevote = None;
            return self.begin_election(cx);
        }
        for m in self.core.others() {
            cx.send(m, LMsg::PreVote { term: t });
        }
        cx.set_timer(LTimer::PreVote, self.core.setup.timeout);
    }

    pub(super) fn on_hb_ack(&mut self, cx: &mut LCx<'_, E>, from: NodeId, term: u64) {
        let me = self.core.me();
        let leading = term == self.core.term && self.core.leader == Some(me);
        if let Some(q) = self.core.quorum.as_mut().filter(|_| leading) {
            q.acks.insert(from, cx.now);
        }
    }

    pub(super) fn on_vote_req(&mut self, cx: &mut LCx<'_, E>, from: NodeId, term: u64) {
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

    pub(super) fn on_vote(&mut self, cx: &mut LCx<'_, E>, from: NodeId, term: u64, granted: bool) {
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

    pub(super) fn on_pre_vote(&mut self, cx: &mut LCx<'_, E>, from: NodeId, term: u64) {
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

    pub(super) fn on_pre_vote_reply(&mut self, cx: &mut LCx<'_, E>, from: NodeId, term: u64, granted: bool) {
        let Some(q) = self.core.quorum.as_mut() else { return };
        let Some((_, yes)) = q.prevote.as_mut().filter(|(t, _)| *t == term && granted) else {
            return;
        };
        yes.insert(from);
        if q.weights.has_majority(yes.iter()) {
            q.prevote = None;
            cx.cancel_timer(LTimer::PreVote);
            self.begin_election(cx);
        }
    }

    /// The pre-vote round is over without a majority: try again after an election timeout.
    pub(super) fn pre_vote_over(&mut self, cx: &mut LCx<'_, E>) {
        if let Some(q) = self.core.quorum.as_mut() {
            if q.prevote.take().is_some() {
                let d = self.core.election_timeout(cx.rng);
                cx.set_timer(LTimer::ElectionTimeout, d);
            }
        }
    }
}
