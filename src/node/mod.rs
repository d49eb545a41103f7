//! Everything that touches the operating system for one node: socket, poll loop, timers, signals.

pub mod config;
pub mod host;
pub mod logging;
pub mod runtime;
pub mod signals;
pub mod socket;
pub mod timers;
