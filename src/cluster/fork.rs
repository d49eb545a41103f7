//! Starting the nodes of the first launch by `fork` alone, without an exec, from a small
//! process forked early: the zygote. The child already holds the binary's code, its dynamic
//! linking done, the plan parsed and the key path known, so it goes straight to the node's
//! loop. Profiled on a ring of 1,024 (perf, two loaded cores), an exec'd node spent ~4 ms of
//! CPU before its loop: the exec, the dynamic loader's relocations and CPU-feature probes, clap
//! building every subcommand, and parsing a `--members` list of n entries.
//!
//! Why a zygote rather than forking the launcher itself: profiled at 4,096 nodes, forking the
//! launcher (by then several MiB of heap: every node's view, traces, `run.json`) spent a third
//! of the launch's CPU on copy-on-write page copies (each child's first large allocation walks
//! free chunks spread over the inherited heap), copying page tables, and each child closing
//! the thousands of sockets it inherited; and every node's resident set counted the
//! launcher's heap (8.4 MiB at 4,096 nodes). The zygote is forked before the launcher grows,
//! gives back the heap it does not use, holds no node's socket (each comes to it over a unix
//! socket with `SCM_RIGHTS`, just before its node is forked), and forks each node with
//! `CLONE_PARENT`, so that the node is the launcher's child as before: the launcher reaps it,
//! and its parent-death signal follows the launcher.
//!
//! Several zygotes for a launch of thousands, one per [`PER_ZYGOTE`] nodes, each forked by the
//! launcher and each with its own copy of the code (`fork_code`): the kernel's walks of a page's
//! reverse map (DAMON's access checks, reclaim, migration) visit every process that maps the page
//! and hold its reverse map's lock meanwhile, and each fork must take that lock to add its child.
//! With one zygote, every node mapped the same code pages: at 16,384 nodes a walk visited 16,384
//! mappings, and on a machine running DAMON the zygote spent most of its forking waiting for the
//! lock (`anon_vma_clone`, blocked): 48-53 s a launch against 12.5-14.8 with eight zygotes
//! (docs/startup.md, "Several zygotes"). Node `i` is forked by zygote `i % k`; all are in the
//! first one's process group.
//!
//! Only from a process with one thread: forking a process with other threads could copy a lock
//! some other thread holds. The zygote has one thread; the launcher forks it before any other
//! thread starts. Restarts (from the console, once its thread runs) exec `coordlab node` as
//! before ([`NodeArgs::spawn`]).

use super::gate::Inherited;
use super::plan::NodePlan;
use super::spawn::NodeArgs;
use crate::node::runtime;
use nix::libc;
use nix::sys::signal::{SigSet, Signal};
use nix::sys::socket::{
    recvmsg, sendmsg, socketpair, AddressFamily, ControlMessage, ControlMessageOwned, MsgFlags, SockFlag, SockType,
};
use nix::unistd::{fork, setpgid, ForkResult, Pid};
use std::io::{self, IoSlice, IoSliceMut, Write};
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};

/// Whether this process has one thread (so that a fork is safe).
pub(crate) fn single_threaded() -> bool {
    std::fs::read_dir("/proc/self/task").is_ok_and(|d| d.count() == 1)
}

/// How many fork requests the launcher keeps ahead of the zygote's replies. One at a time, the
/// zygote waited a round trip through the launcher (its `faults.jsonl` line, two wake-ups)
/// between forks. A request is 8 bytes and a descriptor, far below the channel's buffer.
pub(crate) const AHEAD: usize = 4;

/// The launcher's end of a running zygote.
pub(crate) struct Zygote {
    pid: Pid,
    channel: OwnedFd,
    /// Whether the zygote still runs (ended by [`Zygote::finish`] or on drop).
    running: bool,
}

impl Zygote {
    /// Forks the zygote, which will fork `nodes` (the launch's plan, in order) as `args` says,
    /// each on the socket the launcher sends it and the start gate's pipes `gate` (which the
    /// zygote inherits, and each node from it). Must be called while the launcher has one
    /// thread, and early: the zygote keeps a copy of the launcher's memory as it is now, and
    /// every node a copy of the zygote's. The zygote and its nodes join process group `group`
    /// (another zygote's), or with None a new group the zygote leads.
    pub fn start(args: &NodeArgs, nodes: &[NodePlan], gate: Inherited, group: Option<Pid>) -> io::Result<Zygote> {
        let (mine, theirs) = socketpair(AddressFamily::Unix, SockType::SeqPacket, None, SockFlag::SOCK_CLOEXEC)
            .map_err(io::Error::from)?;
        let launcher = Pid::this();
        // SAFETY: the launcher has one thread (checked by the caller), so the child's copy of the
        // allocator and of std's locks is consistent; the child never returns from this branch.
        match unsafe { fork() }.map_err(io::Error::from)? {
            ForkResult::Parent { child } => {
                // The run's process group (its own, or the first zygote's), which every node
                // joins by being forked from it: a Ctrl-C at the terminal reaches only the
                // launcher (set on both sides, so that the group exists when this returns).
                let _ = setpgid(child, group.unwrap_or(child));
                drop(theirs);
                Ok(Zygote {
                    pid: child,
                    channel: mine,
                    running: true,
                })
            }
            ForkResult::Child => {
                drop(mine);
                crate::node::name_process("coordlab-zygote");
                let code = match serve(args, nodes, &theirs, gate, launcher, group) {
                    Ok(()) => 0,
                    Err(e) => {
                        let _ = writeln!(io::stderr(), "coordlab: the zygote failed: {e}");
                        1
                    }
                };
                // SAFETY: ends the zygote without running the launcher's exit-time work.
                unsafe { libc::_exit(code) }
            }
        }
    }

    /// The zygote's process group, which every node it forks is in.
    pub(crate) fn group(&self) -> Pid {
        self.pid
    }

    /// Asks for node `index` of the plan to be forked on `socket` (the caller may close its own
    /// copy once this returns: the request carries a copy). Its pid comes from
    /// [`Zygote::forked`], the replies in the order of the requests. A few requests may wait
    /// ahead ([`AHEAD`]) so that the zygote never waits for the launcher between two forks;
    /// every node still starts only at the start gate, once all are ready.
    pub fn request(&self, index: usize, socket: RawFd) -> io::Result<()> {
        let word = (index as u64).to_le_bytes();
        let fds = [socket];
        sendmsg::<()>(
            self.channel.as_raw_fd(),
            &[IoSlice::new(&word)],
            &[ControlMessage::ScmRights(&fds)],
            MsgFlags::empty(),
            None,
        )
        .map_err(io::Error::from)?;
        Ok(())
    }

    /// The pid of the node of the oldest request not yet answered.
    pub fn forked(&self) -> io::Result<Pid> {
        let mut reply = [0u8; 8];
        let n = nix::unistd::read(&self.channel, &mut reply).map_err(io::Error::from)?;
        if n != reply.len() {
            return Err(io::Error::other("the zygote ended (see the launcher's output)"));
        }
        match i64::from_le_bytes(reply) {
            pid if pid > 0 => Ok(Pid::from_raw(pid as i32)),
            errno => Err(io::Error::from_raw_os_error(-errno as i32)),
        }
    }

    /// Every node is forked: the zygote is told to end, and reaped (its copies of the gate's
    /// pipes close with it, which the gate waits for).
    pub(crate) fn finish(mut self) {
        self.end();
    }

    fn end(&mut self) {
        // End of file on the channel ends the zygote.
        let _ = nix::sys::socket::shutdown(self.channel.as_raw_fd(), nix::sys::socket::Shutdown::Both);
        let _ = nix::sys::wait::waitpid(self.pid, None);
        self.running = false;
    }
}

/// The zygotes of a launch: one, or for a launch of many nodes several, each forking every
/// k-th node (node `i` by zygote `i % k`), all in the first one's process group.
pub(crate) struct Zygotes {
    each: Vec<Zygote>,
}

impl Zygotes {
    /// Starts `k` zygotes for a launch of `nodes` (see [`Zygote::start`], and [`how_many`]).
    pub fn start(args: &NodeArgs, nodes: &[NodePlan], gate: Inherited, k: usize) -> io::Result<Zygotes> {
        let mut each: Vec<Zygote> = Vec::with_capacity(k.max(1));
        for _ in 0..k.max(1) {
            let group = each.first().map(Zygote::group);
            each.push(Zygote::start(args, nodes, gate, group)?);
        }
        Ok(Zygotes { each })
    }

    /// The process group of every zygote and node.
    pub(crate) fn group(&self) -> Pid {
        self.each[0].group()
    }

    /// How many requests the launcher may keep ahead of the replies: [`AHEAD`] for each zygote.
    pub(crate) fn ahead(&self) -> usize {
        AHEAD * self.each.len()
    }

    /// [`Zygote::request`] of node `index`, to the zygote that forks it.
    pub fn request(&self, index: usize, socket: RawFd) -> io::Result<()> {
        self.each[index % self.each.len()].request(index, socket)
    }

    /// [`Zygote::forked`] for node `index`: the replies must be read in the order of the indices.
    pub fn forked(&self, index: usize) -> io::Result<Pid> {
        self.each[index % self.each.len()].forked()
    }

    /// [`Zygote::finish`] of each.
    pub(crate) fn finish(self) {
        self.each.into_iter().for_each(Zygote::finish);
    }
}

/// How many nodes a zygote forks at most: measured at 8,192 and 16,384 nodes with the kernel's
/// DAMON monitor running (docs/startup.md, "Several zygotes"), 2,048 a zygote launched as fast
/// as with the monitor stopped; 4,096 did not, and 1,024 gained nothing more.
pub(crate) const PER_ZYGOTE: usize = 2048;

/// The variable that sets how many zygotes fork a launch, for measuring (and testing) them.
const ZYGOTES_VAR: &str = "COORDLAB_ZYGOTES";

/// The most zygotes the variable may ask for: each holds its own copy of the code in a large
/// launch (6.5 MiB), so thousands would exhaust the memory; 16 were measured.
const MOST_ZYGOTES: usize = 64;

/// How many zygotes fork a launch of `n` nodes: one per [`PER_ZYGOTE`] nodes, or as many as
/// `COORDLAB_ZYGOTES` says (at most one a node); an error names a value that is not a whole
/// number from 1 to [`MOST_ZYGOTES`].
pub(crate) fn how_many(n: usize) -> Result<usize, String> {
    zygotes_for(n, std::env::var_os(ZYGOTES_VAR).as_deref())
}

/// [`how_many`], given the variable's value.
fn zygotes_for(n: usize, var: Option<&std::ffi::OsStr>) -> Result<usize, String> {
    let k = match var {
        None => n.div_ceil(PER_ZYGOTE),
        Some(v) => match v.to_str().and_then(|v| v.trim().parse::<usize>().ok()) {
            Some(k) if (1..=MOST_ZYGOTES).contains(&k) => k,
            _ => {
                return Err(format!(
                    "{ZYGOTES_VAR}={} is not a number of zygotes (a whole number from 1 to {MOST_ZYGOTES})",
                    v.to_string_lossy()
                ))
            }
        },
    };
    Ok(k.clamp(1, n.max(1)))
}

impl Drop for Zygote {
    fn drop(&mut self) {
        if self.running {
            self.end();
        }
    }
}

/// The zygote's life: give back what it does not need, then fork one node per request until
/// the launcher closes the channel.
fn serve(
    args: &NodeArgs,
    nodes: &[NodePlan],
    channel: &OwnedFd,
    gate: Inherited,
    launcher: Pid,
    group: Option<Pid>,
) -> io::Result<()> {
    let _ = setpgid(Pid::from_raw(0), group.unwrap_or(Pid::from_raw(0)));
    // It dies with the launcher, like the nodes.
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(io::Error::from)?;
    if nix::unistd::getppid() != launcher {
        return Ok(());
    }
    // Every descriptor but stdio, the channel and the gate's pipes: the launcher's copies of the
    // nodes' sockets among them (their nodes get them over the channel).
    close_all_but(&mut [0, 1, 2, channel.as_raw_fd(), gate.go, gate.ready])?;
    // Moved to the lowest numbers: a fork copies the descriptor table up to the highest open
    // descriptor, and each node's close_range walks all of it (thousands of entries, since these
    // were opened after the nodes' sockets: a measured 6 % of a 4,096-node launch's CPU).
    let channel = renumber(channel.as_raw_fd())?;
    let gate = Inherited {
        go: renumber(gate.go)?.into_raw_fd(),
        ready: renumber(gate.ready)?.into_raw_fd(),
    };
    // Before the trim: the fastbins' chunks consolidated here, once, not by every node writing
    // to the heap pages it shares with this process.
    crate::node::tune_allocator();
    // The launcher's heap pages that are free go back to the system, so that no node counts them.
    // SAFETY: a plain call into the allocator of this single-threaded process.
    unsafe { libc::malloc_trim(0) };
    // Probed once here rather than in every node: the MAC's CPU-feature detection (`cpuid`,
    // slow in a VM) was 2 % of a 4,096-node launch's CPU. Its result is a static every node
    // inherits.
    std::hint::black_box(blake3::keyed_hash(&[0; 32], &[0; 64]));
    if super::fork_code::wanted(nodes.len()) {
        if let Err(e) = super::fork_code::share() {
            let _ = writeln!(io::stderr(), "coordlab: the nodes will map their code themselves ({e})");
        }
    }
    let warmed = nodes.len() >= super::fork_code::WORTH_IT && rehearse_once(args, nodes, launcher);
    let group = group.unwrap_or_else(Pid::this);
    loop {
        let Some((index, socket)) = receive(&channel)? else {
            return Ok(());
        };
        let reply = match nodes.get(index) {
            Some(node) => fork_node(args, node, socket.as_raw_fd(), gate, group, launcher, warmed).map_or_else(
                |e| -(e.raw_os_error().unwrap_or(libc::EIO) as i64),
                |pid| pid.as_raw() as i64,
            ),
            None => -(libc::EINVAL as i64),
        };
        drop(socket);
        nix::unistd::write(&channel, &reply.to_le_bytes()).map_err(io::Error::from)?;
    }
}

/// The node's start-up work that does not depend on which node it is, done once here so that
/// every node forked afterwards inherits it done: the human log's set-up (`env_logger` reads
/// the environment and builds its filter), and the rehearsal of the algorithm
/// (`node::warmup`) on the first node's neighbourhood. Profiled on a ring of 1,024 (perf,
/// DWARF call stacks), the rehearsal was 60 % of a forked node's CPU before its gate; what it
/// warms is shared memory after the fork: code (in the zygote's anonymous copy, see
/// `fork_code`), read-only data, lazily bound symbols, statics set on first use. Only for a
/// launch that large: a node of a smaller one maps its code page by page, so its own rehearsal
/// is what faults its code in before its first message. Returns whether it was done (a node
/// of a launch whose algorithm has no node to rehearse with rehearses itself).
fn rehearse_once(args: &NodeArgs, nodes: &[NodePlan], launcher: Pid) -> bool {
    let Some(first) = nodes.iter().find(|n| !args.is_resource(n.id)) else {
        return false;
    };
    let opts = args.options(first, true, -1, None, launcher);
    let mut setup = opts.setup;
    setup.restarted = false;
    setup.durable = None;
    let mut buf = [0u8; 64];
    crate::node::warmup::rehearse(&opts.algo, &setup, &mut buf);
    // After the rehearsal: a line it logged would reach the launcher's terminal (the zygote's
    // stderr), not a node's log.
    crate::node::logging::init();
    // What the rehearsal freed goes back to the system before any node is forked.
    // SAFETY: a plain call into the allocator of this single-threaded process.
    unsafe { libc::malloc_trim(0) };
    true
}

/// A copy of `fd` at the lowest free number (close-on-exec), the original closed.
fn renumber(fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: plain descriptor calls on a descriptor this process holds.
    let low = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
    if low < 0 {
        return Err(io::Error::last_os_error());
    }
    if low < fd {
        // SAFETY: as above; `fd` is not used again (its owner, if any, is never dropped: the
        // zygote ends with _exit).
        unsafe { libc::close(fd) };
    }
    // SAFETY: just made, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(low) })
}

/// One request of the launcher: a node's index and its socket; None at end of file.
fn receive(channel: &OwnedFd) -> io::Result<Option<(usize, OwnedFd)>> {
    let mut word = [0u8; 8];
    let mut space = nix::cmsg_space!([RawFd; 1]);
    let mut iov = [IoSliceMut::new(&mut word)];
    let msg = recvmsg::<()>(
        channel.as_raw_fd(),
        &mut iov,
        Some(&mut space),
        MsgFlags::MSG_CMSG_CLOEXEC,
    )
    .map_err(io::Error::from)?;
    if msg.bytes == 0 {
        return Ok(None);
    }
    let mut fd = None;
    for c in msg.cmsgs().map_err(io::Error::from)? {
        if let ControlMessageOwned::ScmRights(fds) = c {
            // SAFETY: received with this message, so this process owns it now.
            fd = fds.first().map(|&f| unsafe { OwnedFd::from_raw_fd(f) });
        }
    }
    let fd = fd.ok_or_else(|| io::Error::other("a request without its socket"))?;
    Ok(Some((u64::from_le_bytes(word) as usize, fd)))
}

/// Forks `node` as a child of the launcher (`CLONE_PARENT`) in the zygote's process group, its
/// output appended to its log, on `socket` and the start gate's pipes `gate`, inherited under
/// their numbers; every other descriptor is closed in the child.
fn fork_node(
    args: &NodeArgs,
    node: &NodePlan,
    socket: RawFd,
    gate: Inherited,
    group: Pid,
    launcher: Pid,
    warmed: bool,
) -> io::Result<Pid> {
    // SAFETY: clone(2) without CLONE_VM and without a new stack returns in both processes like
    // fork(2), the child with a copy of this single-threaded process's memory. It bypasses
    // glibc's fork wrapper, whose work (at-fork handlers, resetting locks other threads could
    // hold) has nothing to do in a process with one thread; glibc reads the thread id from the
    // kernel where it matters (raise, abort).
    let r = unsafe {
        libc::syscall(
            libc::SYS_clone,
            libc::CLONE_PARENT | libc::SIGCHLD,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    };
    match r {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            // First, so that what the node builds for itself is in its region (a large launch
            // is the warmed one).
            crate::node::arena::activate(crate::node::arena::prefault(warmed));
            // Opened here, in the child, so that the zygote goes on to the next fork meanwhile.
            let opened = args
                .open_log(node.id)
                .and_then(|log| Ok((log, std::fs::File::open("/dev/null")?)));
            let code = match opened
                .and_then(|(log, null)| become_node(log.as_raw_fd(), null.as_raw_fd(), socket, gate, group))
            {
                Ok(()) => run_node(args, node, socket, gate, launcher, warmed),
                Err(e) => {
                    let _ = writeln!(io::stderr(), "coordlab: cannot start node {}: {e}", node.id);
                    1
                }
            };
            let _ = io::stderr().flush();
            // SAFETY: ends the child without running the zygote's exit-time work.
            unsafe { libc::_exit(code) }
        }
        pid => Ok(Pid::from_raw(pid as i32)),
    }
}

/// The node's life, in the forked child; returns its exit status.
fn run_node(args: &NodeArgs, node: &NodePlan, socket: RawFd, gate: Inherited, launcher: Pid, warmed: bool) -> i32 {
    crate::node::name_node(node.id);
    // Built here, in the child, so that the zygote goes on to the next fork: the node's own
    // options; its member and address tables are the ones built before the fork, shared.
    let mut opts = args.options(node, node.initiator, socket, Some(gate), launcher);
    opts.warmed = warmed;
    if !warmed {
        crate::node::logging::init();
    }
    let run = match args.is_resource(node.id) {
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

/// In the child: the zygote's process group, stdin from /dev/null, stdout and stderr to its
/// log, every descriptor closed but those and the socket and the gate's pipes, every signal
/// unblocked (the node blocks its own).
fn become_node(log: RawFd, null: RawFd, socket: RawFd, gate: Inherited, group: Pid) -> io::Result<()> {
    if setpgid(Pid::from_raw(0), group).is_err() {
        setpgid(Pid::from_raw(0), Pid::from_raw(0)).map_err(io::Error::from)?;
    }
    for (from, to) in [(null, 0), (log, 1), (log, 2)] {
        // SAFETY: plain descriptor calls on descriptors this process holds.
        if unsafe { libc::dup2(from, to) } < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    close_all_but(&mut [0, 1, 2, socket, gate.go, gate.ready])?;
    for fd in [socket, gate.go, gate.ready] {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn a_zygote_forks_up_to_2048_nodes_unless_the_variable_says_how_many() {
        let counts: Vec<usize> = [1, 5, 2048, 2049, 4096, 8192, 16384]
            .iter()
            .map(|&n| zygotes_for(n, None).unwrap())
            .collect();
        assert_eq!(counts, [1, 1, 1, 2, 2, 4, 8]);
        assert_eq!(zygotes_for(16384, Some(OsStr::new("1"))), Ok(1));
        assert_eq!(zygotes_for(10, Some(OsStr::new(" 3 "))), Ok(3));
        // No more zygotes than nodes.
        assert_eq!(zygotes_for(4, Some(OsStr::new("9"))), Ok(4));
        assert_eq!(zygotes_for(16384, Some(OsStr::new("64"))), Ok(64));
        for bad in ["0", "x", "", "-2", "2.5", "65", "16384"] {
            let e = zygotes_for(10, Some(OsStr::new(bad))).unwrap_err();
            assert!(e.contains(&format!("COORDLAB_ZYGOTES={bad} is not")), "{e}");
        }
    }
}
