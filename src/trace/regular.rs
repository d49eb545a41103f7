//! Reads a file only if it is a regular file no larger than a bound: a FIFO named
//! `node-7.jsonl` would block the reader for ever, and a link to `/dev/zero` (or a huge sparse
//! file) would be read until memory runs out. The type and the size are checked before a byte
//! is read, and again on the open descriptor (the name may have been swapped in between).

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The largest trace file (`node-K.jsonl`, `faults.jsonl`, `resource.jsonl`) read: 256 MiB,
/// some 2.5 million lines, about 10 times a 300 s chaos soak's busiest node; parsed, it takes
/// several times that in memory.
pub(crate) const MAX_TRACE_BYTES: u64 = 256 << 20;
/// The largest `run.json` read: 16 MiB (a 1000-node mesh's is under 1 MiB).
pub(crate) const MAX_RUN_JSON_BYTES: u64 = 16 << 20;

/// What kind of file `meta` is, in words, when it is not a regular file.
pub(crate) fn not_regular(meta: &Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_file() {
        None
    } else if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_socket() {
        Some("a socket")
    } else if t.is_dir() {
        Some("a directory")
    } else {
        Some("not a regular file")
    }
}

fn refuse(path: &Path, why: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("{}: {why}", path.display()))
}

/// Checks that `meta` (of `path`) is a regular file of at most `limit` bytes.
pub fn check(path: &Path, meta: &Metadata, limit: u64) -> io::Result<()> {
    if let Some(kind) = not_regular(meta) {
        return Err(refuse(path, format!("{kind}, not a regular file: not read")));
    }
    if meta.len() > limit {
        return Err(refuse(
            path,
            format!(
                "{} bytes, over the bound of {} bytes ({} MiB): not read",
                meta.len(),
                limit,
                limit >> 20
            ),
        ));
    }
    Ok(())
}

/// Opens `path` for reading if it is a regular file of at most `limit` bytes (following
/// symbolic links); `Ok(None)` when it does not exist.
pub fn open(path: &Path, limit: u64) -> io::Result<Option<File>> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
    };
    check(path, &meta, limit)?;
    // Non-blocking: should a FIFO have replaced the file since the check, the open does not wait
    // for a writer (reads of a regular file ignore the flag).
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    check(path, &file.metadata()?, limit)?;
    Ok(Some(file))
}

/// Reads `path` whole if it is a regular file of at most `limit` bytes; `Ok(None)` when it
/// does not exist. A file that grows while it is read is cut at `limit`.
pub fn read(path: &Path, limit: u64) -> io::Result<Option<Vec<u8>>> {
    let Some(file) = open(path, limit)? else {
        return Ok(None);
    };
    let mut bytes = Vec::new();
    file.take(limit)
        .read_to_end(&mut bytes)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    Ok(Some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_small_regular_files_are_read() {
        let dir = std::env::temp_dir().join(format!("coordlab-regular-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("f");
        std::fs::write(&f, b"hello").unwrap();
        assert_eq!(read(&f, 5).unwrap().unwrap(), b"hello");
        assert!(read(&f, 4).unwrap_err().to_string().contains("over the bound"));
        assert!(read(&dir.join("none"), 5).unwrap().is_none());
        let fifo = dir.join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        assert!(read(&fifo, 5).unwrap_err().to_string().contains("a FIFO"));
        let zero = dir.join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        assert!(read(&zero, 5).unwrap_err().to_string().contains("character device"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
