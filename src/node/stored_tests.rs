use super::*;
use std::os::unix::fs::FileExt;

fn dir() -> tempdir::Dir {
    tempdir::Dir::new()
}

/// A directory removed when dropped.
mod tempdir {
    pub struct Dir(pub std::path::PathBuf);
    impl Dir {
        pub fn new() -> Self {
            static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let d = std::env::temp_dir().join(format!("coordlab-stored-{}-{n}", std::process::id()));
            std::fs::create_dir_all(&d).unwrap();
            Dir(d)
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn read(path: &Path) -> Vec<u8> {
    read_state(path).unwrap().unwrap().unwrap()
}

#[test]
fn stores_alternate_slots_in_one_file_and_read_back_the_last() {
    let d = dir();
    let path = d.0.join("state-1.bin");
    assert!(read_state(&path).unwrap().is_none(), "no file yet");
    let mut s = StateFile::new(path.clone(), false);
    for (i, p) in [&b"term 1"[..], b"term 2", b"term 3 and more"].iter().enumerate() {
        s.store(p).unwrap();
        assert_eq!(read(&path), p.to_vec(), "store {i}");
        let c = slots::current(&std::fs::read(&path).unwrap()).unwrap().unwrap();
        assert_eq!((c.seq, c.slot), (i as u64 + 1, i % 2));
    }
    assert!(
        !path.with_extension("tmp").exists(),
        "the temporary name is gone after the first store"
    );
}

#[test]
fn a_restarted_node_goes_on_from_the_last_store_and_never_overwrites_it_first() {
    let d = dir();
    let path = d.0.join("state-2.bin");
    StateFile::new(path.clone(), false).store(b"before the kill").unwrap();
    StateFile::new(path.clone(), false).store(b"one").unwrap();
    let c = slots::current(&std::fs::read(&path).unwrap()).unwrap().unwrap();
    assert_eq!((c.payload.as_slice(), c.seq, c.slot), (&b"one"[..], 2, 1));
    let mut s = StateFile::new(path.clone(), true);
    s.store(b"two").unwrap();
    assert_eq!(read(&path), b"two");
}

#[test]
fn a_store_cut_short_by_a_kill_reads_as_the_state_before_it() {
    let d = dir();
    let path = d.0.join("state-3.bin");
    let mut s = StateFile::new(path.clone(), false);
    s.store(b"first").unwrap();
    s.store(b"second").unwrap();
    // The third store goes to slot 0; the kill let only its first 20 bytes in.
    let third = slots::slot(3, b"third, never whole");
    let f = OpenOptions::new().write(true).open(&path).unwrap();
    f.write_all_at(&third[..20], slots::slot_offset(slots::span_for(5), 0) as u64)
        .unwrap();
    assert_eq!(read(&path), b"second");
}

#[test]
fn a_state_wider_than_the_slots_makes_a_wider_file() {
    let d = dir();
    let path = d.0.join("state-4.bin");
    let mut s = StateFile::new(path.clone(), false);
    s.store(b"small").unwrap();
    let big = vec![7u8; 20_000];
    s.store(&big).unwrap();
    assert_eq!(read(&path), big);
    s.store(b"small again").unwrap();
    assert_eq!(read(&path), b"small again");
    let c = slots::current(&std::fs::read(&path).unwrap()).unwrap().unwrap();
    assert_eq!(c.seq, 3);
}

#[test]
fn a_damaged_file_is_refused_and_the_next_store_starts_a_good_one() {
    let d = dir();
    let path = d.0.join("state-5.bin");
    let mut s = StateFile::new(path.clone(), false);
    s.store(b"kept").unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    // The stored payload's last byte (the file holds room for the second slot after it).
    let last = slots::slot_offset(slots::span_for(4), 0) + slots::SLOT_HEAD + 3;
    bytes[last] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    assert!(read_state(&path).unwrap().unwrap().unwrap_err().contains("damaged"));
    StateFile::new(path.clone(), false).store(b"fresh").unwrap();
    assert_eq!(read(&path), b"fresh");
    // The layout before the slots still reads.
    std::fs::write(&path, crate::engine::durable::seal(b"old layout")).unwrap();
    assert_eq!(read(&path), b"old layout");
}

#[test]
fn a_file_made_at_start_holds_nothing_until_the_first_store() {
    let d = dir();
    let path = d.0.join("state-6.bin");
    let mut s = StateFile::new(path.clone(), false);
    s.prepare().unwrap();
    assert!(path.exists());
    assert!(read_state(&path).unwrap().is_none(), "nothing stored yet");
    s.store(b"first").unwrap();
    let c = slots::current(&std::fs::read(&path).unwrap()).unwrap().unwrap();
    assert_eq!((c.payload.as_slice(), c.seq, c.slot), (&b"first"[..], 1, 1));
    // A kill during that first store leaves the file holding nothing, not a damaged one.
    let f = OpenOptions::new().write(true).open(&path).unwrap();
    f.write_all_at(&[0xff; 8], slots::slot_offset(c.span, 1) as u64)
        .unwrap();
    assert!(read_state(&path).unwrap().is_none());
    // A restarted node prepares the file it left, keeping what it holds.
    StateFile::new(path.clone(), false).store(b"kept").unwrap();
    StateFile::new(path.clone(), false).prepare().unwrap();
    assert_eq!(read(&path), b"kept");
}
