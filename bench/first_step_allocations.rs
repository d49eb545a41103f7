//! Where a node's first ELECTION step allocates (issue 22; docs/cost.md, "The first step's
//! allocations"). Not built with the project: to run it,
//!
//!     mkdir -p examples && cp bench/first_step_allocations.rs examples/
//!     cargo run --profile test-opt --example first_step_allocations
//!     rm -r examples
//!
//! A ring of 64 Chang-Roberts hosts as the registry composes them (ring repair, the detector,
//! vector clocks on), node 64 the initiator; each of the first six hops is a node's first
//! message. A counting allocator takes a backtrace of every allocation (and reallocation)
//! inside `deliver` and the taking of its records and datagrams, and prints the sites of the
//! third hop, grouped.
use coordlab::algo::{Algorithm, Setup};
use coordlab::catalog::{self as registry, GroupRunner};
use coordlab::engine::host::{Host, Now};
use coordlab::engine::key::Key;
use coordlab::trace::{Event, NodeId};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

struct Probe;
thread_local! { static ON: Cell<bool> = const { Cell::new(false) }; }
static SITES: Mutex<Vec<String>> = Mutex::new(Vec::new());

unsafe impl GlobalAlloc for Probe {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if ON.with(|o| o.replace(false)) {
            let bt = std::backtrace::Backtrace::force_capture().to_string();
            let frames: Vec<&str> = bt.lines().filter(|l| l.contains("coordlab::") && !l.contains("alloc_probe")).take(4).map(|l| l.trim()).collect();
            SITES.lock().unwrap().push(format!("{} B: {}", l.size(), frames.join(" < ")));
            ON.with(|o| o.set(true));
        }
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) { unsafe { System.dealloc(p, l) } }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        if ON.with(|o| o.replace(false)) {
            let bt = std::backtrace::Backtrace::force_capture().to_string();
            let frames: Vec<&str> = bt.lines().filter(|l| l.contains("coordlab::") && !l.contains("alloc_probe")).take(4).map(|l| l.trim()).collect();
            SITES.lock().unwrap().push(format!("realloc {} B: {}", n, frames.join(" < ")));
            ON.with(|o| o.set(true));
        }
        unsafe { System.realloc(p, l, n) }
    }
}
#[global_allocator]
static A: Probe = Probe;

struct Run;
impl GroupRunner for Run {
    type Output = ();
    fn run<A: Algorithm>(self, setups: &[Setup], algos: Vec<A>) {
        let key = Key::simulated();
        let mut hosts: Vec<Host<A>> = setups.iter().zip(algos).map(|(s, a)| Host::with_key(s, a, &key, 1)).collect();
        let ids: Vec<NodeId> = setups.iter().map(|s| s.me).collect();
        let mut now = Now { mono: Duration::from_millis(1), wall_us: 1_000_000 };
        for (h, &me) in hosts.iter_mut().zip(&ids) {
            h.start(now, Event::Start { addr: "127.0.0.1:0".into(), algo: "bench".into(), pid: me as u32, peers: vec![] });
            let _ = h.take_records().count();
        }
        let mut flight: Vec<(NodeId, coordlab::engine::host::Outgoing)> = Vec::new();
        for (h, &me) in hosts.iter_mut().zip(&ids) {
            for o in h.take_outbox() { flight.push((me, o)); }
        }
        eprintln!("in flight at start: {}", flight.len());
        let (from, out) = flight.into_iter().find(|(f, _)| *f == 64).expect("node 64 sends");
        let (mut from, mut out) = (from, out);
        for hop in 0..6 {
            let k = ids.iter().position(|&x| x == out.to).unwrap();
            now.mono += Duration::from_micros(20);
            now.wall_us += 20;
            let h = &mut hosts[k];
            SITES.lock().unwrap().clear();
            // Made before the count: the probe's own vectors allocate nothing inside it.
            let (mut recs, mut outs) = (Vec::with_capacity(64), Vec::with_capacity(64));
            ON.with(|o| o.set(true));
            h.deliver(now, Some(from), &out.bytes, "127.0.0.1:0");
            recs.extend(h.take_records());
            outs.extend(h.take_outbox());
            ON.with(|o| o.set(false));
            let sites = SITES.lock().unwrap().clone();
            eprintln!("hop {hop} to {}: {} allocations, {} records, {} out", out.to, sites.len(), recs.len(), outs.len());
            if hop == 2 {
                let mut c: BTreeMap<&String, usize> = BTreeMap::new();
                for s in &sites { *c.entry(s).or_default() += 1; }
                for (s, n) in c { eprintln!("  {n} x {s}"); }
            }
            let next = outs.into_iter().next().expect("goes on");
            from = ids[k];
            out = next;
        }
    }
}

fn main() {
    let ids: Vec<NodeId> = (1..=64).collect();
    let setups = coordlab::sim::ring(&ids, &[64]);
    registry::dispatch_group("chang-roberts", &setups, Run).expect("known");
}
