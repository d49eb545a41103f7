//! Launching a ring or a mesh of real processes through `coordlab ring|mesh`, waiting for it
//! to end, and sampling the nodes' memory meanwhile.

use super::memory::Memory;
use crate::error::{failed, CliError};
use crate::trace::{read_jsonl_file, Event, RunDir};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What to launch: `coordlab ring N`, or `coordlab mesh N --topology SPEC`.
#[derive(Debug, Clone, Copy)]
pub(super) enum Shape<'a> {
    /// A ring in the order of `--ids`.
    Ring,
    /// A mesh of this topology.
    Mesh(&'a str),
}

/// A running launch (`coordlab ring` or `coordlab mesh`) whose run directory is `logs/latest`.
/// Dropped before it ended, it is stopped (SIGTERM, so that the launcher stops its nodes) and
/// reaped.
pub(super) struct Launch {
    child: Child,
    logs: PathBuf,
    n: usize,
    what: String,
}

impl Launch {
    /// Starts `coordlab ring|mesh N` with `args`, into a fresh logs dir, with timeouts long
    /// enough that no node is suspected by mistake while hundreds of processes share two cores.
    pub(super) fn spawn(logs: &Path, shape: Shape<'_>, n: usize, args: &[&str]) -> Result<Self, CliError> {
        let exe = std::env::current_exe().map_err(|e| failed(e.to_string()))?;
        let mut cmd = Command::new(exe);
        match shape {
            Shape::Ring => cmd.arg("ring").arg(n.to_string()),
            Shape::Mesh(spec) => cmd.arg("mesh").arg(n.to_string()).args(["--topology", spec]),
        };
        let child = cmd
            .args([
                "--logs",
                &logs.to_string_lossy(),
                "--timeout-ms",
                "2000",
                "--heartbeat-ms",
                "500",
            ])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| failed(format!("cannot launch: {e}")))?;
        let what = match shape {
            Shape::Ring => format!("ring {n} {args:?}"),
            Shape::Mesh(spec) => format!("mesh {n} {spec} {args:?}"),
        };
        Ok(Launch {
            child,
            logs: logs.to_path_buf(),
            n,
            what,
        })
    }

    /// The run directory (valid once the launcher has written it).
    pub(super) fn run_dir(&self) -> PathBuf {
        self.logs.join("latest")
    }

    /// Waits for the launch to end by itself and loads its run; meanwhile samples the nodes'
    /// memory once they are all up.
    pub(super) fn wait(mut self, mem: &mut Option<Memory>) -> Result<RunDir, CliError> {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if let Some(status) = self.child.try_wait().map_err(|e| failed(e.to_string()))? {
                if !status.success() {
                    return Err(failed(format!("{} exited with {status}", self.what)));
                }
                break;
            }
            if Instant::now() > deadline {
                return Err(failed(format!("{} did not finish in time", self.what)));
            }
            // Only the launcher's own small file: loading every trace would take the cores the
            // run is being measured on.
            if let Ok(faults) = read_jsonl_file(&self.run_dir().join("faults.jsonl")) {
                let pids: Vec<u32> = faults
                    .records
                    .iter()
                    .filter_map(|r| {
                        if let Event::Spawn { pid, .. } = r.event {
                            Some(pid)
                        } else {
                            None
                        }
                    })
                    .collect();
                if pids.len() == self.n {
                    Memory::keep_worst(mem, Memory::worst_of(&pids));
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        RunDir::load(&self.run_dir()).map_err(|e| failed(e.to_string()))
    }
}

impl Drop for Launch {
    fn drop(&mut self) {
        stop(&mut self.child);
    }
}

/// Stops a `coordlab` launcher still running: SIGTERM (so that it stops and reaps its nodes),
/// up to 20 s for it to exit, then SIGKILL; reaps it either way.
pub(super) fn stop(child: &mut Child) {
    if !matches!(child.try_wait(), Ok(None)) {
        return;
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(20);
    while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Launches `coordlab ring|mesh N` with `args` and returns the run once it has ended.
pub(super) fn launch(
    logs: &Path,
    shape: Shape<'_>,
    n: usize,
    args: &[&str],
    mem: &mut Option<Memory>,
) -> Result<RunDir, CliError> {
    Launch::spawn(logs, shape, n, args)?.wait(mem)
}
