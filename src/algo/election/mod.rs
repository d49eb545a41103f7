//! Leader election: the [`Leadership`] wrapper (terms, heartbeats, ring repair) and the
//! election protocols that run inside it, one file per textbook algorithm.

pub mod chang_roberts;
mod leadership;

pub use leadership::{validate, ECx, Election, LMsg, LTimer, Leadership};
