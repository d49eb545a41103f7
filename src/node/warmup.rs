//! The rehearsal a node runs before its algorithm starts, so that the first real message costs
//! what a steady-state one does.
//!
//! Measured (minor faults from getrusage, and timestamps around each step of the receive path,
//! since `perf` here only counts software events): a node's first message took 35-42 us
//! against 1.5-6 us later, with almost no page faults. The extra was first-run work in user
//! space: decoding the envelope and running the handler for the first time (~15 us against
//! ~1 us), and the first trace lines of `send`/`recv` (~7-12 us against ~0.4 us: serde_json's
//! code for those event shapes and the trace buffer's first fill). A rehearsal pays these: a
//! throwaway copy of the same algorithm, set up as an initiator, starts, and what it sends is
//! delivered back to it for a few rounds; every record it makes goes
//! through the same trace writer into /dev/null and through the human log's formatting into a
//! string; one datagram goes through a scratch socket with the same calls as the real one.

use crate::algo::registry::{self, Runner};
use crate::algo::{Algorithm, Setup};
use crate::engine::host::{Host, Now};
use crate::node::logging::fmt_wall;
use crate::trace::{wall_us, Event, JsonlWriter};
use std::path::Path;
use std::time::Duration;

/// Rounds of deliver-what-was-sent: enough for an announcement to follow an election.
const ROUNDS: usize = 4;
/// Messages delivered per round at most (a flood-style start sends one per neighbour).
const PER_ROUND: usize = 8;

/// Rehearses algorithm `name` set up as `setup`, and touches the first page of `buf` (the
/// receive buffer: datagrams are small, so only that page is ever used; touching all of it
/// would cost resident memory). Never fails: a rehearsal that cannot run only leaves the
/// first hop cold.
pub fn rehearse(name: &str, setup: &Setup, buf: &mut [u8]) {
    let first = buf.len().min(4096);
    buf[..first].fill(0);
    std::hint::black_box(&buf);
    let mut s = setup.clone();
    s.initiator = true;
    // Only itself and its neighbours: the same code paths at a cost that does not grow with the
    // cluster (with every member, a rehearsal that wins announces itself to all n, and n nodes
    // rehearsing cost n^2: minutes for 4,096 nodes).
    s.members.retain(|m| *m == setup.me || setup.neighbours.contains(m));
    let _ = registry::dispatch(name, &s, Rehearsal);
    scratch_datagram();
}

struct Rehearsal;

impl Runner for Rehearsal {
    type Output = ();
    fn run<A: Algorithm>(self, setup: &Setup, a: A) {
        let mut host = Host::new(setup, a);
        let me = setup.me;
        let t = wall_us();
        let at = |mono: Duration| Now { mono, wall_us: t };
        let start = Event::Start {
            addr: "127.0.0.1:0".into(),
            algo: "rehearsal".into(),
            pid: std::process::id(),
            peers: setup.neighbours.clone(),
        };
        host.start(at(Duration::ZERO), start);
        for _ in 0..ROUNDS {
            let out: Vec<_> = host.take_outbox().take(PER_ROUND).collect();
            if out.is_empty() {
                break;
            }
            // The envelope names this node as its sender, so it is delivered as from itself.
            for o in out {
                host.deliver(at(Duration::ZERO), Some(me), &o.bytes, "127.0.0.1:0");
            }
        }
        let _ = host.take_outbox().count();
        let mut sink = JsonlWriter::append(Path::new("/dev/null")).ok();
        let mut text = String::new();
        for rec in host.take_records().take(64) {
            if let Some(w) = &mut sink {
                let _ = w.write(&rec);
            }
            text.push_str(&fmt_wall(rec.t));
            text.push_str(&rec.event.describe(me));
        }
        if let Some(w) = &mut sink {
            let _ = w.flush();
        }
        std::hint::black_box(text);
    }
}

/// One datagram through a scratch socket, with the calls the real loop makes.
fn scratch_datagram() {
    let Ok(sock) = std::net::UdpSocket::bind("127.0.0.1:0") else {
        return;
    };
    let Ok(addr) = sock.local_addr() else { return };
    if sock.set_nonblocking(true).is_err() {
        return;
    }
    let sock = mio::net::UdpSocket::from_std(sock);
    let mut buf = [0u8; 64];
    if sock.send_to(b"warm", addr).is_ok() {
        // Loopback delivery is synchronous: the datagram is queued when send_to returns.
        let _ = sock.recv_from(&mut buf);
    }
}
