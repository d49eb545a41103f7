//! Appends trace records to a `.jsonl` file, buffered, flushed by the caller's loop.

use super::Record;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// Host CLOCK_REALTIME in microseconds: the `t` of every trace line.
pub fn wall_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// Lines held before they are written out even if the caller has not flushed.
const CAPACITY: usize = 64 * 1024;
/// The part of the buffer touched when the writer opens. A node's first lines would otherwise
/// fault its pages in one at a time (perf's page-fault samples put about one fault per node in
/// here during the first ELECTION lap of a ring of 64); a lap writes a few KiB between flushes,
/// so two pages cover it, and the rest stays untouched and costs no resident memory.
const TOUCHED: usize = 8 * 1024;

/// A buffered appender of JSON lines.
pub struct JsonlWriter {
    file: File,
    buf: Vec<u8>,
}

impl JsonlWriter {
    /// Opens `path` for appending (a restarted node continues its own file).
    pub fn append(path: &Path) -> io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let mut buf = Vec::with_capacity(CAPACITY);
        buf.resize(TOUCHED, 0);
        buf.clear();
        Ok(Self { file, buf })
    }

    /// Writes one record as one line.
    pub fn write(&mut self, rec: &Record) -> io::Result<()> {
        serde_json::to_writer(&mut self.buf, rec)?;
        self.buf.push(b'\n');
        if self.buf.len() >= CAPACITY {
            self.flush()?;
        }
        Ok(())
    }

    /// Pushes buffered lines to the file.
    pub fn flush(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            // Cleared even if the write fails: a line is never written twice.
            let r = self.file.write_all(&self.buf);
            self.buf.clear();
            r?;
        }
        Ok(())
    }
}

impl Drop for JsonlWriter {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}
