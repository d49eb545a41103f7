//! The real process: one UDP socket, one mio `Poll`, the keyed timers' earliest deadline as
//! the poll timeout, and a signalfd for a clean stop.
//!
//! Loop: poll -> read at most [`BUDGET`] datagrams (each is checked, cheapest check first, and
//! handed to the algorithm; its answers leave at once) -> fire expired timers -> write the
//! trace -> repeat. A socket with datagrams left over is read again after the timers, without
//! waiting (mio readiness is edge-triggered, so "more left" is remembered here): under a flood
//! the timers and heartbeats are served between batches instead of never. `EINTR` means poll
//! again. A failed `send_to` is a lost datagram.

use super::config::NodeOptions;
use super::keyfile;
use super::logging::HumanLog;
use super::netfilter::{NetFilter, Verdict};
use super::recv_batch::{timestamps, RecvBatch, SLOTS};
use super::send_batch::SendBatch;
use super::signals::{SignalSource, STOP};
use super::socket::{adopt_udp, bind_udp};
use super::stored::{load_durable, state_path, StateFile};
use crate::algo::{Algorithm, Setup};
use crate::catalog::{self as registry, Runner};
use crate::engine::bundle::Packer;
use crate::engine::host::{Host, Now};
use crate::engine::key::Key;
use crate::error::{failed, usage, write_failed, CliError};
use crate::trace::{wall_us, Event, MappedTrace};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};
use std::time::{Duration, Instant};

/// The launcher's "the network rules changed" (see `netfilter`).
const NET_RELOAD: nix::sys::signal::Signal = nix::sys::signal::Signal::SIGUSR1;
const SOCKET: Token = Token(0);
const SIGNALS: Token = Token(1);
const GO: Token = Token(2);
/// Datagrams read per wakeup before the timers get their turn.
const BUDGET: usize = 256;

/// Runs the node described by `opts` until SIGTERM/SIGINT/SIGHUP.
pub fn run_node(opts: NodeOptions) -> Result<(), CliError> {
    begin(&opts)?;
    // For a node started as `coordlab node`: in a forked one there is nothing left to
    // consolidate.
    super::tune_allocator();
    let mut setup = opts.setup.clone();
    setup.boot = wall_us();
    let name = opts.algo.clone();
    registry::check_setup(&name, &setup).map_err(usage)?;
    load_durable(&opts, &mut setup)?;
    let key = run_key(&opts)?;
    registry::dispatch(&name, &setup, ProcessRunner { opts, key }).unwrap_or_else(|| {
        Err(usage(format!(
            "unknown algorithm '{name}' (known: {})",
            registry::names()
        )))
    })
}

/// Takes ownership of descriptor `fd`, inherited from the launcher for `flag`.
fn adopt_fd(fd: i32, flag: &str) -> Result<std::fs::File, CliError> {
    // SAFETY: checked open by the fcntl below before it is owned; inherited for this use only.
    let open = fd >= 3
        && nix::fcntl::fcntl(
            unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) },
            nix::fcntl::FcntlArg::F_GETFD,
        )
        .is_ok();
    if !open {
        return Err(usage(format!(
            "{flag} {fd}: no such open descriptor (the launcher passes it)"
        )));
    }
    // SAFETY: open (checked above), and nothing else in this process owns it.
    Ok(unsafe { std::fs::File::from_raw_fd(fd) })
}

/// Takes over the launcher's go pipe (read end, inherited as `fd`), non-blocking, in `poll`.
fn adopt_go(fd: i32, poll: &Poll) -> Result<std::fs::File, CliError> {
    let f = adopt_fd(fd, "--go-fd")?;
    let flags =
        nix::fcntl::fcntl(&f, nix::fcntl::FcntlArg::F_GETFL).map_err(|e| failed(format!("--go-fd {fd}: {e}")))?;
    let flags = nix::fcntl::OFlag::from_bits_truncate(flags) | nix::fcntl::OFlag::O_NONBLOCK;
    nix::fcntl::fcntl(&f, nix::fcntl::FcntlArg::F_SETFL(flags)).map_err(|e| failed(format!("--go-fd {fd}: {e}")))?;
    poll.registry()
        .register(&mut SourceFd(&f.as_raw_fd()), GO, Interest::READABLE)
        .map_err(|e| failed(format!("--go-fd {fd}: cannot poll it: {e}")))?;
    Ok(f)
}

/// Makes the kernel SIGKILL this node when its parent, the launcher `pid`, dies; fails if it
/// is already gone (then nobody would send the signal).
fn die_with(pid: i32) -> Result<(), CliError> {
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
        .map_err(|e| failed(format!("cannot set the parent-death signal: {e}")))?;
    if nix::unistd::getppid().as_raw() != pid {
        return Err(failed(format!(
            "the launcher (pid {pid}) ended before this node started"
        )));
    }
    Ok(())
}

/// What a node and the shared resource do first: their allocations into a region of their own
/// (a forked node has it already), the launcher's death followed, and their own id found among
/// the members.
fn begin(opts: &NodeOptions) -> Result<(), CliError> {
    super::arena::activate(super::arena::prefault(opts.setup.members.len() >= super::LARGE_LAUNCH));
    if let Some(pid) = opts.parent_pid {
        die_with(pid)?;
    }
    if !opts.addrs.contains_key(&opts.setup.me) {
        return Err(usage(format!("node {} is not in --members", opts.setup.me)));
    }
    Ok(())
}

/// The run's key, from `--key` (after a node's setup is checked: a bad `--set` is said first).
fn run_key(opts: &NodeOptions) -> Result<Key, CliError> {
    let key_file = opts.key_file.as_deref().ok_or_else(|| {
        usage("--key FILE is required: every datagram is authenticated with the run's key (the launcher writes one per run: logs/<run>/key)")
    })?;
    keyfile::load(key_file).map_err(usage)
}

/// Runs the shared resource of a mutual-exclusion run (`coordlab resource`) until
/// SIGTERM/SIGINT/SIGHUP: the same engine and runtime as a node, its trace in `resource.jsonl`.
pub fn run_resource(mut opts: NodeOptions) -> Result<(), CliError> {
    begin(&opts)?;
    opts.algo = RESOURCE_ALGO.into();
    let key = run_key(&opts)?;
    let mut setup = opts.setup.clone();
    setup.boot = wall_us();
    load_durable(&opts, &mut setup)?;
    let resource = crate::algo::mutex::ResourceNode::new(&setup).map_err(usage)?;
    ProcessRunner { opts, key }.run(&setup, resource)
}

/// The name the resource runs under in its `start` event; its trace is `resource.jsonl`.
pub const RESOURCE_ALGO: &str = "resource";

struct ProcessRunner {
    opts: NodeOptions,
    key: Key,
}

impl Runner for ProcessRunner {
    type Output = Result<(), CliError>;
    fn run<A: Algorithm>(self, setup: &Setup, a: A) -> Self::Output {
        // The boot id: the start time, so a restarted node's boot is later and peers open a
        // new replay window for it instead of refusing its datagrams as replays.
        let host = Host::with_key(setup, a, &self.key, setup.boot);
        let fsync = crate::engine::durable::fsync_wanted(setup);
        Process::new(self.opts, host, fsync)?.run()
    }
}

#[path = "runtime_pump.rs"]
mod pump;

/// One node process's I/O around its host.
struct Process<A: Algorithm> {
    opts: NodeOptions,
    host: Host<A>,
    socket: mio::net::UdpSocket,
    poll: Poll,
    signals: SignalSource,
    trace: Option<MappedTrace>,
    /// The first failed trace write: the node stops with exit status 3 (the launcher's sign
    /// that the run's evidence is cut, a full disk most likely).
    trace_failed: Option<String>,
    human: HumanLog,
    /// When the algorithm and its clock started: at once, or when the launcher said every
    /// node has warmed up (`--go-fd`).
    t0: Option<Instant>,
    /// The read end of the launcher's go pipe, until it reads end-of-file.
    go: Option<std::fs::File>,
    /// The write end of the launcher's ready pipe, until this node has warmed up.
    ready: Option<std::fs::File>,
    /// What `coordlab net` does to incoming datagrams (user backend, and delay in both).
    net: NetFilter,
    /// The headers of the last batch of datagrams sent, kept for the next.
    sender: SendBatch,
    /// The buffers of the last step's bundles, kept for the next.
    packer: Packer,
    /// Where persisted state goes (None: no log directory, nothing survives a restart).
    state: Option<StateFile>,
}

impl<A: Algorithm> Process<A> {
    fn new(opts: NodeOptions, host: Host<A>, fsync: bool) -> Result<Self, CliError> {
        let mut wanted = STOP.to_vec();
        wanted.push(NET_RELOAD);
        let signals = SignalSource::new(&wanted)?;
        // The launcher ignores SIGUSR1 and its children inherit that, so that one sent before
        // this point cannot kill a node; now blocked, it may take its default again and queue
        // on the signalfd. One lost before this point is harmless: the rules are read below.
        // SAFETY: restores a default disposition; no handler runs.
        unsafe { nix::sys::signal::signal(NET_RELOAD, nix::sys::signal::SigHandler::SigDfl) }
            .map_err(|e| failed(format!("cannot reset SIGUSR1: {e}")))?;
        let mut socket = match opts.fd {
            Some(fd) => adopt_udp(fd, opts.listen)?,
            None => bind_udp(opts.listen)?,
        };
        let poll = Poll::new().map_err(|e| failed(format!("cannot create a poll: {e}")))?;
        poll.registry()
            .register(&mut socket, SOCKET, Interest::READABLE)
            .and_then(|_| {
                poll.registry()
                    .register(&mut SourceFd(&signals.raw_fd()), SIGNALS, Interest::READABLE)
            })
            .map_err(|e| failed(format!("cannot register with the poll: {e}")))?;
        let trace = match &opts.log_dir {
            Some(dir) => {
                let path = if opts.algo == RESOURCE_ALGO {
                    dir.join("resource.jsonl")
                } else {
                    dir.join(format!("node-{}.jsonl", opts.setup.me))
                };
                Some(MappedTrace::append(&path).map_err(|e| failed(format!("cannot open {}: {e}", path.display())))?)
            }
            None => None,
        };
        let go = match opts.go_fd {
            Some(fd) => Some(adopt_go(fd, &poll)?),
            None => None,
        };
        let ready = match opts.ready_fd {
            Some(fd) => Some(adopt_fd(fd, "--ready-fd")?),
            None => None,
        };
        let human = HumanLog::new(opts.setup.me);
        // The network's rules never name the shared resource (`cluster::net_members`), and the
        // launcher tells it of no change: it reads none. A resource restarted under a delay
        // once read that one rule at its start and kept it for the rest of the run, holding
        // BEGINs and ENDs with jitter, so ENDs overtook their BEGINs and it counted hundreds
        // of holders that had left (`soak-all.sh 15 5 49`, Ricart-Agrawala and Lamport).
        let rules_dir = opts.log_dir.clone().filter(|_| opts.algo != RESOURCE_ALGO);
        let mut net = NetFilter::new(opts.setup.me, rules_dir, opts.setup.seed ^ wall_us());
        if let Some(line) = net.reload() {
            log::info!("{line}");
        }
        let state = state_path(&opts).map(|p| StateFile::new(p, fsync));
        let process = Process {
            opts,
            host,
            socket,
            poll,
            signals,
            trace,
            trace_failed: None,
            human,
            t0: go.is_none().then(Instant::now),
            go,
            ready,
            net,
            state,
            sender: SendBatch::default(),
            packer: Packer::default(),
        };
        if process.net.delays {
            process.stamp_arrivals();
        }
        Ok(process)
    }

    fn now(&self) -> Now {
        // The algorithms time round trips on `mono`; the checker judges their claims on `t`
        // (`wall_us`). Read apart, a preemption between the two readings puts them tens of
        // microseconds (or, on a loaded machine, milliseconds) apart, more than a loopback
        // claim's bound (Cristian's RTT/2, ~10 us) and its 3 us tolerance: take a pair read
        // within 2 us of each other (mono before and after the wall reading).
        let mono = || self.t0.map_or(Duration::ZERO, |t| t.elapsed());
        let mut best: Option<(Duration, Now)> = None;
        for _ in 0..8 {
            let before = mono();
            let wall_us = wall_us();
            let after = mono();
            let spread = after.saturating_sub(before);
            if best.as_ref().is_none_or(|(s, _)| spread < *s) {
                best = Some((spread, Now { mono: before, wall_us }));
            }
            if spread <= Duration::from_micros(2) {
                break;
            }
        }
        best.expect("at least one reading").1
    }

    fn run(mut self) -> Result<(), CliError> {
        let start = Event::Start {
            addr: self.opts.listen.to_string(),
            algo: self.opts.algo.clone(),
            pid: std::process::id(),
            peers: self.opts.setup.neighbours.clone(),
        };
        let mut start = Some(start);
        let mut batch = RecvBatch::new();
        // Whatever the first message would cost beyond a steady-state one is paid here, before
        // the algorithm starts (see `warmup`): datagrams arriving meanwhile wait in the socket.
        match self.opts.warmed {
            true => super::warmup::touch(batch.first_slot()),
            false => super::warmup::rehearse(&self.opts.algo, &self.opts.setup, batch.first_slot()),
        }
        // The rehearsal's throwaway copies (each began as a copy of this node's setup, with
        // every member) and the options built after the fork leave free pages amid the heap,
        // which glibc keeps: given back in large launches, as every node of a large ring would
        // otherwise hold them for its whole life. Not in small ones: the first messages would
        // fault those pages in again (perf: 4% of a node's CPU on the ELECTION lap of a ring
        // of 64, in `_int_malloc`), and a few dozen nodes' pages are no matter.
        if self.opts.setup.members.len() >= super::LARGE_LAUNCH {
            // SAFETY: a plain call into the allocator; this node runs one thread.
            unsafe { nix::libc::malloc_trim(0) };
        }
        // The state file is made now, not by the first store: that store is on the algorithm's
        // path (a Chang-Roberts node's first ELECTION), and making a file costs an inode. Only
        // for an algorithm seen persisting in its rehearsal: the others never pay for the file.
        if let (Some(state), true) = (&mut self.state, super::warmup::rehearsal_persisted()) {
            if let Err(e) = state.prepare() {
                log::error!("cannot make the state file: {e}");
            }
        }
        // Warmed up: the launcher lets every node start once all have closed this.
        drop(self.ready.take());
        let mut events = Events::with_capacity(64);
        let mut more = false;
        loop {
            if self.t0.is_some() {
                if let Some(start) = start.take() {
                    let now = self.now();
                    self.host.start(now, start);
                    self.pump();
                    self.flush_trace();
                    // Datagrams that came before the start waited in the socket: read them.
                    more = true;
                }
            }
            let timeout = match self.t0 {
                _ if more => Some(Duration::ZERO),
                Some(t0) => {
                    let timers = self.host.next_deadline().map(|d| d.saturating_sub(t0.elapsed()));
                    let held = self.net.next_due().map(|d| d.saturating_duration_since(Instant::now()));
                    match (timers, held) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    }
                }
                // Before the go the algorithm has not started: it has set no timer.
                None => None,
            };
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(failed(format!("poll failed: {e}")));
            }
            let mut stopping = false;
            let mut readable = std::mem::take(&mut more);
            for ev in events.iter() {
                match ev.token() {
                    SOCKET => readable = true,
                    SIGNALS => {
                        for s in self.signals.drain() {
                            if s == NET_RELOAD {
                                // Before the socket is read: datagrams from now on meet the new rules.
                                let delayed = self.net.delays;
                                if let Some(line) = self.net.reload() {
                                    log::info!("{line}");
                                }
                                if self.net.delays != delayed {
                                    self.stamp_arrivals();
                                }
                            } else {
                                stopping = true;
                            }
                        }
                    }
                    GO => self.check_go(),
                    _ => {}
                }
            }
            if stopping {
                if let Some(start) = start.take() {
                    // Stopped before the go (a launch that failed): the trace still begins
                    // with the start.
                    self.t0.get_or_insert_with(Instant::now);
                    let now = self.now();
                    self.host.start(now, start);
                }
            }
            // Before its start, the node leaves datagrams in the socket (read once it starts).
            if readable && start.is_none() {
                more = self.read_socket(&mut batch);
            }
            if self.net.next_due().is_some() {
                self.deliver_held();
            }
            // Timers are checked against the clock after every wakeup, never inferred from
            // an empty poll: a wakeup can be early, late or spurious.
            let now = self.now();
            self.host.fire_timers(now);
            self.pump();
            self.flush_trace();
            if let Some(e) = self.trace_failed.take() {
                // Running on would only produce a run whose trace says less than happened.
                return Err(write_failed(format!("cannot write the trace: {e}; stopping")));
            }
            if stopping {
                let now = self.now();
                self.host.stop(now);
                self.pump();
                self.flush_trace();
                if let Some(Err(e)) = self.trace.as_mut().map(MappedTrace::finish) {
                    self.trace_failed.get_or_insert(e.to_string());
                }
                if let Some(e) = self.trace_failed.take() {
                    return Err(write_failed(format!("cannot write the trace: {e}")));
                }
                // The trace is cut to what was written and the human log went out with each
                // step: the process's end frees the rest, so its destructors (the algorithm's
                // tables, the buffers' unmapping) are skipped, thousands of nodes stopping at once.
                std::mem::forget(batch);
                std::mem::forget(self);
                return Ok(());
            }
        }
    }

    /// The go pipe reads end-of-file once every node of the launch has warmed up and the
    /// launcher closed its end: the algorithm and its clock start then.
    fn check_go(&mut self) {
        let Some(f) = &mut self.go else { return };
        let mut b = [0u8; 16];
        match io::Read::read(f, &mut b) {
            Ok(0) => {}
            Ok(_) => return, // nothing is ever written; ignore
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => return,
            Err(e) => log::warn!("the go pipe failed ({e}): starting now"),
        }
        if let Some(f) = self.go.take() {
            let _ = self.poll.registry().deregister(&mut SourceFd(&f.as_raw_fd()));
        }
        self.t0 = Some(Instant::now());
    }

    /// Reads and handles at most [`BUDGET`] datagrams (a batch more); true if the socket may
    /// hold more.
    fn read_socket(&mut self, batch: &mut RecvBatch) -> bool {
        let fd = self.socket.as_raw_fd();
        let mut handled = 0;
        while handled < BUDGET {
            let n = match batch.recv(fd, self.net.delays) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    log::warn!("recvmmsg failed: {e}");
                    return false;
                }
            };
            for i in 0..n {
                let (bytes, src) = batch.get(i);
                let Some(src) = src else { continue };
                // One clock reading per datagram (two vDSO calls, tens of nanoseconds): a
                // reply handled in the same batch as its request was sent would otherwise
                // show a round trip of zero, and its events the batch's stale true time,
                // which the clock checker and Cristian's bound cannot tolerate.
                let now = self.now();
                let from = self.opts.addrs.id_at(&src);
                // With no rule in force the filter costs one branch (`bench --only net`).
                match self.net.admit(from, bytes, src, || batch.arrived(i)) {
                    Verdict::Pass => {}
                    Verdict::Drop => {
                        self.host.count_net_drop();
                        continue;
                    }
                    Verdict::Held => continue,
                }
                self.host.deliver(now, from, bytes, src);
                // Timers the step set to fire at once (a hold or think of 0 ms) go out with it:
                // a mutual-exclusion holder's BEGIN, END and next messages leave in one
                // `sendmmsg`, and the resource may hear BEGIN and END in one wake-up.
                self.host.fire_set_now(now);
                self.pump();
            }
            if n < SLOTS {
                // Found empty: the next datagram is a new edge for the poll.
                return false;
            }
            handled += n;
        }
        true
    }

    /// Has the kernel stamp each datagram's arrival while some rule delays (the delay runs
    /// from it), and not otherwise.
    fn stamp_arrivals(&self) {
        if let Err(e) = timestamps(self.socket.as_raw_fd(), self.net.delays) {
            log::warn!("cannot have arrivals stamped ({e}): a delay runs from a datagram's reading");
        }
    }

    /// Hands the engine every held datagram now due.
    fn deliver_held(&mut self) {
        while let Some((from, src, bytes)) = self.net.due(Instant::now()) {
            let now = self.now();
            self.host.deliver(now, from, &bytes, src);
            self.pump();
        }
    }
}
