//! Permission by votes, shared by [`quorum`](super::quorum) and [`maekawa`](super::maekawa):
//! every participant is also a voter that locks its vote for one request at a time; a
//! participant enters with the votes of enough voters of its quorum. Deadlock (each holding
//! some votes, none enough) is broken by priorities with yield -- Maekawa's INQUIRE,
//! RELINQUISH and FAILED:
//!
//! - request: ts := ++clock; send REQUEST(ts, req) to every voter of the quorum.
//! - voter, on REQUEST(ts, req) from j: if unlocked, lock for (ts, j, req) and send
//!   LOCKED(req, stamp), stamp a fresh fencing stamp (below).
//!   Otherwise queue it; if it outranks ((ts, j) lower) both the locked request and every
//!   queued one, send INQUIRE to the locked request's owner (once per lock).
//! - voter, whenever its lock or queue changes: send FAILED, once, to every queued request
//!   that cannot win now -- all of them, but the best when it outranks the lock (it awaits the
//!   INQUIRE). Telling only the newcomer is not enough: a request queued while it outranked
//!   the lock, then outranked by a later one, would never learn it must yield, and hold on to
//!   the votes it has (Sanders' correction of Maekawa).
//! - voter, on a REQUEST it has queued already (the participant re-asking): FAILED again if it
//!   was told so, and INQUIRE to the lock's owner, which answers RELEASE if that request is
//!   done (its RELEASE was lost) -- without it a lost datagram would lock a vote for good.
//!   A request id of j's already released is a duplicate, ignored (request ids carry the
//!   node's boot count, so a restarted node's new requests are above its old ones).
//! - on LOCKED(req, stamp): count the vote; with `need` votes, enter with fencing token the
//!   highest stamp of the votes in hand. A vote that comes after entry (the quorum's m < n)
//!   is given straight back with RELEASE, and left out of the final RELEASE: any two sets of
//!   `need` votes still meet, and the voter is free for the next request meanwhile.
//! - on FAILED: this request is outranked somewhere: answer every INQUIRE held so far (and any
//!   later one) with RELINQUISH, giving that vote back -- until a LOCKED from the voter that
//!   said FAILED shows that it chose this request after all. Without that, the highest request
//!   of all, once told FAILED, gave its votes back at every INQUIRE for ever (each re-asked
//!   REQUEST of a queued participant brings one): a livelock seen under 20% loss.
//! - on INQUIRE: in the section, or never told FAILED: hold it (answer later); else RELINQUISH.
//!   An INQUIRE about the request released last: RELEASE it again.
//! - voter, on RELINQUISH(req) from its locked owner: queue that request again, lock for the
//!   highest-priority queued one, send it LOCKED.
//! - release: send RELEASE(req, token) to every voter of the quorum. Voter, on RELEASE from the
//!   locked owner: raise its stamp clock to the token, lock for the next queued request; a
//!   RELEASE of a request it never granted is ignored and counted (a queued one is taken off
//!   the queue).
//!
//! - while waiting, every failure-detector timeout: send REQUEST again to each voter whose vote
//!   is missing (a lost datagram, or a voter that restarted). A voter answers a REQUEST it has
//!   locked for with LOCKED again, and ignores one it has queued.
//!
//! Fencing stamps: each voter keeps a stamp clock, `epoch | counter | voter id` in one u64
//! (16, 32 and 16 bits), and stamps each grant with the clock moved past every token released
//! to it. Two holders one after the other have a voter in common, which granted the later only
//! after the earlier's RELEASE raised its clock past the earlier's token: a later entry always
//! has a higher token. The voter id in the low bits makes stamps of different voters differ,
//! and the epoch -- the voter's boot count, kept on stable storage even without `--durable` --
//! puts every stamp of a restarted voter above all it stamped before.
//!
//! The voter's lock lives in memory: a voter that restarts forgets it (coordinator amnesia).
//! With `--durable` it is persisted (stored by the runtime) before any answer
//! leaves, and read back on restart.

use super::wrapper::{Ask, MutexView};
use crate::algo::detector::LiveMsg;
use crate::algo::Context;
use crate::algo::{Message, NodeId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The context of a protocol built on these rules, whatever its own timers `T`.
type VoteCx<'a, T> = Context<'a, VoteMsg, T, Ask, MutexView>;

/// A request: (timestamp, participant, request id); lower is higher priority.
pub(crate) type Ticket = (u64, NodeId, u64);

/// Voting messages.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum VoteMsg {
    /// A participant asks for a vote.
    Request {
        /// Its Lamport timestamp.
        ts: u64,
        /// Its request id.
        req: u64,
    },
    /// The vote is yours (Maekawa's LOCKED; the quorum's GRANT).
    Locked {
        /// The request granted.
        req: u64,
        /// The grant's fencing stamp.
        stamp: u64,
    },
    /// A higher-priority request holds or awaits this vote.
    Failed {
        /// The request refused for now.
        req: u64,
    },
    /// Will you give the vote back?
    Inquire {
        /// The request the vote is locked for.
        req: u64,
    },
    /// The vote, given back.
    Relinquish {
        /// The request that gives it back.
        req: u64,
    },
    /// Done with the vote.
    Release {
        /// The request released.
        req: u64,
        /// The fencing token it entered with (None: it never entered).
        token: Option<u64>,
    },
    /// The failure detector's (with `--set detector`): never reaches the voting rules.
    Live(LiveMsg),
}

impl Message for VoteMsg {
    fn name(&self) -> &'static str {
        match self {
            VoteMsg::Request { .. } => "REQUEST",
            VoteMsg::Locked { .. } => "GRANT",
            VoteMsg::Failed { .. } => "FAILED",
            VoteMsg::Inquire { .. } => "INQUIRE",
            VoteMsg::Relinquish { .. } => "RELINQUISH",
            VoteMsg::Release { .. } => "RELEASE",
            VoteMsg::Live(m) => m.name(),
        }
    }
}

/// What a voter persists: its boot count always (at start), the rest with `--durable`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Durable {
    /// The request its vote is locked for.
    pub locked: Option<Ticket>,
    /// Its Lamport clock.
    pub clock: u64,
    /// Its boot count: the epoch of its stamps.
    #[serde(default)]
    pub epoch: u64,
    /// Its stamp clock.
    #[serde(default)]
    pub fence: u64,
    /// The stamp of the grant it is locked for.
    #[serde(default)]
    pub stamp: u64,
}

/// The stamp after `above` of voter `me`: the (epoch, counter) part one higher, `me` below it.
pub(crate) fn next_stamp(above: u64, me: NodeId) -> u64 {
    (((above >> 16) + 1).min((1 << 48) - 1) << 16) | (me & 0xffff)
}

/// One node's voting state: as participant and as voter.
#[derive(Debug, Clone)]
pub struct Voting {
    /// The voters this node asks.
    pub quorum: Vec<NodeId>,
    /// Votes needed.
    pub need: usize,
    /// The voters the pending request asked: its quorum, and those of a quorum it was moved
    /// off ([`Voting::requorum`]), which hold or queue it until its RELEASE.
    asked: BTreeSet<NodeId>,
    me: NodeId,
    durable: bool,
    clock: u64,
    // participant
    mine: Option<(u64, u64)>,
    /// The votes in hand, with their stamps.
    votes: BTreeMap<NodeId, u64>,
    /// Votes that came after entry and were given straight back.
    returned: BTreeSet<NodeId>,
    /// The voters whose FAILED about this request still stands (no LOCKED from them since).
    failed: BTreeSet<NodeId>,
    inquiries: BTreeSet<NodeId>,
    /// The fencing token while in the section.
    holding: Option<u64>,
    // voter
    epoch: u64,
    fence: u64,
    locked: Option<Ticket>,
    locked_stamp: u64,
    inquired: bool,
    queue: BTreeSet<Ticket>,
    /// Queued requests told FAILED.
    told: BTreeSet<Ticket>,
    released: BTreeMap<NodeId, u64>,
    /// The participant's last released request and its token, to release again if asked.
    last: Option<(u64, Option<u64>)>,
}

impl Voting {
    /// Node `me` asking `quorum` for `need` votes; `restored`: what it persisted before a
    /// restart (only its boot count is kept unless `durable`).
    pub fn new(me: NodeId, quorum: Vec<NodeId>, need: usize, durable: bool, restored: Option<Durable>) -> Self {
        let d = restored.unwrap_or_default();
        let epoch = d.epoch + 1;
        let d = if durable { d } else { Durable::default() };
        Voting {
            quorum,
            need,
            asked: BTreeSet::new(),
            me,
            durable,
            clock: d.clock,
            mine: None,
            votes: BTreeMap::new(),
            returned: BTreeSet::new(),
            failed: BTreeSet::new(),
            inquiries: BTreeSet::new(),
            holding: None,
            epoch,
            fence: d.fence.max(epoch << 48),
            locked: d.locked,
            locked_stamp: d.stamp,
            inquired: false,
            queue: BTreeSet::new(),
            told: BTreeSet::new(),
            released: BTreeMap::new(),
            last: None,
        }
    }

    /// The request this voter's vote is locked for.
    #[cfg(test)]
    pub(crate) fn locked(&self) -> Option<Ticket> {
        self.locked
    }

    /// Request `req` of this boot as the voters know it: a restarted node numbers its requests
    /// from 1 again, and the boot count above them keeps the voters from taking them for ones
    /// already released.
    fn wire(&self, req: u64) -> u64 {
        (self.epoch << 32) | (req & 0xffff_ffff)
    }

    /// The epoch of this voter's stamps: its boot count.
    #[cfg(test)]
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The node is up: keep its boot count (and, `--durable`, the rest) on stable storage
    /// before it stamps anything.
    pub fn start<T>(&self, cx: &mut VoteCx<'_, T>) {
        self.store(cx);
    }

    fn store<T>(&self, cx: &mut VoteCx<'_, T>) {
        let d = Durable {
            locked: self.locked,
            clock: self.clock,
            epoch: self.epoch,
            fence: self.fence,
            stamp: self.locked_stamp,
        };
        cx.persist(serde_json::to_vec(&d).unwrap_or_default());
    }

    /// Writes the voter's state through the runtime before any answer leaves (`--durable`).
    fn persist<T>(&self, cx: &mut VoteCx<'_, T>) {
        if self.durable {
            self.store(cx);
        }
    }

    fn lock<T>(&mut self, cx: &mut VoteCx<'_, T>, t: Ticket) {
        self.fence = next_stamp(self.fence, self.me);
        self.told.remove(&t);
        self.locked = Some(t);
        self.locked_stamp = self.fence;
        self.inquired = false;
        self.persist(cx);
        cx.send(
            t.1,
            VoteMsg::Locked {
                req: t.2,
                stamp: self.fence,
            },
        );
    }

    fn lock_next<T>(&mut self, cx: &mut VoteCx<'_, T>) {
        self.locked = None;
        self.inquired = false;
        match self.queue.pop_first() {
            Some(t) => {
                self.lock(cx, t);
                self.tell_failed(cx);
            }
            None => self.persist(cx),
        }
    }

    /// FAILED, once each, to the queued requests that cannot win now: all but the best queued
    /// one when it outranks the lock.
    fn tell_failed<T>(&mut self, cx: &mut VoteCx<'_, T>) {
        let Some(held) = self.locked else { return };
        let best = self.queue.first().copied().filter(|q| *q < held);
        for &q in &self.queue {
            if Some(q) != best && self.told.insert(q) {
                cx.send(q.1, VoteMsg::Failed { req: q.2 });
            }
        }
    }

    /// The participant wants the section.
    pub fn request<T>(&mut self, cx: &mut VoteCx<'_, T>, req: u64) {
        let req = self.wire(req);
        self.clock += 1;
        self.mine = Some((self.clock, req));
        self.votes.clear();
        self.returned.clear();
        self.failed.clear();
        self.inquiries.clear();
        self.holding = None;
        self.asked = self.quorum.iter().copied().collect();
        // Its own coordinator first, then downwards round the ids.
        let me = cx.me;
        let mut order = self.quorum.clone();
        order.sort_by_key(|&v| std::cmp::Reverse(if v <= me { v + u64::MAX / 2 } else { v }));
        for v in order {
            cx.send(v, VoteMsg::Request { ts: self.clock, req });
        }
    }

    /// Still waiting: ask again every voter whose vote is missing. True while waiting.
    pub(crate) fn retry<T>(&mut self, cx: &mut VoteCx<'_, T>) -> bool {
        let Some((ts, req)) = self.mine.filter(|_| self.holding.is_none()) else {
            return false;
        };
        for &v in self.quorum.iter().filter(|v| !self.votes.contains_key(v)) {
            cx.send(v, VoteMsg::Request { ts, req });
        }
        true
    }

    /// Node `peer` came back as a new boot (called before its first message of that boot).
    /// As voter: its old boot's request will never be released, so a vote locked for it is
    /// taken back (the next queued request gets it, stamped above every earlier grant) and its
    /// queued requests are dropped; its new boot's request ids carry a higher boot count, and
    /// in case its stored boot count was lost, its released ids are forgotten too. As
    /// participant: the new boot remembers no vote it gave (unless `--durable`): a waiting
    /// request asks it again at once. A vote of it in hand while in the section is kept: that
    /// is the voter's amnesia, which only `--durable` (or fencing at the resource) covers.
    pub(crate) fn peer_restarted<T>(&mut self, cx: &mut VoteCx<'_, T>, peer: NodeId) {
        self.released.remove(&peer);
        self.drop_requests_of(
            cx,
            |n| n == peer,
            |t| {
                format!(
                    "node {peer} restarted: the vote locked for its request {} is taken back",
                    t.2
                )
            },
        );
        if let Some((ts, req)) = self.mine.filter(|_| self.holding.is_none()) {
            if self.quorum.contains(&peer) {
                self.failed.remove(&peer);
                self.votes.remove(&peer);
                self.inquiries.remove(&peer);
                cx.send(peer, VoteMsg::Request { ts, req });
            }
        }
    }

    /// The participant left.
    pub fn release<T>(&mut self, cx: &mut VoteCx<'_, T>, req: u64) {
        let req = self.wire(req);
        self.mine = None;
        let token = self.holding.take();
        self.last = Some((req, token));
        self.votes.clear();
        self.inquiries.clear();
        for &v in std::mem::take(&mut self.asked)
            .iter()
            .filter(|v| !self.returned.contains(v))
        {
            cx.send(v, VoteMsg::Release { req, token });
        }
    }

    /// As voter: drops the queued requests of the nodes `of` picks, and takes back a vote
    /// locked for one of them (`why` says so in the log): the next queued request gets it.
    fn drop_requests_of<T>(
        &mut self,
        cx: &mut VoteCx<'_, T>,
        of: impl Fn(NodeId) -> bool,
        why: impl FnOnce(Ticket) -> String,
    ) {
        let before = self.queue.len();
        self.queue.retain(|t| !of(t.1));
        self.told.retain(|t| !of(t.1));
        match self.locked {
            Some(t) if of(t.1) => {
                cx.state_change(why(t));
                self.lock_next(cx);
            }
            Some(_) if self.queue.len() != before => self.tell_failed(cx),
            _ => {}
        }
    }

    /// As voter, with a failure detector: the requests of the nodes `dead` takes for dead
    /// (never this node) are dropped, and a vote locked for one is taken back, so that a dead
    /// holder does not keep this vote for ever. A holder only slow then holds beside the next
    /// one: the detector's lesson, which fencing covers.
    pub(crate) fn forsake<T>(&mut self, cx: &mut VoteCx<'_, T>, dead: impl Fn(NodeId) -> bool, detector: &str) {
        let me = self.me;
        self.drop_requests_of(
            cx,
            |n| n != me && dead(n),
            |t| {
                format!(
                    "detector={detector} takes node {} for dead: the vote locked for its request {} is taken back",
                    t.1, t.2
                )
            },
        );
    }

    /// As voter: the node holding this vote while another's request waits for it.
    pub(crate) fn awaited_owner(&self) -> Option<NodeId> {
        self.locked.filter(|_| !self.queue.is_empty()).map(|t| t.1)
    }

    /// The voters of the quorum whose vote the pending request still lacks (none when it is
    /// not waiting).
    pub(crate) fn missing(&self) -> Vec<NodeId> {
        match self.mine.filter(|_| self.holding.is_none()) {
            Some(_) => self
                .quorum
                .iter()
                .copied()
                .filter(|v| !self.votes.contains_key(v))
                .collect(),
            None => Vec::new(),
        }
    }

    /// Moves the pending request to `quorum`, every vote of which it then needs: the voters new
    /// to it are asked; those it leaves keep it (held or queued) until its RELEASE, as any
    /// voter asked does, so that a later move back finds the request still there (a REQUEST
    /// again after a RELEASE would be taken for a duplicate). Safe whatever the quorum, as long
    /// as every two the ballot builds meet.
    pub(crate) fn requorum<T>(&mut self, cx: &mut VoteCx<'_, T>, quorum: Vec<NodeId>) {
        let Some((ts, req)) = self.mine.filter(|_| self.holding.is_none()) else {
            return;
        };
        for &v in &quorum {
            if self.asked.insert(v) {
                cx.send(v, VoteMsg::Request { ts, req });
            }
        }
        self.need = quorum.len();
        self.quorum = quorum;
        self.maybe_enter(cx);
    }

    /// Enters once every vote needed from the quorum is in hand, with fencing token the
    /// highest stamp of the votes in hand.
    fn maybe_enter<T>(&mut self, cx: &mut VoteCx<'_, T>) {
        let have = self.quorum.iter().filter(|v| self.votes.contains_key(v)).count();
        if self.mine.is_none() || self.holding.is_some() || have < self.need {
            return;
        }
        let token = self.votes.values().copied().max().unwrap_or(0);
        self.holding = Some(token);
        self.inquiries.clear();
        cx.ask(Ask::Enter(Some(token)));
    }

    fn relinquish<T>(&mut self, cx: &mut VoteCx<'_, T>, voter: NodeId) {
        if let Some((_, req)) = self.mine {
            self.votes.remove(&voter);
            cx.send(voter, VoteMsg::Relinquish { req });
        }
    }

    /// A voting message.
    pub(crate) fn on_msg<T>(&mut self, cx: &mut VoteCx<'_, T>, from: NodeId, msg: VoteMsg) {
        let current = |req: u64, s: &Self| s.mine.is_some_and(|(_, r)| r == req);
        match msg {
            VoteMsg::Request { ts, req } => {
                self.clock = self.clock.max(ts) + 1;
                let t = (ts, from, req);
                if self.locked == Some(t) {
                    let stamp = self.locked_stamp;
                    return cx.send(from, VoteMsg::Locked { req, stamp });
                }
                if self.released.get(&from).is_some_and(|&r| r >= req) {
                    return cx.discard(from, format!("REQUEST {req} again: already released"));
                }
                if self.queue.contains(&t) {
                    if self.told.contains(&t) {
                        cx.send(from, VoteMsg::Failed { req });
                    }
                    if let Some((_, owner, held)) = self.locked {
                        cx.send(owner, VoteMsg::Inquire { req: held });
                    }
                    return;
                }
                let Some(held) = self.locked else {
                    return self.lock(cx, t);
                };
                let outranks = t < held && self.queue.first().is_none_or(|q| t < *q);
                self.queue.insert(t);
                if outranks && !self.inquired {
                    self.inquired = true;
                    cx.send(held.1, VoteMsg::Inquire { req: held.2 });
                }
                self.tell_failed(cx);
            }
            VoteMsg::Release { req, token } => {
                let r = self.released.entry(from).or_insert(0);
                *r = (*r).max(req);
                match self.locked {
                    Some((_, j, q)) if j == from && q == req => {
                        // The next grant's stamp goes above the token this one was used with.
                        self.fence = self.fence.max(token.unwrap_or(0));
                        self.lock_next(cx)
                    }
                    _ => {
                        let before = self.queue.len();
                        self.queue.retain(|t| !(t.1 == from && t.2 == req));
                        self.told.retain(|t| !(t.1 == from && t.2 == req));
                        if before == self.queue.len() {
                            cx.discard(
                                from,
                                format!("RELEASE of request {req}, which this voter never granted"),
                            );
                        }
                    }
                }
            }
            VoteMsg::Relinquish { req } => match self.locked {
                Some(t @ (_, j, q)) if j == from && q == req => {
                    self.queue.insert(t);
                    self.lock_next(cx);
                }
                _ => cx.discard(
                    from,
                    format!("RELINQUISH of request {req}, which does not hold this vote"),
                ),
            },
            VoteMsg::Locked { req, .. } if current(req, self) && self.holding.is_some() => {
                if !self.votes.contains_key(&from) && self.returned.insert(from) {
                    // A vote beyond the quorum, after entry: not needed, so free at once for
                    // the next request rather than held until the exit.
                    let token = self.holding;
                    cx.send(from, VoteMsg::Release { req, token });
                }
            }
            VoteMsg::Locked { req, stamp } if current(req, self) => {
                // Its FAILED is over: it chose this request after all.
                self.failed.remove(&from);
                self.votes.insert(from, stamp);
                self.maybe_enter(cx);
            }
            // A voter of a quorum this request was moved off (`requorum`): not needed.
            VoteMsg::Failed { req } if current(req, self) && !self.quorum.contains(&from) => {}
            VoteMsg::Failed { req } if current(req, self) => {
                self.failed.insert(from);
                if self.holding.is_none() {
                    for v in std::mem::take(&mut self.inquiries) {
                        self.relinquish(cx, v);
                    }
                }
            }
            VoteMsg::Inquire { req } if current(req, self) => {
                if self.holding.is_some() || !self.votes.contains_key(&from) {
                    return;
                }
                if !self.failed.is_empty() || !self.quorum.contains(&from) {
                    self.relinquish(cx, from);
                } else {
                    self.inquiries.insert(from);
                }
            }
            VoteMsg::Locked { req, .. } | VoteMsg::Failed { req } | VoteMsg::Inquire { req } => {
                cx.discard(from, format!("about request {req}, which is not pending here"));
                if let VoteMsg::Locked { .. } | VoteMsg::Inquire { .. } = msg {
                    // A vote for a request already done (its RELEASE lost, or a late grant):
                    // give it straight back.
                    let token = self.last.filter(|l| l.0 == req).and_then(|l| l.1);
                    cx.send(from, VoteMsg::Release { req, token });
                }
            }
            VoteMsg::Live(_) => {}
        }
    }
}
