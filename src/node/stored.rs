//! What a node keeps across a restart: its state file, read back and verified at start,
//! and written atomically (two slots in turns; fsynced with `--set fsync=true`).

use super::config::NodeOptions;
use super::state_map::StateMap;
use super::state_slots as slots;
use crate::algo::Setup;
use crate::error::{failed, CliError};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

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
    let read = match read_state(&path) {
        Ok(Some(read)) => read,
        Ok(None) => return Ok(()),
        Err(e) => return Err(failed(format!("cannot read {}: {e}", path.display()))),
    };
    match read {
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

/// What the state file at `path` holds (None: there is none), or why it does not verify.
fn read_state(path: &Path) -> io::Result<Option<Result<Vec<u8>, String>>> {
    let file = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(match slots::current(&file) {
        // Made at the node's start; nothing stored since.
        Some(Ok(c)) if c.seq == 0 => None,
        Some(c) => Some(c.map(|c| c.payload)),
        // The layout before the slots: one framed payload.
        None => Some(crate::engine::durable::open(&file)),
    })
}

/// A node's state file, kept open: each store is one write into the slot not holding the
/// current state (`state_slots.rs`), so that a kill at any moment leaves the old state or the
/// new, never half of one.
///
/// A process's kill does not take the page cache with it: what was written is what the next
/// boot reads. `fsync` is for a machine that loses power, which the lab never does; it cost
/// 1.5-8 ms a store here (ext4), paid by every node of a ring's ELECTION lap before it
/// forwards, so it is asked for (`--set fsync=true`), not the default.
pub(super) struct StateFile {
    path: PathBuf,
    fsync: bool,
    /// The open file and where the next store goes, once the first store found or made it.
    open: Option<Open>,
}

/// An open state file of the slot layout.
struct Open {
    file: File,
    /// The header and both slots, mapped: a store is a copy.
    map: StateMap,
    span: usize,
    /// The store number and slot of the current state.
    seq: u64,
    slot: usize,
}

impl StateFile {
    /// The state file at `path`; nothing is opened before the first store.
    pub fn new(path: PathBuf, fsync: bool) -> Self {
        StateFile {
            path,
            fsync,
            open: None,
        }
    }

    /// Opens the file a node that ran before left, or makes one holding nothing yet (store
    /// number 0, an empty payload), so that the first store is a write like every other.
    pub fn prepare(&mut self) -> io::Result<()> {
        if self.open.is_none() {
            self.open = match self.reopen()? {
                Some(o) => Some(o),
                None => Some(self.create(0, b"")?),
            };
        }
        Ok(())
    }

    /// Stores `payload` as the node's state.
    pub fn store(&mut self, payload: &[u8]) -> io::Result<()> {
        if self.open.is_none() {
            self.open = self.reopen()?;
        }
        match &mut self.open {
            Some(o) if slots::SLOT_HEAD + payload.len() <= o.span => {
                let (seq, slot) = (o.seq + 1, 1 - o.slot);
                let at = slots::slot_offset(o.span, slot);
                o.map.write_at(&slots::slot(seq, payload), at);
                if self.fsync {
                    o.file.sync_data()?;
                }
                (o.seq, o.slot) = (seq, slot);
                Ok(())
            }
            // The first store, or one wider than the slots: a new file.
            _ => {
                let seq = self.open.as_ref().map_or(1, |o| o.seq + 1);
                self.open = Some(self.create(seq, payload)?);
                Ok(())
            }
        }
    }

    /// The file a node that ran before left, if it is of the slot layout and verifies: a
    /// restarted node's stores go on from its store number.
    fn reopen(&self) -> io::Result<Option<Open>> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let Some(Ok(c)) = slots::current(&bytes) else {
            return Ok(None);
        };
        let file = OpenOptions::new().read(true).write(true).open(&self.path)?;
        Ok(Some(Open {
            map: mapped(&file, c.span)?,
            file,
            span: c.span,
            seq: c.seq,
            slot: c.slot,
        }))
    }

    /// A new file holding `payload` in slot 0, made whole before it gets its name.
    ///
    /// Where no file has the name yet (a node's start), the file is made with no name
    /// (`O_TMPFILE`) and named once written (`linkat`): the run directory's lock is taken once,
    /// not twice as by a temporary file and a rename. A system-wide profile of a 4,096-node
    /// launch found the nodes spinning on that lock (`rwsem_down_write_slowpath`) when all made
    /// their files at once. Over an existing file (a wider state, a damaged file) or where the
    /// file system has no `O_TMPFILE`: a temporary file renamed into place.
    fn create(&self, seq: u64, payload: &[u8]) -> io::Result<Open> {
        let span = slots::span_for(payload.len());
        let mut bytes = slots::header(span).to_vec();
        bytes.extend_from_slice(&slots::slot(seq, payload));
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if !self.path.exists() {
            if let Some(mut file) = unnamed_in(dir) {
                file.write_all(&bytes)?;
                if self.fsync {
                    file.sync_all()?;
                }
                match name_it(&file, &self.path) {
                    Ok(()) => {
                        sync_dir(dir, self.fsync)?;
                        return Ok(Open {
                            map: mapped(&file, span)?,
                            file,
                            span,
                            seq,
                            slot: 0,
                        });
                    }
                    // Named meanwhile (by a boot of this node killed mid-store): rename instead.
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(e),
                }
            }
        }
        let tmp = self.path.with_extension("tmp");
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        file.write_all(&bytes)?;
        if self.fsync {
            file.sync_all()?;
        }
        std::fs::rename(&tmp, &self.path)?;
        sync_dir(dir, self.fsync)?;
        // The open file is the renamed one: later stores write through it.
        Ok(Open {
            map: mapped(&file, span)?,
            file,
            span,
            seq,
            slot: 0,
        })
    }
}

/// The header and both slots of `file`, laid out with slots of `span` bytes, mapped.
fn mapped(file: &File, span: usize) -> io::Result<StateMap> {
    StateMap::new(file, slots::slot_offset(span, 2))
}

/// A new file with no name in `dir`, open for reading and writing; None where the file system
/// cannot make one.
fn unnamed_in(dir: &Path) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(nix::libc::O_TMPFILE)
        .mode(0o666)
        .open(dir)
        .ok()
}

/// Gives the unnamed file `f` the name `path` (fails with `AlreadyExists` if taken). Through
/// `/proc/self/fd`, which needs no privilege (`AT_EMPTY_PATH` would).
fn name_it(f: &File, path: &Path) -> io::Result<()> {
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

/// Syncs `dir` when fsync is asked for (a new name in it).
fn sync_dir(dir: &Path, fsync: bool) -> io::Result<()> {
    if fsync {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "stored_tests.rs"]
mod tests;
