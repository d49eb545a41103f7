//! What a node keeps across a restart: its state file, read back and verified at start,
//! and written atomically (a file named once written, or a temporary file renamed; fsynced
//! with `--set fsync=true`).

use super::config::NodeOptions;
use crate::algo::Setup;
use crate::error::{failed, CliError};
use std::io;

/// Where a node keeps the state its algorithm persists: `state-<id>.bin` in its log directory
/// (None: no log directory, nothing survives a restart).
pub(super) fn state_path(opts: &NodeOptions) -> Option<std::path::PathBuf> {
    opts.log_dir
        .as_ref()
        .map(|d| d.join(format!("state-{}.bin", opts.setup.me)))
}

/// Reads back what the node persisted before (verified: a file that does not verify is
/// refused, said in the log and, through the setup, in the trace, and the node starts as one
/// that ran before but kept nothing).
pub(super) fn load_durable(opts: &NodeOptions, setup: &mut Setup) -> Result<(), CliError> {
    let Some(path) = state_path(opts) else {
        return Ok(());
    };
    let file = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(failed(format!("cannot read {}: {e}", path.display()))),
    };
    match crate::engine::durable::open(&file) {
        Ok(payload) => setup.durable = Some(payload),
        Err(why) => {
            let why = format!("{}: {why}", path.display());
            log::error!("durable state refused, starting without it: {why}");
            setup.durable = None;
            setup.restarted = true;
            setup.durable_refused = Some(why);
        }
    }
    Ok(())
}

/// Writes `bytes` (sealed with its checksum) to `path`, so that a kill at any moment leaves the
/// old state or the new, never half of one: the first store of a node as a file with no name
/// (`O_TMPFILE`) that gets its name once written (`linkat`), a later one through a temporary
/// file renamed over the old.
///
/// Why the first store differs: every node of a ring started with `--initiators all` stores
/// its term at the same moment, and creating then renaming a file takes the run directory's
/// lock twice; a system-wide profile of a 4,096-node launch on a loaded machine found the
/// nodes spinning on that lock (`rwsem_down_write_slowpath`, `osq_lock`) for most of their CPU
/// in that moment. A file made without a name is allocated outside the lock, and naming it
/// takes the lock once. Where the file system has no `O_TMPFILE`, every store renames.
///
/// A process's kill does not take the page cache with it: the file named is what the next
/// boot reads. `fsync` (the file, then its directory) is for a machine that loses power, which
/// the lab never does; it cost 1.5-8 ms a store here (ext4), paid by every node of a ring's
/// ELECTION lap before it forwards, so it is asked for (`--set fsync=true`), not the default.
pub(super) fn store(path: &std::path::Path, bytes: &[u8], fsync: bool) -> io::Result<()> {
    use std::io::Write;
    let sealed = crate::engine::durable::seal(bytes);
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if !path.exists() {
        if let Some(mut f) = unnamed_in(dir) {
            f.write_all(&sealed)?;
            if fsync {
                f.sync_all()?;
            }
            match name_it(&f, path) {
                Ok(()) => return sync_dir(dir, fsync),
                // Stored meanwhile (by a boot of this node killed mid-store): rename instead.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
    }
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(&sealed)?;
    if fsync {
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    sync_dir(dir, fsync)
}

/// A new file with no name in `dir`, open for writing; None where the file system cannot
/// make one.
fn unnamed_in(dir: &std::path::Path) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(nix::libc::O_TMPFILE)
        .mode(0o666)
        .open(dir)
        .ok()
}

/// Gives the unnamed file `f` the name `path` (fails with `AlreadyExists` if taken). Through
/// `/proc/self/fd`, which needs no privilege (`AT_EMPTY_PATH` would).
fn name_it(f: &std::fs::File, path: &std::path::Path) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let proc_path = format!("/proc/self/fd/{}", f.as_raw_fd());
    nix::unistd::linkat(
        nix::fcntl::AT_FDCWD,
        proc_path.as_str(),
        nix::fcntl::AT_FDCWD,
        path,
        nix::fcntl::AtFlags::AT_SYMLINK_FOLLOW,
    )
    .map_err(io::Error::from)
}

fn sync_dir(dir: &std::path::Path, fsync: bool) -> io::Result<()> {
    if fsync {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_store_and_every_later_one_leave_the_last_state_whole_and_no_temporary_file() {
        let dir = std::env::temp_dir().join(format!("coordlab-stored-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("state-3.bin");
        for (i, state) in [&b"term 1"[..], b"term 2", b"term 3 and more"].iter().enumerate() {
            store(&path, state, i == 1).unwrap();
            let read = std::fs::read(&path).unwrap();
            assert_eq!(crate::engine::durable::open(&read).unwrap(), *state);
            let names: Vec<_> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert_eq!(names, ["state-3.bin"], "only the state file is left");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
