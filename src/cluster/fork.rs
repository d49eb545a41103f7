//! Starting a node of the first launch by `fork` alone, without an exec: the child already
//! holds the binary's code, its dynamic linking done, the plan parsed and the key path known,
//! so it goes straight to the node's loop. Profiled on a ring of 1,024 (perf, two loaded
//! cores), an exec'd node spent ~4 ms of CPU before its loop: the exec, the dynamic loader's
//! relocations and CPU-feature probes, clap building every subcommand, and parsing a
//! `--members` list of n entries, which made a launch quadratic in n. A fork of the launcher,
//! single-threaded at that point and a few MiB large, costs a fraction of that.
//!
//! Only while the launcher has one thread: forking a process with other threads could copy a
//! lock some other thread holds. Restarts (from the console, once its thread runs) exec
//! `coordlab node` as before ([`NodeArgs::spawn`]).

use super::gate::Inherited;
use super::plan::NodePlan;
use super::spawn::NodeArgs;
use crate::node::runtime;
use nix::libc;
use nix::sys::signal::SigSet;
use nix::unistd::{fork, setpgid, ForkResult, Pid};
use std::io::{self, Write};
use std::os::fd::{AsRawFd, RawFd};

/// Whether this process has one thread (so that a fork is safe).
pub fn single_threaded() -> bool {
    std::fs::read_dir("/proc/self/task").is_ok_and(|d| d.count() == 1)
}

/// Forks `node` in process group `group` (None: a new group led by it), its output appended to
/// its log, on `socket` and the start gate's pipes `gate`, inherited under their numbers;
/// every other descriptor of the launcher is closed in the child. The caller closes its copy
/// of the socket on return.
pub fn fork_node(
    args: &NodeArgs,
    node: &NodePlan,
    initiator: bool,
    socket: RawFd,
    gate: Option<Inherited>,
    group: Option<Pid>,
) -> io::Result<Pid> {
    let log = args.open_log(node.id)?;
    let null = std::fs::File::open("/dev/null")?;
    let resource = args.is_resource(node.id);
    let pgid = group.unwrap_or(Pid::from_raw(0));
    let launcher = Pid::this();
    // SAFETY: the launcher has one thread (checked by the caller), so the child's copy of the
    // allocator and of std's locks is consistent; the child never returns from this branch.
    match unsafe { fork() }.map_err(io::Error::from)? {
        ForkResult::Parent { child } => {
            // Also set here, so that the group exists before the next child joins it; a group
            // whose members are all gone is replaced by a new one (the child does the same).
            if group.is_none() || setpgid(child, pgid).is_err() {
                let _ = setpgid(child, child);
            }
            Ok(child)
        }
        ForkResult::Child => {
            let code = match become_node(log.as_raw_fd(), null.as_raw_fd(), socket, gate, pgid) {
                Ok(()) => {
                    // Its command line is the launcher's; its name (ps -e, top) says which node.
                    if let Ok(name) = std::ffi::CString::new(format!("coordlab-n{}", node.id)) {
                        let _ = nix::sys::prctl::set_name(&name);
                    }
                    // Built here, in the child: the member table is O(n) work, and the
                    // launcher spawns one node after another.
                    let opts = args.options(node, initiator, socket, gate, launcher);
                    crate::node::logging::init();
                    let run = match resource {
                        true => runtime::run_resource(opts),
                        false => runtime::run_node(opts),
                    };
                    match run {
                        Ok(()) => 0,
                        Err(e) => {
                            eprintln!("coordlab: {e}");
                            e.exit_code()
                        }
                    }
                }
                Err(e) => {
                    let _ = writeln!(io::stderr(), "coordlab: cannot start node {}: {e}", node.id);
                    1
                }
            };
            let _ = io::stderr().flush();
            // SAFETY: ends the child without running the launcher's exit-time work (its buffered
            // output and destructors belong to the launcher).
            unsafe { libc::_exit(code) }
        }
    }
}

/// In the child: its own process group, stdin from /dev/null, stdout and stderr to its log,
/// every descriptor closed but those and `keep`, every signal unblocked (the node blocks its
/// own).
fn become_node(log: RawFd, null: RawFd, socket: RawFd, gate: Option<Inherited>, pgid: Pid) -> io::Result<()> {
    if setpgid(Pid::from_raw(0), pgid).is_err() {
        setpgid(Pid::from_raw(0), Pid::from_raw(0)).map_err(io::Error::from)?;
    }
    for (from, to) in [(null, 0), (log, 1), (log, 2)] {
        // SAFETY: plain descriptor calls on descriptors this process holds.
        if unsafe { libc::dup2(from, to) } < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    let inherited: Vec<RawFd> = std::iter::once(socket)
        .chain(gate.iter().flat_map(|g| [g.go, g.ready]))
        .collect();
    let mut keep = [&[0, 1, 2], inherited.as_slice()].concat();
    close_all_but(&mut keep)?;
    for &fd in &inherited {
        // SAFETY: as above; FD_CLOEXEC off, so a later exec (none is made) would keep them.
        unsafe { libc::fcntl(fd, libc::F_SETFD, 0) };
    }
    SigSet::empty().thread_set_mask().map_err(io::Error::from)?;
    Ok(())
}

/// Closes every descriptor not in `keep`.
fn close_all_but(keep: &mut [RawFd]) -> io::Result<()> {
    keep.sort_unstable();
    let mut from: u32 = 0;
    for &k in keep.iter() {
        let k = k as u32;
        if k > from {
            close_range(from, k - 1)?;
        }
        from = from.max(k + 1);
    }
    close_range(from, u32::MAX)
}

fn close_range(first: u32, last: u32) -> io::Result<()> {
    // SAFETY: close_range(2) only closes descriptors of this process.
    let r = unsafe { libc::syscall(libc::SYS_close_range, first, last, 0) };
    match r {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}
