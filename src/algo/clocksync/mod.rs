//! Clock synchronisation: Cristian's time server and Berkeley's averaging master. Both read the
//! node's own physical clock (`Context::pt`), time round trips with the monotonic clock, and
//! ask the engine for corrections (`Context::adjust_clock`), which it slews in.

pub mod berkeley;
pub mod cristian;

use crate::algo::options::{options, Kind};
use crate::algo::{NodeId, Setup};
use std::time::Duration;

options! {
    /// The keys Cristian and Berkeley share, as declared once.
    pub(crate) struct SyncKeys {
        server: Option<u64> = none shown "1", Kind::Int { min: 0, max: u64::MAX },
            "Cristian's time server, Berkeley's master (default: the smallest id, 1 unless --ids says otherwise)";
        period_ms: u64 = 1000, Kind::Int { min: 10, max: 1_000_000_000 }, "how often a round starts";
        samples: u64 = 4, Kind::Int { min: 1, max: 1000 },
            "samples per round (per node); the smallest round trip is kept";
        min_delay_us: u64 = 0, Kind::Int { min: 0, max: 1_000_000_000 },
            "the smallest one-way delay: the bound claimed is RTT/2 minus it";
        outlier_ms: u64 = 500, Kind::Int { min: 1, max: 1_000_000_000 },
            "Berkeley: clocks farther than this from the median are left out of the average";
    }
}

/// The options both algorithms share ([`SyncKeys`] in the units they use).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SyncOptions {
    /// The time server (Cristian) or master (Berkeley): `server`, default the smallest id.
    pub server: NodeId,
    /// How often a round starts.
    pub period: Duration,
    /// Samples per round, the smallest round trip kept.
    pub samples: u32,
    /// The smallest possible one-way delay, microseconds.
    pub min_delay_us: u64,
    /// Berkeley: clocks farther than this from the median are left out of the average.
    pub outlier_us: i64,
}

impl SyncOptions {
    /// Reads and checks the options of `setup`; the error names the bad value.
    pub(crate) fn from_setup(setup: &Setup) -> Result<Self, String> {
        let k = SyncKeys::from_setup(setup)?;
        let first = setup.members.iter().copied().min().unwrap_or(setup.me);
        let server = k.server.unwrap_or(first);
        if !setup.members.contains(&server) {
            return Err(format!("--set server={server}: node {server} is not a member"));
        }
        Ok(SyncOptions {
            server,
            period: Duration::from_millis(k.period_ms),
            samples: k.samples as u32,
            min_delay_us: k.min_delay_us,
            outlier_us: k.outlier_ms.saturating_mul(1000) as i64,
        })
    }
}

#[cfg(test)]
mod tests;

/// The start of the note a restarted node writes when it restored the correction it kept.
pub(crate) const CORRECTION_RESTORED: &str = "restarted: restored the clock correction kept before the restart";

/// The start of the note a restarted node writes when it has no correction to restore.
pub(crate) const CORRECTIONS_LOST: &str = "restarted without a kept clock correction";

/// What a restarted node says at start about its clock (None: not a restart). The engine
/// restored the correction already (`clock::kept`); this says which case it was, so that the
/// trace and the checker's summary tell a restored clock from one back at its original offset.
pub(crate) fn restart_note(setup: &Setup) -> Option<String> {
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
