//! The clock correction a node keeps across a restart (issue 23 item 8): the total a clock
//! algorithm has asked its clock to move (software minus hardware reading, once slewed in),
//! written to the node's durable state (`state-<id>.bin`, blake3-framed) after every
//! correction and applied at once when the node starts again, as a real machine keeps its
//! clock's correction (`/etc/adjtime`) across a reboot. Only the clock algorithms adjust the
//! clock, and they persist nothing else, so the engine owns their durable state.
//!
//! What a restored clock still gets wrong: the hardware drift of the old boot. The simulated
//! hardware clock starts drifting afresh at each boot, so a restored clock is off by the
//! drift accumulated before the kill (at most `drift ppm x its age`), until the next round.

use serde::{Deserialize, Serialize};

/// The durable state of a node whose clock was corrected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct KeptCorrection {
    /// The clock's total correction, microseconds (software minus hardware, once slewed in).
    pub clock_correction_us: i64,
}

impl KeptCorrection {
    /// The bytes persisted.
    pub fn encode(self) -> Vec<u8> {
        serde_json::to_vec(&self).expect("a struct of one integer serialises")
    }

    /// The correction in `bytes`, if they are a kept correction (None: some other durable state).
    pub(crate) fn decode(bytes: &[u8]) -> Option<Self> {
        serde_json::from_slice(bytes).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_correction_reads_back_and_other_state_is_not_one() {
        let k = KeptCorrection {
            clock_correction_us: -36_106,
        };
        assert_eq!(KeptCorrection::decode(&k.encode()), Some(k));
        assert_eq!(KeptCorrection::decode(b"{\"round\":3}"), None);
        assert_eq!(KeptCorrection::decode(b"garbage"), None);
    }
}
