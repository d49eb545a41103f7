//! DistAlgo side by side: pyDistAlgo 1.1.0's own examples, run as a user would run them through
//! `scripts/distalgo.sh`, timed from launch to exit (interpreter start-up included).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

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

/// The median of `runs` runs of DistAlgo's example `example` with `args` (its processes, and
/// its own further arguments), launch to exit in ms; Err says why not.
pub fn median_ms(example: &str, args: &[String], runs: usize) -> Result<f64, String> {
    installed()?;
    let script = script();
    let mut times = Vec::new();
    for _ in 0..runs.max(1) {
        let t0 = Instant::now();
        let out = Command::new(&script)
            .arg(example)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
        if !out.status.success() {
            return Err(format!(
                "failed: {}",
                String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("")
            ));
        }
        times.push(t0.elapsed().as_secs_f64() * 1000.0);
    }
    Ok(super::readings::median(times))
}
