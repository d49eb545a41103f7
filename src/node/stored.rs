//! What a node keeps across a restart: its state file, read back and verified at start,
//! and written atomically (temporary file, fsync, rename).

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

/// Writes `bytes` (sealed with its checksum) to `path` and fsyncs it, via a temporary file renamed over the old one, so
/// that a kill at any moment leaves the old state or the new, never half of one.
pub(super) fn store(path: &std::path::Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(&crate::engine::durable::seal(bytes))?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}
