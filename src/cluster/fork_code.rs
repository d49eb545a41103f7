//! The zygote's copy of the binary's code, shared with every node it forks already mapped.
//!
//! Why: `fork` does not copy the page-table entries of a file mapping (the kernel expects the
//! child to fault them in again, cheaply, from the page cache), so every node faulted the
//! binary's code and read-only data in afresh: about 80 page faults a node, each mapping up to
//! 16 neighbouring pages (fault-around), which `perf` put at a quarter of a node's start-up CPU
//! at 4,096 nodes (`next_uptodate_folio`, `filemap_map_pages`). An anonymous mapping's entries
//! are copied by `fork`: the zygote moves a copy of those segments, at the same addresses, into
//! anonymous memory, so each node starts with its code mapped, shared copy-on-write (code is
//! never written, so never copied).
//!
//! The price: the copy (about 6.5 MiB) counts once in the zygote's descendants' PSS, so it is
//! only made for launches of many nodes ([`WORTH_IT`]); and `perf` cannot name functions in
//! anonymous memory, so `COORDLAB_PERF=1` in the environment keeps the code file-backed for
//! profiling.

use nix::libc;
use std::io;

/// `madvise(2)`'s synchronous collapse into huge pages (Linux 6.1; not in every libc crate).
const MADV_COLLAPSE: libc::c_int = 25;

/// From how many nodes the copy pays: at 1,024 nodes it adds about 6.5 KiB to a node's PSS.
pub(crate) const WORTH_IT: usize = 1024;

/// Whether the copy is wanted for a launch of `n` nodes.
pub(crate) fn wanted(n: usize) -> bool {
    n >= WORTH_IT && std::env::var_os("COORDLAB_PERF").is_none_or(|v| v.is_empty() || v == "0")
}

/// Moves every read-only and executable segment of this process's binary and shared libraries into anonymous
/// memory holding the same bytes at the same addresses; returns how many bytes. Only in a
/// process with one thread (no other thread may run code while its mapping is replaced).
pub(crate) fn share() -> io::Result<usize> {
    let exe = std::fs::read_link("/proc/self/exe")?;
    let exe = exe.to_string_lossy();
    let maps = std::fs::read_to_string("/proc/self/maps")?;
    let mut segments = Vec::new();
    for line in maps.lines() {
        let mut f = line.split_whitespace();
        let (Some(range), Some(perms), Some(path)) = (f.next(), f.next(), f.nth(3)) else {
            continue;
        };
        // The binary and its shared libraries (libc's code faulted in every node too).
        let ours = path == exe || (path.starts_with('/') && path.contains(".so"));
        if !ours || !(perms == "r-xp" || perms == "r--p") {
            continue;
        }
        let Some((a, b)) = range.split_once('-') else { continue };
        let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) else {
            continue;
        };
        let prot = match perms {
            "r-xp" => libc::PROT_READ | libc::PROT_EXEC,
            _ => libc::PROT_READ,
        };
        segments.push((a, b - a, prot));
    }
    let mut moved = 0;
    for (start, len, prot) in segments {
        // SAFETY: `start..start+len` is a mapping of this process (just read from its maps);
        // the copy holds the same bytes, and mremap replaces the old mapping with it in one
        // call, so no instruction or read ever sees anything but these bytes.
        unsafe { replace(start, len, prot)? };
        moved += len;
    }
    Ok(moved)
}

/// Replaces the mapping at `start` (`len` bytes) by an anonymous copy with protection `prot`.
unsafe fn replace(start: usize, len: usize, prot: libc::c_int) -> io::Result<()> {
    let copy = libc::mmap(
        std::ptr::null_mut(),
        len,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
        -1,
        0,
    );
    if copy == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    std::ptr::copy_nonoverlapping(start as *const u8, copy as *mut u8, len);
    if libc::mprotect(copy, len, prot) != 0 {
        let e = io::Error::last_os_error();
        libc::munmap(copy, len);
        return Err(e);
    }
    let moved = libc::mremap(
        copy,
        len,
        len,
        libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
        start as *mut libc::c_void,
    );
    if moved == libc::MAP_FAILED {
        let e = io::Error::last_os_error();
        libc::munmap(copy, len);
        return Err(e);
    }
    // In 2 MiB pages where the range allows: `fork` then copies one entry for each instead
    // of 512 (the copy's page-table entries were a third of the zygote's CPU per fork without
    // them). A kernel that cannot just keeps the small pages.
    libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    libc::madvise(start as *mut libc::c_void, len, MADV_COLLAPSE);
    Ok(())
}
