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
pub(crate) const WORTH_IT: usize = crate::node::LARGE_LAUNCH;

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
    let maps = parse_maps(&std::fs::read_to_string("/proc/self/maps")?);
    let mut segments = Vec::new();
    for (i, m) in maps.iter().enumerate() {
        // The binary and its shared libraries (libc's code faulted in every node too).
        let ours = m.path == exe || (m.path.starts_with('/') && m.path.contains(".so"));
        if !ours || !(m.perms == "r-xp" || m.perms == "r--p") {
            continue;
        }
        let prot = match m.perms.as_str() {
            "r-xp" => libc::PROT_READ | libc::PROT_EXEC,
            _ => libc::PROT_READ,
        };
        let (from, to) = widened(&maps, i);
        segments.push((from, to - from, m.start - from, m.end - m.start, prot));
    }
    let mut moved = 0;
    for (at, len, offset, used, prot) in segments {
        // SAFETY: `at..at+len` holds a mapping of this process (just read from its maps) and
        // only holes or inaccessible padding beside it (`widened`); the copy holds the same
        // bytes at the same addresses, and mremap replaces the old mapping with it in one
        // call, so no instruction or read ever sees anything but these bytes.
        unsafe { replace(at, len, offset, used, prot)? };
        moved += used;
    }
    Ok(moved)
}

/// One line of `/proc/self/maps`.
struct Mapping {
    start: usize,
    end: usize,
    perms: String,
    path: String,
}

fn parse_maps(text: &str) -> Vec<Mapping> {
    text.lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let (range, perms) = (f.next()?, f.next()?);
            let path = f.nth(3).unwrap_or("").to_string();
            let (a, b) = range.split_once('-')?;
            Some(Mapping {
                start: usize::from_str_radix(a, 16).ok()?,
                end: usize::from_str_radix(b, 16).ok()?,
                perms: perms.to_string(),
                path,
            })
        })
        .collect()
}

/// A huge page's size on x86-64 and arm64 (4 KiB base pages).
const HUGE: usize = 2 << 20;

/// The range the copy of mapping `i` may take: widened to 2 MiB boundaries where nothing but a
/// hole or inaccessible padding (`---p`, how the loader fills the gaps of a binary whose
/// segments are 2 MiB aligned: see build.rs) lies between them, so that the copy's ends too sit
/// in huge pages; otherwise the mapping itself.
fn widened(maps: &[Mapping], i: usize) -> (usize, usize) {
    let m = &maps[i];
    let free = |from: usize, to: usize| maps.iter().all(|o| o.end <= from || o.start >= to || o.perms == "---p");
    let down = m.start & !(HUGE - 1);
    let up = m.end.div_ceil(HUGE) * HUGE;
    let from = if down < m.start && free(down, m.start) {
        down
    } else {
        m.start
    };
    let to = if up > m.end && free(m.end, up) { up } else { m.end };
    (from, to)
}

/// Replaces `len` bytes at `start` by anonymous memory with protection `prot` holding a copy of
/// the `used` bytes at `start + offset` at the same place (zeros around them).
unsafe fn replace(start: usize, len: usize, offset: usize, used: usize, prot: libc::c_int) -> io::Result<()> {
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
    std::ptr::copy_nonoverlapping((start + offset) as *const u8, (copy as *mut u8).add(offset), used);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn maps(text: &str) -> Vec<Mapping> {
        parse_maps(text)
    }

    #[test]
    fn a_segment_widens_to_huge_page_boundaries_over_holes_and_padding_only() {
        let m = maps(
            "100000-180000 r--p 00000000 00:01 7 /bin/x\n\
             180000-200000 ---p 00080000 00:01 7 /bin/x\n\
             200000-5d0000 r-xp 00200000 00:01 7 /bin/x\n\
             800000-81f000 r--p 00800000 00:01 7 /bin/x\n\
             81f000-820000 rw-p 0081f000 00:01 7 /bin/x\n",
        );
        // Down into nothing (0x0-0x100000 is a hole), up over the padding.
        assert_eq!(widened(&m, 0), (0, 0x200000));
        // Up into the hole before the next segment.
        assert_eq!(widened(&m, 2), (0x200000, 0x600000));
        // A writable neighbour in the same 2 MiB stops the widening on that side.
        assert_eq!(widened(&m, 3), (0x800000, 0x81f000));
    }

    #[test]
    fn a_neighbour_in_the_way_keeps_the_mapping_as_it_is() {
        let m = maps(
            "7f0000001000-7f0000003000 r--p 00000000 00:01 9 /lib/libc.so.6\n\
             7f0000003000-7f0000100000 r-xp 00002000 00:01 9 /lib/libc.so.6\n\
             7f0000100000-7f0000102000 rw-p 00000000 00:00 0\n",
        );
        assert_eq!(widened(&m, 1), (0x7f0000003000, 0x7f0000100000));
        // Down to 0x7f0000000000 is free, up to the next boundary the code itself lies.
        assert_eq!(widened(&m, 0), (0x7f0000000000, 0x7f0000001000 + 0x2000));
    }
}
