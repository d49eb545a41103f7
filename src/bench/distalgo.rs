//! DistAlgo side by side: pyDistAlgo 1.1.0's own examples, run as a user would run them through
//! `scripts/distalgo.sh`, timed from launch to exit (interpreter start-up included).

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The DistAlgo script, in this source tree.
fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/distalgo.sh")
}

/// Whether DistAlgo is installed; Err says why not, in words for a skipped row.
pub fn installed() -> Result<(), String> {
    let script = script();
    let ready = Command::new(&script)
        .arg("--check")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    match ready.success() {
        true => Ok(()),
        false => Err("not installed (run scripts/distalgo.sh --install)".into()),
    }
}

/// How long one DistAlgo run may take: its examples can hang (a datagram its UDP transport
/// lost; seen here with `lamutex 20 20`), and the benchmark must end.
const PATIENCE: Duration = Duration::from_secs(180);

/// The median of `runs` runs of DistAlgo's example `example` with `args` (its processes, and
/// its own further arguments), launch to exit in ms; Err says why not (not installed, failed,
/// or hung past [`PATIENCE`]).
pub(crate) fn median_ms(example: &str, args: &[String], runs: usize) -> Result<f64, String> {
    installed()?;
    let script = script();
    let mut times = Vec::new();
    for _ in 0..runs.max(1) {
        let t0 = Instant::now();
        let mut child = Command::new(&script)
            .arg(example)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if t0.elapsed() > PATIENCE => {
                    // The example's processes are its group's: all of them go.
                    let group = nix::unistd::Pid::from_raw(-(child.id() as i32));
                    let _ = nix::sys::signal::kill(group, nix::sys::signal::Signal::SIGKILL);
                    let _ = child.wait();
                    return Err(format!("{example} hung: killed after {} s", PATIENCE.as_secs()));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
                Err(e) => return Err(format!("cannot wait for {example}: {e}")),
            }
        };
        if !status.success() {
            return Err(format!("{example} failed ({status})"));
        }
        times.push(t0.elapsed().as_secs_f64() * 1000.0);
    }
    Ok(super::readings::median(times))
}
