//! Everything that touches the operating system for one node: socket, poll loop, timers, signals.

pub mod host;
pub mod timers;
