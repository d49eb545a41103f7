//! A Lamport clock's ceiling on stable storage (Lamport's mutex and Ricart-Agrawala): a bound
//! above every timestamp the node sent or saw, so that a restarted node's requests (and the
//! fencing tokens made from them) stay above its old ones.

use crate::algo::Setup;
use serde::{Deserialize, Serialize};

/// How far the stored ceiling moves ahead of the clock each time it is reached: one store per
/// this many ticks.
pub const CLOCK_STEP: u64 = 1 << 12;

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
struct Ceiling {
    clock: u64,
}

/// The clock a node starts from: the ceiling it stored before a restart, else 0.
pub fn restored(setup: &Setup) -> u64 {
    let stored: Ceiling = setup
        .durable
        .as_ref()
        .and_then(|b| serde_json::from_slice(b).ok())
        .unwrap_or_default();
    stored.clock
}

/// Once `clock` reaches `ceiling`, moves it ahead and returns the bytes to store before any
/// message of this handler leaves.
pub(crate) fn raise(clock: u64, ceiling: &mut u64) -> Option<Vec<u8>> {
    if clock < *ceiling {
        return None;
    }
    *ceiling = clock + CLOCK_STEP;
    Some(serde_json::to_vec(&Ceiling { clock: *ceiling }).unwrap_or_default())
}
