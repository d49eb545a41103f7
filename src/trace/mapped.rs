//! A node's trace file written through a shared memory mapping: a record is copied into the
//! file's pages in the page cache, with no system call, and is in the file the moment the copy
//! ends. A SIGKILL cannot lose it (the pages belong to the kernel, not to the process), so the
//! runtime writes a hop's records before it sends the hop's datagrams: every datagram a killed
//! node sent has its `send` record in the file.
//!
//! The mapping is a window of the file, first 16 KiB and doubling to 1 MiB; the file is
//! extended with zeros written ahead of the lines, up to 64 KiB at a time within the window, so
//! that a full disk is an error before a line goes there, never a SIGBUS on a write: a quiet
//! node's trace costs it four pages. A clean stop truncates the file to what was
//! written; a killed node's file ends in the zeros written ahead, which every reader takes as
//! the end of the file (a line never holds a NUL byte: JSON escapes it).
//!
//! Zeros written, not `fallocate`: on ext4 a fallocated range is unwritten extents, and each
//! page's first write through the mapping then took a journal handle to convert its extent;
//! written zeros are ordinary page-cache pages with their blocks reserved, which the mapping's
//! writes only dirty again. Twenty files of 350 KiB each, written as a Ricart-Agrawala run's
//! nodes write them: 13-16 ms fallocated, 5.6-6.1 ms zero-filled (7.3-8.0 ms on tmpfs).

use super::vc_changes::VcChanges;
use super::Record;
use nix::libc;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::fd::AsRawFd;
use std::path::Path;

/// The first window; each next one doubles, up to [`MAX_WINDOW`].
const FIRST_WINDOW: u64 = 16 << 10;
/// The largest window: a busy node remaps once a MiB of records.
const MAX_WINDOW: u64 = 1 << 20;
/// Window starts are multiples of this (mmap's offset must be page-aligned).
const PAGE: u64 = 4096;
/// How far past the written end [`MappedTrace::flush`] faults pages in, at least: two pages,
/// a few loop turns of a busy node with 64-entry vector clocks. A node whose steps write more
/// (a Ricart-Agrawala release: 19 `send` records and more) gets twice its largest step, up to
/// [`MOST_AHEAD`].
const AHEAD: u64 = 2 * PAGE;
/// The most [`MappedTrace::flush`] faults in ahead.
const MOST_AHEAD: u64 = 16 * PAGE;
/// Zeros are written ahead of the lines this much at a time (within the window): the first
/// window, 16 KiB, takes one step; a 1 MiB window is filled as it is used.
const FILL_STEP: u64 = 64 << 10;

/// An appender of JSON lines into a file mapped shared.
pub struct MappedTrace {
    file: File,
    /// The window: file bytes `[map_off, map_off + map_len)`; null before the first record.
    map: *mut u8,
    map_off: u64,
    map_len: u64,
    /// Where the written lines end in the file.
    end: u64,
    /// The window's pages before this file offset are faulted in (see [`MappedTrace::flush`]).
    touched: u64,
    /// Where the lines ended at the last [`MappedTrace::flush`], and how far it faults ahead.
    flushed: u64,
    ahead: u64,
    next_window: u64,
    /// The file's length: past `end` it holds the zeros written ahead.
    allocated: u64,
    line: Vec<u8>,
    /// This boot's previous clock: lines carry their vector clock as changes (`dvc`).
    vc: VcChanges,
}

// SAFETY: the mapping is owned by this value alone and only touched through `&mut self`.
unsafe impl Send for MappedTrace {}

impl MappedTrace {
    /// Opens `path` to append to it (a restarted node continues its own file). What a killed
    /// earlier boot left past its last complete line (its window's zeros, a line cut by the
    /// kill) is cut off first: that line's datagrams, if any, had not been sent.
    pub fn append(path: &Path) -> io::Result<Self> {
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(path)?;
        let len = file.metadata()?.len();
        // A new file (every node's on a fresh launch) has nothing to read back or cut: the
        // read-back's 64 KiB buffer was, zeroed and faulted in, a fifth of a forked node's
        // start-up CPU at 4,096 nodes (perf).
        let end = match len {
            0 => 0,
            _ => written_end(&mut file, len)?,
        };
        if end != len {
            file.set_len(end)?;
        }
        let mut t = MappedTrace {
            file,
            map: std::ptr::null_mut(),
            map_off: 0,
            map_len: 0,
            end,
            touched: 0,
            flushed: end,
            ahead: AHEAD,
            next_window: FIRST_WINDOW,
            allocated: end,
            line: Vec::with_capacity(1024),
            vc: VcChanges::default(),
        };
        // Mapped now, so that the first record costs what any other does.
        t.remap(0)?;
        Ok(t)
    }

    /// Writes one record as one line: in the file (the page cache) when this returns. Its
    /// vector clock is written as the changes since the previous line's (`dvc`), or whole.
    pub fn write(&mut self, rec: &Record) -> io::Result<()> {
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        self.vc.encode(rec, &mut line);
        let r = self.write_bytes(&line);
        self.line = line;
        r
    }

    /// Appends `bytes` (whole lines) to the file.
    pub fn write_bytes(&mut self, bytes: &[u8]) -> io::Result<()> {
        let len = bytes.len() as u64;
        if self.map.is_null() || self.end + len > self.map_off + self.map_len {
            self.remap(len)?;
        }
        if self.end + len > self.allocated {
            // Past what `flush` filled ahead (a step that wrote more than ever before).
            self.zero_fill(self.end + len)?;
        }
        // SAFETY: [end, end + len) lies inside the window (remap made sure), which is mapped
        // writable and shared over allocated file blocks, and `bytes` is not in the window.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                self.map.add((self.end - self.map_off) as usize),
                bytes.len(),
            );
        }
        self.end += len;
        self.touched = self.touched.max(self.end);
        Ok(())
    }

    /// Maps a new window from the page holding the end, large enough for `need` more bytes.
    fn remap(&mut self, need: u64) -> io::Result<()> {
        self.unmap();
        let off = self.end / PAGE * PAGE;
        let len = self.next_window.max((self.end - off + need).div_ceil(PAGE) * PAGE);
        self.next_window = (self.next_window * 2).min(MAX_WINDOW);
        // Mapped past the file's end: only the part filled with zeros is ever written
        // (`zero_fill`), the rest as the lines come.
        self.map = map_file(&self.file, off, len as usize)?;
        self.map_off = off;
        self.map_len = len;
        // The page the next line goes to, faulted in writable now rather than mid-hop.
        self.touched = off;
        self.fault_in(self.end + 1)
    }

    /// Faults the window's pages from `touched` up to the one holding byte `upto - 1` in,
    /// writable, and moves `touched` past them. One `MADV_POPULATE_WRITE` for all of them: a
    /// first touch of each page was two faults (a read of the file's zeros, then the write
    /// that marks it dirty, ext4's `page_mkwrite`), one trap each. Where the call is refused
    /// (a kernel before 5.14), each page is written the byte it holds, faulting it in.
    fn fault_in(&mut self, upto: u64) -> io::Result<()> {
        let window_end = self.map_off + self.map_len;
        let upto = upto.div_ceil(PAGE).saturating_mul(PAGE).min(window_end);
        let from = self.touched.div_ceil(PAGE) * PAGE;
        if self.map.is_null() || from >= upto {
            return Ok(());
        }
        if upto > self.allocated {
            // A step of zeros at a time, inside the window: one `pwrite` per FILL_STEP.
            self.zero_fill(upto.max(self.allocated + FILL_STEP).min(window_end))?;
        }
        // SAFETY: [from, upto) lies inside the window, mapped shared and writable over
        // allocated file blocks; only this writer writes past `end`, and a byte written is the
        // one already there.
        unsafe {
            let start = self.map.add((from - self.map_off) as usize);
            let len = (upto - from) as usize;
            if libc::madvise(start.cast(), len, libc::MADV_POPULATE_WRITE) != 0 {
                for page in (0..len).step_by(PAGE as usize) {
                    let b = start.add(page);
                    std::ptr::write_volatile(b, std::ptr::read_volatile(b));
                }
            }
        }
        self.touched = upto;
        Ok(())
    }

    /// Extends the file to `to` bytes with zeros written (see the module's note): the bytes
    /// before `allocated` are lines or zeros already, and are not written again. A full disk
    /// is ENOSPC here.
    fn zero_fill(&mut self, to: u64) -> io::Result<()> {
        extend_with_zeros(&self.file, self.allocated, to)?;
        self.allocated = self.allocated.max(to);
        Ok(())
    }

    fn unmap(&mut self) {
        if !self.map.is_null() {
            // SAFETY: the mapping made by `remap`, not used after this.
            unsafe { libc::munmap(self.map.cast(), self.map_len as usize) };
            self.map = std::ptr::null_mut();
            self.map_len = 0;
        }
    }

    /// Nothing to write out (a record is in the file once written): faults in the pages the
    /// next lines will go to (see [`AHEAD`]), so that a first write to a page (page faults and
    /// the file system's block bookkeeping: 3-6 us on ext4, most of a hop's trace cost) is
    /// paid here, after the loop's datagrams have left, instead of between a receive and its send.
    pub fn flush(&mut self) -> io::Result<()> {
        let step = self.end.saturating_sub(self.flushed);
        self.flushed = self.end;
        self.ahead = self.ahead.max(step.saturating_mul(2).min(MOST_AHEAD));
        if self.touched < self.end + self.ahead.min(AHEAD) {
            self.fault_in(self.end + self.ahead)?;
        }
        Ok(())
    }

    /// Unmaps the window and cuts the file to the lines written (a clean stop).
    pub(crate) fn finish(&mut self) -> io::Result<()> {
        self.unmap();
        if self.file.metadata()?.len() != self.end {
            self.file.set_len(self.end)?;
        }
        Ok(())
    }

    /// Bytes written to the file so far, the earlier boots' included.
    pub fn len(&self) -> u64 {
        self.end
    }

    /// Whether the file holds no line.
    pub fn is_empty(&self) -> bool {
        self.end == 0
    }
}

impl Drop for MappedTrace {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// Maps `[off, off + len)` of `file` shared and writable, the file first extended with zeros
/// to its end if it is shorter (see the module's note). The caller unmaps it.
pub(crate) fn map_shared(file: &File, off: u64, len: usize) -> io::Result<*mut u8> {
    extend_with_zeros(file, file.metadata()?.len(), off + len as u64)?;
    map_file(file, off, len)
}

/// Maps `[off, off + len)` of `file`, which the caller has made allocated blocks, shared and
/// writable. The caller unmaps it.
fn map_file(file: &File, off: u64, len: usize) -> io::Result<*mut u8> {
    // SAFETY: a fresh shared mapping of the file's [off, off + len), allocated by the caller.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            off as libc::off_t,
        )
    };
    match p == libc::MAP_FAILED {
        true => Err(io::Error::last_os_error()),
        false => Ok(p.cast()),
    }
}

/// Writes zeros to `file` from `from` (its length) to `to`: ordinary page-cache pages over
/// reserved blocks, so that a full disk shows here as ENOSPC, where a write into a hole of a
/// mapping would be a SIGBUS.
fn extend_with_zeros(file: &File, mut from: u64, to: u64) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    static ZEROS: [u8; 64 << 10] = [0; 64 << 10];
    while from < to {
        let n = (to - from).min(ZEROS.len() as u64) as usize;
        file.write_all_at(&ZEROS[..n], from)?;
        from += n as u64;
    }
    Ok(())
}

/// Where the complete lines of `file` (`len` bytes long) end: before its trailing zeros (a
/// killed writer's window) and any line they cut short.
fn written_end(file: &mut File, len: u64) -> io::Result<u64> {
    let mut end = len;
    let mut buf = vec![0u8; 64 << 10];
    // Back over the zeros, a chunk at a time.
    let mut tail_line = false;
    while end > 0 {
        let from = end.saturating_sub(buf.len() as u64);
        let chunk = &mut buf[..(end - from) as usize];
        file.seek(SeekFrom::Start(from))?;
        file.read_exact(chunk)?;
        if let Some(i) = chunk.iter().rposition(|&b| b != 0) {
            if chunk[i] == b'\n' {
                return Ok(from + i as u64 + 1);
            }
            // The last line has no newline: cut off, back to the newline before it.
            match chunk[..i].iter().rposition(|&b| b == b'\n') {
                Some(j) => return Ok(from + j as u64 + 1),
                None => {
                    tail_line = true;
                    end = from;
                    break;
                }
            }
        }
        end = from;
    }
    // A cut line longer than a chunk: back to the previous newline.
    while tail_line && end > 0 {
        let from = end.saturating_sub(buf.len() as u64);
        let chunk = &mut buf[..(end - from) as usize];
        file.seek(SeekFrom::Start(from))?;
        file.read_exact(chunk)?;
        if let Some(j) = chunk.iter().rposition(|&b| b == b'\n') {
            return Ok(from + j as u64 + 1);
        }
        end = from;
    }
    Ok(end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{read_jsonl_file, Event};

    fn path(name: &str) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("coordlab-mapped-{name}-{}.jsonl", std::process::id()));
        let _ = std::fs::remove_file(&p);
        p
    }

    fn note(i: u64, text_len: usize) -> Record {
        Record {
            t: i,
            node: Some(1),
            lamport: Some(i),
            pt: None,
            vc: None,
            hlc: None,
            event: Event::Note {
                text: "x".repeat(text_len),
                level: String::new(),
            },
        }
    }

    #[test]
    fn lines_across_windows_and_a_huge_one_read_back_and_a_clean_stop_leaves_no_zeros() {
        let p = path("windows");
        let mut w = MappedTrace::append(&p).unwrap();
        let mut want = Vec::new();
        let mut next_flush = 0;
        for i in 0..3000 {
            let r = note(i, if i == 1500 { 3 << 20 } else { (i % 700) as usize });
            w.write(&r).unwrap();
            want.push(r);
            // Steps of one to 40 lines, each followed by the loop's flush (pages faulted in
            // ahead, as far as twice the largest step, never past the window).
            if i == next_flush {
                next_flush = i + 1 + i % 40;
                w.flush().unwrap();
                assert!(w.touched <= w.map_off + w.map_len && w.touched >= w.end.min(w.map_off + w.map_len));
                // Nothing is written or faulted in past the file's zeros (a SIGBUS there).
                assert!(w.touched <= w.allocated && w.allocated <= w.map_off + w.map_len);
            }
        }
        let written = w.len();
        drop(w);
        assert_eq!(std::fs::metadata(&p).unwrap().len(), written);
        let j = read_jsonl_file(&p).unwrap();
        assert!(j.bad.is_empty() && !j.cut);
        assert_eq!(j.records, want);
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn a_killed_writers_zeros_and_cut_line_are_cut_off_when_its_next_boot_appends() {
        let p = path("killed");
        let mut w = MappedTrace::append(&p).unwrap();
        w.write(&note(1, 10)).unwrap();
        w.write(&note(2, 10)).unwrap();
        // Killed mid-line: what a SIGKILL leaves (the window's zeros stay; no truncation).
        w.write_bytes(b"{\"t\":3,\"node\":1,\"ev").unwrap();
        std::mem::forget(w);
        let len = std::fs::metadata(&p).unwrap().len();
        assert!(len >= FIRST_WINDOW, "the window is allocated: {len}");
        let j = read_jsonl_file(&p).unwrap();
        assert_eq!(j.records.len(), 2, "the zeros are not lines");
        assert!(j.cut, "the cut line is said as such");
        let mut w = MappedTrace::append(&p).unwrap();
        w.write(&note(4, 10)).unwrap();
        drop(w);
        let j = read_jsonl_file(&p).unwrap();
        assert!(j.bad.is_empty() && !j.cut, "{:?}", j.bad);
        assert_eq!(j.records.iter().map(|r| r.t).collect::<Vec<_>>(), [1, 2, 4]);
        std::fs::remove_file(&p).unwrap();
    }
}
