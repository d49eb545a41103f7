//! The shared resource that mutual exclusion protects. A node in its critical section sends it
//! `BEGIN(req, token)` and, when done, `END(req)`; the resource records every access
//! (`access`), and the moment it sees two holders at once it records a `violation` naming
//! them. With fencing (`--fencing`) it rejects any `BEGIN` whose token is lower than the
//! highest it has accepted (`reject_stale`), as storage behind a lock service should
//! (Kleppmann's fencing tokens): a begin with a higher token fences off every holder with a
//! lower one, whose later writes (its `END`) are rejected, so two holders never write at once.
//!
//! The highest accepted token is kept on stable storage (`Context::persist`, stored by
//! the runtime) before the begin that raised it is accepted, and read back when
//! the resource restarts: storage that forgot it would let a fenced-off holder in again.
//!
//! It is a member of the cluster like any node (id [`RESOURCE_ID`](super::RESOURCE_ID)),
//! driven by the same engine host and runtime; `coordlab resource` runs [`ResourceNode`].

use super::options::Workload;
use super::wrapper::MxMsg;
use crate::algo::{Algorithm, Context, Cx, Event, Message, NodeId, Setup};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What the resource keeps on stable storage: the highest fencing token it accepted.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
struct Fence {
    highest: Option<u64>,
}

/// What the resource knows: who holds it now, and the highest fencing token it accepted.
#[derive(Debug, Clone, Default)]
pub struct Resource {
    fencing: bool,
    highest: Option<u64>,
    holders: BTreeMap<NodeId, (u64, Option<u64>)>,
    fenced: BTreeMap<NodeId, (u64, u64)>,
    /// Accesses begun (accepted).
    pub accesses: u64,
    /// Times a second holder arrived.
    pub violations: u64,
    /// Begins refused for a stale token.
    pub rejected: u64,
}

impl Resource {
    /// A resource, checking fencing tokens or not.
    pub fn new(fencing: bool) -> Self {
        Resource {
            fencing,
            ..Resource::default()
        }
    }

    /// The resource of `setup`, restoring the highest token it accepted before a restart.
    pub fn restored(fencing: bool, setup: &Setup) -> Self {
        let kept: Fence = setup
            .durable
            .as_ref()
            .and_then(|b| serde_json::from_slice(b).ok())
            .unwrap_or_default();
        Resource {
            fencing,
            highest: kept.highest,
            ..Resource::default()
        }
    }

    /// The highest fencing token accepted (across restarts).
    pub fn highest(&self) -> Option<u64> {
        self.highest
    }

    /// Who holds it now.
    pub fn holders(&self) -> Vec<NodeId> {
        self.holders.keys().copied().collect()
    }

    /// `BEGIN(req, token)` from `from`.
    pub fn begin<M, T>(&mut self, cx: &mut Context<'_, M, T>, from: NodeId, req: u64, token: Option<u64>) {
        if let (true, Some(t), Some(h)) = (self.fencing, token, self.highest) {
            if t < h {
                self.rejected += 1;
                cx.record(Event::RejectStale {
                    by: from,
                    token: t,
                    highest: h,
                });
                return;
            }
        }
        if let Some(t) = token.filter(|&t| self.highest.is_none_or(|h| t > h)) {
            self.highest = Some(t);
            if self.fencing {
                // On stable storage before the access is accepted: a restart must not forget it.
                let bytes = serde_json::to_vec(&Fence { highest: self.highest }).unwrap_or_default();
                cx.persist(bytes);
            }
        }
        if let (true, Some(t)) = (self.fencing, token) {
            // Storage that saw token t refuses every lower one from now on.
            let stale: Vec<NodeId> = self
                .holders
                .iter()
                .filter(|(_, (_, tok))| tok.is_some_and(|x| x < t))
                .map(|(&n, _)| n)
                .collect();
            for n in stale {
                if let Some((r, Some(tok))) = self.holders.remove(&n) {
                    self.fenced.insert(n, (r, tok));
                }
            }
        }
        self.accesses += 1;
        self.holders.insert(from, (req, token));
        cx.record(Event::Access {
            by: from,
            req,
            token,
            phase: "begin".into(),
        });
        if self.holders.len() > 1 {
            self.violations += 1;
            let nodes = self.holders();
            log::error!("VIOLATION: nodes {nodes:?} hold the resource at once");
            cx.record(Event::Violation { nodes });
        }
    }

    /// Node `peer` came back as a new boot (its HELLO, or its first message): its old boot is
    /// no longer inside, whatever access it had ends here (a killed holder is not a holder).
    pub(crate) fn peer_restarted<M, T>(&mut self, cx: &mut Context<'_, M, T>, peer: NodeId) {
        self.fenced.remove(&peer);
        if let Some((req, _)) = self.holders.remove(&peer) {
            cx.state_change(format!(
                "node {peer} came back as a new boot: its old boot's access (request {req}) ended when it died"
            ));
        }
    }

    /// `END(req)` from `from`.
    pub fn end<M, T>(&mut self, cx: &mut Context<'_, M, T>, from: NodeId, req: u64) {
        if let Some(&(_, tok)) = self.fenced.get(&from).filter(|f| f.0 == req) {
            self.fenced.remove(&from);
            self.rejected += 1;
            return cx.record(Event::RejectStale {
                by: from,
                token: tok,
                highest: self.highest.unwrap_or(tok),
            });
        }
        match self.holders.get(&from) {
            Some(&(r, _)) if r == req => {
                self.holders.remove(&from);
                cx.record(Event::Access {
                    by: from,
                    req,
                    token: None,
                    phase: "end".into(),
                });
            }
            _ => cx.discard(from, format!("END of request {req}, which does not hold the resource")),
        }
    }
}

/// No protocol: the resource decodes only the wrapper's `BEGIN` and `END`; any protocol
/// message fails to decode and is dropped and counted by the engine.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Void {}

impl Message for Void {
    fn name(&self) -> &'static str {
        match *self {}
    }
}

/// The resource as a process of its own (`coordlab resource`).
pub struct ResourceNode {
    /// Its state.
    pub resource: Resource,
}

impl ResourceNode {
    /// The resource of `setup` (`fencing` from its options).
    pub fn new(setup: &Setup) -> Result<Self, String> {
        let work = Workload::parse(setup)?;
        Ok(ResourceNode {
            resource: Resource::restored(work.fencing, setup),
        })
    }
}

impl Algorithm for ResourceNode {
    type Msg = MxMsg<Void>;
    type Timer = ();

    fn on_start(&mut self, _cx: &mut Cx<'_, Self>) {}

    fn on_msg(&mut self, cx: &mut Cx<'_, Self>, from: NodeId, msg: Self::Msg) {
        match msg {
            MxMsg::Begin { req, token } => self.resource.begin(cx, from, req, token),
            MxMsg::End { req } => self.resource.end(cx, from, req),
            MxMsg::Proto(v) => match v {},
            // Its work was done by `on_peer_restart`, which the host called before this.
            MxMsg::Hello => {}
            m @ MxMsg::Link(_) => cx.discard(
                from,
                format!(
                    "{} is between participants; the resource takes part in no protocol",
                    m.name()
                ),
            ),
        }
    }

    fn on_timer(&mut self, _cx: &mut Cx<'_, Self>, _timer: ()) {}

    fn on_peer_restart(&mut self, cx: &mut Cx<'_, Self>, peer: NodeId) {
        self.resource.peer_restarted(cx, peer);
    }
}
