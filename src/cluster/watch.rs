//! Follows a growing `.jsonl` file: each read takes in the records of the complete lines written
//! since the last one (a line still being written waits for its newline). Everything read is
//! kept, so that the run's check at the end takes it over instead of parsing the file again.

use crate::trace::{Jsonl, Record};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::PathBuf;

/// Reads at most `left` bytes from where `file` stands, up to the first NUL byte: a running
/// node writes through a mapping of its file (`MappedTrace`), so past its last line come zeros
/// its next lines will overwrite. A line holds no NUL byte (JSON escapes it), and the bytes before
/// the first one are written for good: reading stops there and resumes from there. Read a page at
/// a time, so that a node that wrote nothing new costs one small read, not its whole window.
fn read_written(file: &mut File, mut left: u64) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut piece = 4096u64;
    while left > 0 {
        let start = out.len();
        let want = piece.min(left);
        (&mut *file).take(want).read_to_end(&mut out)?;
        let got = (out.len() - start) as u64;
        if let Some(z) = out[start..].iter().position(|&b| b == 0) {
            out.truncate(start + z);
            break;
        }
        if got < want {
            break;
        }
        left -= got;
        piece = (piece * 2).min(1 << 20);
    }
    Ok(out)
}

/// A reader that remembers how far it got in one file, and what it read.
#[derive(Debug)]
pub struct Tail {
    path: PathBuf,
    /// The file's name, as a bad line names it.
    name: String,
    offset: u64,
    partial: Vec<u8>,
    /// Lines read so far, blank and bad ones included (a bad line's number).
    lines: usize,
    /// Every record, bad line and unknown kind read so far, as `RunDir` reads a whole file.
    read: Jsonl,
}

impl Tail {
    /// Follows `path` (which need not exist yet).
    pub fn new(path: PathBuf) -> Self {
        let name = path
            .file_name()
            .map_or_else(String::new, |f| f.to_string_lossy().into_owned());
        Tail {
            path,
            name,
            offset: 0,
            partial: Vec::new(),
            lines: 0,
            read: Jsonl::default(),
        }
    }

    /// Every record read so far, in file order.
    pub fn records(&self) -> &[Record] {
        &self.read.records
    }

    /// Reads every line completed since the last call; returns where their records are in
    /// [`Tail::records`].
    pub fn read_new(&mut self) -> io::Result<Range<usize>> {
        let before = self.read.records.len();
        // One stat, and no open, for a file that did not grow: the launcher polls thousands
        // of traces every tick.
        let len = match std::fs::metadata(&self.path) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(before..before),
            Err(e) => return Err(e),
        };
        self.read.exists = true;
        if len == self.offset {
            return Ok(before..before);
        }
        let mut file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(before..before),
            Err(e) => return Err(e),
        };
        let len = file.metadata()?.len();
        if len < self.offset {
            // Truncated under us: start over rather than read garbage.
            self.offset = 0;
            self.partial.clear();
            self.lines = 0;
            self.read = Jsonl {
                exists: true,
                ..Jsonl::default()
            };
        }
        let before = self.read.records.len();
        file.seek(SeekFrom::Start(self.offset))?;
        let chunk = read_written(&mut file, len - self.offset)?;
        self.offset += chunk.len() as u64;
        self.partial.extend_from_slice(&chunk);
        let Some(end) = self.partial.iter().rposition(|&b| b == b'\n') else {
            return Ok(before..before);
        };
        let rest = self.partial.split_off(end + 1);
        let complete = std::mem::replace(&mut self.partial, rest);
        for line in complete[..end].split(|&b| b == b'\n') {
            self.lines += 1;
            self.read.read_line(&self.name, self.lines, line);
        }
        Ok(before..self.read.records.len())
    }

    /// The file's name (`node-3.jsonl`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads the rest of the file, a last line without its newline included (a process killed
    /// while writing it), and hands over everything read: the file as a whole read would find it.
    pub fn finish(&mut self) -> io::Result<Jsonl> {
        self.read_new()?;
        // The writer is gone: what lies past a NUL byte is read too, as a whole reading of
        // the file reads it (only the zeros at the very end are not lines).
        if let Ok(mut file) = File::open(&self.path) {
            if file.metadata()?.len() > self.offset {
                file.seek(SeekFrom::Start(self.offset))?;
                let mut rest = Vec::new();
                file.read_to_end(&mut rest)?;
                rest.truncate(rest.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1));
                self.offset += rest.len() as u64;
                self.partial.extend_from_slice(&rest);
                if let Some(end) = self.partial.iter().rposition(|&b| b == b'\n') {
                    let tail = self.partial.split_off(end + 1);
                    let complete = std::mem::replace(&mut self.partial, tail);
                    for line in complete[..end].split(|&b| b == b'\n') {
                        self.lines += 1;
                        self.read.read_line(&self.name, self.lines, line);
                    }
                }
            }
        }
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.lines += 1;
            self.read.read_last_line(&self.name, self.lines, &line);
        }
        Ok(std::mem::take(&mut self.read))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A fresh file `name` in the temp dir, a tail on it, and the file open for appending.
    fn fresh(name: &str) -> (std::path::PathBuf, Tail, File) {
        let path = std::env::temp_dir().join(format!("coordlab-{name}-{}.jsonl", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let tail = Tail::new(path.clone());
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap();
        (path, tail, f)
    }

    #[test]
    fn only_complete_lines_are_read_and_each_once() {
        let (path, mut tail, mut f) = fresh("tail");
        assert!(tail.read_new().unwrap().is_empty());
        let line = r#"{"t":1,"node":2,"ev":"leader","leader":2,"term":1}"#;
        write!(f, "{line}\n{}", &line[..10]).unwrap();
        f.flush().unwrap();
        assert_eq!(tail.read_new().unwrap().len(), 1);
        assert!(tail.read_new().unwrap().is_empty());
        write!(f, "{}\nnot json\n", &line[10..]).unwrap();
        f.flush().unwrap();
        let recs = tail.read_new().unwrap();
        assert_eq!(recs.len(), 1);
        assert_eq!(tail.records()[recs][0].node, Some(2));
        assert_eq!(tail.finish().unwrap().bad.len(), 1);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn what_a_tail_hands_over_is_what_reading_the_whole_file_finds() {
        let (path, mut tail, mut f) = fresh("tail-whole");
        let leader = r#"{"t":1,"node":2,"ev":"leader","leader":2,"term":1}"#;
        let send = r#"{"t":2,"node":2,"ev":"send","to":3,"msg":"X","bytes":1,"seq":1}"#;
        write!(f, "{leader}\n\n{}", &send[..7]).unwrap();
        f.flush().unwrap();
        tail.read_new().unwrap();
        write!(f, "{}\nnot json\n{{\"t\":3,\"ev\":\"future_kind\"}}\n", &send[7..]).unwrap();
        f.write_all(b"\xff\xfe\n").unwrap();
        tail.read_new().unwrap();
        // Killed in the middle of a line: no newline after it.
        write!(f, "{}", &leader[..20]).unwrap();
        f.flush().unwrap();
        let handed = tail.finish().unwrap();
        let whole = crate::trace::read_jsonl_file(&path).unwrap();
        assert_eq!(handed.records, whole.records);
        assert_eq!(handed.bad, whole.bad);
        assert_eq!(handed.unknown, whole.unknown);
        assert_eq!(handed.exists, whole.exists);
        assert_eq!(handed.cut, whole.cut);
        assert_eq!(handed.records.len(), 3);
        // The line cut by the kill is not a bad line: the file is marked cut.
        assert_eq!(handed.bad.len(), 2, "{:?}", handed.bad);
        assert!(handed.cut);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_mapped_writers_zeros_are_not_read_and_lines_written_over_them_are() {
        use crate::trace::{Event, MappedTrace, Record};
        let (path, mut tail, f) = fresh("tail-mapped");
        drop(f);
        let rec = |t: u64| Record {
            t,
            node: Some(2),
            lamport: Some(t),
            pt: None,
            vc: None,
            hlc: None,
            event: Event::Leader { leader: 2, term: t },
        };
        let mut w = MappedTrace::append(&path).unwrap();
        w.write(&rec(1)).unwrap();
        assert!(
            std::fs::metadata(&path).unwrap().len() > w.len(),
            "zeros follow the line"
        );
        assert_eq!(tail.read_new().unwrap().len(), 1);
        assert!(tail.read_new().unwrap().is_empty(), "the zeros are no line");
        w.write(&rec(2)).unwrap();
        w.write_bytes(b"{\"t\":3,").unwrap();
        assert_eq!(tail.read_new().unwrap().len(), 1, "the line written over the zeros");
        // Killed: the window's zeros stay in the file.
        std::mem::forget(w);
        let handed = tail.finish().unwrap();
        let whole = crate::trace::read_jsonl_file(&path).unwrap();
        assert_eq!(handed.records, whole.records);
        assert_eq!(handed.records.iter().map(|r| r.t).collect::<Vec<_>>(), [1, 2]);
        assert!(handed.cut && whole.cut && handed.bad.is_empty() && whole.bad.is_empty());
        std::fs::remove_file(&path).unwrap();
    }
}
