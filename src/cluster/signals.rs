//! The launcher's signals as readable events of its poll loop (a signalfd): SIGINT, SIGTERM and
//! SIGHUP ask for the clean stop; SIGCHLD says a node process changed state.

use crate::error::{failed, CliError};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use std::os::fd::{AsRawFd, RawFd};

/// What arrived since the last read.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Arrived {
    /// A stop signal, if one came (the last one).
    pub stop: Option<Signal>,
    /// At least one SIGCHLD.
    pub child: bool,
}

/// The launcher's signals, blocked for normal delivery and readable from a descriptor.
pub struct LauncherSignals {
    fd: SignalFd,
}

impl LauncherSignals {
    /// Blocks the signals in this (the only) thread and opens a signalfd for them. The block
    /// would survive exec: `spawn` clears it in each child.
    pub fn new() -> Result<Self, CliError> {
        let mut mask = SigSet::empty();
        for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP, Signal::SIGCHLD] {
            mask.add(s);
        }
        mask.thread_block()
            .map_err(|e| failed(format!("cannot block signals: {e}")))?;
        let fd = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
            .map_err(|e| failed(format!("cannot open a signalfd: {e}")))?;
        Ok(LauncherSignals { fd })
    }

    /// The descriptor to register with mio.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Reads every pending signal.
    pub fn drain(&mut self) -> Arrived {
        let mut got = Arrived::default();
        while let Ok(Some(info)) = self.fd.read_signal() {
            match Signal::try_from(info.ssi_signo as i32) {
                Ok(Signal::SIGCHLD) => got.child = true,
                Ok(s) => got.stop = Some(s),
                Err(_) => {}
            }
        }
        got
    }
}
