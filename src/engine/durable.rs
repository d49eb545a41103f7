//! The framing of a node's durable state file (`state-<id>.bin`): a magic, a blake3 checksum
//! of the payload, then the payload. Every algorithm's durable state goes through it, so a
//! file that was damaged (a bad disk, a hand edit, a write cut short outside the runtime's
//! rename) is refused as a whole, loudly, rather than parsed as whatever it happens to say.
//! The runtime frames its files with it, and the simulator its in-memory stores, so that a
//! damaged store can be tested in the simulator.

/// The first bytes of every state file written by this version.
const MAGIC: &[u8; 8] = b"cldstat1";

/// The file's bytes for `payload`.
pub fn seal(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(MAGIC.len() + 32 + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(blake3::hash(payload).as_bytes());
    out.extend_from_slice(payload);
    out
}

/// The payload of a state file, or why the file does not verify (one line).
pub fn open(file: &[u8]) -> Result<Vec<u8>, String> {
    let head = MAGIC.len() + 32;
    if file.len() < head || &file[..MAGIC.len()] != MAGIC {
        return Err(format!(
            "{} bytes without this version's header: not a state file written by coordlab",
            file.len()
        ));
    }
    let payload = &file[head..];
    if blake3::hash(payload).as_bytes()[..] != file[MAGIC.len()..head] {
        return Err("its checksum does not match its content: damaged".into());
    }
    Ok(payload.to_vec())
}

/// Whether `setup` asks for persisted state to be fsynced (`--set fsync=true`, an engine key);
/// false when the keys do not read (the node refused them earlier).
pub(crate) fn fsync_wanted(setup: &crate::algo::Setup) -> bool {
    crate::clock::EngineKeys::from_setup(setup).is_ok_and(|k| k.fsync)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_sealed_opens_and_any_damage_is_refused() {
        let file = seal(b"{\"round\":3}");
        assert_eq!(open(&file).unwrap(), b"{\"round\":3}");
        assert!(open(&[7u8; 11]).unwrap_err().contains("header"));
        for i in 0..file.len() {
            let mut bad = file.clone();
            bad[i] ^= 0x10;
            assert!(open(&bad).is_err(), "a flipped bit at {i} went unnoticed");
        }
        assert!(open(&file[..file.len() - 1]).is_err(), "a truncated file");
    }
}
