//! The central coordinator with a FIFO queue (the course's first mutual-exclusion algorithm).
//!
//! The coordinator is the participant with the highest id (fixed: this lab does not combine
//! it with an election). Rules:
//! - request: send REQUEST(req) to the coordinator (the coordinator queues its own at once).
//! - coordinator, on REQUEST(req) from j: a request id j already sent is a duplicate, ignored;
//!   otherwise append (j, req) to the queue; if nobody holds, grant the head.
//! - grant: counter := counter + 1; send GRANT(req, counter) to the head; counter is the
//!   fencing token.
//! - on GRANT(req, token) for the request this node waits on: enter with that token.
//! - release: send RELEASE(req) to the coordinator.
//! - coordinator, on RELEASE(req) from the current holder: grant the next; a RELEASE of any
//!   other request (never granted, or already taken back) is ignored and counted.
//! - `--set regrant_ms=T` (the course's "fix" of a slow holder, and its flaw): a holder that
//!   has not released within T is suspected dead and the next is granted. A holder that was
//!   only paused is then still inside: two holders, which the resource catches; with
//!   `--fencing` the stale holder's begin carries the lower token and is rejected.
//!
//! Messages: 3 per entry of a participant other than the coordinator (REQUEST, GRANT,
//! RELEASE); the coordinator's own entries cost none.

use super::options::number;
use super::wrapper::{MCx, Protocol};
use crate::algo::{Event, Message, NodeId, Setup};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

/// Central-coordinator messages.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum CentralMsg {
    /// A participant wants the section.
    Request {
        /// Its request id.
        req: u64,
    },
    /// The coordinator lets it in.
    Grant {
        /// The request granted.
        req: u64,
        /// The fencing token (the grant counter).
        token: u64,
    },
    /// The participant left.
    Release {
        /// The request released.
        req: u64,
    },
}

impl Message for CentralMsg {
    fn name(&self) -> &'static str {
        match self {
            CentralMsg::Request { .. } => "REQUEST",
            CentralMsg::Grant { .. } => "GRANT",
            CentralMsg::Release { .. } => "RELEASE",
        }
    }
}

/// The coordinator's timer: the holder of this grant (token) took too long.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Regrant(u64);

/// One node's state (the coordinator's part is used only at the coordinator).
#[derive(Debug, Clone)]
pub struct Central {
    coordinator: NodeId,
    waiting: Option<u64>,
    regrant: Option<Duration>,
    queue: VecDeque<(NodeId, u64)>,
    holder: Option<(NodeId, u64, u64)>,
    counter: u64,
    seen: BTreeMap<NodeId, u64>,
}

impl Central {
    /// The coordinator.
    pub fn coordinator(&self) -> NodeId {
        self.coordinator
    }
    /// The coordinator's queue, head first (empty elsewhere).
    pub fn queue(&self) -> Vec<NodeId> {
        self.queue.iter().map(|q| q.0).collect()
    }

    fn enqueue(&mut self, mcx: &mut MCx<'_, '_, Self>, from: NodeId, req: u64) {
        if self.seen.get(&from).is_some_and(|&r| r >= req) {
            return mcx.discard(from, format!("REQUEST {req} again: already queued or served"));
        }
        self.seen.insert(from, req);
        self.queue.push_back((from, req));
        if self.holder.is_none() {
            self.grant_next(mcx);
        }
    }

    fn grant_next(&mut self, mcx: &mut MCx<'_, '_, Self>) {
        let Some((node, req)) = self.queue.pop_front() else {
            return;
        };
        self.counter += 1;
        let token = self.counter;
        self.holder = Some((node, req, token));
        if let Some(t) = self.regrant {
            mcx.set_timer(Regrant(token), t);
        }
        if node == mcx.me() {
            self.granted(mcx, req, token);
        } else {
            mcx.send(node, CentralMsg::Grant { req, token });
        }
    }

    fn granted(&mut self, mcx: &mut MCx<'_, '_, Self>, req: u64, token: u64) {
        if self.waiting == Some(req) {
            self.waiting = None;
            mcx.enter(Some(token));
        } else {
            mcx.discard(
                self.coordinator,
                format!("GRANT of request {req}, which this node does not wait for"),
            );
        }
    }

    fn released(&mut self, mcx: &mut MCx<'_, '_, Self>, from: NodeId, req: u64) {
        match self.holder {
            Some((h, r, token)) if h == from && r == req => {
                self.holder = None;
                mcx.cancel_timer(Regrant(token));
                self.grant_next(mcx);
            }
            _ => mcx.discard(from, format!("RELEASE of request {req}, which does not hold a grant")),
        }
    }
}

impl Protocol for Central {
    type Msg = CentralMsg;
    type Timer = Regrant;

    fn new(setup: &Setup, peers: &[NodeId]) -> Self {
        let regrant = number(setup, "regrant_ms", 0).unwrap_or(0);
        Central {
            coordinator: peers.iter().copied().max().unwrap_or(setup.me),
            waiting: None,
            regrant: (regrant > 0).then(|| Duration::from_millis(regrant)),
            queue: VecDeque::new(),
            holder: None,
            counter: 0,
            seen: BTreeMap::new(),
        }
    }

    fn check(setup: &Setup) -> Result<(), String> {
        number(setup, "regrant_ms", 0).map(|_| ())
    }

    fn request(&mut self, mcx: &mut MCx<'_, '_, Self>, req: u64) {
        self.waiting = Some(req);
        if mcx.me() == self.coordinator {
            let me = mcx.me();
            self.enqueue(mcx, me, req);
        } else {
            mcx.send(self.coordinator, CentralMsg::Request { req });
        }
    }

    fn release(&mut self, mcx: &mut MCx<'_, '_, Self>, req: u64) {
        if mcx.me() == self.coordinator {
            let me = mcx.me();
            self.released(mcx, me, req);
        } else {
            mcx.send(self.coordinator, CentralMsg::Release { req });
        }
    }

    fn on_msg(&mut self, mcx: &mut MCx<'_, '_, Self>, from: NodeId, msg: CentralMsg) {
        let at_coordinator = mcx.me() == self.coordinator;
        match msg {
            CentralMsg::Request { .. } | CentralMsg::Release { .. } if !at_coordinator => mcx.discard(
                from,
                format!("{} sent to node {}, which is not the coordinator", msg.name(), mcx.me()),
            ),
            CentralMsg::Request { req } => self.enqueue(mcx, from, req),
            CentralMsg::Release { req } => self.released(mcx, from, req),
            CentralMsg::Grant { .. } if from != self.coordinator => {
                mcx.discard(from, format!("GRANT from node {from}, which is not the coordinator"))
            }
            CentralMsg::Grant { req, token } => self.granted(mcx, req, token),
        }
    }

    fn on_timer(&mut self, mcx: &mut MCx<'_, '_, Self>, Regrant(token): Regrant) {
        let Some((holder, _, t)) = self.holder else { return };
        if t != token {
            return;
        }
        let ms = self.regrant.map_or(0, |d| d.as_millis() as u64);
        // The course's timeout "fix": the holder is assumed dead, which a paused one is not.
        mcx.record(Event::Suspect {
            target: holder,
            silence_ms: ms,
            timeout_ms: ms,
            cause: "regrant".into(),
        });
        self.holder = None;
        self.grant_next(mcx);
    }
}
