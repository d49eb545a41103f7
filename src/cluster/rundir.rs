//! The run directory: a fresh `logs/<run-id>/`, its `run.json`, and the `logs/latest` link.

use crate::error::{failed, usage, CliError};
use crate::node::logging::fmt_wall;
use crate::trace::RunInfo;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Creates a new, uniquely named run directory under `logs` (e.g.
/// `logs/20261122-034001-ring8-chang-roberts`, `...-mesh6-yoyo`) and returns its path.
pub fn create(logs: &Path, wall_us: u64, noun: &str, n: usize, algo: &str) -> Result<PathBuf, CliError> {
    // The user named a directory that cannot be made: bad input (exit 2), before anything starts.
    fs::create_dir_all(logs)
        .map_err(|e| crate::error::usage(format!("--logs: cannot create {}: {e}", logs.display())))?;
    let stamp: String = fmt_wall(wall_us)
        .chars()
        .take(19)
        .filter(|c| c.is_ascii_digit() || *c == 'T')
        .map(|c| if c == 'T' { '-' } else { c })
        .collect();
    let base = format!("{stamp}-{noun}{n}-{algo}");
    // create_dir (not _all) fails if the name is taken, so two launches in the same second
    // each get their own directory.
    for k in 1.. {
        let name = if k == 1 { base.clone() } else { format!("{base}-{k}") };
        let dir = logs.join(&name);
        match fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(failed(format!("cannot create {}: {e}", dir.display()))),
        }
    }
    unreachable!("the loop returns")
}

/// Refuses (exit 2) a `--logs` directory that cannot be created or written, before anything
/// starts: creates it if needed and makes and removes a scratch directory in it.
pub(crate) fn check_writable(logs: &Path) -> Result<(), CliError> {
    let refuse = |e: io::Error| usage(format!("--logs {}: cannot be created or written: {e}", logs.display()));
    fs::create_dir_all(logs).map_err(refuse)?;
    let probe = logs.join(format!(".coordlab-probe-{}", std::process::id()));
    fs::create_dir(&probe).map_err(refuse)?;
    fs::remove_dir(&probe).map_err(refuse)
}

/// Writes `run.json` whole or not at all (readers poll for it while the launcher starts).
pub(crate) fn write_info(dir: &Path, info: &RunInfo) -> Result<(), CliError> {
    let path = dir.join("run.json");
    let tmp = dir.join(".run.json.tmp");
    let text = serde_json::to_string_pretty(info).map_err(|e| failed(format!("cannot encode run.json: {e}")))?;
    fs::write(&tmp, text + "\n")
        .and_then(|_| fs::rename(&tmp, &path))
        .map_err(|e| failed(format!("cannot write {}: {e}", path.display())))
}

/// Points `logs/latest` at `dir` (a relative link, so the logs directory can move), replacing
/// the old link atomically: a reader sees the old run or the new one, never neither.
pub(crate) fn point_latest(logs: &Path, dir: &Path) -> Result<(), CliError> {
    let name = dir
        .file_name()
        .ok_or_else(|| failed(format!("{} has no name", dir.display())))?;
    let latest = logs.join("latest");
    let tmp = logs.join(format!(".latest.{}", std::process::id()));
    let _ = fs::remove_file(&tmp);
    std::os::unix::fs::symlink(name, &tmp)
        .and_then(|_| fs::rename(&tmp, &latest))
        .map_err(|e| {
            let _ = fs::remove_file(&tmp);
            failed(format!("cannot point {} at {}: {e}", latest.display(), dir.display()))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_get_distinct_directories_and_latest_follows() {
        let logs = std::env::temp_dir().join(format!("coordlab-rundir-{}", std::process::id()));
        let _ = fs::remove_dir_all(&logs);
        let a = create(&logs, 1_700_000_000_000_000, "ring", 8, "chang-roberts").unwrap();
        let b = create(&logs, 1_700_000_000_000_000, "ring", 8, "chang-roberts").unwrap();
        assert_ne!(a, b);
        assert_eq!(a.file_name().unwrap(), "20231114-221320-ring8-chang-roberts");
        point_latest(&logs, &a).unwrap();
        point_latest(&logs, &b).unwrap();
        assert_eq!(fs::read_link(logs.join("latest")).unwrap(), b.file_name().unwrap());
        fs::remove_dir_all(&logs).unwrap();
    }
}
