//! The start gate of a first launch: every node starts its algorithm, and its clock, at the
//! same moment, once every node of the launch has been spawned and has warmed up.
//!
//! Two pipes. Each node inherits the write end of the ready pipe and closes it once its
//! rehearsal (see `node::warmup`) is done; the launcher, holding the read end, reads end-of-file
//! when every copy is closed, so a node that dies before it is ready counts as ready rather
//! than holding the launch. Then the launcher closes the write end of the go pipe, whose read
//! end every node inherited: each reads end-of-file and starts.
//!
//! Why: when each node began as soon as it ran, the first ELECTION lap of a ring of 64 ran
//! while the last nodes were still being forked and rehearsing and while the launcher was
//! still spawning (perf: page faults of nodes 61 and 63 in their rehearsal, and the launcher's
//! own work, inside the lap); on two cores a lap's first hops waited behind that start-up work.
//! And no timeout (an unanswered message, a missing heartbeat) may run while later nodes are
//! still being spawned, which on two cores takes seconds for thousands of nodes.

use nix::fcntl::{fcntl, FcntlArg, FdFlag, OFlag};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

/// How long the launcher waits for the last node to be ready before it starts them anyway: a
/// node stuck before its algorithm (never seen) must not hold the launch for ever.
const PATIENCE: Duration = Duration::from_secs(30);

/// The descriptors a node of the first launch inherits, under these numbers.
#[derive(Debug, Clone, Copy)]
pub struct Inherited {
    /// The go pipe's read end (`--go-fd`).
    pub go: RawFd,
    /// The ready pipe's write end (`--ready-fd`).
    pub ready: RawFd,
}

/// The launcher's side of both pipes.
pub(crate) struct Gate {
    go_read: OwnedFd,
    go_write: OwnedFd,
    ready_read: OwnedFd,
    ready_write: OwnedFd,
}

impl Gate {
    /// Both pipes, the ends the nodes inherit without close-on-exec (an exec'd node keeps
    /// them), the launcher's own ends with it (no later child inherits them).
    pub fn new() -> Result<Self, String> {
        let pipe = || nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("cannot make a start pipe: {e}"));
        let (go_read, go_write) = pipe()?;
        let (ready_read, ready_write) = pipe()?;
        for inherited in [&go_read, &ready_write] {
            fcntl(inherited, FcntlArg::F_SETFD(FdFlag::empty())).map_err(|e| format!("start pipe: {e}"))?;
        }
        Ok(Gate {
            go_read,
            go_write,
            ready_read,
            ready_write,
        })
    }

    /// What each node inherits.
    pub fn inherited(&self) -> Inherited {
        Inherited {
            go: self.go_read.as_raw_fd(),
            ready: self.ready_write.as_raw_fd(),
        }
    }

    /// Once every node is spawned: waits until each is ready (or gone), then lets all start.
    /// Returns how many milliseconds the wait took, and whether it ran out of patience.
    pub fn open(self) -> (f64, bool) {
        let Gate {
            go_read,
            go_write,
            ready_read,
            ready_write,
        } = self;
        drop(ready_write);
        drop(go_read);
        let t0 = Instant::now();
        let ready = wait_eof(&ready_read, t0 + PATIENCE);
        drop(go_write);
        (t0.elapsed().as_secs_f64() * 1000.0, !ready)
    }
}

/// Reads `fd` until end-of-file or `deadline`; true at end-of-file.
fn wait_eof(fd: &OwnedFd, deadline: Instant) -> bool {
    let mut b = [0u8; 64];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        let ms = PollTimeout::try_from(left.as_millis().clamp(1, 10_000) as i32).unwrap_or(PollTimeout::MAX);
        let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, ms) {
            Ok(0) => continue,
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return false,
        }
        // Readable or hung up: nothing is ever written, so a read returns 0 at end-of-file.
        match nix::unistd::read(fd, &mut b) {
            Ok(0) => return true,
            Ok(_) | Err(nix::errno::Errno::EINTR) | Err(nix::errno::Errno::EAGAIN) => continue,
            Err(_) => return false,
        }
    }
}
