//! The sans-IO engine both drivers share: the authenticated wire format and its codec, several
//! messages to one node in one datagram, the
//! replay window, keyed timers, drop tallies, and the host that stamps records and keeps the
//! Lamport clock and counters. Nothing here touches the operating system; `crate::node` (real
//! processes) and `crate::sim` (the simulator) feed it bytes, time and the run's key.

pub(crate) mod bundle;
pub mod drops;
pub mod durable;
pub mod host;
pub mod key;
pub mod replay;
pub(crate) mod stamps;
pub mod timers;
pub mod wire;
