//! Clocks: each node's own physical clock (offset, drift, slew), and the logical clocks
//! stamped on events (Lamport's scalar clock, vector clocks, hybrid logical clocks).

pub mod hlc;
pub mod kept;
pub mod lamport;
pub mod physical;
pub mod skew;
pub mod vector;

pub use hlc::Hlc;
pub use physical::{ClockSpec, PhysicalClock};
pub use vector::VectorClock;

use crate::algo::Setup;

/// The largest cluster that gets vector clocks by default (a vector is one entry per node on
/// every datagram and event).
pub(crate) const VC_DEFAULT_MAX_NODES: usize = 64;

crate::algo::options::options! {
    /// The engine's keys, taken by every algorithm, as declared once.
    pub(crate) struct EngineKeys {
        max_slew_ppm: f64 = 100000, crate::algo::options::Kind::Float { min: 1.0, max: 999_999.0 },
            "the fastest a clock correction is slewed in, ppm of the clock's rate (NTP: 500)";
        step: bool = false, crate::algo::options::Kind::Bool,
            "apply clock corrections at once instead of slewing (a clock may then run backwards)";
        vc: Option<bool> = none shown "true", crate::algo::options::Kind::Bool,
            "stamp vector clocks on every datagram and event (default: true up to 64 nodes, false above)";
        fsync: bool = false, crate::algo::options::Kind::Bool,
            "fsync every store of persisted state (file and directory) before what depends on it is sent, as a system that must survive a power loss pays (without it a store still survives any kill of the process)";
    }
}

/// The engine's clock options ([`EngineKeys`], the size rule of `vc` applied).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ClockOptions {
    /// The fastest a correction is slewed in, ppm of the clock's rate.
    pub max_slew_ppm: f64,
    /// Apply corrections at once instead of slewing (a clock may then run backwards).
    pub step: bool,
    /// Keep and stamp vector clocks.
    pub vc: bool,
}

impl ClockOptions {
    /// Reads the options of `setup`; the error names the bad value.
    pub(crate) fn from_setup(setup: &Setup) -> Result<Self, String> {
        let k = EngineKeys::from_setup(setup)?;
        Ok(ClockOptions {
            max_slew_ppm: k.max_slew_ppm,
            step: k.step,
            vc: k.vc.unwrap_or(setup.members.len() <= VC_DEFAULT_MAX_NODES),
        })
    }
}
