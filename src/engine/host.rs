//! One node's algorithm with everything both drivers share: the Lamport clock, keyed timers,
//! the envelope codec, counters and trace records. The simulator and the real runtime differ
//! only in where bytes and time come from.

use super::timers::Timers;
use crate::algo::{Algorithm, ClockCorrection, Command, Context, Message, Setup};
use crate::clock::{ClockOptions, Hlc, PhysicalClock, VectorClock};
use crate::engine::wire::{self, Envelope, Stamps};
use crate::rng::Rng;
use crate::trace::{Event, NodeId, Record};
use std::collections::BTreeMap;
use std::time::Duration;

/// Counters written in the `stop` event.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters {
    /// Datagrams sent.
    pub sent: u64,
    /// Datagrams accepted.
    pub received: u64,
    /// Datagrams the engine refused.
    pub dropped: u64,
    /// Messages the protocol accepted but ignored.
    pub ignored: u64,
    /// Sent messages by type name.
    pub by_type: BTreeMap<String, u64>,
}

/// A datagram ready to leave.
#[derive(Debug, Clone)]
pub struct Outgoing {
    /// The destination node.
    pub to: NodeId,
    /// The encoded envelope.
    pub bytes: Vec<u8>,
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
    lamport: u64,
    seq: u64,
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
}

impl<A: Algorithm> Host<A> {
    /// Wraps `algo`, set up as `setup`.
    pub fn new(setup: &Setup, algo: A) -> Self {
        Host {
            algo,
            me: setup.me,
            lamport: 0,
            seq: 0,
            rng: Rng::new(setup.seed.wrapping_mul(0x9e37_79b9).wrapping_add(setup.me)),
            timers: Timers::default(),
            counters: Counters::default(),
            outbox: Vec::new(),
            records: Vec::new(),
            cmds: Vec::new(),
            // The launcher and the node check the options first (registry::check_setup).
            clock: PhysicalClock::new(setup.clock, clock_opts(setup).max_slew_ppm),
            step: clock_opts(setup).step,
            vc: clock_opts(setup).vc.then(VectorClock::default),
            hlc: Hlc::default(),
            msg_seq: 0,
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
        self.lamport
    }

    /// The counters so far.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Records the `start` event and runs the algorithm's `on_start`.
    pub fn start(&mut self, now: Now, start: Event) {
        self.push_record(now, start);
        self.with_cx(now, |a, cx| a.on_start(cx));
    }

    /// Accepts one datagram; `from` is the member its source address belongs to (None: not a
    /// member). The bytes are decoded first, so garbage is reported as garbage wherever it came from.
    pub fn deliver(&mut self, now: Now, from: Option<NodeId>, bytes: &[u8], addr: &str) {
        let env = match wire::decode::<A::Msg>(bytes) {
            Err(e) => return self.drop_datagram(now, e.to_string(), addr),
            Ok(env) => env,
        };
        let Some(from) = from else {
            return self.drop_datagram(now, format!("unknown sender: {addr} is not a cluster member"), addr);
        };
        if env.from != from {
            let reason = format!("sender claims id {} but its address belongs to node {from}", env.from);
            return self.drop_datagram(now, reason, addr);
        }
        self.counters.received += 1;
        self.lamport = self.lamport.max(env.lamport) + 1;
        if let Some(vc) = &mut self.vc {
            vc.recv(self.me, &VectorClock::from_pairs(env.stamps.vc.iter().copied()));
        }
        let pt = self.clock.read(now.wall_us);
        let (l, c) = env.stamps.hlc;
        self.hlc.recv(Hlc { l, c }, pt);
        let ev = Event::Recv {
            from,
            msg: env.msg.name().to_string(),
            bytes: bytes.len(),
            seq: env.seq,
        };
        self.stamp(now, ev);
        self.msg_seq = env.seq;
        self.with_cx(now, |a, cx| a.on_msg(cx, from, env.msg));
        self.msg_seq = 0;
    }

    /// Counts and traces a refused datagram.
    pub fn drop_datagram(&mut self, now: Now, reason: String, addr: &str) {
        self.push_record(
            now,
            Event::Drop {
                reason,
                addr: addr.to_string(),
            },
        );
    }

    /// Fires every timer whose deadline has passed, earliest first.
    pub fn fire_timers(&mut self, now: Now) {
        while let Some(t) = self.timers.pop_expired(now.mono) {
            self.with_cx(now, |a, cx| a.on_timer(cx, t));
        }
    }

    /// The earliest timer deadline, in monotonic time.
    pub fn next_deadline(&mut self) -> Option<Duration> {
        self.timers.next_deadline()
    }

    /// Records the `stop` event with the counters.
    pub fn stop(&mut self, now: Now) {
        let c = self.counters.clone();
        self.push_record(
            now,
            Event::Stop {
                sent: c.sent,
                received: c.received,
                dropped: c.dropped,
                ignored: c.ignored,
                by_type: c.by_type,
            },
        );
    }

    /// Takes the datagrams waiting to leave.
    pub fn take_outbox(&mut self) -> std::vec::Drain<'_, Outgoing> {
        self.outbox.drain(..)
    }

    /// Takes the trace records written since the last call.
    pub fn take_records(&mut self) -> std::vec::Drain<'_, Record> {
        self.records.drain(..)
    }

    fn push_record(&mut self, now: Now, event: Event) {
        match event {
            Event::Drop { .. } => self.counters.dropped += 1,
            Event::Ignore { .. } => self.counters.ignored += 1,
            _ => {}
        }
        self.lamport += 1;
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
            lamport: Some(self.lamport),
            pt: Some(self.clock.read(now.wall_us)),
            vc: self.vc.as_ref().map(|v| v.0.clone()),
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
                    self.lamport += 1;
                    self.seq += 1;
                    self.tick_clocks(now);
                    let name = msg.name();
                    let env = Envelope {
                        version: wire::VERSION,
                        from: self.me,
                        lamport: self.lamport,
                        seq: self.seq,
                        stamps: Stamps {
                            vc: self.vc.as_ref().map(VectorClock::pairs).unwrap_or_default(),
                            hlc: (self.hlc.l, self.hlc.c),
                        },
                        msg,
                    };
                    let bytes = wire::encode(&env);
                    self.counters.sent += 1;
                    *self.counters.by_type.entry(name.to_string()).or_default() += 1;
                    let ev = Event::Send {
                        to,
                        msg: name.to_string(),
                        bytes: bytes.len(),
                        seq: self.seq,
                    };
                    self.stamp(now, ev);
                    self.outbox.push(Outgoing { to, bytes });
                }
                Command::SetTimer(t, after) => self.timers.set(t, now.mono + after),
                Command::CancelTimer(t) => self.timers.cancel(t),
                Command::Record(ev) => self.push_record(now, ev),
                Command::AdjustClock(c) => self.adjust_clock(now, c),
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
mod tests {
    use super::*;
    use crate::algo::election::chang_roberts::CrMsg;
    use crate::algo::election::{chang_roberts::ChangRoberts, LMsg, Leadership};

    type Cr = Leadership<ChangRoberts>;

    fn host() -> Host<Cr> {
        let setup = Setup::new(2, vec![1, 2, 3], vec![1, 3]);
        let mut h = Host::new(&setup, Cr::new(&setup));
        h.start(
            Now {
                mono: Duration::ZERO,
                wall_us: 0,
            },
            Event::Start {
                addr: "x".into(),
                algo: "t".into(),
                pid: 0,
                peers: vec![],
            },
        );
        h
    }

    fn good(from: NodeId) -> Vec<u8> {
        let msg: LMsg<CrMsg> = LMsg::Inner {
            term: 1,
            ack: 1,
            msg: CrMsg::Election(3),
        };
        wire::encode(&Envelope {
            version: wire::VERSION,
            from,
            lamport: 40,
            seq: 1,
            stamps: Stamps::default(),
            msg,
        })
    }

    #[test]
    fn hostile_datagrams_are_dropped_and_counted_never_a_panic() {
        let mut h = host();
        let now = Now {
            mono: Duration::from_millis(1),
            wall_us: 1,
        };
        let mut rng = Rng::new(9);
        let mut expected_drops = 0;
        for i in 0..2000 {
            let mut bytes = good(3);
            match i % 4 {
                0 => bytes = (0..rng.range(0, 300)).map(|_| rng.next_u64() as u8).collect(),
                1 => bytes.truncate(rng.range(0, bytes.len() as u64) as usize),
                2 => {
                    let k = rng.range(0, bytes.len() as u64) as usize;
                    bytes[k] ^= 1 << rng.range(0, 8);
                }
                _ => bytes.extend((0..rng.range(1, 50)).map(|_| rng.next_u64() as u8)),
            }
            let before = h.counters().clone();
            h.deliver(now, Some(3), &bytes, "127.0.0.1:1");
            let after = h.counters();
            // Each datagram is either accepted or dropped, and counted exactly once.
            let accepted = after.received - before.received;
            let dropped = after.dropped - before.dropped;
            assert!(dropped <= 1 && accepted <= 1, "datagram {i}");
            expected_drops += dropped;
        }
        assert!(
            expected_drops > 1500,
            "most garbage must be refused, got {expected_drops}"
        );
        let drops: Vec<_> = h
            .take_records()
            .filter(|r| matches!(r.event, Event::Drop { .. }))
            .collect();
        assert!(drops.len() as u64 >= expected_drops);
    }

    #[test]
    fn spoofed_and_unknown_senders_are_refused_with_the_reason() {
        let mut h = host();
        let now = Now {
            mono: Duration::from_millis(1),
            wall_us: 1,
        };
        h.take_records().for_each(drop);
        h.deliver(now, Some(1), &good(3), "127.0.0.1:1");
        h.deliver(now, None, &good(3), "10.9.9.9:5");
        let reasons: Vec<String> = h
            .take_records()
            .filter_map(|r| {
                if let Event::Drop { reason, .. } = r.event {
                    Some(reason)
                } else {
                    None
                }
            })
            .collect();
        assert_eq!(reasons.len(), 2);
        assert!(reasons[0].contains("claims id 3"), "{reasons:?}");
        assert!(reasons[1].contains("unknown sender"), "{reasons:?}");
        assert_eq!(h.counters().received, 0);
        // A good datagram still works afterwards, and the Lamport clock jumps past the sender's.
        h.deliver(now, Some(3), &good(3), "127.0.0.1:3");
        assert_eq!(h.counters().received, 1);
        assert!(h.lamport() > 40);
    }
}
