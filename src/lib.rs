//! coordlab: classic distributed-coordination algorithms, run as real processes over UDP.
//!
//! Algorithms are pure state machines ([`algo::Algorithm`]); the [`sim`] runs them on a
//! deterministic in-memory network, [`node`] runs one as a real process.

pub mod algo;
pub mod bench;
pub mod check;
pub mod cluster;
pub mod error;
pub mod node;
pub mod rng;
pub mod sim;
pub mod topology;
pub mod trace;
pub mod wire;
