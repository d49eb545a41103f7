//! coordlab: classic distributed-coordination algorithms, run as real processes over UDP.
//!
//! Algorithms are pure state machines ([`algo::Algorithm`]); the [`sim`] runs them on a
//! deterministic in-memory network, [`node`] runs one as a real process.
//!
//! Chang-Roberts on a ring of five in the simulator, every node starting at once, ids
//! decreasing along the ring: the worst case, n(n+1)/2 ELECTION messages.
//!
//! ```
//! use coordlab::algo::election::{chang_roberts::ChangRoberts, Leadership};
//! use coordlab::sim::{ring, NetConfig, Sim};
//! use std::time::Duration;
//!
//! let ids = [5, 4, 3, 2, 1];
//! let mut sim = Sim::new(NetConfig::default(), ring(&ids, &ids), Leadership::<ChangRoberts>::new);
//! let all_agree = |s: &Sim<Leadership<ChangRoberts>>| s.ids().iter().all(|&i| s.node(i).belief() == (1, Some(5)));
//! assert!(sim.run_until(Duration::from_secs(1), all_agree));
//! assert_eq!(sim.sent("ELECTION"), 5 * 6 / 2);
//! assert_eq!(sim.sent("ELECTED"), 5);
//! ```

#![warn(missing_docs)]

pub mod algo;
pub mod bench;
mod both;
pub mod catalog;
pub mod check;
pub mod clock;
pub mod cluster;
pub mod engine;
pub mod error;
pub mod exit;
pub mod net;
pub mod node;
pub mod render;
pub mod rng;
pub mod sim;
pub mod tools;
pub mod topology;
pub mod trace;
