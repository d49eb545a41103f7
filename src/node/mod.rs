//! Everything that touches the operating system for one node: socket, poll loop, signals, logging.
//! The sans-IO core it drives lives in `crate::engine`.

pub mod config;
pub mod keyfile;
pub mod logging;
pub mod runtime;
pub mod signals;
pub mod socket;
