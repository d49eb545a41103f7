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
pub const VC_DEFAULT_MAX_NODES: usize = 64;

/// The engine's clock options, read from `--set`: `max_slew_ppm`, `step`, `vc`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClockOptions {
    /// The fastest a correction is slewed in, ppm of the clock's rate.
    pub max_slew_ppm: f64,
    /// Apply corrections at once instead of slewing (a clock may then run backwards).
    pub step: bool,
    /// Keep and stamp vector clocks.
    pub vc: bool,
}

impl ClockOptions {
    /// Reads the options of `setup`; the error names the bad value.
    pub fn from_setup(setup: &Setup) -> Result<Self, String> {
        let flag = |k: &str, default: bool| match setup.opts.get(k).map(String::as_str) {
            None => Ok(default),
            Some("true" | "1" | "yes") => Ok(true),
            Some("false" | "0" | "no") => Ok(false),
            Some(v) => Err(format!("--set {k}={v}: expected true or false")),
        };
        let max_slew_ppm = match setup.opts.get("max_slew_ppm") {
            None => physical::DEFAULT_MAX_SLEW_PPM,
            Some(v) => match v.parse::<f64>() {
                Ok(x) if x > 0.0 && x < 1_000_000.0 => x,
                _ => {
                    return Err(format!(
                        "--set max_slew_ppm={v}: expected a rate above 0 and below 1000000 ppm (a clock \
                         slewing at 100% would stand still)"
                    ))
                }
            },
        };
        Ok(ClockOptions {
            max_slew_ppm,
            step: flag("step", false)?,
            vc: flag("vc", setup.members.len() <= VC_DEFAULT_MAX_NODES)?,
        })
    }
}
