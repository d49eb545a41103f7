//! One node's algorithm with everything both drivers share: the Lamport clock, keyed timers,
//! the envelope codec, counters and trace records. The simulator and the real runtime differ
//! only in where bytes and time come from.

use super::bundle::parts;
use super::drops::Drops;
use super::key::Key;
use super::replay::ReplayWindow;
use super::timers::Timers;
use crate::algo::{Algorithm, ClockCorrection, Command, Context, Message, Setup};
use crate::clock::kept::KeptCorrection;
use crate::clock::lamport::LamportClock;
use crate::clock::{ClockOptions, Hlc, PhysicalClock, VectorClock};
use crate::engine::wire::{Envelope, Sealer, Sealing, WireError};
use crate::rng::Rng;
use crate::trace::{Event, NodeId, Record};
use std::collections::BTreeMap;
use std::time::Duration;

/// Counters written in the `stop` event.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Counters {
    /// Messages sent (a datagram may carry several to one node: [`bundle`](super::bundle)).
    pub sent: u64,
    /// Messages accepted.
    pub received: u64,
    /// Messages the engine refused (a bundle whose framing broke counts once for its rest).
    pub dropped: u64,
    /// Refused messages by class (`forged`, `replay`, ...).
    pub dropped_by: BTreeMap<&'static str, u64>,
    /// Messages the protocol accepted but ignored.
    pub ignored: u64,
    /// Sent messages by type name.
    pub by_type: BTreeMap<&'static str, u64>,
    /// Datagrams the network filter dropped before they reached the engine (`coordlab net`).
    pub net_dropped: u64,
    /// Datagrams sent, as the driver packed the messages (0: the driver does not count them).
    pub datagrams: u64,
}

/// A datagram ready to leave.
#[derive(Debug, Clone)]
pub struct Outgoing {
    /// The destination node.
    pub to: NodeId,
    /// The encoded envelope.
    pub bytes: Vec<u8>,
    /// It keeps its place among the step's datagrams ([`Message::fence`]).
    pub fence: bool,
}

/// The times a driver passes in.
#[derive(Debug, Clone, Copy)]
pub struct Now {
    /// Monotonic time since the node started.
    pub mono: Duration,
    /// True time for the trace `t`, microseconds.
    pub wall_us: u64,
}

/// An algorithm wrapped with its clock, timers and counters.
pub struct Host<A: Algorithm> {
    /// The algorithm's state (read it in tests; drive it only through the host).
    pub algo: A,
    me: NodeId,
    lamport: LamportClock,
    seq: u64,
    boot: u64,
    sealer: Sealer,
    replay: ReplayWindow,
    drops: Drops,
    rng: Rng,
    timers: Timers<A::Timer>,
    counters: Counters,
    outbox: Vec<Outgoing>,
    records: Vec<Record>,
    cmds: Vec<Command<A::Msg, A::Timer>>,
    clock: PhysicalClock,
    step: bool,
    vc: Option<VectorClock>,
    hlc: Hlc,
    msg_seq: u64,
    persisted: Option<Vec<u8>>,
    /// Each peer's latest boot accepted, to tell the algorithm when one comes back anew.
    boots: BTreeMap<NodeId, u64>,
    /// Why the durable state was refused at start, to be said in the trace.
    refused: Option<String>,
}

impl<A: Algorithm> Host<A> {
    /// Wraps `algo`, set up as `setup`, with the simulator's fixed key and boot 0.
    pub fn new(setup: &Setup, algo: A) -> Self {
        Self::with_key(setup, algo, &Key::simulated(), 0)
    }

    /// Wraps `algo`, set up as `setup`, sealing and opening datagrams with `key`. `boot` must
    /// grow from one start of this node to the next (e.g. its start time): peers refuse
    /// datagrams of an older boot as replays.
    pub fn with_key(setup: &Setup, algo: A, key: &Key, boot: u64) -> Self {
        // The launcher and the node check the options first (registry::check_setup).
        let mut clock = PhysicalClock::new(setup.clock, clock_opts(setup).max_slew_ppm);
        // A restarted clock-sync node starts with the correction it kept (clock::kept).
        if let Some(k) = setup.durable.as_deref().and_then(KeptCorrection::decode) {
            clock.restore(k.clock_correction_us);
        }
        Host {
            algo,
            me: setup.me,
            lamport: LamportClock::new(1),
            seq: 0,
            boot,
            sealer: Sealer::new(key),
            replay: ReplayWindow::default(),
            drops: Drops::default(),
            rng: Rng::new(setup.seed.wrapping_mul(0x9e37_79b9).wrapping_add(setup.me)),
            timers: Timers::default(),
            counters: Counters::default(),
            outbox: Vec::new(),
            records: Vec::new(),
            cmds: Vec::new(),
            clock,
            step: clock_opts(setup).step,
            vc: clock_opts(setup).vc.then(VectorClock::default),
            hlc: Hlc::default(),
            msg_seq: 0,
            persisted: None,
            boots: BTreeMap::new(),
            refused: setup.durable_refused.clone(),
        }
    }

    /// This node's physical clock (read it in tests; it advances only through the host).
    pub fn clock(&self) -> &PhysicalClock {
        &self.clock
    }

    /// This node's id.
    pub fn id(&self) -> NodeId {
        self.me
    }

    /// The current Lamport clock.
    pub fn lamport(&self) -> u64 {
        self.lamport.c
    }

    #[cfg(test)]
    /// The counters so far.
    pub(crate) fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Records the `start` event and runs the algorithm's `on_start`.
    pub fn start(&mut self, now: Now, start: Event) {
        self.push_record(now, start);
        if let Some(why) = self.refused.take() {
            let text = format!("durable state refused, started without it: {why}");
            self.push_record(
                now,
                Event::Note {
                    text,
                    level: "error".into(),
                },
            );
        }
        self.with_cx(now, |a, cx| a.on_start(cx));
    }

    /// Accepts one datagram, each of its messages in order when it holds several
    /// ([`bundle`](super::bundle)); `from` is the member its source address belongs to (None:
    /// not a member). `addr` is formatted only if a message is refused.
    pub fn deliver(&mut self, now: Now, from: Option<NodeId>, bytes: &[u8], addr: impl std::fmt::Display) {
        for part in parts(bytes) {
            match part.and_then(|b| self.open(from, b).map(|env| (env, b.len()))) {
                Ok((env, len)) => self.accept(now, env, len),
                Err(e) => self.drop_datagram(now, &e, &addr.to_string()),
            }
        }
        self.flush_drops(now, false);
    }

    /// The checks, cheapest first, so that a flood costs little per datagram: length, version
    /// and run id (a few byte compares), the sender's address and claimed id, the destination,
    /// the replay window, and only then the MAC and the decoding.
    fn open(&mut self, from: Option<NodeId>, bytes: &[u8]) -> Result<Envelope<A::Msg>, WireError> {
        let h = self.sealer.header(bytes)?;
        let from = from.ok_or(WireError::UnknownSender)?;
        if h.from != from {
            return Err(WireError::Spoofed {
                claims: h.from,
                is: from,
            });
        }
        if h.to != self.me {
            return Err(WireError::Misdirected(h.to));
        }
        self.replay.check(from, h.boot, h.seq).map_err(WireError::Replay)?;
        self.sealer.verify(bytes)?;
        // Authentic: this (boot, seq) is used up even if the body turns out not to decode.
        self.replay.mark(from, h.boot, h.seq);
        Sealer::body(&h, bytes)
    }

    fn accept(&mut self, now: Now, env: Envelope<A::Msg>, len: usize) {
        let from = env.from;
        // The replay window refused older boots, so a different one is a newer one.
        if self.boots.insert(from, env.boot).is_some_and(|b| b != env.boot) {
            self.push_record(
                now,
                Event::Note {
                    text: format!("node {from} came back as a new boot: what its old boot knew is gone"),
                    level: "info".into(),
                },
            );
            self.with_cx(now, |a, cx| a.on_peer_restart(cx, from));
        }
        self.counters.received += 1;
        self.lamport.recv(env.lamport);
        if let Some(vc) = &mut self.vc {
            vc.recv(self.me, &env.stamps.vc);
        }
        let pt = self.clock.read(now.wall_us);
        let (l, c) = env.stamps.hlc;
        self.hlc.recv(Hlc { l, c }, pt);
        let ev = Event::Recv {
            from,
            msg: env.msg.name().to_string(),
            bytes: len,
            seq: env.seq,
            brief: env.msg.brief(),
        };
        self.stamp(now, ev);
        self.msg_seq = env.seq;
        self.with_cx(now, |a, cx| a.on_msg(cx, from, env.msg));
        self.msg_seq = 0;
    }

    /// Counts a refused datagram; its class's `drop` record is written when the interval ends.
    pub(crate) fn drop_datagram(&mut self, now: Now, e: &WireError, addr: &str) {
        self.counters.dropped += 1;
        *self.counters.dropped_by.entry(e.class()).or_default() += 1;
        self.drops.add(now.mono, e, addr);
    }

    /// Writes the drop tallies whose interval has ended (all of them with `force`).
    fn flush_drops(&mut self, now: Now, force: bool) {
        for t in self.drops.take_due(now.mono, force) {
            self.push_record(
                now,
                Event::Drop {
                    reason: t.reason,
                    addr: t.addr,
                    count: t.count,
                    class: t.class.to_string(),
                },
            );
        }
    }

    /// Fires every timer whose deadline has passed, earliest first, and writes due drop tallies.
    pub(crate) fn fire_timers(&mut self, now: Now) {
        while let Some(t) = self.timers.pop_expired(now.mono) {
            self.with_cx(now, |a, cx| a.on_timer(cx, t));
        }
        self.flush_drops(now, false);
    }

    /// Fires the timers that the steps at `now` set with no delay (a hold or a think of 0 ms),
    /// so that what they send leaves with the step's own datagrams. A timer that expired before
    /// `now` waits for [`Host::fire_timers`] after the wake-up's datagrams, as before: a timeout
    /// must not fire between two datagrams of one wake-up, the second perhaps the heartbeat it
    /// waits for.
    pub(crate) fn fire_set_now(&mut self, now: Now) {
        while let Some(t) = self.timers.pop_set_at(now.mono) {
            self.with_cx(now, |a, cx| a.on_timer(cx, t));
        }
    }

    /// The earliest deadline, timers' or drop tallies', in monotonic time.
    pub(crate) fn next_deadline(&mut self) -> Option<Duration> {
        match (self.timers.next_deadline(), self.drops.deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Counts a datagram the network filter dropped before it reached the engine: no trace
    /// record, only the `stop` event's `net_dropped`.
    pub(crate) fn count_net_drop(&mut self) {
        self.counters.net_dropped += 1;
    }

    /// Counts datagrams a driver sent (the messages it packed them from are counted already).
    pub(crate) fn count_datagrams(&mut self, n: usize) {
        self.counters.datagrams += n as u64;
    }

    /// Records the open drop tallies and the `stop` event with the counters.
    pub fn stop(&mut self, now: Now) {
        self.flush_drops(now, true);
        let c = self.counters.clone();
        self.push_record(
            now,
            Event::Stop {
                sent: c.sent,
                received: c.received,
                dropped: c.dropped,
                ignored: c.ignored,
                net_dropped: c.net_dropped,
                by_type: c.by_type.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
                datagrams: c.datagrams,
            },
        );
    }

    /// Takes the datagrams waiting to leave.
    pub fn take_outbox(&mut self) -> std::vec::Drain<'_, Outgoing> {
        self.outbox.drain(..)
    }

    /// The datagrams waiting to leave, left in place (a driver sending them as one batch
    /// reads them here, then [`Host::clear_outbox`]).
    pub fn outbox(&self) -> &[Outgoing] {
        &self.outbox
    }

    /// Drops the datagrams waiting to leave (sent, or never to be).
    pub fn clear_outbox(&mut self) {
        self.outbox.clear();
    }

    /// Takes the durable state the algorithm asked to persist since the last call: a driver
    /// stores it before it sends the outbox.
    pub(crate) fn take_persisted(&mut self) -> Option<Vec<u8>> {
        self.persisted.take()
    }

    /// The trace records written since the last `take_records`.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// Takes the trace records written since the last call.
    pub fn take_records(&mut self) -> std::vec::Drain<'_, Record> {
        self.records.drain(..)
    }

    fn push_record(&mut self, now: Now, event: Event) {
        if let Event::Ignore { .. } = event {
            self.counters.ignored += 1;
        }
        self.lamport.tick();
        self.tick_clocks(now);
        self.stamp(now, event);
    }

    /// A local event or a send: the vector and hybrid clocks advance.
    fn tick_clocks(&mut self, now: Now) {
        if let Some(vc) = &mut self.vc {
            vc.tick(self.me);
        }
        let pt = self.clock.read(now.wall_us);
        self.hlc.tick(pt);
    }

    /// Records `event` with the clocks as they now stand.
    fn stamp(&mut self, now: Now, event: Event) {
        self.records.push(Record {
            t: now.wall_us,
            node: Some(self.me),
            lamport: Some(self.lamport.c),
            pt: Some(self.clock.read(now.wall_us)),
            vc: self.vc.clone(),
            hlc: Some((self.hlc.l, self.hlc.c)),
            event,
        });
    }

    /// Records the correction, then slews (or steps) the clock.
    fn adjust_clock(&mut self, now: Now, c: ClockCorrection) {
        let ev = Event::ClockAdjust {
            offset_us: c.offset_us,
            rtt_us: c.rtt_us,
            bound_us: c.bound_us,
            reference: c.reference,
            ref_seq: c.ref_seq,
            ref_offset_us: c.ref_offset_us,
            step: self.step,
        };
        self.push_record(now, ev);
        if self.step {
            self.clock.step(now.wall_us, c.offset_us);
        } else {
            self.clock.slew(c.offset_us);
        }
        // Kept for a restart, on stable storage before any message of this call leaves.
        let kept = KeptCorrection {
            clock_correction_us: self.clock.correction_us(),
        };
        self.persisted = Some(kept.encode());
    }

    fn with_cx(&mut self, now: Now, f: impl FnOnce(&mut A, &mut Context<'_, A::Msg, A::Timer>)) {
        let mut cmds = std::mem::take(&mut self.cmds);
        {
            let mut cx = Context::new(now.mono, self.me, &mut self.rng, &mut cmds);
            cx.pt = self.clock.read(now.wall_us);
            cx.msg_seq = self.msg_seq;
            f(&mut self.algo, &mut cx);
        }
        for cmd in cmds.drain(..) {
            match cmd {
                Command::Send(to, msg) => {
                    self.lamport.tick();
                    self.seq += 1;
                    self.tick_clocks(now);
                    let name = msg.name();
                    let brief = msg.brief();
                    let fence = msg.fence();
                    let bytes = self.sealer.seal_parts(Sealing {
                        from: self.me,
                        to,
                        boot: self.boot,
                        seq: self.seq,
                        lamport: self.lamport.c,
                        vc: self.vc.as_ref().map_or(&[], |v| v.pairs()),
                        hlc: (self.hlc.l, self.hlc.c),
                        msg: &msg,
                    });
                    self.counters.sent += 1;
                    *self.counters.by_type.entry(name).or_default() += 1;
                    let ev = Event::Send {
                        to,
                        msg: name.to_string(),
                        bytes: bytes.len(),
                        seq: self.seq,
                        brief,
                    };
                    self.stamp(now, ev);
                    self.outbox.push(Outgoing { to, bytes, fence });
                }
                Command::SetTimer(t, after) => self.timers.set(t, now.mono + after),
                Command::CancelTimer(t) => self.timers.cancel(t),
                Command::Record(ev) => {
                    // A protocol's own `drop` (a message it could not send) counts like a refused one.
                    if let Event::Drop { count, .. } = ev {
                        self.counters.dropped += count;
                    }
                    self.push_record(now, ev)
                }
                Command::AdjustClock(c) => self.adjust_clock(now, c),
                Command::Persist(bytes) => self.persisted = Some(bytes),
            }
        }
        self.cmds = cmds;
    }
}

/// The clock options of `setup`, defaults where a value is bad (the node refused it earlier).
fn clock_opts(setup: &Setup) -> ClockOptions {
    ClockOptions::from_setup(setup).unwrap_or(ClockOptions {
        max_slew_ppm: crate::clock::physical::DEFAULT_MAX_SLEW_PPM,
        step: false,
        vc: false,
    })
}

#[cfg(test)]
#[path = "host_tests.rs"]
mod tests;
