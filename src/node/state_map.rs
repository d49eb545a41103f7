//! The state file's header and two slots mapped shared: a store is a copy into the page cache.
//!
//! A `pwrite` per store was a system call and an inode time update (ext4's journal) between a
//! Chang-Roberts node's receive and its forward: perf put it at 7% of a node's CPU on the
//! ELECTION lap of a ring of 64. Copied into a shared mapping, the bytes are in the file the
//! moment the copy ends, as the write's were, so a SIGKILL after the store cannot lose them (the
//! pages are the kernel's); a kill during the copy leaves a slot whose hash does not verify, and
//! the reader takes the other slot, as with a write cut short.

use nix::libc;
use std::fs::File;
use std::io;

/// `len` bytes of a file from its start, mapped shared and writable.
pub(super) struct StateMap {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is owned by this value alone and only written through `&mut self`.
unsafe impl Send for StateMap {}

impl StateMap {
    /// Maps the first `len` bytes of `file`, allocating them first (a full disk is an error
    /// here, not a SIGBUS at a store), and faults its pages in writable, so that the first
    /// store after the go does not pay for it.
    pub fn new(file: &File, len: usize) -> io::Result<StateMap> {
        let map = StateMap {
            ptr: crate::trace::mapped::map_shared(file, 0, len)?,
            len,
        };
        for page in (0..len).step_by(4096) {
            // SAFETY: inside the mapping; the byte written is the one already there.
            unsafe {
                let b = map.ptr.add(page);
                std::ptr::write_volatile(b, std::ptr::read_volatile(b));
            }
        }
        Ok(map)
    }

    /// Copies `bytes` to file offset `at`.
    pub fn write_at(&mut self, bytes: &[u8], at: usize) {
        assert!(at + bytes.len() <= self.len, "a store past the mapped slots");
        // SAFETY: in bounds (checked above); the mapping is this value's.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr.add(at), bytes.len()) };
    }
}

impl Drop for StateMap {
    fn drop(&mut self) {
        // SAFETY: the mapping made by `new`, not used after this.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}
