//! Ring repair: a message forwarded round a ring waits for the successor's ACK; a successor
//! that does not answer within a timeout is suspected and skipped, and the message goes to the
//! next one. A component with its own messages and timers, hosted through
//! [`compose`](crate::algo::compose); the host owns the suspicions (its [`Liveness`]
//! detector), so a skipped successor is put back in the ring as soon as it is unsuspected.
//!
//! Rules:
//! - forward(m): to the first member after this node (in ring order) not suspected, tagged with
//!   a fresh sequence number, and wait one timeout for its ACK. Nobody left: the message comes
//!   back to this node itself ([`RingRepair::take_local`]).
//! - no storms: a message that carries a node's id (its originator, its candidate, its winner)
//!   dies here, with an `ignore` naming the reason, when that node is suspected: it is no
//!   longer in the repaired ring, so the message could only circle until the term ends.
//! - on a message tagged n: owe ACK(n) to its sender. What is owed leaves a tenth of the
//!   timeout later, one ACK per predecessor listing every number owed to it: the ACK is off
//!   the ring's critical path (no second datagram and wake-up beside each forward, where the
//!   next hop needs the cores), and a burst of forwards costs one ACK. A tenth leaves the
//!   sender nine tenths of its timeout for the round trip.
//! - on ACK(n, ...): done with each of them.
//! - no ACK within a third of the timeout: the same hop (same number) goes again to the same
//!   successor, twice, so that one lost datagram (the hop or its ACK) does not cost a live
//!   successor its place: under 28 % loss one try fails about half the time, three about one
//!   time in nine. A dead successor is still given up after one timeout.
//! - on ACK timeout of n (three tries unanswered): the host suspects the successor and forwards
//!   n again after it -- unless the successor was heard within the timeout (it is alive, only
//!   the datagrams of this hop were lost): then the hop goes again, up to [`MAX_TRIES`] tries
//!   in all (a one-way cut lets the successor be heard while it hears nothing: give up then).
//! - a hop received again (its number seen before from that sender, who retried because the
//!   ACK was lost) is acknowledged and not handed to the host a second time; the numbers seen
//!   are forgotten when the sender comes back as a new boot (which numbers afresh).
//! - sparse meshes: there is no path round a silent successor, so a message always goes to the
//!   ring successor, and only if it is a neighbour (otherwise it is dropped, with an `ignore`).
//!
//! [`Liveness`]: crate::algo::detector::Liveness

use crate::algo::{Context, Message, NodeId, Setup};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

/// Ring repair's messages: a hop waiting for its ACK (carrying the host's epoch), and the ACK.
#[derive(Debug, Clone)]
pub(crate) enum RingMsg<M> {
    /// A forwarded message.
    Hop {
        /// The host's epoch (a term).
        epoch: u64,
        /// The sequence number to acknowledge.
        ack: u64,
        /// The message.
        msg: M,
    },
    /// Acknowledges every hop in `seqs`.
    Ack {
        /// The acknowledged sequence numbers.
        seqs: Vec<u64>,
    },
}

/// Ring repair's timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RingTimer {
    /// No ACK for hop `seq`.
    NoAck(u64),
    /// Time to send the ACKs owed.
    SendAcks,
}

/// The context ring repair runs in.
pub(crate) type RingCx<'a, M> = Context<'a, RingMsg<M>, RingTimer>;

/// How many times a hop is sent to a successor heard within the timeout before it is
/// skipped anyway.
pub(crate) const MAX_TRIES: u32 = 9;

/// Tries within the first timeout (a third of it apart).
const FIRST_TRIES: u32 = 3;

/// How many hop numbers are remembered per sender, to recognise a retried hop.
const SEEN_PER_SENDER: usize = 256;

struct Pending<M> {
    to: NodeId,
    msg: M,
    tries: u32,
}

/// What became of a hop whose ACK did not come in time.
pub(crate) enum Expiry<M> {
    /// Sent again to the same successor.
    Retried,
    /// Given up: the successor to suspect, and the message to send on after it.
    GiveUp(NodeId, M),
}

/// One node's ring repair.
pub(crate) struct RingRepair<M> {
    me: NodeId,
    members: std::sync::Arc<[NodeId]>,
    neighbours: Vec<NodeId>,
    timeout: Duration,
    sparse: bool,
    epoch: u64,
    next_seq: u64,
    pending: BTreeMap<u64, Pending<M>>,
    local: VecDeque<M>,
    /// Hop numbers received and not yet acknowledged, by sender.
    owed: BTreeMap<NodeId, Vec<u64>>,
    /// Hop numbers received, by sender (the latest [`SEEN_PER_SENDER`]).
    seen: BTreeMap<NodeId, BTreeSet<u64>>,
}

impl<M: Message> RingRepair<M> {
    /// Ring repair for `setup.me`; `sparse`: a mesh in which some member is not a neighbour.
    pub fn new(setup: &Setup, sparse: bool) -> Self {
        RingRepair {
            me: setup.me,
            members: setup.members.clone(),
            neighbours: setup.neighbours.clone(),
            timeout: setup.timeout,
            sparse,
            epoch: 0,
            next_seq: 0,
            pending: BTreeMap::new(),
            local: VecDeque::new(),
            owed: BTreeMap::new(),
            seen: BTreeMap::new(),
        }
    }

    /// A new epoch: what was in flight is forgotten.
    pub(crate) fn new_epoch(&mut self, epoch: u64) {
        self.epoch = epoch;
        self.pending.clear();
        self.local.clear();
    }

    /// The ring successor in `members` (this node itself when alone).
    fn successor(&self) -> NodeId {
        let i = self.members.iter().position(|&m| m == self.me).unwrap_or(0);
        self.members[(i + 1) % self.members.len()]
    }

    /// Where a message goes after `after` (None: back to this node).
    pub(crate) fn next_hop(&self, after: NodeId, suspected: impl Fn(NodeId) -> bool) -> Option<NodeId> {
        if self.sparse {
            return Some(self.successor()).filter(|&s| s != self.me);
        }
        let m = &self.members;
        let i = m.iter().position(|&x| x == after)?;
        (1..m.len())
            .map(|k| m[(i + k) % m.len()])
            .find(|&x| x != self.me && !suspected(x))
    }

    /// Forwards `msg` to the next live node after `after`; `carried` is the node whose id it
    /// carries, if any (see "no storms").
    pub fn forward(
        &mut self,
        cx: &mut RingCx<'_, M>,
        after: NodeId,
        msg: M,
        carried: Option<NodeId>,
        suspected: impl Fn(NodeId) -> bool,
    ) {
        if let Some(j) = carried.filter(|&j| j != self.me && !self.sparse && suspected(j)) {
            let why = format!(
                "{} carries node {j}, which is suspected: it is not in the repaired ring, so the message dies here",
                msg.name()
            );
            return cx.discard(j, why);
        }
        let Some(to) = self.next_hop(after, &suspected) else {
            self.local.push_back(msg);
            return;
        };
        if self.sparse && !self.neighbours.contains(&to) {
            let why = format!(
                "{} not sent: ring successor {to} is not a neighbour in this mesh",
                msg.name()
            );
            return cx.discard(to, why);
        }
        self.next_seq += 1;
        let seq = self.next_seq;
        let hop = RingMsg::Hop {
            epoch: self.epoch,
            ack: seq,
            msg: msg.clone(),
        };
        cx.send(to, hop);
        cx.set_timer(RingTimer::NoAck(seq), self.retry_after());
        self.pending.insert(seq, Pending { to, msg, tries: 1 });
    }

    /// How long a hop waits for its ACK before it goes again.
    fn retry_after(&self) -> Duration {
        self.timeout / FIRST_TRIES
    }

    /// Owes `from` the ACK of hop `ack` (0: none was asked for); see the module's rules.
    /// Returns whether the hop is new (false: a retry of one already handed to the host).
    pub fn received(&mut self, cx: &mut RingCx<'_, M>, from: NodeId, ack: u64) -> bool {
        if ack == 0 {
            return true;
        }
        if self.owed.is_empty() {
            cx.set_timer(RingTimer::SendAcks, self.ack_delay());
        }
        self.owed.entry(from).or_default().push(ack);
        let seen = self.seen.entry(from).or_default();
        let fresh = seen.insert(ack);
        if seen.len() > SEEN_PER_SENDER {
            seen.pop_first();
        }
        fresh
    }

    /// The successor hop `seq` went to, while it waits for its ACK.
    pub(crate) fn pending_to(&self, seq: u64) -> Option<NodeId> {
        self.pending.get(&seq).map(|p| p.to)
    }

    /// `peer` came back as a new boot: it numbers its hops afresh.
    pub(crate) fn peer_restarted(&mut self, peer: NodeId) {
        self.seen.remove(&peer);
    }

    /// How long an ACK is owed before it leaves: a tenth of the timeout.
    fn ack_delay(&self) -> Duration {
        self.timeout / 10
    }

    /// Sends every ACK owed: one per predecessor.
    pub(crate) fn send_acks(&mut self, cx: &mut RingCx<'_, M>) {
        for (to, seqs) in std::mem::take(&mut self.owed) {
            cx.send(to, RingMsg::Ack { seqs });
        }
    }

    /// The hops in `seqs` were acknowledged.
    pub(crate) fn acked(&mut self, cx: &mut RingCx<'_, M>, seqs: &[u64]) {
        for &seq in seqs {
            if self.pending.remove(&seq).is_some() {
                cx.cancel_timer(RingTimer::NoAck(seq));
            }
        }
    }

    /// Hop `seq` went unanswered for a while: sent again, or given up (see the module's
    /// rules); `alive`: its successor was heard within the timeout. None: no such hop.
    pub(crate) fn expired(&mut self, cx: &mut RingCx<'_, M>, seq: u64, alive: bool) -> Option<Expiry<M>> {
        let p = self.pending.get_mut(&seq)?;
        if p.tries < FIRST_TRIES || alive && p.tries < MAX_TRIES {
            p.tries += 1;
            let hop = RingMsg::Hop {
                epoch: self.epoch,
                ack: seq,
                msg: p.msg.clone(),
            };
            cx.send(p.to, hop);
            cx.set_timer(RingTimer::NoAck(seq), self.retry_after());
            return Some(Expiry::Retried);
        }
        self.pending.remove(&seq).map(|p| Expiry::GiveUp(p.to, p.msg))
    }

    /// This node was stopped: every ACK still awaited is waited for afresh from now.
    pub(crate) fn restart_timers(&mut self, cx: &mut RingCx<'_, M>) {
        for &seq in self.pending.keys() {
            cx.set_timer(RingTimer::NoAck(seq), self.retry_after());
        }
    }

    /// The next message that came back to this node (everyone else suspected).
    pub(crate) fn take_local(&mut self) -> Option<M> {
        self.local.pop_front()
    }

    /// Drops the messages that came back to this node.
    pub(crate) fn clear_local(&mut self) {
        self.local.clear();
    }
}
