//! The sans-IO engine both drivers share: the wire envelope and its codec, keyed timers, and
//! the host that stamps records and keeps the Lamport clock and counters. Nothing here touches
//! the operating system; `crate::node` (real processes) and `crate::sim` (the simulator) feed it
//! bytes and time.

pub mod host;
pub mod timers;
pub mod wire;
