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

use super::net::NetControl;
use super::nodes::Fleet;
use super::schedule::FaultKinds;
use crate::net::NetAction;
use crate::rng::Rng;
use crate::trace::NodeId;
use std::time::{Duration, Instant};

/// Whether chaos draws process faults (pauses, kills, restarts).
pub fn process(kinds: FaultKinds) -> bool {
    kinds != FaultKinds::Network
}

/// Whether chaos draws network faults.
pub fn network(kinds: FaultKinds) -> bool {
    kinds != FaultKinds::Process
}

/// Puts `action` in force the way the console's `net ...` does (the same words, the same
/// [`NetControl::execute`]): enforced by the run's backend and written to faults.jsonl.
pub fn apply(net: &mut NetControl, fleet: &mut Fleet, action: &NetAction) -> Result<String, String> {
    let words = console_words(action);
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    net.execute(&words, fleet)
}

/// `action` as the words after `net` at the console (`cut 2 10`, `partition 1,2 3`).
pub(crate) fn console_words(action: &NetAction) -> Vec<String> {
    let ids = |xs: &[NodeId]| xs.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
    let link = |l: &Option<(NodeId, NodeId)>| l.map_or(Vec::new(), |(a, b)| vec![a.to_string(), b.to_string()]);
    match action {
        NetAction::Cut { a, b, one_way } => {
            let mut w = vec!["cut".to_string(), a.to_string(), b.to_string()];
            if *one_way {
                w.push("--one-way".into());
            }
            w
        }
        NetAction::Partition { sides } => std::iter::once("partition".to_string())
            .chain(sides.iter().map(|s| ids(s)))
            .collect(),
        NetAction::Heal { link: l } => std::iter::once("heal".to_string()).chain(link(l)).collect(),
        NetAction::Loss { pct, link: l } => ["loss".to_string(), pct.to_string()]
            .into_iter()
            .chain(link(l))
            .collect(),
        NetAction::Delay { ms, jitter_ms, link: l } => ["delay".to_string(), format!("{ms}:{jitter_ms}")]
            .into_iter()
            .chain(link(l))
            .collect(),
    }
}

/// The network faults of one soak.
pub(crate) struct NetChaos {
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
    pub(crate) fn due(&mut self, net: &mut NetControl, fleet: &mut Fleet, now: Instant, settling: bool) {
        let Some(at) = self.heal_at else { return };
        if now < at && !settling {
            return;
        }
        self.heal_at = None;
        match apply(net, fleet, &NetAction::Heal { link: None }) {
            Ok(line) => say!("chaos: {line}"),
            Err(e) => say!("chaos: could not heal the network: {e}"),
        }
    }

    /// Draws one network fault and puts it in force; `leader` is the current leader, if any.
    pub(crate) fn inject(
        &mut self,
        net: &mut NetControl,
        fleet: &mut Fleet,
        now: Instant,
        rng: &mut Rng,
        leader: Option<NodeId>,
    ) {
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
        match apply(net, fleet, &action) {
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
                .map(|n| {
                    n.plan
                        .neighbours
                        .iter()
                        .copied()
                        .filter(|&b| b != a && ids.contains(&b))
                        .collect()
                })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::NetCommand;

    #[test]
    fn every_drawn_fault_goes_through_the_console_words_unchanged() {
        let members: Vec<NodeId> = (1..=5).collect();
        let actions = [
            NetAction::Cut {
                a: 2,
                b: 5,
                one_way: false,
            },
            NetAction::Cut {
                a: 5,
                b: 2,
                one_way: true,
            },
            NetAction::Partition {
                sides: vec![vec![1, 3], vec![2, 4, 5]],
            },
            NetAction::Heal { link: None },
            NetAction::Heal { link: Some((1, 2)) },
            NetAction::Loss { pct: 17, link: None },
            NetAction::Loss {
                pct: 90,
                link: Some((3, 4)),
            },
            NetAction::Delay {
                ms: 40,
                jitter_ms: 12,
                link: None,
            },
        ];
        for a in actions {
            let words = console_words(&a);
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            assert_eq!(
                NetCommand::parse(&words, &members),
                Ok(NetCommand::Act(a.clone())),
                "{words:?}"
            );
        }
    }
}
