//! Signals as readable events of a poll loop (a signalfd), so that a signal is handled between
//! two events, never in the middle of a write. Used by the node and by the launcher.

use crate::error::{failed, CliError};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use std::os::fd::{AsRawFd, RawFd};

/// The signals a node stops cleanly on.
pub(crate) const STOP: [Signal; 3] = [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP];

/// Some signals, blocked for normal delivery and readable from a descriptor.
pub(crate) struct SignalSource {
    fd: SignalFd,
}

impl SignalSource {
    /// Blocks `signals` in this thread and opens a signalfd for them. The block survives exec:
    /// whoever spawns children clears it in each child.
    pub fn new(signals: &[Signal]) -> Result<Self, CliError> {
        let mut mask = SigSet::empty();
        for &s in signals {
            mask.add(s);
        }
        mask.thread_block()
            .map_err(|e| failed(format!("cannot block signals: {e}")))?;
        let fd = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
            .map_err(|e| failed(format!("cannot open a signalfd: {e}")))?;
        Ok(SignalSource { fd })
    }

    /// The descriptor to register with mio.
    pub(crate) fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Reads every pending signal, in arrival order.
    pub fn drain(&mut self) -> Vec<Signal> {
        let mut got = Vec::new();
        while let Ok(Some(info)) = self.fd.read_signal() {
            if let Ok(s) = Signal::try_from(info.ssi_signo as i32) {
                got.push(s);
            }
        }
        got
    }
}
