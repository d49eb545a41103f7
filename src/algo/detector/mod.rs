//! Failure detectors: the [`Liveness`] component that every family hosts, and its bookkeeping.

mod heartbeat;
pub mod liveness;

pub use heartbeat::Silence;
pub use liveness::{LiveMsg, LiveTimer, Liveness};
