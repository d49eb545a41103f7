//! The launcher's one loop: console lines from stdin, commands on the control socket, signals
//! from a signalfd, and a 2-50 ms tick (`tick_every`) that reads the nodes' traces, reaps exits
//! and steps the goal.

use super::console::{self, Command, HELP};
use super::control::{Incoming, Server, ERROR_PREFIX, SOCKET_NAME};
use super::fork;
use super::goal::{Ending, Goal};
use super::narrate::Narrator;
use super::net::{Backend, NetControl};
use super::nodes::Fleet;
use super::plan::Plan;
use super::prompt::Prompt;
use super::rundir;
use super::schedule::Schedule;
use super::signals::LauncherSignals;
use super::sockets;
use super::spawn::NodeArgs;
use super::{LaunchOptions, Layout};
use crate::error::{failed, usage, CliError};
use crate::node::keyfile;
use crate::trace::{wall_us, RunInfo, RunNode};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use nix::poll::{PollFd, PollFlags, PollTimeout};
use std::io;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::path::Path;
use std::time::{Duration, Instant};

mod commands;

const STDIN: Token = Token(0);
const SIGNALS: Token = Token(1);
const CONTROL: Token = Token(2);
const PROMPT: Token = Token(3);
/// Control connections get tokens from here up.
const FIRST_CONN: usize = 16;
/// What to do without a console.
const NO_CONSOLE: &str =
    "no console input: use `scripts/coordlab status`, `scripts/coordlab pause N`, ... from another terminal, or Ctrl-C to stop";
/// The most a tick spends reading and parsing the nodes' traces. A ring of 64 under fixed's
/// sweep writes about 40 MB of trace a second; read whole every tick, it made a schedule's
/// kills 17 s late on 2 cores.
const READ_BUDGET: Duration = Duration::from_millis(20);

/// A scheduled fault this late is said to be late.
const LATE: Duration = Duration::from_millis(100);

/// How often traces are read and the goal is stepped, for a launch of `n` nodes: often, so that
/// `--until elected` or `done` ends within a few milliseconds of the goal, but at most about a
/// fifth of the launcher's time spent looking at traces that did not grow (a read of a few
/// bytes each, ~2 us). Below 100 nodes, 100 us a node: a launch of 20 then notices its goal
/// 1 ms after it holds on average rather than 5, which is a twentieth of a Ricart-Agrawala
/// run of 20 x 20.
fn tick_every(n: usize) -> Duration {
    let n = n as u64;
    Duration::from_micros((100 * n).clamp(2_000, 10_000).max((10 * n).min(50_000)))
}

/// Launches `plan` and runs it to its end; returns the exit status.
pub fn run(opts: LaunchOptions, plan: Plan, backend: Backend, schedule: Schedule) -> Result<i32, CliError> {
    // SIGUSR1 tells a node the network rules changed (see `node::netfilter`). Ignored here, and
    // so in every child until it blocks the signal for its signalfd: one sent to a node still
    // starting cannot kill it.
    // SAFETY: sets a disposition, installs no handler.
    let _ =
        unsafe { nix::sys::signal::signal(nix::sys::signal::Signal::SIGUSR1, nix::sys::signal::SigHandler::SigIgn) };
    // Blocked before any child exists, so no SIGCHLD or Ctrl-C can slip past the signalfd.
    let signals = LauncherSignals::new()?;
    let n = plan.nodes.len();
    let zygotes = fork::how_many(n).map_err(usage)?;
    // Limits and sockets first: a launch that cannot fit, or a busy port, leaves nothing behind.
    sockets::raise_limits(n)?;
    let mut plan = plan;
    super::phases::mark("planned");
    let bound = sockets::bind_all(&mut plan, opts.base_port)?;
    super::phases::mark("bound");
    // No start margin: every socket is bound already, so a datagram sent to a node that is not
    // reading yet waits in its buffer; every node starts once all have warmed up (`gate`).
    let launched_us = wall_us();
    let start_us = launched_us;

    let dir = rundir::create(&opts.logs, launched_us, opts.topology.noun(), n, &opts.algo)?;
    let key_path = match &opts.key {
        Some(path) => path.clone(),
        None => {
            let path = dir.join(keyfile::KEY_FILE);
            keyfile::write(&path, &keyfile::generate().map_err(failed)?).map_err(failed)?;
            path
        }
    };
    // Before any node, and before the start gate's pipes exist (the table's watchdog must not
    // hold them open): a table must exist before a rule can go in it.
    super::phases::mark("key");
    let net = NetControl::new(backend, &dir, &super::net_members(&opts, &plan)).map_err(failed)?;
    super::phases::mark("net");
    let args =
        NodeArgs::new(&opts, &plan, &dir, &key_path).map_err(|e| failed(format!("cannot find my own binary: {e}")))?;
    super::phases::mark("args");
    // Before the launcher grows (run.json, every node's view): see `fork`. Without one thread
    // (a library started one), or if it cannot start, nodes are exec'd instead.
    // The start gate's pipes exist before the zygote, which hands them down to every node.
    let gate = super::gate::Gate::new().map_err(failed)?;
    let zygote = match fork::single_threaded() {
        true => fork::Zygotes::start(&args, &plan.nodes, gate.inherited(), zygotes)
            .map_err(|e| eprintln!("coordlab: cannot fork the zygote ({e}); starting nodes by exec"))
            .ok(),
        false => None,
    };
    super::phases::mark("zygote");
    let sock = dir.join(SOCKET_NAME);
    let server = Server::bind(&sock).map_err(|e| failed(format!("cannot listen on {}: {e}", sock.display())))?;
    let info = RunInfo {
        algo: opts.algo.clone(),
        topology: plan.topology.clone(),
        nodes: plan
            .nodes
            .iter()
            .map(|p| RunNode {
                id: p.id,
                addr: p.addr.to_string(),
                peers: p.neighbours.clone(),
            })
            .collect(),
        start_us,
        options: options_json(&opts, backend),
        control: Some(std::path::absolute(&sock).unwrap_or(sock).display().to_string()),
    };
    rundir::write_info(&dir, &info)?;
    rundir::point_latest(&opts.logs, &dir)?;

    let mut fleet = Fleet::new(&plan.nodes, args, &dir, start_us)
        .map_err(|e| failed(format!("cannot write {}: {e}", dir.join("faults.jsonl").display())))?;
    fleet.progress = super::progress::progress(&opts.algo, &plan.set);
    fleet.defer_messages_if_unwatched();
    super::phases::mark("run-dir");
    if let Err(e) = fleet.spawn_all(bound, zygote, gate) {
        fleet.stop_all();
        let _ = crate::check::check(&dir);
        return Err(failed(e));
    }
    // The goal's clock (its patience, `--duration`) starts with the nodes' clocks: once all are
    // spawned (see `Fleet::spawn_all`), which takes seconds for thousands of nodes.
    let began = Instant::now();
    let goal = Goal::new(&plan, Duration::from_millis(opts.timeout_ms), began);
    banner(&opts, &plan, &dir, &goal);
    match net.table_name() {
        Some(table) => say!("network faults: kernel backend (nftables table inet {table}; delay in the nodes)"),
        None => say!("network faults: user backend (each node's receive filter)"),
    }
    if !schedule.is_empty() {
        say!("fault schedule: {} actions", schedule.entries.len());
    }
    // A demo tells its own story; --quiet keeps the terse view.
    let narrator = (!opts.quiet && !matches!(goal, Goal::Demo(_))).then(Narrator::default);
    let faults = Injector { net, schedule, began };
    let mut launcher = Launcher::new(fleet, signals, server, goal, narrator, faults)?;
    launcher.run_loop()
}

fn options_json(o: &LaunchOptions, backend: Backend) -> serde_json::Value {
    serde_json::json!({
        "n": o.n,
        "topology": o.topology.label(),
        "algo": o.algo,
        "ids": o.ids,
        "initiators": o.initiators,
        "heartbeat_ms": o.heartbeat_ms,
        "timeout_ms": o.timeout_ms,
        "base_port": o.base_port,
        "duration": o.duration,
        "until": o.until,
        "seed": o.seed,
        "logs": o.logs,
        "demo": o.demo,
        "set": o.set,
        "net": backend.name(),
        "faults": o.faults.as_ref().map(|f| format!("{f:?}")),
    })
}

fn banner(o: &LaunchOptions, plan: &Plan, dir: &Path, goal: &Goal) {
    let mutex = crate::catalog::is_mutex(&o.algo);
    let shape = match &o.topology {
        Layout::Ring => "ring".to_string(),
        Layout::Mesh(_) => {
            // The plan's graph: a story may build its own (`--demo link-cut`).
            let spec = plan.topology.strip_prefix("mesh:").unwrap_or(&plan.topology);
            format!("mesh ({spec}: {})", links_words(plan, mutex))
        }
    };
    let resource = if mutex {
        format!(", plus the shared resource (node {})", super::RESOURCE_NODE)
    } else {
        String::new()
    };
    let scaled = o.timing_note.as_ref().map_or(String::new(), |s| format!(": {s}"));
    say!(
        "{shape} of {} nodes{resource} running {} (heartbeat {} ms, timeout {} ms{scaled}); logs in {}",
        o.n,
        o.algo,
        o.heartbeat_ms,
        o.timeout_ms,
        dir.display()
    );
    if goal.is_console() {
        say!(
            "console: pause N, resume N, kill N, restart N, status, logs N, help, quit \
             (or `scripts/coordlab status` etc. from another terminal)"
        );
    }
}

/// `6 links between the 4 nodes`: each pair of nodes that may talk counted once (a one-way
/// link once too), the shared resource's links to every node left out (the banner names it).
fn links_words(plan: &Plan, mutex: bool) -> String {
    let nodes: Vec<_> = plan
        .nodes
        .iter()
        .filter(|p| !(mutex && p.id == super::RESOURCE_NODE))
        .collect();
    let pairs: std::collections::BTreeSet<(u64, u64)> = nodes
        .iter()
        .flat_map(|p| {
            p.neighbours
                .iter()
                .filter(|&&q| !(mutex && q == super::RESOURCE_NODE))
                .map(move |&q| (p.id.min(q), p.id.max(q)))
        })
        .collect();
    format!("{} links between the {} nodes", pairs.len(), nodes.len())
}

/// The running launch: the fleet and every source of input.
struct Launcher {
    fleet: Fleet,
    signals: LauncherSignals,
    server: Server,
    goal: Goal,
    poll: Poll,
    stdin_open: bool,
    stdin_buf: Vec<u8>,
    next_conn: usize,
    narrator: Option<Narrator>,
    prompt: Option<Prompt>,
    net: NetControl,
    schedule: Schedule,
    /// When the schedule's clock started (with the goal's).
    began: Instant,
}

/// The network and the fault schedule, handed to the launcher's loop.
struct Injector {
    net: NetControl,
    schedule: Schedule,
    began: Instant,
}

impl Launcher {
    fn new(
        mut fleet: Fleet,
        signals: LauncherSignals,
        server: Server,
        goal: Goal,
        narrator: Option<Narrator>,
        faults: Injector,
    ) -> Result<Self, CliError> {
        let Injector { net, schedule, began } = faults;
        let setup = || -> io::Result<Poll> {
            let poll = Poll::new()?;
            poll.registry()
                .register(&mut SourceFd(&signals.raw_fd()), SIGNALS, Interest::READABLE)?;
            poll.registry().register(
                &mut SourceFd(&server.listener().as_raw_fd()),
                CONTROL,
                Interest::READABLE,
            )?;
            Ok(poll)
        };
        let poll = match setup() {
            Ok(p) => p,
            Err(e) => {
                fleet.stop_all();
                let _ = crate::check::check(&fleet.dir);
                return Err(failed(format!("cannot set up the launcher's poll: {e}")));
            }
        };
        // On a terminal, a prompt with line editing reads the console in its own thread.
        let prompt = match goal.is_console() {
            true => mio::Waker::new(poll.registry(), PROMPT)
                .ok()
                .and_then(|w| Prompt::start(std::sync::Arc::new(w))),
            false => None,
        };
        // A terminal or a pipe can be polled; /dev/null or a file cannot (EPERM): then there is
        // no console, and the run goes on (CI runs with no stdin).
        let stdin_open = prompt.is_none()
            && poll
                .registry()
                .register(&mut SourceFd(&io::stdin().as_raw_fd()), STDIN, Interest::READABLE)
                .is_ok();
        if !stdin_open && prompt.is_none() && goal.is_console() {
            say!("(stdin cannot be polled) {NO_CONSOLE}");
        }
        Ok(Launcher {
            fleet,
            signals,
            server,
            goal,
            poll,
            stdin_open,
            stdin_buf: Vec::new(),
            next_conn: FIRST_CONN,
            narrator,
            prompt,
            net,
            schedule,
            began,
        })
    }

    /// Runs until the goal, a `quit` or a stop signal ends the run; always ends with every
    /// node stopped and reaped.
    fn run_loop(&mut self) -> Result<i32, CliError> {
        let mut events = Events::with_capacity(64);
        let mut next_tick = Instant::now();
        let ending = loop {
            let wait = next_tick.saturating_duration_since(Instant::now());
            if let Err(e) = self.poll.poll(&mut events, Some(wait)) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                self.fleet.stop_all();
                return Err(failed(format!("the launcher's poll failed: {e}")));
            }
            let mut ending = None;
            for ev in events.iter() {
                let found = match ev.token() {
                    STDIN => self.read_stdin(),
                    PROMPT => self.read_prompt(),
                    SIGNALS => self.on_signals(),
                    CONTROL => self.accept(),
                    Token(k) => self.on_connection(k),
                };
                ending = ending.or(found);
            }
            if ending.is_none() && Instant::now() >= next_tick {
                next_tick = Instant::now() + tick_every(self.fleet.nodes.len());
                ending = self.tick();
            }
            if let Some(e) = ending {
                break e;
            }
        };
        Ok(self.finish(ending))
    }

    fn tick(&mut self) -> Option<Ending> {
        self.server.expire(Instant::now());
        for e in self.schedule.due(self.began.elapsed()) {
            let late = self.began.elapsed().saturating_sub(e.at);
            let (reply, _) = self.execute(&e.line);
            let late = match late >= LATE {
                true => format!(" (late by {} ms: the launcher was busy)", late.as_millis()),
                false => String::new(),
            };
            say!(
                "[{} at {:.1} s] {}: {}{late}",
                e.origin,
                e.at.as_secs_f64(),
                e.line,
                reply
            );
        }
        // Reading the traces yields to the schedule: a flood of trace is read over several
        // ticks rather than making the next fault late.
        let deadline = Instant::now() + READ_BUDGET;
        self.fleet.refresh_until(Some(deadline));
        let failed = self.report_exits();
        if let Some(n) = self.narrator.as_mut() {
            for line in n.news(&self.fleet) {
                say!("{line}");
            }
        }
        let ending = failed.or_else(|| self.goal.step(&mut self.fleet, &mut self.net, Instant::now()));
        if ending.is_none() {
            self.fleet.hand_behind();
        }
        ending
    }

    /// Reports the nodes that ended on their own; a node of the first launch that ended
    /// before it started fails the launch.
    fn report_exits(&mut self) -> Option<Ending> {
        for line in self.fleet.reap() {
            say!("{}", line);
        }
        if let Some(first) = self.fleet.write_failures.first() {
            return Some(Ending::write_failed(format!(
                "WARNING: {first}: the run's evidence is cut from here on; stopping the run (exit status 3)"
            )));
        }
        self.fleet
            .start_failure
            .take()
            .map(|why| Ending::failed(format!("the launch failed: {why}")))
    }

    /// The lines typed at the prompt since the last wakeup.
    fn read_prompt(&mut self) -> Option<Ending> {
        let lines: Vec<String> = self
            .prompt
            .as_ref()
            .map(|p| p.lines.try_iter().collect())
            .unwrap_or_default();
        lines
            .iter()
            .fold(None, |ending, line| ending.or(self.console_line(line)))
    }

    /// The clean stop, then what the run concluded.
    fn finish(&mut self, ending: Ending) -> i32 {
        if let Some(p) = self.prompt.as_mut() {
            p.close();
        }
        say!("{}", ending.message);
        super::phases::mark("goal");
        self.fleet.stop_all();
        if let Err(e) = self.net.finish() {
            say!("coordlab: {e}");
        }
        let n = self.fleet.nodes.len();
        say!("stopped all {n} nodes; every process reaped");
        let mut code = ending.code;
        // Every run writes summary.txt, whatever ended it; a goal that asked for it is also judged.
        let traces = self.fleet.hand_over_traces();
        super::phases::mark("stopped");
        let (checked, run) = match crate::check::check_keeping(&self.fleet.dir, traces) {
            Ok((report, run)) => (Ok(report), Some(run)),
            Err(e) => (Err(e), None),
        };
        super::phases::mark("checked");
        let summary_lost = matches!(&checked, Err(CliError::Write(_)));
        if !ending.check {
            match &checked {
                Ok(r) => {
                    say!(
                        "checked: {} (details: {})",
                        crate::check::summary::verdict(&r.analysis),
                        self.fleet.dir.join("summary.txt").display()
                    );
                    // However the run ended (`--until`, `--duration`, `quit`), a violation is status 1.
                    code = code.max(crate::exit::of_verdict(r.violated));
                }
                Err(e) => say!("coordlab check: {e}"),
            }
        } else {
            match checked {
                Ok(report) => {
                    say!("{}", report.text.trim_end());
                    let (lines, failed) = self.goal.conclude(&report.analysis);
                    for line in lines {
                        say!("{}", line);
                    }
                    if failed {
                        code = crate::exit::VIOLATED;
                    }
                }
                Err(e) => {
                    say!("coordlab check: {e}");
                    code = code.max(e.exit_code());
                }
            }
        }
        // A run not fully checked still shows its clocks; read here if the check could not.
        let run = match (run, ending.check) {
            (None, false) => crate::trace::RunDir::load(&self.fleet.dir).ok(),
            (run, _) => run,
        };
        if let (Some(run), false) = (&run, ending.check) {
            code = code.max(clock_table(run));
        }
        // The run as the check read it is every record of every node, each with allocations
        // of its own; the process ends next, and freeing them one by one was 7% of the
        // launcher's CPU (perf, Lamport on a mesh of 20), all of it after the verdict.
        std::mem::forget(run);
        // A write that failed during the stop (a node's last lines, faults.jsonl) or the
        // summary that could not be written: the verdict above is on cut evidence.
        if let Some(first) = self.fleet.write_failures.first() {
            say!("WARNING: {first}: the traces are incomplete (exit status 3)");
            code = crate::error::WRITE_FAILED;
        } else if summary_lost {
            say!("WARNING: summary.txt could not be written (exit status 3)");
            code = crate::error::WRITE_FAILED;
        }
        say!("logs: {}", self.fleet.dir.display());
        code
    }

    fn on_signals(&mut self) -> Option<Ending> {
        let got = self.signals.drain();
        let failed = if got.child { self.report_exits() } else { None };
        failed.or_else(|| got.stop.map(|s| self.goal.interrupted(s.as_str())))
    }
}

/// The clock section of the checker at the end of a run that is not fully checked: every
/// node's true offset before and after, the spread, the claims; 1 when a claim broke.
fn clock_table(run: &crate::trace::RunDir) -> i32 {
    let facts = crate::check::clock::analyse(run);
    let text = crate::check::clock::summary(&facts);
    if !text.is_empty() {
        say!("{}", text.trim());
    }
    crate::exit::of_verdict(facts.violations() > 0)
}

fn stdin_fd() -> RawFd {
    io::stdin().as_raw_fd()
}
