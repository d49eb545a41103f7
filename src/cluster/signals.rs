//! The launcher's signals as readable events of its poll loop (a signalfd): SIGINT, SIGTERM and
//! SIGHUP ask for the clean stop; SIGCHLD says a node process changed state.

use crate::error::CliError;
use crate::node::signals::{SignalSource, STOP};
use nix::sys::signal::Signal;
use std::os::fd::RawFd;

/// What arrived since the last read.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Arrived {
    /// A stop signal, if one came (the last one).
    pub stop: Option<Signal>,
    /// At least one SIGCHLD.
    pub child: bool,
}

/// The launcher's signals, blocked for normal delivery and readable from a descriptor.
pub(crate) struct LauncherSignals {
    source: SignalSource,
}

impl LauncherSignals {
    /// Blocks the stop signals and SIGCHLD in this (the only) thread and opens a signalfd for
    /// them. The block would survive exec: `spawn` clears it in each child.
    pub fn new() -> Result<Self, CliError> {
        let mut signals = STOP.to_vec();
        signals.push(Signal::SIGCHLD);
        Ok(LauncherSignals {
            source: SignalSource::new(&signals)?,
        })
    }

    /// The descriptor to register with mio.
    pub(crate) fn raw_fd(&self) -> RawFd {
        self.source.raw_fd()
    }

    /// Reads every pending signal.
    pub fn drain(&mut self) -> Arrived {
        let mut got = Arrived::default();
        for s in self.source.drain() {
            match s {
                Signal::SIGCHLD => got.child = true,
                s => got.stop = Some(s),
            }
        }
        got
    }
}
