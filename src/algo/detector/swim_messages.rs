//! What [`Swim`](super::Swim) sends and sets: its messages, the rumours they carry, and its
//! timers.

use crate::algo::NodeId;
use serde::{Deserialize, Serialize};

/// Gossip about one member, piggybacked on SWIM's messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Rumour {
    /// `node` is alive at `inc` (a refutation when `inc` is higher than the one suspected).
    Alive {
        /// Whom.
        node: NodeId,
        /// Its incarnation.
        inc: u64,
    },
    /// `from` suspects `node` at `inc`.
    Suspect {
        /// Whom.
        node: NodeId,
        /// Its incarnation.
        inc: u64,
        /// Who suspects it.
        from: NodeId,
    },
    /// `from` declared `node` dead at `inc`.
    Dead {
        /// Whom.
        node: NodeId,
        /// Its incarnation.
        inc: u64,
        /// Who declared it.
        from: NodeId,
    },
}

impl Rumour {
    /// The member it is about.
    pub fn node(&self) -> NodeId {
        match *self {
            Rumour::Alive { node, .. } | Rumour::Suspect { node, .. } | Rumour::Dead { node, .. } => node,
        }
    }
}

/// The detector's messages that SWIM sends (wrapped in [`LiveMsg`](super::LiveMsg)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum SwimMsg {
    /// Are you there?
    Ping {
        /// The prober's sequence number.
        seq: u64,
        /// The prober's clock when it sent this PING (`rtt::stamp`), echoed by the ACK.
        ts: u32,
        /// Gossip.
        rumours: Vec<Rumour>,
    },
    /// Please ping `target` for me.
    PingReq {
        /// The requester's sequence number.
        seq: u64,
        /// Whom to ping.
        target: NodeId,
        /// Gossip.
        rumours: Vec<Rumour>,
    },
    /// Answer to PING `seq` (relayed: to the requester's `seq`).
    Ack {
        /// The sequence number answered.
        seq: u64,
        /// The stamp of the PING answered (0: relayed, not timed).
        ts: u32,
        /// Gossip.
        rumours: Vec<Rumour>,
    },
    /// The relay got no answer from the target of PING-REQ `seq`.
    Nack {
        /// The requester's sequence number.
        seq: u64,
    },
    /// Rumours sent on the gossip timer (or at once, for a refutation), needing no answer.
    Gossip {
        /// Gossip.
        rumours: Vec<Rumour>,
    },
}

/// SWIM's timers (wrapped in [`LiveTimer`](super::LiveTimer)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SwimTimer {
    /// The direct probe `seq` went unanswered for the probe timeout.
    ProbeTimeout(u64),
    /// The direct probe `seq` is still unanswered: PING its target again.
    Retry(u64),
    /// The window of probe `seq` (`swim_window=rtt`) is over: judge it.
    Judge(u64),
    /// A relayed ping `seq` went unanswered (NACK it), or its late ACK is no longer awaited.
    Relay(u64),
    /// Time to look at the suspicion of this member.
    Suspicion(NodeId),
    /// This node's own suspicion of this member was held back for a while (`swim_hold`):
    /// tell the suspect again, or gossip it.
    Hold(NodeId),
    /// Time to gossip the pending rumours to a few random members.
    Gossip,
}
