//! The engine's work per message, in one process, no sockets: `cargo bench --bench engine`.
//!
//! A ring of 64 hosts of an algorithm, each built as a node builds it (the registry's
//! composition, vector clocks on), passes its token round; one iteration is one hop: the
//! datagram is delivered to its host (header checks, MAC, decoding, the three clocks, the
//! algorithm, the trace records) and the sealed datagram it sends comes out. Beside it, each
//! step alone on a datagram captured from the same ring, and the trace records of a hop written
//! as the node writes them: through a shared mapping of a file in the temp directory
//! (`MappedTrace`, hand-written JSON), and as they were written before (serde_json into a
//! buffer flushed to /dev/null with one write a hop). Issue 22's target: a hop at most 3 us
//! median at n = 64.

use coordlab::algo::{Algorithm, Setup};
use coordlab::catalog::{self as registry, GroupRunner};
use coordlab::engine::host::{Host, Now, Outgoing};
use coordlab::engine::key::Key;
use coordlab::engine::wire::{Envelope, Sealer};
use coordlab::trace::{encode_line, Event, JsonlWriter, MappedTrace, NodeId, Record, VcChanges};
use divan::{black_box, Bencher};
use std::path::Path;
use std::time::Duration;

const N: u64 = 64;

fn main() {
    // A second a bench: with divan's default 100 samples the median of a 2-4 us hop moved by
    // 2x between runs (a page fault or a preemption in a few samples); the command line still
    // overrides it.
    divan::Divan::default()
        .min_time(Duration::from_secs(1))
        .config_with_args()
        .main();
}

/// A ring of `n` members of `algo` with its token in flight: the hosts, and the datagram.
struct Ring<A: Algorithm> {
    hosts: Vec<Host<A>>,
    ids: Vec<NodeId>,
    in_flight: (NodeId, Outgoing),
    now: Now,
}

impl<A: Algorithm> Ring<A> {
    fn new(setups: &[Setup], algos: Vec<A>) -> Self {
        let key = Key::simulated();
        let mut hosts: Vec<Host<A>> = setups
            .iter()
            .zip(algos)
            .map(|(s, a)| Host::with_key(s, a, &key, 1))
            .collect();
        let ids: Vec<NodeId> = setups.iter().map(|s| s.me).collect();
        let now = Now {
            mono: Duration::from_millis(1),
            wall_us: 1_000_000,
        };
        for (h, &me) in hosts.iter_mut().zip(&ids) {
            let start = Event::Start {
                addr: "127.0.0.1:0".into(),
                algo: "bench".into(),
                pid: me as u32,
                peers: vec![],
            };
            h.start(now, start);
            let _ = h.take_records().count();
        }
        let first = hosts
            .iter_mut()
            .zip(&ids)
            .find_map(|(h, &me)| h.take_outbox().next().map(|o| (me, o)))
            .expect("the initiator sends its token at start");
        let mut ring = Ring {
            hosts,
            ids,
            in_flight: first,
            now,
        };
        // Past the first lap: every host has met the token and its peers' clocks.
        for _ in 0..3 * N {
            ring.hop(|_| {});
        }
        ring
    }

    /// Delivers the datagram in flight; the records of the hop go to `records`.
    fn hop(&mut self, mut records: impl FnMut(Record)) {
        let (from, out) = std::mem::replace(
            &mut self.in_flight,
            (
                0,
                Outgoing {
                    to: 0,
                    bytes: Vec::new(),
                    fence: false,
                },
            ),
        );
        let k = self.ids.iter().position(|&x| x == out.to).expect("a member");
        self.now.mono += Duration::from_micros(20);
        self.now.wall_us += 20;
        let h = &mut self.hosts[k];
        h.deliver(self.now, Some(from), &out.bytes, "127.0.0.1:0");
        for r in h.take_records() {
            records(r);
        }
        let next = h.take_outbox().next().expect("the token goes on");
        for _ in h.take_outbox() {}
        self.in_flight = (self.ids[k], next);
    }
}

/// Runs `f` on a ring of 64 hosts of `algo` (vector clocks on, laps without end).
fn with_ring<R: GroupRunner>(algo: &str, runner: R) -> R::Output {
    let ids: Vec<NodeId> = (1..=N).collect();
    let mut setups = coordlab::sim::ring(&ids, &[1]);
    for s in &mut setups {
        s.opts.insert("laps".into(), u64::MAX.to_string());
    }
    registry::dispatch_group(algo, &setups, runner).expect("a known algorithm")
}

struct Hop<'a, 'b>(Bencher<'a, 'b>);

impl GroupRunner for Hop<'_, '_> {
    type Output = ();
    fn run<A: Algorithm>(self, setups: &[Setup], algos: Vec<A>) {
        let mut ring = Ring::new(setups, algos);
        self.0.bench_local(|| ring.hop(|r| drop(black_box(r))));
    }
}

/// One hop: deliver, records made, sealed datagram out (records not written).
#[divan::bench]
fn hop_without_writing(b: Bencher) {
    with_ring("ring-probe", Hop(b));
}

struct HopWritten<'a, 'b>(Bencher<'a, 'b>);

impl GroupRunner for HopWritten<'_, '_> {
    type Output = ();
    fn run<A: Algorithm>(self, setups: &[Setup], algos: Vec<A>) {
        let mut ring = Ring::new(setups, algos);
        let mut w = JsonlWriter::append(Path::new("/dev/null")).expect("/dev/null");
        self.0.bench_local(|| {
            ring.hop(|r| w.write(&r).expect("write"));
            w.flush().expect("flush");
        });
    }
}

/// One hop with its records written as nodes wrote them before (serde_json, one write a hop).
#[divan::bench]
fn hop_with_records_written_serde(b: Bencher) {
    with_ring("ring-probe", HopWritten(b));
}

/// A trace file in the temp directory, fresh.
fn scratch_trace(name: &str) -> (std::path::PathBuf, MappedTrace) {
    let p = std::env::temp_dir().join(format!("coordlab-bench-{name}-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&p);
    let w = MappedTrace::append(&p).expect("a scratch trace");
    (p, w)
}

/// A ring hop with its records written into a mapped trace; `.1`: the flush timed too; `.2`:
/// every line with its whole vector clock (before `dvc`).
struct HopMapped<'a, 'b>(Bencher<'a, 'b>, bool, bool);

/// Writes `r` into `w` with its whole vector clock, as the writer did before `dvc`.
fn write_whole(w: &mut MappedTrace, line: &mut Vec<u8>, r: &Record) {
    line.clear();
    encode_line(r, line);
    w.write_bytes(line).expect("write");
}

impl GroupRunner for HopMapped<'_, '_> {
    type Output = ();
    fn run<A: Algorithm>(self, setups: &[Setup], algos: Vec<A>) {
        let ring = std::cell::RefCell::new(Ring::new(setups, algos));
        let (p, w) = scratch_trace("hop");
        let w = std::cell::RefCell::new(w);
        let line = std::cell::RefCell::new(Vec::with_capacity(4096));
        let whole = self.2;
        let hop = || {
            ring.borrow_mut().hop(|r| {
                if whole {
                    write_whole(&mut w.borrow_mut(), &mut line.borrow_mut(), &r)
                } else {
                    w.borrow_mut().write(&r).expect("write")
                }
            })
        };
        let flush = || w.borrow_mut().flush().expect("flush");
        if self.1 {
            self.0.bench_local(|| {
                hop();
                flush();
            });
        } else {
            // The node's loop flushes after the hop's datagram has left: not between a
            // receive and its send, so not timed here.
            self.0.with_inputs(flush).bench_local_values(|()| hop());
        }
        drop(w);
        let _ = std::fs::remove_file(p);
    }
}

/// One hop with its records written as the node writes them: into the trace file's shared
/// mapping (hand-written JSON, no system call), from the datagram in to the sealed datagram
/// out. Issue 22's figure.
#[divan::bench]
fn hop_with_records_written(b: Bencher) {
    with_ring("ring-probe", HopMapped(b, false, false));
}

/// The same with every line's vector clock whole (the writer before `dvc`), same run.
#[divan::bench]
fn hop_with_records_written_whole_clocks(b: Bencher) {
    with_ring("ring-probe", HopMapped(b, false, true));
}

/// The same, with the writer's flush after the send timed too (pages for the next lines
/// faulted in: what the node does once the datagram has left).
#[divan::bench]
fn hop_with_records_written_and_flush(b: Bencher) {
    with_ring("ring-probe", HopMapped(b, true, false));
}

/// The steps of a hop, each alone, on a datagram of the same ring.
struct Steps<'a, 'b>(Bencher<'a, 'b>, Step);

#[derive(Clone, Copy)]
enum Step {
    Header,
    Verify,
    Decode,
    Seal,
    WriteRecords,
    EncodeRecords,
    EncodeChanges,
    MapRecords,
    MapWhole,
}

impl GroupRunner for Steps<'_, '_> {
    type Output = ();
    fn run<A: Algorithm>(self, setups: &[Setup], algos: Vec<A>) {
        let mut ring = Ring::new(setups, algos);
        let mut recs = Vec::new();
        ring.hop(|r| recs.push(r));
        let bytes = ring.in_flight.1.bytes.clone();
        let sealer = Sealer::new(&Key::simulated());
        let h = sealer.header(&bytes).expect("header");
        let env: Envelope<A::Msg> = Sealer::body(&h, &bytes).expect("body");
        match self.1 {
            Step::Header => self.0.bench_local(|| sealer.header(black_box(&bytes)).is_ok()),
            Step::Verify => self.0.bench_local(|| sealer.verify(black_box(&bytes)).is_ok()),
            Step::Decode => self
                .0
                .bench_local(|| Sealer::body::<A::Msg>(&h, black_box(&bytes)).is_ok()),
            Step::Seal => self.0.bench_local(|| sealer.seal(black_box(&env)).len()),
            Step::EncodeRecords => {
                let mut line = Vec::with_capacity(4096);
                self.0.bench_local(|| {
                    line.clear();
                    for r in &recs {
                        encode_line(r, &mut line);
                    }
                    line.len()
                })
            }
            Step::EncodeChanges => {
                let mut line = Vec::with_capacity(4096);
                let mut vc = VcChanges::default();
                self.0.bench_local(|| {
                    line.clear();
                    for r in &recs {
                        vc.encode(r, &mut line);
                    }
                    line.len()
                })
            }
            Step::MapWhole => {
                let (p, mut w) = scratch_trace("step-whole");
                let mut line = Vec::with_capacity(4096);
                self.0.bench_local(|| {
                    for r in &recs {
                        write_whole(&mut w, &mut line, r);
                    }
                });
                drop(w);
                let _ = std::fs::remove_file(p);
            }
            Step::MapRecords => {
                let (p, mut w) = scratch_trace("step");
                self.0.bench_local(|| {
                    for r in &recs {
                        w.write(r).expect("write");
                    }
                });
                drop(w);
                let _ = std::fs::remove_file(p);
            }
            Step::WriteRecords => {
                let mut w = JsonlWriter::append(Path::new("/dev/null")).expect("/dev/null");
                self.0.bench_local(|| {
                    for r in &recs {
                        w.write(r).expect("write");
                    }
                    w.flush().expect("flush");
                })
            }
        }
    }
}

/// Header checks (length, version, run, addresses), a few byte compares.
#[divan::bench]
fn step_header(b: Bencher) {
    with_ring("ring-probe", Steps(b, Step::Header));
}

/// The MAC (BLAKE3 keyed hash) over the datagram.
#[divan::bench]
fn step_verify(b: Bencher) {
    with_ring("ring-probe", Steps(b, Step::Verify));
}

/// Decoding the envelope (bincode): stamps with a 64-entry vector clock, and the message.
#[divan::bench]
fn step_decode(b: Bencher) {
    with_ring("ring-probe", Steps(b, Step::Decode));
}

/// Encoding and sealing an envelope like the one that leaves.
#[divan::bench]
fn step_seal(b: Bencher) {
    with_ring("ring-probe", Steps(b, Step::Seal));
}

/// A hop's trace records as serde_json lines, one write to /dev/null (the writer before).
#[divan::bench]
fn step_write_records_serde(b: Bencher) {
    with_ring("ring-probe", Steps(b, Step::WriteRecords));
}

/// A hop's trace records encoded (hand-written JSON) into memory.
#[divan::bench]
fn step_encode_records(b: Bencher) {
    with_ring("ring-probe", Steps(b, Step::EncodeRecords));
}

/// A hop's trace records written as the node writes them: encoded into the trace file's
/// shared mapping, vector clocks as changes.
#[divan::bench]
fn step_write_records(b: Bencher) {
    with_ring("ring-probe", Steps(b, Step::MapRecords));
}

/// A hop's trace records encoded into memory with their vector clocks as changes (`dvc`).
#[divan::bench]
fn step_encode_records_as_changes(b: Bencher) {
    with_ring("ring-probe", Steps(b, Step::EncodeChanges));
}

/// A hop's trace records into the trace file's shared mapping with whole vector clocks (the
/// writer before `dvc`).
#[divan::bench]
fn step_write_records_whole_clocks(b: Bencher) {
    with_ring("ring-probe", Steps(b, Step::MapWhole));
}
