//! What each detector costs on the wire, for [`detectors`](super): datagrams sent
//! per node per second of its life, the detector's own ([`DETECTOR_MESSAGES`]) and all of
//! them (the host's heartbeats, ring ACKs and elections too), counted from the traces' `send`
//! records, one per datagram. Without it the detectors' accuracy is not compared at equal cost:
//! a detector that sends more hears more and is wrong less.

use super::super::detector_figures::FateAt;
use super::Fate;
use crate::algo::detector::DETECTOR_MESSAGES;
use crate::trace::{Event, NodeId, RunDir};

/// Datagrams sent per node-second of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cost {
    /// The detector's own messages (PROBE, ALIVE, BEAT, PING, PING-REQ, ACK, NACK, GOSSIP).
    pub detector_per_node_s: f64,
    /// Every datagram, the host's protocol included.
    pub all_per_node_s: f64,
}

/// The cost of `run` on `nodes` between `start_us` and `end_us`, each node counted while it
/// lived (from the start to its kill, and again from a restart).
pub fn cost(run: &RunDir, nodes: &[NodeId], start_us: u64, end_us: u64, fates: &[FateAt]) -> Cost {
    let (mut det, mut all) = (0usize, 0usize);
    for r in &run.node_events {
        if let Event::Send { msg, .. } = &r.event {
            all += 1;
            det += usize::from(DETECTOR_MESSAGES.contains(&msg.as_str()));
        }
    }
    rates(det, all, live_seconds(nodes, start_us, end_us, fates))
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

/// `det` and `all` datagrams over `node_s` node-seconds.
pub(crate) fn rates(det: usize, all: usize, node_s: f64) -> Cost {
    if node_s <= 0.0 {
        return Cost::default();
    }
    Cost {
        detector_per_node_s: det as f64 / node_s,
        all_per_node_s: all as f64 / node_s,
    }
}
