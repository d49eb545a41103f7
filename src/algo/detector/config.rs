//! Which detector a node runs and its tuning, read from the `--set` keys declared once in the
//! catalogue (`catalog::detector_keys`) for every family that hosts [`Liveness`](super::Liveness).

use crate::algo::Setup;
use std::collections::BTreeMap;
use std::time::Duration;

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

fn int(opts: &BTreeMap<String, String>, key: &str) -> Option<u64> {
    opts.get(key).and_then(|v| v.trim().parse().ok())
}

impl Choice {
    /// The detector `setup` asks for (values assumed checked against the catalogue's keys).
    pub fn from_setup(setup: &Setup) -> Choice {
        Choice::from_opts(&setup.opts, setup.heartbeat)
    }

    /// The detector the `--set` options `opts` ask for, with beats every `heartbeat` (the
    /// launcher reads it too, to show each node's view in `status`).
    pub fn from_opts(opts: &BTreeMap<String, String>, heartbeat: Duration) -> Choice {
        match opts.get("detector").map(String::as_str) {
            Some("phi") => Choice::Phi(PhiParams {
                threshold: opts
                    .get("phi_threshold")
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(8.0),
                window: int(opts, "phi_window").unwrap_or(100).max(2) as usize,
                min_std: Duration::from_millis(int(opts, "phi_min_std_ms").unwrap_or(25)),
                pause: Duration::from_millis(int(opts, "phi_pause_ms").unwrap_or(100)),
                period: heartbeat,
            }),
            Some("swim") => Choice::Swim(SwimParams {
                period: Duration::from_millis(int(opts, "swim_period_ms").unwrap_or(300)),
                // Half the period, as memberlist's LAN profile (1 s / 500 ms).
                probe_timeout: Duration::from_millis(int(opts, "swim_probe_timeout_ms").unwrap_or(100)),
                k: int(opts, "swim_k").unwrap_or(3) as usize,
                suspicion_mult: int(opts, "swim_suspicion_mult").unwrap_or(3) as u32,
                suspicion_max_mult: int(opts, "swim_suspicion_max_mult").unwrap_or(4) as u32,
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
