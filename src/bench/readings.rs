//! What the bench reads from a finished run: the stop counters, and the checker's one replay of
//! beliefs.

use crate::check::beliefs::Beliefs;
use crate::check::Timeline;
use crate::trace::{Event, RunDir};

/// Messages named `name` sent by all nodes, from their `stop` counters.
pub(super) fn sent(run: &RunDir, name: &str) -> u64 {
    run.node_events
        .iter()
        .filter_map(|r| {
            if let Event::Stop { by_type, .. } = &r.event {
                by_type.get(name).copied()
            } else {
                None
            }
        })
        .sum()
}

/// What every node believed, when: the checker's one replay of the run.
pub(super) fn replay(run: &RunDir) -> Beliefs {
    Beliefs::replay(run, &Timeline::build(run))
}

/// First `election_start` to the last `leader` event, milliseconds.
pub(super) fn election_ms(run: &RunDir) -> Option<f64> {
    let b = replay(run);
    let first = b.started.first()?.t;
    let last = b.learned.iter().map(|l| l.t).max()?;
    Some(last.saturating_sub(first) as f64 / 1000.0)
}

/// The median of `v` (NaN when empty).
pub(super) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}
