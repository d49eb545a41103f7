//! Phi accrual (Hayashibara, Défago, Yared, Katayama 2004), computed as Akka's
//! `PhiAccrualFailureDetector` does: each peer's recent inter-arrival times are taken as a
//! normal distribution (its mean plus an acceptable pause, its standard deviation no smaller
//! than a floor), and phi = -log10(1 - F(silence)) with Akka's logistic approximation of the
//! normal CDF. Phi 1 means a 10% chance that the peer is still alive, phi 8 one in 10^8.
//!
//! Arrivals: every node sends a BEAT to each peer it may reach every `phi_beat_ms` (on a ring
//! or a complete mesh, every other member; on a sparse mesh, its neighbours). A BEAT carries
//! the sender's heartbeat stamp and the newest stamp it knows of other peers (of every peer
//! when they are at most `phi_relay`; else of `phi_relay` of them, so that each period every
//! stamp is relayed about `phi_relay` times, as among 8 members), as Cassandra's
//! gossip carries heartbeat versions: an arrival is a stamp newer than any known of that peer,
//! whether it came straight from the peer or relayed by another. Under independent loss on
//! each link, a lost BEAT is then made up by a relay within a beat period, so the window sees
//! a beat period with little spread, and a live peer looks silent only when its BEATs are lost
//! on every path at once. A stamp is the peer's boot (its start time, us) plus its count of
//! BEATs, so a restarted peer's stamps are newer than anything it said before.
//! Only arrivals enter the window, so protocol bursts do not shrink the mean, but any message
//! from a peer restarts its silence (it proves the peer alive). A peer is suspected when its
//! phi exceeds the threshold (looked at every period, and at the moment it will cross the
//! threshold if that comes before the next look), unsuspected when it is heard again, or when a
//! newer stamp of it arrives by another path.

use crate::algo::NodeId;
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use super::config::PhiParams;

/// Phi of a silence of `elapsed_ms` against a normal distribution of inter-arrival times with
/// `mean_ms` and `std_ms` (Akka's logistic approximation of the CDF, error below 1e-4).
pub fn phi(elapsed_ms: f64, mean_ms: f64, std_ms: f64) -> f64 {
    let y = (elapsed_ms - mean_ms) / std_ms;
    let e = (-y * (1.5976 + 0.070566 * y * y)).exp();
    if elapsed_ms > mean_ms {
        -(e / (1.0 + e)).log10()
    } else {
        -(1.0 - 1.0 / (1.0 + e)).log10()
    }
}

/// One peer's recent inter-arrival times (ms) with running sums.
#[derive(Debug, Clone)]
pub struct Window {
    max: usize,
    samples: VecDeque<f64>,
    sum: f64,
    squares: f64,
}

impl Window {
    /// A window of at most `max` samples, seeded as Akka seeds it: the first estimate `first`
    /// (ms) plus and minus a quarter of itself.
    pub fn new(max: usize, first: f64) -> Self {
        let mut w = Window {
            max: max.max(2),
            samples: VecDeque::new(),
            sum: 0.0,
            squares: 0.0,
        };
        w.add(first - first / 4.0);
        w.add(first + first / 4.0);
        w
    }

    /// Adds an inter-arrival time, dropping the oldest beyond the window.
    pub fn add(&mut self, ms: f64) {
        if self.samples.len() == self.max {
            if let Some(old) = self.samples.pop_front() {
                self.sum -= old;
                self.squares -= old * old;
            }
        }
        self.samples.push_back(ms);
        self.sum += ms;
        self.squares += ms * ms;
    }

    /// The mean.
    pub fn mean(&self) -> f64 {
        self.sum / self.samples.len() as f64
    }

    /// The (population) standard deviation.
    pub fn std(&self) -> f64 {
        let m = self.mean();
        (self.squares / self.samples.len() as f64 - m * m).max(0.0).sqrt()
    }
}

/// A peer watched by phi.
#[derive(Debug, Clone)]
struct Peer {
    window: Window,
    /// The newest stamp known of it.
    stamp: Option<u64>,
    /// The last arrival (a newer stamp).
    last_beat: Option<Duration>,
    /// The last message of any kind (or the restart of its clock).
    last: Duration,
}

/// Phi accrual over the peers a node watches.
#[derive(Debug, Clone)]
pub(crate) struct Phi {
    /// The parameters.
    pub params: PhiParams,
    peers: BTreeMap<NodeId, Peer>,
    /// This node's next stamp.
    stamp: u64,
    /// Periods begun (BEATs sent to each peer).
    rounds: usize,
}

impl Phi {
    /// Watches `peers` from `now` (their silence counts from `now`); this node's stamps start at
    /// `boot`.
    pub fn new(params: PhiParams, peers: impl IntoIterator<Item = NodeId>, now: Duration, boot: u64) -> Self {
        let first = params.period.as_secs_f64() * 1000.0;
        let peers = peers
            .into_iter()
            .map(|p| {
                let peer = Peer {
                    window: Window::new(params.window, first),
                    stamp: None,
                    last_beat: None,
                    last: now,
                };
                (p, peer)
            })
            .collect();
        Phi {
            params,
            peers,
            stamp: boot,
            rounds: 0,
        }
    }

    /// This node's stamp for the BEATs it sends now (one newer each period).
    pub(crate) fn next_stamp(&mut self) -> u64 {
        self.stamp += 1;
        self.rounds += 1;
        self.stamp
    }

    /// The stamps that this period's `j`-th BEAT of node `me`, to `to`, relays out of `known`:
    /// all but `to`'s own when they are no more than `relay`; else `relay` of them, a block that
    /// moves on by `relay` with each BEAT and each period, so that every period each known stamp
    /// goes out in about `relay` BEATs (the blocks of a period's BEATs tile `known` `relay` times
    /// over), each time to other peers. The block is shifted by `me` as well: every sender lists
    /// its peers in the same order, so without it a peer would be told the same block by every
    /// sender in the same period, and a stamp outside it by nobody.
    pub(crate) fn relayed(&self, known: &[(NodeId, u64)], me: NodeId, to: NodeId, j: usize) -> Vec<(NodeId, u64)> {
        let relay = self.params.relay;
        let start = match known.iter().filter(|&&(k, _)| k != to).count() {
            others if others <= relay => 0,
            _ => (j + self.rounds + me as usize) * relay % known.len(),
        };
        let (head, tail) = known.split_at(start);
        tail.iter()
            .chain(head)
            .copied()
            .filter(|&(k, _)| k != to)
            .take(relay)
            .collect()
    }

    /// The newest stamp known of each watched peer, for a BEAT to relay.
    pub(crate) fn known(&self) -> Vec<(NodeId, u64)> {
        self.peers
            .iter()
            .filter_map(|(&n, p)| p.stamp.map(|s| (n, s)))
            .collect()
    }

    /// Whether `node` is watched.
    pub(crate) fn watches(&self, node: NodeId) -> bool {
        self.peers.contains_key(&node)
    }

    /// The watched peers.
    pub fn peers(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.peers.keys().copied()
    }

    /// A BEAT from `from` at `now`, with its stamp and the stamps it relays: each newer than
    /// any known of its peer is an arrival. Returns the peers that arrived.
    pub(crate) fn beat(&mut self, from: NodeId, stamp: u64, relayed: &[(NodeId, u64)], now: Duration) -> Vec<NodeId> {
        std::iter::once((from, stamp))
            .chain(relayed.iter().copied())
            .filter(|&(n, s)| self.arrive(n, s, now))
            .map(|(n, _)| n)
            .collect()
    }

    /// Stamp `stamp` of `node` arrived at `now`: if newer than any known, its inter-arrival
    /// time enters the window unless the peer was suspected meanwhile (as Akka: the first beat
    /// after a failure says nothing of the usual spacing).
    fn arrive(&mut self, node: NodeId, stamp: u64, now: Duration) -> bool {
        let available = self.phi(node, now) < self.params.threshold;
        let Some(p) = self.peers.get_mut(&node).filter(|p| p.stamp < Some(stamp)) else {
            return false;
        };
        if let Some(b) = p.last_beat.filter(|_| available) {
            p.window.add(now.saturating_sub(b).as_secs_f64() * 1000.0);
        }
        p.stamp = Some(stamp);
        p.last_beat = Some(now);
        p.last = p.last.max(now);
        true
    }

    /// Any other message from `node` at `now`: it is alive, its silence starts again.
    pub fn heard(&mut self, node: NodeId, now: Duration) {
        if let Some(p) = self.peers.get_mut(&node) {
            p.last = p.last.max(now);
        }
    }

    /// Every silence starts again at `now` (this node itself was stopped); the beat spacing
    /// across the stall is not a sample either.
    pub fn restart(&mut self, now: Duration) {
        for p in self.peers.values_mut() {
            p.last = now;
            p.last_beat = None;
        }
    }

    /// How long `node` has been silent at `now`.
    pub(crate) fn silence(&self, node: NodeId, now: Duration) -> Duration {
        self.peers
            .get(&node)
            .map_or(Duration::ZERO, |p| now.saturating_sub(p.last))
    }

    /// The phi of `node` at `now` (0 for a peer not watched).
    pub fn phi(&self, node: NodeId, now: Duration) -> f64 {
        let Some(p) = self.peers.get(&node) else {
            return 0.0;
        };
        let elapsed = now.saturating_sub(p.last).as_secs_f64() * 1000.0;
        let mean = p.window.mean() + self.params.pause.as_secs_f64() * 1000.0;
        let std = p.window.std().max(self.params.min_std.as_secs_f64() * 1000.0);
        phi(elapsed, mean, std)
    }

    /// When `node`'s phi reaches the threshold if nothing more is heard from it (None: not
    /// watched), so that it is suspected then rather than at the next period's look.
    pub(crate) fn due(&self, node: NodeId) -> Option<Duration> {
        let p = self.peers.get(&node)?;
        let mean = p.window.mean() + self.params.pause.as_secs_f64() * 1000.0;
        let std = p.window.std().max(self.params.min_std.as_secs_f64() * 1000.0);
        let threshold = self.params.threshold;
        // Phi grows with the silence: bisect for the silence at which it reaches the
        // threshold (a hundred deviations is beyond the largest threshold accepted).
        let (mut lo, mut hi) = (0.0, mean + 100.0 * std);
        if phi(hi, mean, std) < threshold {
            return None;
        }
        for _ in 0..48 {
            let mid = (lo + hi) / 2.0;
            if phi(mid, mean, std) >= threshold {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        // Rounded up, so that phi is over the threshold at the moment returned.
        Some(p.last + Duration::from_micros((hi * 1000.0).ceil() as u64 + 1))
    }

    /// Whether `node`'s phi is above the threshold at `now`.
    pub fn over(&self, node: NodeId, now: Duration) -> bool {
        self.watches(node) && self.phi(node, now) >= self.params.threshold
    }

    #[cfg(test)]
    /// The phi of every watched peer at `now`.
    pub fn all(&self, now: Duration) -> Vec<(NodeId, f64)> {
        self.peers.keys().map(|&p| (p, self.phi(p, now))).collect()
    }
}
