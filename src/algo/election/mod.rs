//! Leader election: the [`Leadership`] wrapper (terms, heartbeats, ring repair) and the
//! election protocols that run inside it, one file per textbook algorithm.

pub mod anon_ring;
pub mod bully;
pub mod chang_roberts;
pub mod echo;
pub mod franklin;
mod leadership;
pub mod neighbours;
pub mod options;
#[cfg(test)]
mod resilience;
pub mod ring_list;
#[cfg(test)]
mod testkit;
pub mod yoyo;

pub use leadership::{validate, Ask, Core, Election, ElectionContext, ElectionCx, LMsg, LTimer, Leadership};
