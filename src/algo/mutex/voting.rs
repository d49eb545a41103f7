//! Permission by votes, shared by [`quorum`](super::quorum) and [`maekawa`](super::maekawa):
//! every participant is also a voter that locks its vote for one request at a time; a
//! participant enters with the votes of enough voters of its quorum. Deadlock (each holding
//! some votes, none enough) is broken by priorities with yield -- Maekawa's INQUIRE,
//! RELINQUISH and FAILED:
//!
//! - request: ts := ++clock; send REQUEST(ts, req) to every voter of the quorum.
//! - voter, on REQUEST(ts, req) from j: if unlocked, lock for (ts, j, req) and send LOCKED(req).
//!   Otherwise queue it; if it outranks ((ts, j) lower) both the locked request and every
//!   queued one, send INQUIRE to the locked request's owner (once); else send FAILED(req) to j.
//!   A request id of j's already released or already known is a duplicate, ignored.
//! - on LOCKED(req): count the vote; with `need` votes, enter.
//! - on FAILED: this request is outranked somewhere: answer every INQUIRE held so far (and any
//!   later one) with RELINQUISH, giving that vote back.
//! - on INQUIRE: in the section, or never told FAILED: hold it (answer later); else RELINQUISH.
//! - voter, on RELINQUISH(req) from its locked owner: queue that request again, lock for the
//!   highest-priority queued one, send it LOCKED.
//! - release: send RELEASE(req) to every voter of the quorum. Voter, on RELEASE from the locked
//!   owner: lock for the next queued request; a RELEASE of a request it never granted is
//!   ignored and counted (a queued one is taken off the queue).
//!
//! - while waiting, every failure-detector timeout: send REQUEST again to each voter whose vote
//!   is missing (a lost datagram, or a voter that restarted). A voter answers a REQUEST it has
//!   locked for with LOCKED again, and ignores one it has queued.
//!
//! The voter's lock lives in memory: a voter that restarts forgets it (coordinator amnesia).
//! With `--durable` it is persisted (written and fsynced by the runtime) before any answer
//! leaves, and read back on restart.

use super::wrapper::{MCx, Protocol};
use crate::algo::{Message, NodeId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// A request: (timestamp, participant, request id); lower is higher priority.
pub type Ticket = (u64, NodeId, u64);

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
    },
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
        }
    }
}

/// What a voter persists with `--durable`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Durable {
    /// The request its vote is locked for.
    pub locked: Option<Ticket>,
    /// Its Lamport clock.
    pub clock: u64,
}

/// One node's voting state: as participant and as voter.
#[derive(Debug, Clone)]
pub struct Voting {
    /// The voters this node asks.
    pub quorum: Vec<NodeId>,
    /// Votes needed.
    pub need: usize,
    durable: bool,
    clock: u64,
    // participant
    mine: Option<(u64, u64)>,
    votes: BTreeSet<NodeId>,
    failed: bool,
    inquiries: BTreeSet<NodeId>,
    holding: bool,
    // voter
    locked: Option<Ticket>,
    inquired: bool,
    queue: BTreeSet<Ticket>,
    released: BTreeMap<NodeId, u64>,
}

impl Voting {
    /// A node asking `quorum` for `need` votes; `restored`: what it persisted before a restart.
    pub fn new(quorum: Vec<NodeId>, need: usize, durable: bool, restored: Option<Durable>) -> Self {
        let d = restored.unwrap_or_default();
        Voting {
            quorum,
            need,
            durable,
            clock: d.clock,
            mine: None,
            votes: BTreeSet::new(),
            failed: false,
            inquiries: BTreeSet::new(),
            holding: false,
            locked: d.locked,
            inquired: false,
            queue: BTreeSet::new(),
            released: BTreeMap::new(),
        }
    }

    /// The request this voter's vote is locked for.
    pub fn locked(&self) -> Option<Ticket> {
        self.locked
    }

    /// Writes the voter's state through the runtime before any answer leaves (`--durable`).
    fn persist<P: Protocol>(&self, mcx: &mut MCx<'_, '_, P>) {
        if self.durable {
            let d = Durable {
                locked: self.locked,
                clock: self.clock,
            };
            mcx.persist(serde_json::to_vec(&d).unwrap_or_default());
        }
    }

    fn lock<P: Protocol<Msg = VoteMsg>>(&mut self, mcx: &mut MCx<'_, '_, P>, t: Ticket) {
        self.locked = Some(t);
        self.inquired = false;
        self.persist(mcx);
        mcx.send(t.1, VoteMsg::Locked { req: t.2 });
    }

    fn lock_next<P: Protocol<Msg = VoteMsg>>(&mut self, mcx: &mut MCx<'_, '_, P>) {
        self.locked = None;
        self.inquired = false;
        match self.queue.pop_first() {
            Some(t) => self.lock(mcx, t),
            None => self.persist(mcx),
        }
    }

    /// The participant wants the section.
    pub fn request<P: Protocol<Msg = VoteMsg>>(&mut self, mcx: &mut MCx<'_, '_, P>, req: u64) {
        self.clock += 1;
        self.mine = Some((self.clock, req));
        self.votes.clear();
        self.failed = false;
        self.inquiries.clear();
        // Its own coordinator first, then downwards round the ids.
        let me = mcx.me();
        let mut order = self.quorum.clone();
        order.sort_by_key(|&v| std::cmp::Reverse(if v <= me { v + u64::MAX / 2 } else { v }));
        for v in order {
            mcx.send(v, VoteMsg::Request { ts: self.clock, req });
        }
    }

    /// Still waiting: ask again every voter whose vote is missing. True while waiting.
    pub fn retry<P: Protocol<Msg = VoteMsg>>(&mut self, mcx: &mut MCx<'_, '_, P>) -> bool {
        let Some((ts, req)) = self.mine.filter(|_| !self.holding) else {
            return false;
        };
        for &v in self.quorum.iter().filter(|v| !self.votes.contains(v)) {
            mcx.send(v, VoteMsg::Request { ts, req });
        }
        true
    }

    /// The participant left.
    pub fn release<P: Protocol<Msg = VoteMsg>>(&mut self, mcx: &mut MCx<'_, '_, P>, req: u64) {
        self.mine = None;
        self.holding = false;
        self.votes.clear();
        self.inquiries.clear();
        for &v in &self.quorum.clone() {
            mcx.send(v, VoteMsg::Release { req });
        }
    }

    fn relinquish<P: Protocol<Msg = VoteMsg>>(&mut self, mcx: &mut MCx<'_, '_, P>, voter: NodeId) {
        if let Some((_, req)) = self.mine {
            self.votes.remove(&voter);
            mcx.send(voter, VoteMsg::Relinquish { req });
        }
    }

    /// A voting message.
    pub fn on_msg<P: Protocol<Msg = VoteMsg>>(&mut self, mcx: &mut MCx<'_, '_, P>, from: NodeId, msg: VoteMsg) {
        let current = |req: u64, s: &Self| s.mine.is_some_and(|(_, r)| r == req);
        match msg {
            VoteMsg::Request { ts, req } => {
                self.clock = self.clock.max(ts) + 1;
                let t = (ts, from, req);
                if self.locked == Some(t) {
                    return mcx.send(from, VoteMsg::Locked { req });
                }
                if self.queue.contains(&t) || self.released.get(&from).is_some_and(|&r| r >= req) {
                    return mcx.discard(from, format!("REQUEST {req} again: a duplicate or already released"));
                }
                let Some(held) = self.locked else {
                    return self.lock(mcx, t);
                };
                let outranks = t < held && self.queue.first().is_none_or(|q| t < *q);
                self.queue.insert(t);
                if outranks {
                    if !self.inquired {
                        self.inquired = true;
                        mcx.send(held.1, VoteMsg::Inquire { req: held.2 });
                    }
                } else {
                    mcx.send(from, VoteMsg::Failed { req });
                }
            }
            VoteMsg::Release { req } => {
                let r = self.released.entry(from).or_insert(0);
                *r = (*r).max(req);
                match self.locked {
                    Some((_, j, q)) if j == from && q == req => self.lock_next(mcx),
                    _ => {
                        let before = self.queue.len();
                        self.queue.retain(|t| !(t.1 == from && t.2 == req));
                        if before == self.queue.len() {
                            mcx.discard(
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
                    self.lock_next(mcx);
                }
                _ => mcx.discard(
                    from,
                    format!("RELINQUISH of request {req}, which does not hold this vote"),
                ),
            },
            VoteMsg::Locked { req } if current(req, self) => {
                self.votes.insert(from);
                if !self.holding && self.votes.len() >= self.need {
                    self.holding = true;
                    self.inquiries.clear();
                    mcx.enter(None);
                }
            }
            VoteMsg::Failed { req } if current(req, self) => {
                self.failed = true;
                if !self.holding {
                    for v in std::mem::take(&mut self.inquiries) {
                        self.relinquish(mcx, v);
                    }
                }
            }
            VoteMsg::Inquire { req } if current(req, self) => {
                if self.holding || !self.votes.contains(&from) {
                    return;
                }
                if self.failed {
                    self.relinquish(mcx, from);
                } else {
                    self.inquiries.insert(from);
                }
            }
            VoteMsg::Locked { req } | VoteMsg::Failed { req } | VoteMsg::Inquire { req } => {
                mcx.discard(from, format!("about request {req}, which is not pending here"));
                if let VoteMsg::Locked { .. } = msg {
                    // A vote for a request already done: give it straight back.
                    mcx.send(from, VoteMsg::Release { req });
                }
            }
        }
    }
}
