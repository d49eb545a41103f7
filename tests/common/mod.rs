//! What the process-level tests share: a guard around a real launcher (it stops the launcher,
//! and so every node, even when a test fails), waits that poll the run directory with a
//! deadline, and the nodes' beliefs read by the checker's own replay.
// Each test file uses its own part of this module.
#![allow(dead_code)]

pub mod browser;

use coordlab::check::beliefs::Beliefs;
use coordlab::check::{Belief, Timeline};
use coordlab::trace::{Event, RunDir};
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// The coordlab binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_coordlab");
/// Generous: the machine may be busy with other tests; a correct run finishes far sooner.
pub const DEADLINE: Duration = Duration::from_secs(40);
/// How often waits look again.
pub const POLL: Duration = Duration::from_millis(50);

/// A fresh, empty logs directory for one test, removed when the test passes (kept, for a look,
/// when it fails): a suite left dozens of run directories in the temp directory, and a failed
/// busy run's reached gigabytes.
pub fn temp_logs(name: &str) -> TempLogs {
    let dir = std::env::temp_dir().join(format!("coordlab-test-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    TempLogs(dir)
}

/// A test's logs directory (see [`temp_logs`]); declared before the launch that writes into it,
/// it is dropped after that launch has stopped every node.
pub struct TempLogs(PathBuf);

impl TempLogs {
    /// The directory, no longer removed by this guard: for a helper that hands it out beside
    /// a launch (a tuple's bindings drop last-first, which would remove it under the launch).
    pub fn keep(mut self) -> PathBuf {
        std::mem::take(&mut self.0)
    }
}

impl std::ops::Deref for TempLogs {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempLogs {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for TempLogs {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TempLogs {
    fn drop(&mut self) {
        if !std::thread::panicking() && !self.0.as_os_str().is_empty() {
            let _ = fs::remove_dir_all(&self.0);
        }
    }
}

/// Waits for `child` until `deadline`; kills it when the deadline passes.
pub fn wait_until(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            Ok(None) => std::thread::sleep(POLL),
            Err(_) => return None,
        }
    }
}

/// A running launcher; dropping it sends `quit`, waits, and kills it if it will not stop.
pub struct Launch {
    pub child: Child,
    stdin: Option<ChildStdin>,
    logs: PathBuf,
    out: PathBuf,
    pub done: Option<ExitStatus>,
}

/// The detector tests' options: a 300 ms timeout, 100 ms heartbeats and `--set detector=NAME`,
/// then `extra`.
pub fn with_detector(detector: &str, extra: &[&str]) -> Vec<String> {
    let set = format!("detector={detector}");
    let base = ["--timeout-ms", "300", "--heartbeat-ms", "100", "--set", &set];
    base.iter().chain(extra).map(|s| s.to_string()).collect()
}

/// `args` as the `&str`s a launch takes.
pub fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

impl Launch {
    /// `coordlab ring N` with `extra` options.
    pub fn start(n: usize, logs: &Path, extra: &[&str]) -> Launch {
        Launch::command("ring", n, logs, extra)
    }

    /// `coordlab mesh N --topology complete --algo ALGO` with `extra` options.
    pub fn complete(n: usize, logs: &Path, algo: &str, extra: &[&str]) -> Launch {
        let args = [&["--topology", "complete", "--algo", algo][..], extra].concat();
        Launch::command("mesh", n, logs, &args)
    }

    /// `coordlab <sub> N` (ring or mesh) with `extra` options, its stdin a console.
    pub fn command(sub: &str, n: usize, logs: &Path, extra: &[&str]) -> Launch {
        Launch::command_env(sub, n, logs, extra, &[])
    }

    /// [`Launch::command`] with the environment variables `env` set.
    pub fn command_env(sub: &str, n: usize, logs: &Path, extra: &[&str], env: &[(&str, &str)]) -> Launch {
        fs::create_dir_all(logs).unwrap();
        // Output goes to a file, never a pipe: a full pipe nobody reads would stall the launcher.
        let out = logs.join("launcher.out");
        let file = File::create(&out).unwrap();
        let mut child = Command::new(BIN)
            .arg(sub)
            .arg(n.to_string())
            .args(["--base-port", "0", "--logs"])
            .arg(logs)
            .args(extra)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .expect("the coordlab binary runs");
        let stdin = child.stdin.take();
        Launch {
            child,
            stdin,
            logs: logs.to_path_buf(),
            out,
            done: None,
        }
    }

    pub fn output(&self) -> String {
        fs::read_to_string(&self.out).unwrap_or_default()
    }

    /// Types a line at the launcher's console.
    pub fn console(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{line}")
            .and_then(|_| stdin.flush())
            .expect("the launcher reads its console");
    }

    pub fn run_dir(&self) -> PathBuf {
        self.logs.join("latest")
    }

    /// Polls the run directory until `f` finds what it wants; panics (showing the launcher's
    /// output) at the deadline.
    pub fn wait_for<T>(&mut self, what: &str, mut f: impl FnMut(&RunDir) -> Option<T>) -> T {
        self.poll(what, |dir| RunDir::load(dir).ok().and_then(|rd| f(&rd)))
    }

    /// Polls until `f`, given the run directory's path, finds what it wants: for a test that
    /// reads only the files it needs, as a busy run's whole directory grows too big to reload
    /// at every poll. Panics (showing the launcher's output) at the deadline or if the
    /// launcher ends first.
    pub fn poll<T>(&mut self, what: &str, mut f: impl FnMut(&Path) -> Option<T>) -> T {
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Some(x) = f(&self.run_dir()) {
                return x;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                self.done = Some(status);
                panic!(
                    "the launcher ended ({status}) while waiting for {what}:\n{}",
                    self.output()
                );
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}:\n{}",
                self.output()
            );
            std::thread::sleep(POLL);
        }
    }

    /// Waits for the launcher to end by itself.
    pub fn wait(&mut self) -> ExitStatus {
        if let Some(s) = self.done {
            return s;
        }
        let status = wait_until(&mut self.child, Instant::now() + DEADLINE);
        let status = status.unwrap_or_else(|| panic!("the launcher did not end in time:\n{}", self.output()));
        self.done = Some(status);
        status
    }

    /// Types `quit` and waits for the clean stop.
    pub fn quit(&mut self) -> ExitStatus {
        if self.done.is_none() {
            if let Some(mut stdin) = self.stdin.take() {
                let _ = writeln!(stdin, "quit");
            }
        }
        self.wait()
    }

    /// Types `quit`, checks that every process of the run was reaped, and removes `logs`.
    pub fn quit_reaped_and_clean(mut self, logs: &Path) {
        self.quit();
        let rd = RunDir::load(&self.run_dir()).unwrap();
        assert_all_reaped(&rd);
        drop(self);
        let _ = fs::remove_dir_all(logs);
    }
}

impl Drop for Launch {
    fn drop(&mut self) {
        if self.done.is_some() {
            return;
        }
        if let Some(mut stdin) = self.stdin.take() {
            let _ = writeln!(stdin, "quit");
        }
        // Killing the launcher also kills its nodes (parent-death signal).
        self.done = wait_until(&mut self.child, Instant::now() + DEADLINE);
    }
}

/// What every node believes, by the checker's own replay (the only one).
pub fn beliefs(rd: &RunDir) -> Beliefs {
    Beliefs::replay(rd, &Timeline::build(rd))
}

/// Whom node `id` believes leads, by the checker's replay: (leader, term).
pub fn belief(rd: &RunDir, id: u64) -> Option<(u64, u64)> {
    beliefs(rd).current(id).map(|b| (b.leader, b.term))
}

/// The term in which every node of `ids` believes `leader` leads, if they all do.
pub fn all_follow(rd: &RunDir, ids: &[u64], leader: u64) -> Option<u64> {
    let b = beliefs(rd);
    let term = b.current(*ids.first()?)?.term;
    ids.iter()
        .all(|&i| b.current(i) == Some(Belief { leader, term }))
        .then_some(term)
}

/// The leader and term every node of `ids` believes in, if they all believe the same and the
/// leader is one of them.
pub fn agreed(rd: &RunDir, ids: &[u64]) -> Option<(u64, u64)> {
    beliefs(rd).agreement(ids).map(|a| (a.belief.leader, a.belief.term))
}

/// The highest term any node learned a leader in, and every leader learned in it.
pub fn leaders_of_top_term(rd: &RunDir) -> (u64, Vec<u64>) {
    let top = rd
        .node_events
        .iter()
        .filter_map(|r| match r.event {
            Event::Leader { term, .. } => Some(term),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let mut leaders: Vec<u64> = rd
        .node_events
        .iter()
        .filter_map(|r| match r.event {
            Event::Leader { leader, term } if term == top => Some(leader),
            _ => None,
        })
        .collect();
    leaders.sort_unstable();
    leaders.dedup();
    (top, leaders)
}

/// How many events of `kind` node `id` wrote.
pub fn count(rd: &RunDir, id: u64, kind: &str) -> usize {
    rd.node_events
        .iter()
        .filter(|r| r.node == Some(id) && r.event.kind() == kind)
        .count()
}

/// Every process the launcher started has an `exit` line, after `shutdown`.
pub fn assert_all_reaped(rd: &RunDir) {
    let started: Vec<u32> = rd
        .faults
        .iter()
        .filter_map(|r| match r.event {
            Event::Spawn { pid, .. } | Event::Restart { pid } => Some(pid),
            _ => None,
        })
        .collect();
    assert!(!started.is_empty());
    for pid in started {
        assert!(
            rd.faults
                .iter()
                .any(|r| matches!(r.event, Event::Exit { pid: p, .. } if p == pid)),
            "process {pid} has no exit record: {:?}",
            rd.faults
        );
    }
    assert!(rd.faults.iter().any(|r| r.event == Event::Shutdown {}));
}

/// Runs `coordlab <args>` against the run and returns its output.
pub fn coordlab(args: &[&str], run: &Path) -> Output {
    Command::new(BIN).args(args).arg("--run").arg(run).output().unwrap()
}

/// Runs a launch that must be refused; returns (exit code, stderr).
pub fn refused(args: &[&str], logs: &Path) -> (Option<i32>, String) {
    refused_cmd("ring", args, logs)
}

/// Runs `coordlab <sub> <args>`, a launch that must be refused; returns (exit code, stderr).
pub fn refused_cmd(sub: &str, args: &[&str], logs: &Path) -> (Option<i32>, String) {
    let err = logs.with_extension("err");
    let mut child = Command::new(BIN)
        .arg(sub)
        .args(args)
        .arg("--logs")
        .arg(logs)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let status = wait_until(&mut child, Instant::now() + DEADLINE);
    let text = fs::read_to_string(&err).unwrap_or_default();
    let _ = fs::remove_file(&err);
    (status.and_then(|s| s.code()), text)
}
