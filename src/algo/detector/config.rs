//! Which detector a node runs and its tuning, read from the `--set` keys declared once here
//! ([`KEYS`]) for every family that hosts [`Liveness`](super::Liveness).

use crate::algo::registry::{Key, Kind, SetBy};
use crate::algo::Setup;
use std::time::Duration;

/// The keys of the detector, taken by every algorithm whose family hosts liveness.
pub const KEYS: &[Key] = &[
    Key {
        name: "detector",
        kind: Kind::Choice(&["fixed", "phi", "swim"]),
        default: "fixed",
        help: "failure detector: fixed timeout, phi accrual (Hayashibara), or SWIM with Lifeguard",
        set_by: SetBy::User,
    },
    Key {
        name: "phi_threshold",
        kind: Kind::Float { min: 0.5, max: 100.0 },
        default: "8",
        help: "phi: suspect a peer once phi (-log10 of the chance it is still alive) exceeds this",
        set_by: SetBy::User,
    },
    Key {
        name: "phi_window",
        kind: Kind::Int { min: 2, max: 10_000 },
        default: "100",
        help: "phi: inter-arrival times kept per peer",
        set_by: SetBy::User,
    },
    Key {
        name: "phi_min_std_ms",
        kind: Kind::Int { min: 1, max: 60_000 },
        default: "25",
        help: "phi: the smallest standard deviation of inter-arrival times assumed, ms",
        set_by: SetBy::User,
    },
    Key {
        name: "phi_pause_ms",
        kind: Kind::Int { min: 0, max: 60_000 },
        default: "100",
        help: "phi: acceptable heartbeat pause added to the mean inter-arrival time, ms",
        set_by: SetBy::User,
    },
    Key {
        name: "swim_period_ms",
        kind: Kind::Int { min: 1, max: 60_000 },
        default: "300",
        help: "swim: one probe per period, ms (stretched by the local health multiplier)",
        set_by: SetBy::User,
    },
    Key {
        name: "swim_probe_timeout_ms",
        kind: Kind::Int { min: 1, max: 60_000 },
        default: "100",
        help: "swim: how long a direct probe's ACK is awaited before asking others, ms",
        set_by: SetBy::User,
    },
    Key {
        name: "swim_k",
        kind: Kind::Int { min: 0, max: 16 },
        default: "3",
        help: "swim: members asked to probe indirectly when a direct probe goes unanswered",
        set_by: SetBy::User,
    },
    Key {
        name: "swim_suspicion_mult",
        kind: Kind::Int { min: 1, max: 100 },
        default: "3",
        help: "swim: shortest suspicion timeout, in probe periods times log10(members)",
        set_by: SetBy::User,
    },
    Key {
        name: "swim_suspicion_max_mult",
        kind: Kind::Int { min: 1, max: 100 },
        default: "4",
        help: "swim: longest suspicion timeout (no confirmations), as a multiple of the shortest",
        set_by: SetBy::User,
    },
];

/// The detector chosen and its parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Choice {
    /// Suspect after a fixed silence (the timeout).
    Fixed,
    /// Phi accrual.
    Phi(PhiParams),
    /// SWIM with Lifeguard.
    Swim(SwimParams),
}

/// The phi accrual detector's parameters (Akka's names in brackets).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PhiParams {
    /// Suspect above this phi (`threshold`).
    pub threshold: f64,
    /// Inter-arrival samples kept (`max-sample-size`).
    pub window: usize,
    /// Smallest standard deviation assumed (`min-std-deviation`).
    pub min_std: Duration,
    /// Added to the mean (`acceptable-heartbeat-pause`).
    pub pause: Duration,
    /// How often beats are sent (`heartbeat-interval`), also the first estimate of the mean.
    pub period: Duration,
}

/// SWIM's parameters (memberlist's names in brackets).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SwimParams {
    /// One probe each period (`ProbeInterval`).
    pub period: Duration,
    /// A direct probe's answer is awaited this long (`ProbeTimeout`).
    pub probe_timeout: Duration,
    /// Indirect probers asked (`IndirectChecks`).
    pub k: usize,
    /// `SuspicionMult`.
    pub suspicion_mult: u32,
    /// `SuspicionMaxTimeoutMult`.
    pub suspicion_max_mult: u32,
    /// Largest local health multiplier (`AwarenessMaxMultiplier`).
    pub max_lhm: u32,
}

fn int(setup: &Setup, key: &str) -> Option<u64> {
    setup.opts.get(key).and_then(|v| v.trim().parse().ok())
}

impl Choice {
    /// The detector `setup` asks for (values assumed checked against [`KEYS`]).
    pub fn from_setup(setup: &Setup) -> Choice {
        match setup.opts.get("detector").map(String::as_str) {
            Some("phi") => Choice::Phi(PhiParams {
                threshold: setup
                    .opts
                    .get("phi_threshold")
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(8.0),
                window: int(setup, "phi_window").unwrap_or(100).max(2) as usize,
                min_std: Duration::from_millis(int(setup, "phi_min_std_ms").unwrap_or(25)),
                pause: Duration::from_millis(int(setup, "phi_pause_ms").unwrap_or(100)),
                period: setup.heartbeat,
            }),
            Some("swim") => Choice::Swim(SwimParams {
                period: Duration::from_millis(int(setup, "swim_period_ms").unwrap_or(300)),
                // Half the period, as memberlist's LAN profile (1 s / 500 ms).
                probe_timeout: Duration::from_millis(int(setup, "swim_probe_timeout_ms").unwrap_or(100)),
                k: int(setup, "swim_k").unwrap_or(3) as usize,
                suspicion_mult: int(setup, "swim_suspicion_mult").unwrap_or(3) as u32,
                suspicion_max_mult: int(setup, "swim_suspicion_max_mult").unwrap_or(4) as u32,
                max_lhm: 8,
            }),
            _ => Choice::Fixed,
        }
    }

    /// Its name, as `detector=` takes it.
    pub fn name(&self) -> &'static str {
        match self {
            Choice::Fixed => "fixed",
            Choice::Phi(_) => "phi",
            Choice::Swim(_) => "swim",
        }
    }
}
