//! Leader election: the [`Leadership`] wrapper (terms, heartbeats, ring repair) and the
//! election protocols that run inside it, one file per textbook algorithm.

pub mod chang_roberts;
pub mod echo;
pub mod franklin;
mod leadership;
pub mod neighbours;
#[cfg(test)]
mod testkit;
pub mod yoyo;

pub use leadership::{ECx, Election, LMsg, LTimer, Leadership};
