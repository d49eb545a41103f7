//! What the [`Liveness`](super::Liveness) detector sends and sets: PROBE and ALIVE, phi's BEAT,
//! SWIM's messages, and their timers.

use super::swim::{SwimMsg, SwimTimer};
use crate::algo::{Message, NodeId};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// The detector's messages.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum LiveMsg {
    /// Are you there?
    Probe {
        /// The sender's epoch (its term).
        epoch: u64,
        /// The sender waits on a message from the receiver (false: a re-probe of a suspect).
        wait: bool,
    },
    /// Yes.
    Alive {
        /// The sender's epoch.
        epoch: u64,
    },
    /// Phi: the sender's heartbeat to the peers it may reach, every `phi_beat_ms`.
    Beat {
        /// The sender's stamp (its boot plus its count of BEATs).
        stamp: u64,
        /// The newest stamp the sender knows of its peers (of `phi_relay` of them when it has
        /// more), relayed.
        relayed: Vec<(NodeId, u64)>,
    },
    /// SWIM's messages.
    Swim(SwimMsg),
}

impl LiveMsg {
    /// The sender's epoch.
    pub(crate) fn epoch(&self) -> u64 {
        match self {
            LiveMsg::Probe { epoch, .. } | LiveMsg::Alive { epoch } => *epoch,
            LiveMsg::Beat { .. } | LiveMsg::Swim(_) => 0,
        }
    }

    /// True for the phi and SWIM detectors' own traffic, which no host protocol takes part in.
    pub(crate) fn detector_only(&self) -> bool {
        matches!(self, LiveMsg::Beat { .. } | LiveMsg::Swim(_))
    }
}

impl Message for LiveMsg {
    fn name(&self) -> &'static str {
        match self {
            LiveMsg::Probe { .. } => "PROBE",
            LiveMsg::Alive { .. } => "ALIVE",
            LiveMsg::Beat { .. } => "BEAT",
            LiveMsg::Swim(SwimMsg::Ping { .. }) => "PING",
            LiveMsg::Swim(SwimMsg::PingReq { .. }) => "PING_REQ",
            LiveMsg::Swim(SwimMsg::Ack { .. }) => "SWIM_ACK",
            LiveMsg::Swim(SwimMsg::Nack { .. }) => "NACK",
            LiveMsg::Swim(SwimMsg::Gossip { .. }) => "GOSSIP",
        }
    }

    /// A BEAT reads `BEAT(stamp=S; 2:S2 3:S3)` ([`beat_of_brief`] reads it back: the launcher's
    /// `status` rebuilds phi from it); the rest as the default.
    fn brief(&self) -> String {
        match self {
            LiveMsg::Beat { stamp, relayed } => {
                let mut b = format!("BEAT(stamp={stamp};");
                for (n, s) in relayed {
                    let _ = write!(b, " {n}:{s}");
                }
                b.push(')');
                b
            }
            _ => crate::algo::brief_of(self.name(), self),
        }
    }
}

/// The stamp and the relayed stamps of a BEAT's brief ([`LiveMsg::brief`]); None if it is not one.
pub(crate) fn beat_of_brief(brief: &str) -> Option<(u64, Vec<(NodeId, u64)>)> {
    let (stamp, relayed) = brief.strip_prefix("BEAT(stamp=")?.strip_suffix(')')?.split_once(';')?;
    let relayed = relayed
        .split_whitespace()
        .map(|pair| {
            let (n, s) = pair.split_once(':')?;
            Some((n.parse().ok()?, s.parse().ok()?))
        })
        .collect::<Option<Vec<_>>>()?;
    Some((stamp.parse().ok()?, relayed))
}

/// The detector's timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LiveTimer {
    /// The regular wakeup that makes a stall of this node visible.
    Tick,
    /// Time to look at the nodes the host waits on.
    Check,
    /// Probe this suspected node again.
    Reprobe(NodeId),
    /// Phi and SWIM: the heartbeat period (beats, phi's judgement; SWIM's next probe).
    Period,
    /// SWIM's timers.
    Swim(SwimTimer),
    /// Phi: this peer's phi reaches the threshold now, unless it was heard meanwhile.
    PhiDue(NodeId),
}

crate::algo::compose::slot! {
    /// SWIM's slot in the detector's messages and timers.
    pub(super) struct SwimSlot;
    impl for LiveMsg, LiveTimer: SwimMsg => LiveMsg::Swim, SwimTimer => LiveTimer::Swim
}

/// The names of the detector's own messages as the trace records them ([`LiveMsg`]'s
/// `name`): what a detector costs on the wire, apart from its host's protocol.
pub const DETECTOR_MESSAGES: &[&str] = &[
    "PROBE", "ALIVE", "BEAT", "PING", "PING_REQ", "SWIM_ACK", "NACK", "GOSSIP",
];
