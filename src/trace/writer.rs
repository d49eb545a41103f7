//! Appends trace records to a `.jsonl` file, buffered, flushed by the caller's loop.

use super::Record;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// Host CLOCK_REALTIME in microseconds: the `t` of every trace line.
pub fn wall_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// A buffered appender of JSON lines.
pub struct JsonlWriter {
    out: BufWriter<File>,
}

impl JsonlWriter {
    /// Opens `path` for appending (a restarted node continues its own file).
    pub fn append(path: &Path) -> io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self {
            out: BufWriter::with_capacity(64 * 1024, file),
        })
    }

    /// Writes one record as one line.
    pub fn write(&mut self, rec: &Record) -> io::Result<()> {
        serde_json::to_writer(&mut self.out, rec)?;
        self.out.write_all(b"\n")
    }

    /// Pushes buffered lines to the file.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}
