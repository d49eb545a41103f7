//! The receive buffer: 64 KiB (a UDP datagram's largest) of which a node touches only what its
//! datagrams fill, usually the first page. From the heap, `vec![0; 65_536]` zeroed every page of
//! it, since the zygote's heap it is carved from is not known to be zero: 56 KiB of each node's
//! private memory (measured at 1,024 nodes), a fifth of it. An anonymous mapping is zero
//! already, and a page costs memory only once written.

use nix::libc;
use std::ops::{Deref, DerefMut};

/// The largest datagram a node reads whole.
pub(crate) const RECV_BUF_LEN: usize = 65_536;

/// A zeroed buffer of [`RECV_BUF_LEN`] bytes (or a multiple) whose pages are resident only
/// once written.
pub(crate) struct RecvBuf {
    mapped: Option<std::ptr::NonNull<u8>>,
    len: usize,
    /// Used only when the mapping fails (then zeroed in full, as before).
    fallback: Vec<u8>,
}

impl RecvBuf {
    /// A new buffer of one datagram; never fails (falls back to the heap).
    pub fn new() -> Self {
        Self::with_len(RECV_BUF_LEN)
    }

    /// A new buffer of `len` bytes; never fails (falls back to the heap).
    pub fn with_len(len: usize) -> Self {
        // SAFETY: a fresh private anonymous mapping; no existing memory is touched.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        match p {
            libc::MAP_FAILED => RecvBuf {
                mapped: None,
                len,
                fallback: vec![0; len],
            },
            p => RecvBuf {
                mapped: std::ptr::NonNull::new(p.cast()),
                len,
                fallback: Vec::new(),
            },
        }
    }
}

impl Default for RecvBuf {
    fn default() -> Self {
        Self::new()
    }
}

impl Deref for RecvBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self.mapped {
            // SAFETY: a live mapping of `len` bytes, readable, zero-filled by the kernel, owned
            // by this value alone.
            Some(p) => unsafe { std::slice::from_raw_parts(p.as_ptr(), self.len) },
            None => &self.fallback,
        }
    }
}

impl DerefMut for RecvBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        match self.mapped {
            // SAFETY: as above, and borrowed mutably through `self`.
            Some(p) => unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), self.len) },
            None => &mut self.fallback,
        }
    }
}

impl Drop for RecvBuf {
    fn drop(&mut self) {
        if let Some(p) = self.mapped {
            // SAFETY: the mapping made in `new`, unmapped once; no borrow outlives `self`.
            unsafe { libc::munmap(p.as_ptr().cast(), self.len) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_buffer_is_zeroed_writable_and_whole() {
        let mut b = RecvBuf::new();
        assert_eq!(b.len(), RECV_BUF_LEN);
        assert!(b.iter().all(|&x| x == 0));
        b[0] = 7;
        b[RECV_BUF_LEN - 1] = 9;
        assert_eq!((b[0], b[RECV_BUF_LEN - 1]), (7, 9));
    }
}
