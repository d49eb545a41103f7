//! Clock synchronisation: Cristian's time server and Berkeley's averaging master. Both read the
//! node's own physical clock (`Context::pt`), time round trips with the monotonic clock, and
//! ask the engine for corrections (`Context::adjust_clock`), which it slews in.

pub mod berkeley;
pub mod cristian;

use crate::algo::{NodeId, Setup};
use std::time::Duration;

/// The options both algorithms share, read from `--set`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SyncOptions {
    /// The time server (Cristian) or master (Berkeley): `--set server=ID`, default the smallest id.
    pub server: NodeId,
    /// How often a round starts: `--set period_ms=`, default 1000.
    pub period: Duration,
    /// Samples per round, the smallest round trip kept: `--set samples=`, default 4.
    pub samples: u32,
    /// The smallest possible one-way delay, microseconds: `--set min_delay_us=`, default 0.
    pub min_delay_us: u64,
    /// Berkeley: clocks farther than this from the median are left out of the average:
    /// `--set outlier_ms=`, default 500.
    pub outlier_us: i64,
}

impl SyncOptions {
    /// Reads and checks the options of `setup`; the error names the bad value.
    pub fn from_setup(setup: &Setup) -> Result<Self, String> {
        let num = |k: &str, default: u64, min: u64| -> Result<u64, String> {
            match setup.opts.get(k) {
                None => Ok(default),
                Some(v) => match v.parse::<u64>() {
                    Ok(x) if x >= min => Ok(x),
                    _ => Err(format!("--set {k}={v}: expected a whole number of at least {min}")),
                },
            }
        };
        let first = setup.members.iter().copied().min().unwrap_or(setup.me);
        let server = num("server", first, 0)?;
        if !setup.members.contains(&server) {
            return Err(format!("--set server={server}: node {server} is not a member"));
        }
        Ok(SyncOptions {
            server,
            period: Duration::from_millis(num("period_ms", 1000, 10)?),
            samples: num("samples", 4, 1)?.min(1000) as u32,
            min_delay_us: num("min_delay_us", 0, 0)?,
            outlier_us: num("outlier_ms", 500, 1)?.saturating_mul(1000) as i64,
        })
    }
}

#[cfg(test)]
mod tests;

/// The start of the note a restarted node writes when it restored the correction it kept.
pub const CORRECTION_RESTORED: &str = "restarted: restored the clock correction kept before the restart";

/// The start of the note a restarted node writes when it has no correction to restore.
pub const CORRECTIONS_LOST: &str = "restarted without a kept clock correction";

/// What a restarted node says at start about its clock (None: not a restart). The engine
/// restored the correction already (`clock::kept`); this says which case it was, so that the
/// trace and the checker's summary tell a restored clock from one back at its original offset.
pub fn restart_note(setup: &Setup) -> Option<String> {
    if !setup.restarted && setup.durable.is_none() {
        return None;
    }
    let kept = setup
        .durable
        .as_deref()
        .and_then(crate::clock::kept::KeptCorrection::decode);
    Some(match (kept, &setup.durable_refused) {
        (Some(k), _) => format!(
            "{CORRECTION_RESTORED} ({:+.3} ms); the next round refines it",
            k.clock_correction_us as f64 / 1000.0
        ),
        (None, Some(why)) => format!(
            "{CORRECTIONS_LOST}: the state file was refused ({why}); this clock is back at its original \
             offset until the next round resynchronises it"
        ),
        (None, None) => format!(
            "{CORRECTIONS_LOST}: none was made before the restart; this clock is at its original offset \
             until the next round corrects it"
        ),
    })
}
