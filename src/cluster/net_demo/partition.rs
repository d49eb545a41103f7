//! The partition story of the mutual-exclusion family: a holder cut off from the coordinator
//! that regrants (see [`net_demo`](super)).

use super::NetStory;
use crate::cluster::chaos_net::apply;
use crate::cluster::goal::Ending;
use crate::cluster::net::NetControl;
use crate::cluster::nodes::Fleet;
use crate::cluster::RESOURCE_NODE;
use crate::net::NetAction;
use crate::trace::{wall_us, NodeId};
use std::time::{Duration, Instant};

/// Where the partition story is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum MStep {
    /// Waiting for a holder other than the coordinator.
    Hold,
    /// Cut `holder` off from the coordinator; waiting for a second holder.
    Cut { holder: NodeId },
    /// Two holders; waiting for the cut-off one to leave.
    Two { holder: NodeId },
    /// Healed; stop then.
    Healed { until: Instant },
}

impl NetStory {
    fn coordinator(fleet: &Fleet) -> NodeId {
        fleet
            .nodes
            .iter()
            .map(|n| n.plan.id)
            .filter(|&id| id != RESOURCE_NODE)
            .max()
            .unwrap_or(0)
    }

    fn holders(fleet: &Fleet) -> Vec<(NodeId, u64)> {
        fleet
            .nodes
            .iter()
            .filter(|n| n.plan.id != RESOURCE_NODE && n.live())
            .filter_map(|n| n.cs.holding.map(|(req, _)| (n.plan.id, req)))
            .collect()
    }

    pub(super) fn partition(
        &mut self,
        fleet: &mut Fleet,
        net: &mut NetControl,
        now: Instant,
    ) -> Result<Option<Ending>, String> {
        let c = Self::coordinator(fleet);
        match self.mstep.clone() {
            MStep::Hold => {
                let Some((h, req)) = Self::holders(fleet).into_iter().find(|&(id, _)| id != c) else {
                    return Ok(None);
                };
                let wall = wall_us();
                let done = apply(
                    net,
                    fleet,
                    &NetAction::Cut {
                        a: h,
                        b: c,
                        one_way: false,
                    },
                )?;
                say!(
                    "1. node {h} holds the section (request {req}); cut the link {h}-{c} at {} ({done}): the \
                     coordinator, node {c}, can no longer hear it; the shared resource still hears both",
                    fleet.rel(wall)
                );
                self.mstep = MStep::Cut { holder: h };
                self.deadline = now + self.patience;
                Ok(None)
            }
            MStep::Cut { holder } => {
                let hs = Self::holders(fleet);
                if !hs.iter().any(|h| h.0 == holder) {
                    return Err(format!(
                        "node {holder} left the section before the coordinator regranted it: set hold_ms above \
                         regrant_ms"
                    ));
                }
                let Some(&(w, _)) = hs.iter().find(|h| h.0 != holder) else {
                    return Ok(None);
                };
                say!(
                    "2. the coordinator heard nothing from node {holder} for regrant_ms and took it for dead: it \
                     granted node {w}, and nodes {holder} and {w} now both hold the section by their own traces"
                );
                self.mstep = MStep::Two { holder };
                Ok(None)
            }
            MStep::Two { holder } => {
                if Self::holders(fleet).iter().any(|h| h.0 == holder) {
                    return Ok(None);
                }
                let wall = wall_us();
                let done = apply(net, fleet, &NetAction::Heal { link: None })?;
                say!(
                    "3. node {holder} left the section; healed the network at {} ({done})",
                    fleet.rel(wall)
                );
                self.mstep = MStep::Healed {
                    until: now + Duration::from_millis(1000),
                };
                Ok(None)
            }
            MStep::Healed { until } if now >= until => Ok(Some(Ending {
                code: 0,
                message: "demo complete: the coordinator took a holder it could not hear for dead".into(),
                check: true,
            })),
            MStep::Healed { .. } => Ok(None),
        }
    }
}
