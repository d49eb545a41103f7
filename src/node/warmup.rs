//! The rehearsal a node runs before its algorithm starts, so that the first real message costs
//! what a steady-state one does.
//!
//! Measured first with getrusage's minor faults and timestamps around each step of the receive
//! path: a node's first message took 35-42 us against 1.5-6 us later; the extra was decoding
//! the envelope and running the handler for the first time (~15 us against ~1 us), and the
//! first trace lines of `send`/`recv` (~7-12 us against ~0.4 us: serde_json's code for those
//! event shapes and the trace buffer's first fill). Then with perf's page-fault samples (data
//! addresses, call stacks) matched to the first ELECTION lap of a ring of 64: ~6-9 faults per
//! node inside the lap, in the message's `brief` (read-only data of the binary), the allocator
//! (heap pages shared copy-on-write with the launcher) and the trace buffer.
//!
//! A rehearsal pays these: throwaway copies of the same algorithm, one for this node and one
//! for each neighbour (at most the two beside it: [`neighbourhood`]), on a small ring of just
//! those (members in the real ring order), all initiating, exchange what they send for a few
//! rounds and once more after their first timers, so that every handler of a lap (the message,
//! its ACK, the announcement, a heartbeat) runs here first. Every record they make goes through
//! the trace writer's encoder and through the human log's formatting into a string; one
//! datagram goes through a scratch socket with the same calls as the real one. An earlier
//! rehearsal delivered one copy's messages back to itself: the envelopes named another
//! destination, were refused, and no receive handler ever ran (perf, page-fault samples: every
//! node still faulted in `brief` and the allocator during its first ELECTION).

use crate::algo::{Algorithm, NodeId, Setup};
use crate::catalog::{self as registry, GroupRunner};
use crate::engine::host::{Host, Now};
use crate::node::logging::fmt_wall;
use crate::trace::{wall_us, Event, VcChanges};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Rounds of delivering what was sent, per phase: enough for a message to go round a ring of
/// three, be acknowledged, and be followed by an announcement.
const ROUNDS: usize = 10;
/// Messages delivered per round at most (a flood-style start sends one per neighbour).
const PER_ROUND: usize = 24;
/// Records per copy that go through the trace writer and the human formatting.
const RECORDS: usize = 64;

/// Rehearses algorithm `name` around `setup`, and touches the first page of `buf` (the receive
/// buffer: datagrams are small, so only that page is ever used; touching all of it would cost
/// resident memory). Never fails: a rehearsal that cannot run only leaves the first hop cold.
pub(crate) fn rehearse(name: &str, setup: &Setup, buf: &mut [u8]) {
    touch(buf);
    let group = group_setups(setup);
    let setups = match group.iter().all(|s| registry::check_setup(name, s).is_ok()) {
        true => group,
        // A neighbourhood the algorithm refuses (it wants more members, say): this node alone.
        false => vec![alone(setup)],
    };
    let _ = registry::dispatch_group(name, &setups, Rehearsal);
    scratch_datagram();
    register_thread_local();
}

/// Registers a thread-local destructor, which the process's first one costs: glibc resolves
/// a symbol lazily through its own PLT at the first registration (`__cxa_thread_atexit_impl`;
/// this binary is linked BIND_NOW, libc is not). env_logger keeps its line buffer in such a
/// thread-local, so without this the node's first human log line paid it: perf's page-fault
/// samples showed ~12 faults per node in the dynamic loader (`_dl_fixup`, `do_lookup_x`) under
/// that line, inside the first ELECTION lap.
fn register_thread_local() {
    thread_local!(static TOUCHED: std::cell::Cell<Option<Box<u8>>> = const { std::cell::Cell::new(None) });
    TOUCHED.with(|t| t.set(Some(Box::new(1))));
}

/// Touches the first page of `buf` (the receive buffer): the part of a rehearsal a node forked
/// from a zygote that rehearsed still needs, as the buffer is its own.
pub(crate) fn touch(buf: &mut [u8]) {
    let first = buf.len().min(4096);
    buf[..first].fill(0);
    std::hint::black_box(&buf);
}

/// This node and its neighbours, each as a member of a small ring of just them (in the real
/// ring order: the members' order is kept), all initiating. Only these: the same code paths at
/// a cost that does not grow with the cluster (with every member, n nodes rehearsing cost n^2).
fn group_setups(setup: &Setup) -> Vec<Setup> {
    let members = neighbourhood(setup);
    let k = members.len();
    members
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let mut s = setup.clone();
            s.me = x;
            s.members = members.clone();
            s.initiator = true;
            if x != setup.me {
                // Ring neighbours first (predecessor, successor), then the rest of the group.
                let mut nb: Vec<NodeId> = Vec::with_capacity(k);
                for j in [i + k - 1, i + 1].into_iter().chain(i + 2..i + k - 1) {
                    let y = members[j % k];
                    if y != x && !nb.contains(&y) {
                        nb.push(y);
                    }
                }
                s.neighbours = nb;
                s.durable = None;
                s.restarted = false;
            } else {
                s.neighbours.retain(|m| members.contains(m));
            }
            s
        })
        .collect()
}

fn alone(setup: &Setup) -> Setup {
    let mut s = setup.clone();
    s.initiator = true;
    s.members = neighbourhood(setup);
    s
}

/// This node and its neighbours, in the members' order; where it has more than two (a mesh),
/// only the neighbour before it and the one after it in that order. Every handler runs in a
/// group of three as in a larger one, and each member of a group of k handles k-1 of each
/// message: the whole neighbourhood made a complete mesh's rehearsal grow as n^2 (a mesh of
/// 20 waited a median of 14 ms for its go, against 2-4 now).
fn neighbourhood(setup: &Setup) -> std::sync::Arc<[NodeId]> {
    let near: Vec<NodeId> = setup
        .members
        .iter()
        .copied()
        .filter(|m| *m == setup.me || setup.neighbours.contains(m))
        .collect();
    let k = near.len();
    let Some(at) = near.iter().position(|&m| m == setup.me).filter(|_| k > GROUP) else {
        return near.into();
    };
    let mut kept = [(at + k - 1) % k, at, (at + 1) % k];
    kept.sort_unstable();
    kept.iter().map(|&i| near[i]).collect()
}

/// Members of a rehearsal's group at most: this node and a neighbour on either side.
const GROUP: usize = 3;

struct Rehearsal;

impl GroupRunner for Rehearsal {
    type Output = ();
    fn run<A: Algorithm>(self, setups: &[Setup], algos: Vec<A>) {
        let mut hosts: Vec<Host<A>> = setups.iter().zip(algos).map(|(s, a)| Host::new(s, a)).collect();
        let ids: Vec<NodeId> = setups.iter().map(|s| s.me).collect();
        let t = wall_us();
        let at = |mono: Duration| Now { mono, wall_us: t };
        for (h, s) in hosts.iter_mut().zip(setups) {
            let start = Event::Start {
                addr: "127.0.0.1:0".into(),
                algo: "rehearsal".into(),
                pid: std::process::id(),
                peers: s.neighbours.clone(),
            };
            h.start(at(Duration::ZERO), start);
        }
        exchange(&mut hosts, &ids, at(Duration::ZERO));
        // The first timers (a heartbeat, an unanswered message) and what they send.
        let later = at(setups[0].heartbeat.max(Duration::from_millis(1)));
        for h in &mut hosts {
            h.fire_timers(later);
        }
        exchange(&mut hosts, &ids, later);
        // The trace writer's encoder (its file's first page is touched when it opens).
        let mut line = Vec::with_capacity(1024);
        let mut text = String::new();
        for (h, &me) in hosts.iter_mut().zip(&ids) {
            if h.take_persisted().is_some() {
                PERSISTED.store(true, Ordering::Relaxed);
            }
            let _ = h.take_outbox().count();
            let mut vc = VcChanges::default();
            for rec in h.take_records().take(RECORDS) {
                line.clear();
                vc.encode(&rec, &mut line);
                text.push_str(&fmt_wall(rec.t));
                text.push_str(&rec.event.describe(me));
            }
        }
        std::hint::black_box((line, text));
    }
}

/// Whether a rehearsal in this process (or in the zygote it was forked from) saw the algorithm
/// persist state: its node then makes its state file before the go, not on its first store.
static PERSISTED: AtomicBool = AtomicBool::new(false);

/// Whether the algorithm persisted state when rehearsed here or in the zygote.
pub(crate) fn rehearsal_persisted() -> bool {
    PERSISTED.load(Ordering::Relaxed)
}

/// Delivers what the hosts send to one another for [`ROUNDS`] rounds (what is addressed
/// outside the group is dropped).
fn exchange<A: Algorithm>(hosts: &mut [Host<A>], ids: &[NodeId], now: Now) {
    for _ in 0..ROUNDS {
        let mut sent = Vec::new();
        for (h, &from) in hosts.iter_mut().zip(ids) {
            sent.extend(h.take_outbox().map(|o| (from, o)));
        }
        if sent.is_empty() {
            return;
        }
        for (from, o) in sent.into_iter().take(PER_ROUND) {
            if let Some(k) = ids.iter().position(|&x| x == o.to) {
                hosts[k].deliver(now, Some(from), &o.bytes, "127.0.0.1:0");
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(me: NodeId, members: &[NodeId], neighbours: &[NodeId]) -> Setup {
        Setup::new(me, members.to_vec(), neighbours.to_vec())
    }

    #[test]
    fn a_ring_node_rehearses_with_both_its_neighbours() {
        let ring: Vec<NodeId> = (1..=8).collect();
        assert_eq!(&*neighbourhood(&setup(1, &ring, &[8, 2])), &[1, 2, 8]);
        assert_eq!(&*neighbourhood(&setup(5, &ring, &[4, 6])), &[4, 5, 6]);
    }

    #[test]
    fn a_mesh_node_rehearses_with_the_neighbours_beside_it_only() {
        let mesh: Vec<NodeId> = (1..=20).collect();
        let all_but = |me: NodeId| mesh.iter().copied().filter(|&m| m != me).collect::<Vec<_>>();
        assert_eq!(&*neighbourhood(&setup(7, &mesh, &all_but(7))), &[6, 7, 8]);
        assert_eq!(&*neighbourhood(&setup(1, &mesh, &all_but(1))), &[1, 2, 20]);
        assert_eq!(&*neighbourhood(&setup(20, &mesh, &all_but(20))), &[1, 19, 20]);
        // A node of a sparse graph: the neighbours beside it among its own, not among all.
        assert_eq!(&*neighbourhood(&setup(10, &mesh, &[2, 4, 15, 19])), &[4, 10, 15]);
        let group = group_setups(&setup(7, &mesh, &all_but(7)));
        assert_eq!(group.iter().map(|s| s.me).collect::<Vec<_>>(), vec![6, 7, 8]);
    }
}
