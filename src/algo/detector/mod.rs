//! Failure detectors: plain bookkeeping that an algorithm owns and drives from its own timers.

mod heartbeat;

pub use heartbeat::Silence;
