//! Failure detectors: the [`Liveness`] component that every family hosts, and its bookkeeping;
//! which detector judges silence (fixed timeout, phi accrual, SWIM) is chosen by the
//! `detector` key ([`config`]).

pub mod config;
mod heartbeat;
#[cfg(test)]
mod heavy_loss_tests;
mod live_messages;
pub mod liveness;
pub mod phi;
#[cfg(test)]
mod phi_tests;
pub mod swim;
mod swim_messages;
#[cfg(test)]
mod swim_tests;
#[cfg(test)]
mod watch_tests;

pub use config::Choice;
pub use heartbeat::Silence;
pub(crate) use live_messages::beat_of_brief;
pub use live_messages::DETECTOR_MESSAGES;
pub use liveness::{LiveMsg, LiveTimer, Liveness};
