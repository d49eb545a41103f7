//! SIGTERM, SIGINT and SIGHUP as readable events of the poll loop (a signalfd), so that a
//! signal is a clean stop, not a death in the middle of a write.

use crate::error::{failed, CliError};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};

/// The stop signals, blocked for normal delivery and readable from a file descriptor.
pub struct StopSignals {
    fd: SignalFd,
}

impl StopSignals {
    /// Blocks SIGTERM, SIGINT and SIGHUP in this thread and opens a signalfd for them.
    pub fn new() -> Result<Self, CliError> {
        let mut mask = SigSet::empty();
        for s in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
            mask.add(s);
        }
        mask.thread_block()
            .map_err(|e| failed(format!("cannot block stop signals: {e}")))?;
        let fd = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
            .map_err(|e| failed(format!("cannot open a signalfd: {e}")))?;
        Ok(StopSignals { fd })
    }

    /// The descriptor to register with mio.
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.fd.as_raw_fd()
    }

    /// Reads every pending signal; true when at least one arrived.
    pub fn drain(&mut self) -> bool {
        let mut any = false;
        while let Ok(Some(_)) = self.fd.read_signal() {
            any = true;
        }
        any
    }
}
