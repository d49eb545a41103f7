//! What a node keeps across a restart: its state file, read back and verified at start,
//! and written atomically (temporary file, rename; fsynced with `--set fsync=true`).

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

/// Writes `bytes` (sealed with its checksum) to `path` via a temporary file renamed over the
/// old one, so that a kill at any moment leaves the old state or the new, never half of one.
///
/// A process's kill does not take the page cache with it: the renamed file is what the next
/// boot reads. `fsync` (the file, then its directory) is for a machine that loses power, which
/// the lab never does; it cost 1.5-8 ms a store here (ext4), paid by every node of a ring's
/// ELECTION lap before it forwards, so it is asked for (`--set fsync=true`), not the default.
pub(super) fn store(path: &std::path::Path, bytes: &[u8], fsync: bool) -> io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(&crate::engine::durable::seal(bytes))?;
    if fsync {
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if fsync {
        if let Some(dir) = path.parent() {
            std::fs::File::open(dir)?.sync_all()?;
        }
    }
    Ok(())
}
