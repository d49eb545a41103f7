//! Follows a growing `.jsonl` file: each read takes in the records of the complete lines written
//! since the last one (a line still being written waits for its newline). Everything read is
//! kept, so that the run's check at the end takes it over instead of parsing the file again.

use crate::trace::lines::{last_newline, split_lines};
use crate::trace::{Jsonl, Record};
use memchr::memmem::Finder;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, OnceLock, PoisonError};

/// Reads from `offset` of `file` up to the first NUL byte or the end of the file: a running
/// node writes through a mapping of its file (`MappedTrace`), so past its last line come zeros
/// its next lines will overwrite. A line holds no NUL byte (JSON escapes it), and the bytes before
/// the first one are written for good: reading stops there and resumes from there. The second
/// value: whether the end of the file was met at `offset` itself (nothing there at all, not
/// even a writer's zeros).
///
/// The first read is `piece` bytes (at least [`FIRST_PIECE`]) and doubles while it finds only
/// lines: the launcher polls every node's file every tick, and nearly all of them wrote
/// nothing new. A page each (4 KiB copied per file) cost the launcher of a 4,096-node ring
/// 10-17 ms of CPU a tick (perf: `_copy_to_iter`, a third of its samples while the election
/// ran), taken from the nodes on two cores. A file that grew at the last poll is read with a
/// first piece its size ([`next_piece`]), in one call rather than seven doublings.
fn read_written(file: &File, offset: u64, piece: usize) -> io::Result<(Vec<u8>, bool)> {
    let mut out = Vec::new();
    let mut piece = piece.max(FIRST_PIECE);
    let mut at_end = false;
    loop {
        let start = out.len();
        out.resize(start + piece, 0);
        let got = file.read_at(&mut out[start..], offset + start as u64)?;
        at_end |= start == 0 && got == 0;
        out.truncate(start + got);
        if let Some(z) = memchr::memchr(0, &out[start..]) {
            out.truncate(start + z);
            break;
        }
        if got < piece || out.len() >= MOST_A_READ {
            break;
        }
        piece = (piece * 2).min(1 << 20).min(MOST_A_READ - out.len());
    }
    Ok((out, at_end))
}

/// The most a read of one file takes in, bytes: the rest waits for the next tick. The launcher
/// runs the fault schedule between its reads, and a flood of trace (phi on a ring of 64, every
/// member watching every other, wrote 390 MB a second) kept it reading for minutes while no
/// scheduled kill happened. A busy run of the usual kinds writes a few tens of KB a file
/// between ticks.
pub(crate) const MOST_A_READ: usize = 4 << 20;

/// The first read of a poll: about a line (most polls find nothing new, and stop at the first byte).
const FIRST_PIECE: usize = 256;

/// The first piece of a file's next poll after one that read `got` bytes: room for as much
/// again and half more (a quiet file's is [`FIRST_PIECE`]).
fn next_piece(got: usize) -> usize {
    (got + got / 2).next_power_of_two().clamp(FIRST_PIECE, 1 << 20)
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

/// The keys [`deferrable`] looks for, each with its searcher built once. Searched forward, with
/// the vector instructions `memmem` has only in that direction: a search from the line's end
/// (fewer bytes, one at a time) was a quarter of the launcher's reading of the traces (perf,
/// Ricart-Agrawala 20 x 60), two searches a line.
const EV: &[u8] = b"\"ev\":\"";
const MSG: &[u8] = b"\"msg\":\"";
static FIND_EV: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(EV));
static FIND_MSG: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(MSG));

/// The string value of the `"key":"` found at `at` in `line`, up to its closing quote:
/// keys and their quotes are never escaped in a record, and a quote inside a string value is
/// (`\"`), so the pattern only matches a real key; a line has each key once.
fn string_at<'a>(line: &'a [u8], at: usize, key: &[u8]) -> Option<&'a [u8]> {
    let rest = &line[at + key.len()..];
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
    let ev = FIND_EV.find(line)?;
    let kind = match string_at(line, ev, EV)? {
        b"send" => "send",
        b"recv" => "recv",
        _ => return None,
    };
    let msg = FIND_MSG.find(&line[ev..]).and_then(|at| string_at(line, ev + at, MSG));
    if msg.is_some_and(|m| m == GRANT || (granted && GIVEN_BACK.contains(&m))) {
        return None;
    }
    let digits = line.strip_prefix(b"{\"t\":")?;
    let end = digits.iter().position(|b| !b.is_ascii_digit())?;
    // By hand: `str::parse` was a sixteenth of the launcher's reading (perf), for a time of at
    // most 20 digits.
    let t = digits[..end]
        .iter()
        .try_fold(0u64, |t, &d| t.checked_mul(10)?.checked_add(u64::from(d - b'0')))?;
    (end > 0).then_some((kind, t))
}

/// The lines of one file a deferring tail handed over for parsing behind the run
/// (`super::behind`), and what parsing them found so far.
#[derive(Debug, Default)]
pub(crate) struct Behind {
    /// The file's name, as a bad line names it.
    name: String,
    handed: Mutex<Handed>,
}

#[derive(Debug, Default)]
struct Handed {
    /// Complete lines, each with its newline, in file order, not parsed yet.
    chunks: Vec<Vec<u8>>,
    /// Lines parsed so far, blank and bad ones included.
    lines: usize,
    /// What they held.
    read: Jsonl,
}

impl Behind {
    /// Parses every line handed over so far, in order.
    pub(crate) fn parse(&self) {
        let mut h = self.handed.lock().unwrap_or_else(PoisonError::into_inner);
        let h = &mut *h;
        for chunk in std::mem::take(&mut h.chunks) {
            parse_lines(&chunk, &self.name, &mut h.lines, &mut h.read);
        }
    }
}

/// What the launcher's reading of one file starts from: records kept without their vector
/// clocks ([`Jsonl::without_vc`]; no view of the launcher and no part of the run's check reads
/// them).
fn unread() -> Jsonl {
    Jsonl {
        without_vc: true,
        ..Jsonl::default()
    }
}

/// Reads the complete lines of `bytes` (up to its last newline) into `read`, numbering them on
/// from `lines`.
fn parse_lines(bytes: &[u8], name: &str, lines: &mut usize, read: &mut Jsonl) {
    if let Some(end) = last_newline(bytes) {
        for line in split_lines(&bytes[..end]) {
            *lines += 1;
            read.read_line(name, *lines, line);
        }
    }
}

/// A reader that remembers how far it got in one file, and what it read.
#[derive(Debug)]
pub(crate) struct Tail {
    path: PathBuf,
    /// The file's name, as a bad line names it.
    name: String,
    offset: u64,
    /// The first read's size at the next poll ([`next_piece`]).
    piece: usize,
    partial: Vec<u8>,
    /// Lines read so far, blank and bad ones included (a bad line's number).
    lines: usize,
    /// Every record, bad line and unknown kind read so far, as `RunDir` reads a whole file.
    read: Jsonl,
    /// The file, once it exists and while the limit of kept files allows.
    file: Option<Kept>,
    /// While deferring: every complete line not handed over yet ([`Tail::hand_behind`]), in file
    /// order, each with its newline; parsed in order (line numbers, vector clock changes) after
    /// those handed over, by [`Tail::finish`].
    raw: Vec<u8>,
    /// Set while `send`/`recv` lines wait unparsed ([`Tail::defer_messages`]): the lines
    /// handed over, and what parsing them found.
    behind: Option<Arc<Behind>>,
    /// While deferring: the records of the lines the launcher's view needs, parsed as they come
    /// (vector clocks sent as changes are left out: no view uses them).
    live: Vec<Record>,
    /// While deferring: the kind and time of the last line left unparsed.
    last_deferred: Option<(&'static str, u64)>,
    /// While deferring: a `GRANT` was received (see [`GIVEN_BACK`]).
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
            piece: FIRST_PIECE,
            partial: Vec::new(),
            lines: 0,
            read: unread(),
            file: None,
            raw: Vec::new(),
            behind: None,
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
        self.behind = Some(Arc::new(Behind {
            name: self.name.clone(),
            handed: Mutex::new(Handed {
                read: unread(),
                ..Handed::default()
            }),
        }));
    }

    /// Every record read so far, in file order (with [`Tail::defer_messages`], those of the
    /// lines parsed as they came).
    pub fn records(&self) -> &[Record] {
        match self.behind {
            Some(_) => &self.live,
            None => &self.read.records,
        }
    }

    /// The kind and time of the last line read but not parsed yet, if not taken yet.
    pub fn last_deferred(&self) -> Option<(&'static str, u64)> {
        self.last_deferred
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
        let (mut chunk, at_end) = read_written(file, self.offset, self.piece)?;
        // Nothing at all where the last read ended: the end of the file, or a file cut shorter
        // (a restarted node cuts what its killed boot left unfinished): start over rather than
        // read garbage. (Zeros there are a running writer's window: nothing new, and no `stat`.)
        if at_end && file.metadata()?.len() < self.offset {
            self.offset = 0;
            self.partial.clear();
            self.lines = 0;
            self.read = Jsonl {
                exists: true,
                ..unread()
            };
            self.raw.clear();
            if let Some(b) = &self.behind {
                *b.handed.lock().unwrap_or_else(PoisonError::into_inner) = Handed {
                    read: unread(),
                    ..Handed::default()
                };
            }
            self.live.clear();
            chunk = read_written(file, 0, FIRST_PIECE)?.0;
        }
        self.piece = next_piece(chunk.len());
        let before = self.records().len();
        self.offset += chunk.len() as u64;
        self.partial.extend_from_slice(&chunk);
        let Some(end) = last_newline(&self.partial) else {
            return Ok(before..before);
        };
        let rest = self.partial.split_off(end + 1);
        let complete = std::mem::replace(&mut self.partial, rest);
        if self.behind.is_some() {
            self.raw.extend_from_slice(&complete);
            for line in split_lines(&complete[..end]) {
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
            parse_lines(&complete, &self.name, &mut self.lines, &mut self.read);
        }
        Ok(before..self.records().len())
    }

    /// Hands the lines left unparsed to the parsing behind the run, unless it is parsing this
    /// file's at the moment: then they wait for the next call (the launcher never waits for
    /// that thread). The file's record of what it was handed, if it took any.
    pub(crate) fn hand_behind(&mut self) -> Option<Arc<Behind>> {
        let b = self.behind.as_ref().filter(|_| !self.raw.is_empty())?;
        b.handed.try_lock().ok()?.chunks.push(std::mem::take(&mut self.raw));
        Some(b.clone())
    }

    /// Parses the lines left unparsed, in file order (those handed over first), and stops
    /// deferring.
    fn parse_deferred(&mut self) {
        if let Some(b) = self.behind.take() {
            b.parse();
            let mut h = b.handed.lock().unwrap_or_else(PoisonError::into_inner);
            let exists = self.read.exists;
            self.read = std::mem::take(&mut h.read);
            self.read.exists = exists;
            self.lines = h.lines;
        }
        parse_lines(
            &std::mem::take(&mut self.raw),
            &self.name,
            &mut self.lines,
            &mut self.read,
        );
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
                if let Some(end) = last_newline(&self.partial) {
                    let tail = self.partial.split_off(end + 1);
                    let complete = std::mem::replace(&mut self.partial, tail);
                    parse_lines(&complete, &self.name, &mut self.lines, &mut self.read);
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
#[path = "watch_tests.rs"]
mod tests;
