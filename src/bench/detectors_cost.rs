//! What each detector costs on the wire, for [`detectors`](super): messages sent
//! per node per second of its life, the detector's own ([`DETECTOR_MESSAGES`]) and all of
//! them (the host's heartbeats, ring ACKs and elections too), counted from the traces' `send`
//! records, one per message (a step's messages to one node share a datagram, so the datagrams
//! may be fewer). Without it the detectors' accuracy is not compared at equal cost:
//! a detector that sends more hears more and is wrong less.

use super::super::detector_figures::FateAt;
use super::{Fate, HEAVY_LOSS_PCT};
use crate::algo::detector::DETECTOR_MESSAGES;
use crate::trace::{Event, NodeId, RunDir};

/// Messages sent per node-second of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cost {
    /// The detector's own messages (PROBE, ALIVE, BEAT, PING, PING-REQ, ACK, NACK, GOSSIP).
    pub detector_per_node_s: f64,
    /// Every message, the host's protocol included.
    pub all_per_node_s: f64,
    /// The detector's own during the heavy-loss phase (where most mistakes are made: a
    /// detector that asks again when it hears nothing pays more there).
    pub heavy_detector_per_node_s: f64,
}

/// The cost of `run` on `nodes` between `start_us` and `end_us`, each node counted while it
/// lived (from the start to its kill, and again from a restart).
pub fn cost(run: &RunDir, nodes: &[NodeId], start_us: u64, end_us: u64, fates: &[FateAt]) -> Cost {
    let (from, to) = heavy_phase(run, end_us);
    let (mut det, mut all, mut heavy) = (0usize, 0usize, 0usize);
    for r in &run.node_events {
        if let Event::Send { msg, .. } = &r.event {
            all += 1;
            let mine = DETECTOR_MESSAGES.contains(&msg.as_str());
            det += usize::from(mine);
            heavy += usize::from(mine && (from..to).contains(&r.t));
        }
    }
    let mut c = rates(det, all, live_seconds(nodes, start_us, end_us, fates));
    let heavy_s = live_seconds(nodes, from.max(start_us), to.min(end_us), fates);
    c.heavy_detector_per_node_s = if heavy_s > 0.0 { heavy as f64 / heavy_s } else { 0.0 };
    c
}

/// The heavy-loss phase of `run`: from the first loss of [`HEAVY_LOSS_PCT`] on every link to
/// the next change of every link's loss (or `end_us`); empty without one.
fn heavy_phase(run: &RunDir, end_us: u64) -> (u64, u64) {
    let every: Vec<(u64, u32)> = run
        .faults
        .iter()
        .filter_map(|r| match &r.event {
            Event::Loss { pct, links, .. } if links.is_empty() => Some((r.t, *pct)),
            _ => None,
        })
        .collect();
    let Some(i) = every.iter().position(|x| x.1 == HEAVY_LOSS_PCT) else {
        return (0, 0);
    };
    let from = every[i].0;
    (from, every.get(i + 1).map_or(end_us, |x| x.0))
}

/// Node-seconds lived by `nodes` between `start_us` and `end_us`.
pub(crate) fn live_seconds(nodes: &[NodeId], start_us: u64, end_us: u64, fates: &[FateAt]) -> f64 {
    let mut total = 0u64;
    for &n in nodes {
        let mut since = Some(start_us);
        for &(t, _, f) in fates.iter().filter(|x| x.1 == n) {
            match (f, since) {
                (Fate::Killed, Some(s)) => {
                    total += t.clamp(start_us, end_us).saturating_sub(s);
                    since = None;
                }
                (Fate::Restarted, None) => since = Some(t.clamp(start_us, end_us)),
                _ => {}
            }
        }
        if let Some(s) = since {
            total += end_us.saturating_sub(s);
        }
    }
    total as f64 / 1e6
}

/// `det` and `all` messages over `node_s` node-seconds.
pub(crate) fn rates(det: usize, all: usize, node_s: f64) -> Cost {
    if node_s <= 0.0 {
        return Cost::default();
    }
    Cost {
        detector_per_node_s: det as f64 / node_s,
        all_per_node_s: all as f64 / node_s,
        heavy_detector_per_node_s: 0.0,
    }
}
