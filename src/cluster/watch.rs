//! Follows a growing `.jsonl` file: each read returns the records of the complete lines written
//! since the last one (a line still being written waits for its newline).

use crate::trace::Record;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::PathBuf;

/// A reader that remembers how far it got in one file.
#[derive(Debug)]
pub struct Tail {
    path: PathBuf,
    offset: u64,
    partial: Vec<u8>,
    /// Lines that did not parse as records, so far.
    pub bad_lines: usize,
}

impl Tail {
    /// Follows `path` (which need not exist yet).
    pub fn new(path: PathBuf) -> Self {
        Tail {
            path,
            offset: 0,
            partial: Vec::new(),
            bad_lines: 0,
        }
    }

    /// The records of every line completed since the last call.
    pub fn read_new(&mut self) -> io::Result<Vec<Record>> {
        // One stat, and no open, for a file that did not grow: the launcher polls thousands
        // of traces every tick.
        let len = match std::fs::metadata(&self.path) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        if len == self.offset {
            return Ok(Vec::new());
        }
        let mut file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let len = file.metadata()?.len();
        if len < self.offset {
            // Truncated under us: start over rather than read garbage.
            self.offset = 0;
            self.partial.clear();
        }
        file.seek(SeekFrom::Start(self.offset))?;
        let mut chunk = Vec::with_capacity((len - self.offset) as usize);
        file.read_to_end(&mut chunk)?;
        self.offset += chunk.len() as u64;
        self.partial.extend_from_slice(&chunk);
        let Some(end) = self.partial.iter().rposition(|&b| b == b'\n') else {
            return Ok(Vec::new());
        };
        let rest = self.partial.split_off(end + 1);
        let complete = std::mem::replace(&mut self.partial, rest);
        let mut out = Vec::new();
        for line in complete.split(|&b| b == b'\n') {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<Record>(line) {
                Ok(r) => out.push(r),
                Err(_) => self.bad_lines += 1,
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn only_complete_lines_are_read_and_each_once() {
        let path = std::env::temp_dir().join(format!("coordlab-tail-{}.jsonl", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let mut tail = Tail::new(path.clone());
        assert!(tail.read_new().unwrap().is_empty());
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap();
        let line = r#"{"t":1,"node":2,"ev":"leader","leader":2,"term":1}"#;
        write!(f, "{line}\n{}", &line[..10]).unwrap();
        f.flush().unwrap();
        assert_eq!(tail.read_new().unwrap().len(), 1);
        assert!(tail.read_new().unwrap().is_empty());
        write!(f, "{}\nnot json\n", &line[10..]).unwrap();
        f.flush().unwrap();
        let recs = tail.read_new().unwrap();
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0].node, Some(2));
        assert_eq!(tail.bad_lines, 1);
        std::fs::remove_file(&path).unwrap();
    }
}
