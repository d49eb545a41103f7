//! Follows a growing `.jsonl` file: each read takes in the records of the complete lines written
//! since the last one (a line still being written waits for its newline). Everything read is
//! kept, so that the run's check at the end takes it over instead of parsing the file again.

use crate::trace::{Jsonl, Record};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Reads from `offset` of `file` up to the first NUL byte or the end of the file: a running
/// node writes through a mapping of its file (`MappedTrace`), so past its last line come zeros
/// its next lines will overwrite. A line holds no NUL byte (JSON escapes it), and the bytes before
/// the first one are written for good: reading stops there and resumes from there. Read a page at
/// a time, so that a node that wrote nothing new costs one small read, not its whole window.
fn read_written(file: &File, offset: u64) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut piece = 4096usize;
    loop {
        let start = out.len();
        out.resize(start + piece, 0);
        let got = file.read_at(&mut out[start..], offset + start as u64)?;
        out.truncate(start + got);
        if let Some(z) = out[start..].iter().position(|&b| b == 0) {
            out.truncate(start + z);
            break;
        }
        if got < piece {
            break;
        }
        piece = (piece * 2).min(1 << 20);
    }
    Ok(out)
}

/// Trace files the tails of this process keep open, and how many they may: a poll of a kept
/// file is one `pread` (the launcher polls thousands every tick), against a `stat`, an `open`,
/// a `read` and a `close` by path. The nodes' sockets are closed in the launcher once sent, so
/// the descriptors they needed at the launch are free by the time the tails poll; a margin is
/// left for everything else (the console's connections, a restarted node's socket).
static KEPT: AtomicUsize = AtomicUsize::new(0);

/// Descriptors left to the launcher's other uses beside the kept trace files.
const SPARE: u64 = 512;

/// How many trace files may be kept open: the open-file limit less [`SPARE`].
fn keep_limit() -> usize {
    static LIMIT: OnceLock<usize> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
            .map_or(0, |(soft, _)| soft.saturating_sub(SPARE) as usize)
    })
}

/// A trace file held open between polls, counted in [`KEPT`].
#[derive(Debug)]
struct Kept(File);

impl Kept {
    /// Keeps `file` if the limit allows, else hands it back.
    fn keep(file: File) -> Result<Kept, File> {
        if KEPT.fetch_add(1, Ordering::Relaxed) < keep_limit() {
            Ok(Kept(file))
        } else {
            KEPT.fetch_sub(1, Ordering::Relaxed);
            Err(file)
        }
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        KEPT.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Where `needle` first occurs in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The value of the first `"key":"` string in `line`, up to its closing quote: keys and their
/// quotes are never escaped in a record, and a quote inside a string value is (`\"`), so the
/// pattern only matches a real key.
fn string_after<'a>(line: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let at = find(line, key)? + key.len();
    let rest = &line[at..];
    Some(&rest[..rest.iter().position(|&b| b == b'"')?])
}

/// The message whose `recv` lines a launcher's view needs as they happen: a vote or the
/// coordinator's permission held (`model::Node::apply`).
const GRANT: &[u8] = b"GRANT";

/// The messages that give a grant back: needed as they happen only by a node that was granted
/// something (before, the view has no grant they could remove). Lamport's `RELEASE`s, one to
/// every peer per entry, are so left unparsed.
const GIVEN_BACK: [&[u8]; 2] = [b"RELINQUISH", b"RELEASE"];

/// If `line` is a `send` or `recv` the view does not need at once: its kind and time (the
/// `"t"` every record begins with), found by a byte scan, without parsing the line. `granted`:
/// the node has received a [`GRANT`].
fn deferrable(line: &[u8], granted: bool) -> Option<(&'static str, u64)> {
    let kind = match string_after(line, b"\"ev\":\"")? {
        b"send" => "send",
        b"recv" => "recv",
        _ => return None,
    };
    let msg = string_after(line, b"\"msg\":\"");
    if msg.is_some_and(|m| m == GRANT || (granted && GIVEN_BACK.contains(&m))) {
        return None;
    }
    let digits = line.strip_prefix(b"{\"t\":")?;
    let end = digits.iter().position(|b| !b.is_ascii_digit())?;
    let t = std::str::from_utf8(&digits[..end]).ok()?.parse().ok()?;
    Some((kind, t))
}

/// A reader that remembers how far it got in one file, and what it read.
#[derive(Debug)]
pub(crate) struct Tail {
    path: PathBuf,
    /// The file's name, as a bad line names it.
    name: String,
    offset: u64,
    partial: Vec<u8>,
    /// Lines read so far, blank and bad ones included (a bad line's number).
    lines: usize,
    /// Every record, bad line and unknown kind read so far, as `RunDir` reads a whole file.
    read: Jsonl,
    /// The file, once it exists and while the limit of kept files allows.
    file: Option<Kept>,
    /// Whether `send`/`recv` lines wait unparsed ([`Tail::defer_messages`]).
    defer: bool,
    /// With `defer`: every complete line not parsed into `read` yet, in file order, each with
    /// its newline; parsed in order (line numbers, vector clock changes) by [`Tail::finish`].
    raw: Vec<u8>,
    /// With `defer`: the records of the lines the launcher's view needs, parsed as they come
    /// (vector clocks sent as changes are left out: no view uses them).
    live: Vec<Record>,
    /// With `defer`: the kind and time of the last line left unparsed.
    last_deferred: Option<(&'static str, u64)>,
    /// With `defer`: a `GRANT` was received (see [`GIVEN_BACK`]).
    granted: bool,
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
            file: None,
            defer: false,
            raw: Vec::new(),
            live: Vec::new(),
            last_deferred: None,
            granted: false,
        }
    }

    /// From now on `send` and `recv` lines (but a [`GRANT`] and what gives one back) are not parsed
    /// as they are read, only at [`Tail::finish`]: in a run of many messages the launcher
    /// parsed every line before it could step the goal, and fell behind its nodes (13 MB of
    /// trace in Ricart-Agrawala 20x20). [`Tail::records`] then holds only the other lines'
    /// records. Only for a launcher whose views need no message but those.
    pub fn defer_messages(&mut self) {
        self.defer = true;
    }

    /// Every record read so far, in file order (with [`Tail::defer_messages`], those of the
    /// lines parsed as they came).
    pub fn records(&self) -> &[Record] {
        match self.defer {
            true => &self.live,
            false => &self.read.records,
        }
    }

    /// The kind and time of the last line read but not parsed yet (and forgets it).
    pub fn take_last_deferred(&mut self) -> Option<(&'static str, u64)> {
        self.last_deferred.take()
    }

    /// Reads every line completed since the last call; returns where their records are in
    /// [`Tail::records`].
    pub(crate) fn read_new(&mut self) -> io::Result<Range<usize>> {
        let before = self.records().len();
        let opened;
        let file = match &self.file {
            Some(k) => &k.0,
            None => {
                let f = match File::open(&self.path) {
                    Ok(f) => f,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(before..before),
                    Err(e) => return Err(e),
                };
                self.read.exists = true;
                match Kept::keep(f) {
                    Ok(k) => &self.file.insert(k).0,
                    Err(f) => {
                        opened = f;
                        &opened
                    }
                }
            }
        };
        let mut chunk = read_written(file, self.offset)?;
        // Nothing at all where the last read ended: the end of the file, or a file cut shorter
        // (a restarted node cuts what its killed boot left unfinished): start over rather than
        // read garbage. (Zeros there are a running writer's window: nothing new.)
        if chunk.is_empty() && file.metadata()?.len() < self.offset {
            self.offset = 0;
            self.partial.clear();
            self.lines = 0;
            self.read = Jsonl {
                exists: true,
                ..Jsonl::default()
            };
            self.raw.clear();
            self.live.clear();
            chunk = read_written(file, 0)?;
        }
        let before = self.records().len();
        self.offset += chunk.len() as u64;
        self.partial.extend_from_slice(&chunk);
        let Some(end) = self.partial.iter().rposition(|&b| b == b'\n') else {
            return Ok(before..before);
        };
        let rest = self.partial.split_off(end + 1);
        let complete = std::mem::replace(&mut self.partial, rest);
        if self.defer {
            self.raw.extend_from_slice(&complete);
            for line in complete[..end].split(|&b| b == b'\n') {
                match deferrable(line, self.granted) {
                    Some(seen) => self.last_deferred = Some(seen),
                    None => {
                        if let Ok((r, _)) = Record::from_json_with_changes(line) {
                            if matches!(&r.event, crate::trace::Event::Recv { msg, .. } if msg.as_bytes() == GRANT) {
                                self.granted = true;
                            }
                            self.live.push(r);
                        }
                    }
                }
            }
        } else {
            for line in complete[..end].split(|&b| b == b'\n') {
                self.lines += 1;
                self.read.read_line(&self.name, self.lines, line);
            }
        }
        Ok(before..self.records().len())
    }

    /// Parses the lines left unparsed so far, in file order, for the run's check: called once
    /// the goal was stepped, so that the parsing overlaps the run without delaying the goal.
    pub(crate) fn parse_pending(&mut self) {
        let mut raw = std::mem::take(&mut self.raw);
        if let Some(end) = raw.iter().rposition(|&b| b == b'\n') {
            for line in raw[..end].split(|&b| b == b'\n') {
                self.lines += 1;
                self.read.read_line(&self.name, self.lines, line);
            }
        }
        // The buffer is kept for the next lines.
        raw.clear();
        self.raw = raw;
    }

    /// Parses the lines left unparsed, in file order, and stops deferring.
    fn parse_deferred(&mut self) {
        self.parse_pending();
        self.defer = false;
        self.raw = Vec::new();
        self.live = Vec::new();
    }

    /// The node whose file this is starts again: its new boot cuts off a line the killed one
    /// left unfinished (`MappedTrace::append`) and writes from there, so the tail goes back to
    /// that line's start (the cut file may be as long again at once: its new window).
    pub fn restarted(&mut self) {
        self.offset -= self.partial.len() as u64;
        self.partial.clear();
    }

    /// The file's name (`node-3.jsonl`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads the rest of the file, a last line without its newline included (a process killed
    /// while writing it), and hands over everything read: the file as a whole read would find it.
    pub(crate) fn finish(&mut self) -> io::Result<Jsonl> {
        self.read_new()?;
        self.parse_deferred();
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
        self.file = None;
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
    fn deferred_message_lines_are_seen_at_once_and_parsed_in_order_at_the_end() {
        use crate::clock::VectorClock;
        use crate::trace::{Event, MappedTrace, Record};
        let (path, mut tail, f) = fresh("tail-deferred");
        drop(f);
        tail.defer_messages();
        // Every record carries its vector clock, written as changes after the first: the
        // deferred lines' changes must be taken in order at the end.
        let rec = |t: u64, event: Event| Record {
            t,
            node: Some(2),
            lamport: Some(t),
            pt: None,
            vc: Some(VectorClock::from_pairs((1..=8).map(|k| (k, t * 10 + k)))),
            hlc: None,
            event,
        };
        let send = |to, msg: &str| Event::Send {
            to,
            msg: msg.into(),
            bytes: 10,
            seq: 1,
            brief: "ELECTION(2, term=1)".into(),
        };
        let recv = |from, msg: &str| Event::Recv {
            from,
            msg: msg.into(),
            bytes: 10,
            seq: 1,
            brief: "with \"ev\":\"leader\" inside".into(),
        };
        let mut w = MappedTrace::append(&path).unwrap();
        w.write(&rec(1, Event::Leader { leader: 2, term: 1 })).unwrap();
        w.write(&rec(2, send(3, "ELECTION"))).unwrap();
        w.write(&rec(3, send(1, "RELEASE"))).unwrap();
        w.write(&rec(4, recv(1, "GRANT"))).unwrap();
        w.write(&rec(5, send(3, "RELEASE"))).unwrap();
        w.write(&rec(6, send(1, "ELECTION"))).unwrap();
        let new = tail.read_new().unwrap();
        let live: Vec<u64> = tail.records()[new].iter().map(|r| r.t).collect();
        assert_eq!(
            live,
            [1, 4, 5],
            "the leader line, the grant and what gives it back after it, at once"
        );
        assert_eq!(tail.take_last_deferred(), Some(("send", 6)));
        assert_eq!(tail.take_last_deferred(), None);
        tail.parse_pending();
        w.write(&rec(7, Event::Leader { leader: 3, term: 2 })).unwrap();
        w.write_bytes(b"not json\n").unwrap();
        w.write(&rec(8, recv(3, "ELECTION"))).unwrap();
        let new = tail.read_new().unwrap();
        assert_eq!(tail.records()[new].iter().map(|r| r.t).collect::<Vec<_>>(), [7]);
        assert_eq!(tail.take_last_deferred(), Some(("recv", 8)));
        drop(w);
        let handed = tail.finish().unwrap();
        let whole = crate::trace::read_jsonl_file(&path).unwrap();
        assert_eq!(handed.records, whole.records);
        assert_eq!(handed.bad, whole.bad);
        assert_eq!(handed.records.len(), 8);
        assert!(handed.records.iter().all(|r| r.vc.is_some()));
        assert_eq!(handed.bad[0].line, 8);
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

    #[test]
    fn after_a_kill_mid_line_and_a_restart_the_tail_reads_the_new_boot_from_the_cut() {
        use crate::clock::VectorClock;
        use crate::trace::{Event, MappedTrace, Record};
        let (path, mut tail, f) = fresh("tail-restart");
        drop(f);
        let rec = |t: u64| Record {
            t,
            node: Some(2),
            lamport: Some(t),
            pt: None,
            vc: Some(VectorClock::from_pairs((1..=64).map(|k| (k, t + k)))),
            hlc: None,
            event: Event::Leader { leader: 2, term: t },
        };
        let mut w = MappedTrace::append(&path).unwrap();
        for t in 1..=3 {
            w.write(&rec(t)).unwrap();
        }
        w.write_bytes(b"{\"t\":4,\"node\":2,\"dvc\":{\"2\":9").unwrap();
        assert_eq!(tail.read_new().unwrap().len(), 3);
        std::mem::forget(w);
        tail.restarted();
        // The new boot cuts the unfinished line, maps a window as long as the old one, and
        // writes its own lines (the first with its whole clock) from where the cut was.
        let mut w = MappedTrace::append(&path).unwrap();
        assert!(std::fs::metadata(&path).unwrap().len() > tail.offset);
        for t in 5..=6 {
            w.write(&rec(t)).unwrap();
        }
        assert_eq!(tail.read_new().unwrap().len(), 2);
        drop(w);
        let handed = tail.finish().unwrap();
        assert!(handed.bad.is_empty() && !handed.cut, "{:?}", handed.bad);
        assert_eq!(handed.records, [1, 2, 3, 5, 6].map(rec));
        assert_eq!(handed.records, crate::trace::read_jsonl_file(&path).unwrap().records);
        std::fs::remove_file(&path).unwrap();
    }
}
