//! Key files: a fresh key from the operating system's random source, written with mode 0600,
//! and read back with errors that name the file and the problem.

use crate::engine::key::{Key, KEY_LEN};
use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The key file's name in a run directory.
pub const KEY_FILE: &str = "key";

/// A fresh random key from `/dev/urandom`.
pub fn generate() -> Result<Key, String> {
    let mut b = [0u8; KEY_LEN];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| format!("cannot read 32 random bytes from /dev/urandom: {e}"))?;
    Ok(Key::from_bytes(b))
}

/// Writes `key` to a new file at `path`, readable and writable by its owner only.
pub fn write(path: &Path, key: &Key) -> Result<(), String> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(key.bytes()))
        .map_err(|e| format!("cannot write the key file {}: {e}", path.display()))
}

/// Reads a key file: exactly 32 bytes, not readable by group or others.
pub fn load(path: &Path) -> Result<Key, String> {
    let name = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("--key {name}: {e}"))?;
    // Type and size before a byte is read: a FIFO would block the launcher for ever, and a
    // 2 GiB sparse file would be read whole only to be refused.
    if let Some(kind) = crate::trace::regular::not_regular(&meta) {
        return Err(format!("--key {name}: {kind}, not a regular file"));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(format!(
            "--key {name}: the file is readable by others (mode {:o}); chmod 600 it",
            meta.permissions().mode() & 0o777
        ));
    }
    if meta.len() != KEY_LEN as u64 {
        return Err(wrong_size(&name.to_string(), meta.len()));
    }
    let bytes = crate::trace::regular::read(path, KEY_LEN as u64)
        .map_err(|e| format!("--key {e}"))?
        .ok_or_else(|| format!("--key {name}: no such file"))?;
    let b: [u8; KEY_LEN] = bytes
        .as_slice()
        .try_into()
        .map_err(|_| wrong_size(&name.to_string(), bytes.len() as u64))?;
    Ok(Key::from_bytes(b))
}

fn wrong_size(name: &str, len: u64) -> String {
    format!(
        "--key {name}: a key file holds exactly {KEY_LEN} bytes, this one {len} (make one with: head -c 32 /dev/urandom > FILE; chmod 600 FILE)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_key_reads_back_and_bad_files_are_named() {
        let dir = std::env::temp_dir().join(format!("coordlab-keyfile-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let k = generate().unwrap();
        assert_ne!(k, generate().unwrap());
        let p = dir.join(KEY_FILE);
        write(&p, &k).unwrap();
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(load(&p).unwrap(), k);
        assert!(write(&p, &k).is_err(), "never overwrites a key");
        let short = dir.join("short");
        std::fs::write(&short, b"abc").unwrap();
        std::fs::set_permissions(&short, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(load(&short).unwrap_err().contains("exactly 32 bytes"));
        std::fs::set_permissions(&short, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(load(&short).unwrap_err().contains("readable by others"));
        assert!(load(&dir.join("none")).unwrap_err().contains("none"));
        let fifo = dir.join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        assert!(load(&fifo).unwrap_err().contains("a FIFO, not a regular file"));
        let sparse = dir.join("sparse");
        let f = std::fs::File::create(&sparse).unwrap();
        f.set_len(2 << 30).unwrap();
        std::fs::set_permissions(&sparse, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(load(&sparse).unwrap_err().contains("this one 2147483648"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
