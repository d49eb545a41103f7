//! Reads a run directory back: `run.json` and every `.jsonl`, merged by true time.

use super::{Event, Record};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

/// One node as launched (in `run.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunNode {
    /// Its id.
    pub id: u64,
    /// Its UDP address.
    pub addr: String,
    /// Its neighbours (who it may talk to).
    #[serde(default)]
    pub peers: Vec<u64>,
}

/// What was launched: `run.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunInfo {
    /// The algorithm name (`--algo`).
    pub algo: String,
    /// `ring`, `mesh:<topology>`, ...
    pub topology: String,
    /// The nodes, in ring order for rings.
    pub nodes: Vec<RunNode>,
    /// Wall-clock start, microseconds.
    pub start_us: u64,
    /// The options the launcher was given, as it understood them.
    #[serde(default)]
    pub options: serde_json::Value,
    /// The launcher's control socket, for `coordlab pause` from another terminal.
    #[serde(default)]
    pub control: Option<String>,
}

/// A trace line that could not be read as a record: which file, which line, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    /// The file's name inside the run directory (`node-3.jsonl`).
    pub file: String,
    /// The line number, from 1.
    pub line: usize,
    /// Why: `invalid UTF-8 at byte 17`, or the JSON parser's complaint.
    pub why: String,
}

/// What reading one `.jsonl` file found.
#[derive(Debug, Clone, Default)]
pub struct Jsonl {
    /// Every line that parsed, in file order.
    pub records: Vec<Record>,
    /// Every line that did not (invalid bytes included: a bad line never stops the reading).
    pub bad: Vec<BadLine>,
    /// Lines of an event kind this reader does not know, by kind (`ev`).
    pub unknown: BTreeMap<String, usize>,
    /// Whether the file exists at all.
    pub exists: bool,
    /// Whether its last line ends without a newline and does not parse: the write stopped
    /// mid-line (a full disk, a process killed while writing). Not counted in `bad`.
    pub cut: bool,
    /// Where in `records` the last record read that had a vector clock is: the next line's
    /// changes (`dvc`) apply to its clock (docs/trace.md). None after a line that did not
    /// parse, since that line's clock is unknown. An index, not a copy of the clock: a copy a
    /// line (an allocation and every entry copied) was 6 % of a check's CPU.
    pub last_vc: Option<usize>,
    /// Records are kept without their vector clocks (`vc` None), which are still read and
    /// checked as above (a `dvc` with no whole clock before it is a bad line all the same).
    /// The launcher reads so: no part of a run's check reads a vector clock, and every record
    /// of Ricart-Agrawala 20 x 20 kept its own copy of 20 entries, a third of the launcher's
    /// memory, each page of it a page fault on the cores the nodes needed.
    pub without_vc: bool,
}

/// Reads every line of a `.jsonl` file; a line that does not parse (invalid UTF-8 included)
/// is skipped and counted with its line number; a missing file reads as empty with
/// `exists == false`.
///
/// Only a regular file of at most [`super::regular::MAX_TRACE_BYTES`] is read: anything else
/// (a FIFO, a device, a larger file) is an error naming it, never a hang or a memory blow-up.
pub fn read_jsonl_file(path: &Path) -> io::Result<Jsonl> {
    let Some(bytes) = super::regular::read(path, super::regular::MAX_TRACE_BYTES)? else {
        return Ok(Jsonl::default());
    };
    let file = path
        .file_name()
        .map_or_else(String::new, |f| f.to_string_lossy().into_owned());
    let mut out = Jsonl {
        exists: true,
        ..Jsonl::default()
    };
    // A node killed while writing through its mapping (`MappedTrace`) leaves zeros after its
    // last line: they are where the file ends, not a line.
    let bytes = &bytes[..bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1)];
    let mut lines = super::lines::split_lines(bytes).enumerate().peekable();
    while let Some((i, line)) = lines.next() {
        // What follows the last newline is a line whose writing did not end.
        if lines.peek().is_none() {
            out.read_last_line(&file, i + 1, line);
        } else {
            out.read_line(&file, i + 1, line);
        }
    }
    Ok(out)
}

impl Jsonl {
    /// Reads a last line that has no newline: one that does not parse marks the file as
    /// [`cut`](Jsonl::cut) instead of counting as a bad line.
    pub(crate) fn read_last_line(&mut self, file: &str, number: usize, line: &[u8]) {
        let bad = self.bad.len();
        self.read_line(file, number, line);
        if self.bad.len() > bad {
            self.bad.truncate(bad);
            self.cut = true;
        }
    }

    /// Why the file, which exists, is incomplete evidence: empty, or its last line cut.
    pub(crate) fn incomplete(&self) -> Option<String> {
        if !self.exists {
            None
        } else if self.cut {
            Some("its last line is cut off (the writing stopped mid-line: a full disk, or a kill mid-write)".into())
        } else if self.records.is_empty() && self.bad.is_empty() {
            Some("it is empty (nothing was written: a full disk, or a node that never started)".into())
        } else {
            None
        }
    }

    /// Reads line number `number` of file `file` into the records, or into `bad` if it does not
    /// parse; a blank line is skipped. The one reading of a line, for whole files and tails alike.
    pub fn read_line(&mut self, file: &str, number: usize, line: &[u8]) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let bad = |why: String| BadLine {
            file: file.to_string(),
            line: number,
            why,
        };
        // A line of a kind the byte scan takes (messages, the critical section's), in the
        // encoder's form, is read by it: it checks its strings' UTF-8 itself (and allows nothing
        // but ASCII elsewhere).
        if let Some(parsed) = super::parse_direct::encoder_line(line) {
            return self.take(Ok(parsed), "", &bad);
        }
        let text = match std::str::from_utf8(line) {
            Ok(t) => t,
            Err(e) => {
                self.bad
                    .push(bad(format!("invalid UTF-8 at byte {}", e.valid_up_to() + 1)));
                self.last_vc = None;
                return;
            }
        };
        self.take(Record::from_json_by_serde(text.as_bytes()), text, &bad);
    }

    /// Takes in a line's parse: its clock changes expanded against the last whole clock, then
    /// the record (an unknown kind counted by `text`'s `ev`), or the line is bad.
    fn take(
        &mut self,
        parsed: serde_json::Result<(Record, Option<crate::clock::VectorClock>)>,
        text: &str,
        bad: &dyn Fn(String) -> BadLine,
    ) {
        let mut clocked = false;
        let parsed = parsed.and_then(|(mut r, dvc)| {
            if let (None, Some(dvc)) = (&r.vc, dvc) {
                let no_base = || {
                    <serde_json::Error as serde::de::Error>::custom(
                        "vector clock changes (dvc) with no whole clock (vc) before them in this file",
                    )
                };
                // Kept or not, a whole clock must come before the changes for them to mean one.
                let base = self.last_vc.ok_or_else(no_base)?;
                if !self.without_vc {
                    let prev = self.records.get(base).and_then(|p| p.vc.as_ref()).ok_or_else(no_base)?;
                    r.vc = Some(super::vc_changes::expand(prev, &dvc));
                }
                clocked = true;
            }
            clocked |= r.vc.is_some();
            if self.without_vc {
                r.vc = None;
            }
            Ok(r)
        });
        match parsed {
            Ok(r) => {
                if r.event == super::Event::Other {
                    let kind = serde_json::from_str::<Kind>(text).map_or_else(|_| "?".into(), |k| k.ev);
                    *self.unknown.entry(kind).or_default() += 1;
                }
                if clocked {
                    self.last_vc = Some(self.records.len());
                }
                self.records.push(r);
            }
            Err(e) => {
                self.last_vc = None;
                self.bad.push(bad(e.to_string()));
            }
        }
    }
}

/// Only the kind of a line, to name an unknown one.
#[derive(Deserialize)]
struct Kind {
    ev: String,
}

/// Reads every line of a `.jsonl` file; returns the records and how many lines did not parse.
pub fn read_jsonl(path: &Path) -> io::Result<(Vec<Record>, usize)> {
    let j = read_jsonl_file(path)?;
    Ok((j.records, j.bad.len()))
}

/// Reads the files `names` of `dir`, in that order, on as many threads as there are cores:
/// after a run the cores are free, and parsing is most of what checking a run costs.
fn read_all(dir: &Path, names: &[String]) -> io::Result<Vec<Jsonl>> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(names.len().max(1));
    let per = names.len().div_ceil(threads).max(1);
    let parts: Vec<io::Result<Vec<Jsonl>>> = std::thread::scope(|s| {
        let handles: Vec<_> = names
            .chunks(per)
            .map(|chunk| s.spawn(move || chunk.iter().map(|n| read_jsonl_file(&dir.join(n))).collect()))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(io::Error::other("a trace reader thread panicked")))
            })
            .collect()
    });
    let mut out = Vec::with_capacity(names.len());
    for part in parts {
        out.extend(part?);
    }
    Ok(out)
}

/// A run directory loaded in memory.
#[derive(Debug, Clone)]
pub struct RunDir {
    /// Where it is.
    pub path: PathBuf,
    /// `run.json`.
    pub info: RunInfo,
    /// Every node event, merged and sorted by `t` (stable, so each node's order is kept).
    pub node_events: Vec<Record>,
    /// `faults.jsonl`, in order.
    pub faults: Vec<Record>,
    /// `resource.jsonl`, in order.
    pub resource: Vec<Record>,
    /// Lines that did not parse, over all files.
    pub bad_lines: usize,
    /// Each of those lines: file, line number, why.
    pub bad: Vec<BadLine>,
    /// Lines of unknown event kinds, by kind, over all files (kept in the records as `Other`).
    pub unknown: BTreeMap<String, usize>,
    /// Files the run should have and does not (`node-7.jsonl`, `faults.jsonl`).
    pub missing: Vec<String>,
    /// Files that exist but are incomplete evidence, and why (empty, last line cut).
    pub incomplete: Vec<(String, String)>,
}

impl RunDir {
    /// When the run ended: its `shutdown` fault, else its last node record.
    pub(crate) fn end_us(&self) -> Option<u64> {
        self.faults
            .iter()
            .find(|r| matches!(r.event, Event::Shutdown {}))
            .map(|r| r.t)
            .or_else(|| self.node_events.last().map(|r| r.t))
    }

    #[cfg(test)]
    /// A test's complete run of Chang-Roberts on a ring: these events and faults, no resource.
    pub(crate) fn of_ring_test(node_events: Vec<Record>, faults: Vec<Record>) -> Self {
        let info = RunInfo {
            algo: "chang-roberts".into(),
            topology: "ring".into(),
            nodes: Vec::new(),
            start_us: 0,
            options: serde_json::Value::Null,
            control: None,
        };
        RunDir::whole("t", info, node_events, faults, Vec::new())
    }

    /// A complete run made in memory (the simulator's, or a test's), named `path`: nothing
    /// missing, nothing bad, every record as given.
    pub fn whole(
        path: &str,
        info: RunInfo,
        node_events: Vec<Record>,
        faults: Vec<Record>,
        resource: Vec<Record>,
    ) -> Self {
        RunDir {
            path: PathBuf::from(path),
            info,
            node_events,
            faults,
            resource,
            bad_lines: 0,
            bad: Vec::new(),
            unknown: BTreeMap::new(),
            missing: Vec::new(),
            incomplete: Vec::new(),
        }
    }

    /// Loads `dir` (following the `latest` symlink if given one).
    pub fn load(dir: &Path) -> io::Result<Self> {
        Self::load_with(dir, BTreeMap::new())
    }

    /// Loads `dir`, taking the files of `given` (by name, as `node-3.jsonl`) as already read:
    /// the launcher hands over what it read while following the run, so that no trace is
    /// parsed twice; every other file is read from disk.
    pub(crate) fn load_with(dir: &Path, mut given: BTreeMap<String, Jsonl>) -> io::Result<Self> {
        let info_path = dir.join("run.json");
        let bytes = super::regular::read(&info_path, super::regular::MAX_RUN_JSON_BYTES)?.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "{}: No such file or directory (is this a run directory?)",
                    info_path.display()
                ),
            )
        })?;
        let text = String::from_utf8(bytes)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {e}", info_path.display())))?;
        let info: RunInfo = serde_json::from_str(&text)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {e}", info_path.display())))?;
        // In a mutual-exclusion run, node 0 is the shared resource: its trace is resource.jsonl.
        let resource_run = given.get("resource.jsonl").is_some_and(|j| j.exists) || dir.join("resource.jsonl").exists();
        let mut names: Vec<String> = info
            .nodes
            .iter()
            .filter(|n| !(resource_run && n.id == super::RESOURCE_NODE))
            .map(|n| format!("node-{}.jsonl", n.id))
            .collect();
        names.extend(["faults.jsonl".to_string(), "resource.jsonl".to_string()]);
        let unread: Vec<String> = names.iter().filter(|n| !given.contains_key(*n)).cloned().collect();
        let mut from_disk = unread
            .iter()
            .cloned()
            .zip(read_all(dir, &unread)?)
            .collect::<BTreeMap<_, _>>();
        let mut all = Jsonl::default();
        let mut missing = Vec::new();
        let mut incomplete = Vec::new();
        let mut take = |name: &String, all: &mut Jsonl| -> Vec<Record> {
            let j = given
                .remove(name)
                .or_else(|| from_disk.remove(name))
                .unwrap_or_default();
            if !j.exists {
                missing.push(name.clone());
            }
            if let Some(why) = j.incomplete() {
                incomplete.push((name.clone(), why));
            }
            all.bad.extend(j.bad);
            for (k, v) in j.unknown {
                *all.unknown.entry(k).or_default() += v;
            }
            j.records
        };
        let (nodes, rest) = names.split_at(names.len() - 2);
        let node_events = merge_by_time(nodes.iter().map(|name| take(name, &mut all)).collect());
        let faults = take(&rest[0], &mut all);
        let mut resource = take(&rest[1], &mut all);
        // Only mutual exclusion writes resource.jsonl: its absence is news only when it is expected.
        missing.retain(|m| m != "resource.jsonl");
        if !resource_run {
            resource.clear();
        }
        Ok(Self {
            path: dir.to_path_buf(),
            info,
            node_events,
            faults,
            resource,
            bad_lines: all.bad.len(),
            bad: all.bad,
            unknown: all.unknown,
            missing,
            incomplete,
        })
    }
}

/// The records of every file in one list by time: what a stable sort by `t` of the files'
/// records one after the other gives (ties in file order, then in line order), each record
/// moved once. A sort of the whole moved the records (192 bytes each) once a merge level: 7% of
/// the launcher's CPU in a mutual-exclusion run of 20 nodes.
///
/// The merge is the larger part of the check after a run's stop, when the nodes have left the
/// cores: the records before a pivot time and those from it on are merged at once, on two
/// threads, into the two parts of the list.
fn merge_by_time(mut files: Vec<Vec<Record>>) -> Vec<Record> {
    for f in &mut files {
        // A file is in time order but for a clock stepped back: then sorted, stably.
        if !f.is_sorted_by_key(|r| r.t) {
            f.sort_by_key(|r| r.t);
        }
    }
    let total: usize = files.iter().map(Vec::len).sum();
    let mut out: Vec<Record> = Vec::with_capacity(total);
    in_huge_pages(&mut out);
    let pivot = files
        .iter()
        .max_by_key(|f| f.len())
        .and_then(|f| f.get(f.len() / 2))
        .map_or(0, |r| r.t);
    let cut: Vec<usize> = files.iter().map(|f| f.partition_point(|r| r.t < pivot)).collect();
    let before: Vec<&[Record]> = files.iter().zip(&cut).map(|(f, &c)| &f[..c]).collect();
    let after: Vec<&[Record]> = files.iter().zip(&cut).map(|(f, &c)| &f[c..]).collect();
    let (early, late) = out.spare_capacity_mut()[..total].split_at_mut(cut.iter().sum());
    // A thread costs tens of microseconds: worth it for a run's thousands of records only.
    if total >= PARALLEL_MERGE_RECORDS {
        crate::both::both(|| move_merged(&before, early), || move_merged(&after, late));
    } else {
        move_merged(&before, early);
        move_merged(&after, late);
    }
    // SAFETY: `move_merged` wrote every slot of `out` up to `total` with a record read out of
    // `files`, each record once; the files forget theirs, so each is dropped once, by `out`.
    // (Had a merge panicked, `out` would drop none and the files all: nothing twice.)
    unsafe {
        out.set_len(total);
        for f in &mut files {
            f.set_len(0);
        }
    }
    out
}

/// Asks for the whole 2 MiB pages inside `v`'s buffer to be huge pages (where the kernel's
/// transparent huge pages are `madvise`, as on this machine): the merge's list of a
/// mutual-exclusion run of 20 nodes is 6.5 MB, and its first writes were 1,600 page faults,
/// a third of the check after the run's stop (perf). Three faults instead, each clearing
/// 2 MiB: the check went from 7 to 4 ms (median of ten launches). A buffer holding no whole
/// 2 MiB page is left alone; where the kernel has no huge page to give, it faults 4 KiB pages
/// as before.
fn in_huge_pages<T>(v: &mut Vec<T>) {
    const HUGE: usize = 2 << 20;
    let start = v.as_mut_ptr() as usize;
    let end = start + v.capacity() * std::mem::size_of::<T>();
    let (from, to) = (start.div_ceil(HUGE) * HUGE, end / HUGE * HUGE);
    if to > from {
        // SAFETY: advice on pages inside a buffer this function's caller owns; it changes
        // how they are backed, never their contents (nothing is written there yet either).
        unsafe { nix::libc::madvise(from as *mut nix::libc::c_void, to - from, nix::libc::MADV_HUGEPAGE) };
    }
}

/// Below this many records the merge runs on one thread.
const PARALLEL_MERGE_RECORDS: usize = 20_000;

/// Reads the records of `files` (each in time order) into `out`, in time order, ties in file
/// order: a bitwise move, which the caller completes by forgetting the sources.
fn move_merged(files: &[&[Record]], out: &mut [std::mem::MaybeUninit<Record>]) {
    use std::cmp::Reverse;
    let mut at = vec![0usize; files.len()];
    let mut next: std::collections::BinaryHeap<Reverse<(u64, usize)>> = files
        .iter()
        .enumerate()
        .filter_map(|(k, f)| f.first().map(|r| Reverse((r.t, k))))
        .collect();
    let mut slots = out.iter_mut();
    while let Some(Reverse((_, k))) = next.pop() {
        let slot = slots.next().expect("as many slots as records");
        // SAFETY: each record is read once (its index moves on), and `merge_by_time` makes its
        // file forget it.
        slot.write(unsafe { std::ptr::read(&files[k][at[k]]) });
        at[k] += 1;
        if let Some(r) = files[k].get(at[k]) {
            next.push(Reverse((r.t, k)));
        }
    }
}

#[cfg(test)]
mod merge_tests {
    use super::*;

    #[test]
    fn merging_by_time_is_a_stable_sort_of_the_files_one_after_the_other() {
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut rnd = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        // Many small runs, and a few large enough for the merge's two threads.
        for round in 0..203 {
            let count = if round < 200 { rnd(6) } else { 6 };
            let files: Vec<Vec<Record>> = (0..count)
                .map(|f| {
                    let len = if round < 200 { rnd(30) } else { 5_000 };
                    // Mostly rising times, some equal, now and then one stepped back.
                    let mut t = rnd(5);
                    (0..len)
                        .map(|i| {
                            t = match rnd(8) {
                                0 => t.saturating_sub(rnd(4)),
                                1 | 2 => t,
                                _ => t + rnd(3),
                            };
                            Record::unstamped(t, Some(f), Event::CsRequest { req: i })
                        })
                        .collect()
                })
                .collect();
            assert!(round < 200 || files.iter().map(Vec::len).sum::<usize>() >= PARALLEL_MERGE_RECORDS);
            let mut sorted: Vec<Record> = files.concat();
            sorted.sort_by_key(|r| r.t);
            assert_eq!(merge_by_time(files), sorted);
        }
    }
}
