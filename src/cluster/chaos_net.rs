//! The network half of the chaos soak: draws a network fault (a cut link, a partition, loss,
//! delay), puts it in force through the launcher's `net` code path (the console's), and heals
//! it after 0.5-2.5 s; every network fault is healed before the soak's settling time, so the
//! criteria judge a run whose network is whole again.
//!
//! What is drawn, one fault at a time (a new one only once the last is healed):
//! - cut: a link of the graph (a neighbour pair; on a ring, ring neighbours), both ways, or
//!   one way one time in four; the leader's link about one time in three;
//! - partition: the nodes shuffled and split in two (each side at least one node), or the
//!   leader alone against the rest one time in three;
//! - loss: 5-30% on every link;
//! - delay: 5-60 ms with a jitter of up to as much again on every link (reorders).

use super::nodes::Fleet;
use crate::net::NetAction;
use crate::rng::Rng;
use crate::trace::NodeId;
use std::time::{Duration, Instant};

/// Which faults the soak draws (`--faults process|network|all`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kinds {
    /// Pauses, kills and restarts only.
    Process,
    /// Network faults only.
    Network,
    /// Both (the default).
    All,
}

impl Kinds {
    /// Whether process faults are drawn.
    pub fn process(self) -> bool {
        self != Kinds::Network
    }

    /// Whether network faults are drawn.
    pub fn network(self) -> bool {
        self != Kinds::Process
    }
}

/// The network faults of one soak.
pub struct NetChaos {
    /// When the fault in force is healed (None: no fault in force).
    heal_at: Option<Instant>,
    /// Network faults put in force.
    pub injected: usize,
}

impl Default for NetChaos {
    fn default() -> Self {
        Self::new()
    }
}

impl NetChaos {
    /// No fault yet.
    pub fn new() -> Self {
        NetChaos {
            heal_at: None,
            injected: 0,
        }
    }

    /// Whether a network fault is in force (no new one is drawn then).
    pub fn busy(&self) -> bool {
        self.heal_at.is_some()
    }

    /// Heals the fault in force when it falls due, or at once when `settling` (the soak stops
    /// injecting): nothing of the network stays broken into the settling time.
    pub fn due(&mut self, fleet: &mut Fleet, now: Instant, settling: bool) {
        let Some(at) = self.heal_at else { return };
        if now < at && !settling {
            return;
        }
        self.heal_at = None;
        match fleet.net(&NetAction::Heal { link: None }) {
            Ok(line) => say!("chaos: {line}"),
            Err(e) => say!("chaos: could not heal the network: {e}"),
        }
    }

    /// Draws one network fault and puts it in force; `leader` is the current leader, if any.
    pub fn inject(&mut self, fleet: &mut Fleet, now: Instant, rng: &mut Rng, leader: Option<NodeId>) {
        let ids: Vec<NodeId> = fleet
            .nodes
            .iter()
            .map(|n| n.plan.id)
            .filter(|&id| id != super::RESOURCE_NODE)
            .collect();
        if ids.len() < 2 {
            return;
        }
        let action = draw(fleet, rng, &ids, leader);
        let ms = rng.range(500, 2501);
        match fleet.net(&action) {
            Ok(line) => {
                self.injected += 1;
                say!("chaos: {line}; heal in {ms} ms");
                self.heal_at = Some(now + Duration::from_millis(ms));
            }
            Err(e) => say!("chaos: could not apply a network fault: {e}"),
        }
    }
}

/// One network fault drawn over `ids`.
fn draw(fleet: &Fleet, rng: &mut Rng, ids: &[NodeId], leader: Option<NodeId>) -> NetAction {
    let pick = |rng: &mut Rng, xs: &[NodeId]| xs[rng.range(0, xs.len() as u64) as usize];
    match rng.range(0, 4) {
        0 => {
            // A link of the graph, so that the cut is felt: a pair of neighbours.
            let a = match leader {
                Some(l) if rng.chance(0.3) => l,
                _ => pick(rng, ids),
            };
            let nbrs: Vec<NodeId> = fleet
                .nodes
                .iter()
                .find(|n| n.plan.id == a)
                .map(|n| n.plan.neighbours.iter().copied().filter(|&b| b != a && ids.contains(&b)).collect())
                .unwrap_or_default();
            let others: Vec<NodeId> = ids.iter().copied().filter(|&b| b != a).collect();
            let b = pick(rng, if nbrs.is_empty() { &others } else { &nbrs });
            NetAction::Cut {
                a,
                b,
                one_way: rng.chance(0.25),
            }
        }
        1 => {
            let sides = match leader {
                Some(l) if rng.chance(0.3) => vec![vec![l], ids.iter().copied().filter(|&x| x != l).collect()],
                _ => {
                    let mut order = ids.to_vec();
                    rng.shuffle(&mut order);
                    let k = rng.range(1, order.len() as u64) as usize;
                    let (mut a, mut b) = (order[..k].to_vec(), order[k..].to_vec());
                    a.sort_unstable();
                    b.sort_unstable();
                    vec![a, b]
                }
            };
            NetAction::Partition { sides }
        }
        2 => NetAction::Loss {
            pct: rng.range(5, 31) as u32,
            link: None,
        },
        _ => {
            let ms = rng.range(5, 61);
            NetAction::Delay {
                ms,
                jitter_ms: rng.range(0, ms + 1),
                link: None,
            }
        }
    }
}
