//! Parses the trace lines no view of the launcher needs while the run goes on (`send` and
//! `recv`, kept for the run's check) behind the run: on a thread of the lowest priority, which
//! the scheduler gives the cores the nodes leave idle.
//!
//! Parsed by the launcher's own thread between its ticks, these lines took a sixth of the
//! launcher's samples while a mutual-exclusion run of 20 nodes went on, on the cores the nodes
//! needed; left for the end they made the end longer than the run was shorter. The launcher
//! hands each file's lines over as it reads them (`Tail::hand_behind`) and never waits for this
//! thread; what it has not parsed by the stop is parsed then, on both cores (`Fleet::
//! hand_over_traces`).

use super::watch::Behind;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The thread parsing behind the run, and the way to hand it a file's lines.
pub(crate) struct Parsing {
    files: Option<Sender<Arc<Behind>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Parsing {
    /// Starts the thread; None if the system will not give one (the lines are then all parsed
    /// at the stop).
    pub(crate) fn start() -> Option<Parsing> {
        let (files, handed) = channel::<Arc<Behind>>();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::Builder::new()
            .name("coordlab-parse".into())
            .spawn(move || {
                lowest_priority();
                for file in handed {
                    if stopped.load(Ordering::Relaxed) {
                        return;
                    }
                    file.parse();
                }
            })
            .ok()?;
        Some(Parsing {
            files: Some(files),
            stop,
            thread: Some(thread),
        })
    }

    /// Tells the thread that `file` has lines for it.
    pub(crate) fn wake(&self, file: Arc<Behind>) {
        if let Some(f) = &self.files {
            // A thread gone (it cannot be, but for a panic) leaves the lines to the stop.
            let _ = f.send(file);
        }
    }

    /// Stops the thread once it has parsed the file it is at, and waits for it.
    pub(crate) fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.files = None;
        if let Some(t) = self.thread.take() {
            // A panic would be a bug of the reader's; the lines the thread had not taken are
            // parsed at the stop all the same.
            let _ = t.join();
        }
    }
}

impl Drop for Parsing {
    /// A launch that ends without handing its traces over leaves the thread no more to do.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Puts the calling thread under `SCHED_IDLE`, or at nice 19 where that is refused; a failure
/// of both leaves it at the launcher's priority, which is only slower for the nodes. Nice 19
/// was not enough: the scheduler lets a running task finish its slice (0.75 ms and more) before
/// a woken one of higher weight takes the core, so a node woken by a datagram waited behind
/// this thread; a woken task of any other policy preempts a `SCHED_IDLE` one at once.
fn lowest_priority() {
    let param = nix::libc::sched_param { sched_priority: 0 };
    // SAFETY: plain system calls on this thread (pid 0 is the caller; on Linux both the policy
    // and the nice value are the calling thread's own), reading only `param`.
    unsafe {
        if nix::libc::sched_setscheduler(0, nix::libc::SCHED_IDLE, &param) != 0 {
            nix::libc::setpriority(nix::libc::PRIO_PROCESS, 0, LOWEST);
        }
    }
}

/// The nice value of the parsing thread where `SCHED_IDLE` is refused: the lowest priority an
/// unprivileged thread can take.
const LOWEST: i32 = 19;
