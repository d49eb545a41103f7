//! Cristian's algorithm (1989): every client asks one time server for the time.
//!
//! Rules (server: node `--set server=ID`, default the smallest id):
//! - every period, a client starts a round of `samples` requests, one after the other.
//! - on REQUEST at the server: answer REPLY(T), T = the server's clock now.
//! - on REPLY(T) at a client: RTT = the round trip on the monotonic clock; keep the sample
//!   with the smallest RTT; when all samples are in (or timed out), the server's clock now is
//!   estimated as T + RTT/2 + (time since that reply arrived), and the clock is slewed to it.
//!   The error bound is RTT/2 - min, `min` the smallest one-way delay (`--set min_delay_us`):
//!   the reply took between min and RTT - min.
//! - on a sample's timeout (`--timeout-ms`): that sample is lost; go on with the next.
//!
//! Messages per round: 2 x samples per client (fewer when some are lost).

use super::SyncOptions;
use crate::algo::{Algorithm, ClockCorrection, Cx, Message, NodeId, Setup};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Cristian's messages.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum CristianMsg {
    /// A client asks for the time.
    Request {
        /// The sample's id.
        id: u64,
    },
    /// The server's clock when it answered.
    Reply {
        /// The request's id.
        id: u64,
        /// The server's clock, microseconds.
        t_us: u64,
    },
}

impl Message for CristianMsg {
    fn name(&self) -> &'static str {
        match self {
            CristianMsg::Request { .. } => "TIME_REQUEST",
            CristianMsg::Reply { .. } => "TIME_REPLY",
        }
    }
}

/// Cristian's timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CristianTimer {
    /// Start a round.
    Round,
    /// The outstanding sample is lost.
    Sample,
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    rtt: Duration,
    t_us: u64,
    seq: u64,
    at: Duration,
}

/// One node's state (server or client).
#[derive(Debug, Clone)]
pub struct Cristian {
    /// Restarted: whether its clock restored the correction it kept (said at start).
    restart_note: Option<String>,
    opts: SyncOptions,
    timeout: Duration,
    next_id: u64,
    taken: u32,
    pending: Option<(u64, Duration)>,
    best: Option<Sample>,
    /// Corrections made so far.
    pub adjustments: u64,
}

impl Cristian {
    /// A node set up as `setup` (options checked by [`SyncOptions::from_setup`] first).
    pub fn new(setup: &Setup) -> Self {
        let opts = SyncOptions::from_setup(setup).unwrap_or_else(|e| panic!("cristian: {e}"));
        Cristian {
            restart_note: super::restart_note(setup),
            opts,
            timeout: setup.timeout,
            next_id: 0,
            taken: 0,
            pending: None,
            best: None,
            adjustments: 0,
        }
    }

    fn sample(&mut self, cx: &mut Cx<'_, Self>) {
        self.next_id += 1;
        self.pending = Some((self.next_id, cx.now));
        cx.send(self.opts.server, CristianMsg::Request { id: self.next_id });
        cx.set_timer(CristianTimer::Sample, self.timeout);
    }

    fn sampled(&mut self, cx: &mut Cx<'_, Self>) {
        self.taken += 1;
        self.pending = None;
        if self.taken < self.opts.samples {
            return self.sample(cx);
        }
        cx.cancel_timer(CristianTimer::Sample);
        let Some(b) = self.best.take() else { return };
        let half = b.rtt.as_micros() as u64 / 2;
        let target = b.t_us + half + (cx.now - b.at).as_micros() as u64;
        self.adjustments += 1;
        cx.adjust_clock(ClockCorrection {
            offset_us: target as i64 - cx.pt as i64,
            rtt_us: b.rtt.as_micros() as u64,
            bound_us: half.saturating_sub(self.opts.min_delay_us),
            reference: Some(self.opts.server),
            ref_seq: Some(b.seq),
            ref_offset_us: 0,
        });
    }
}

impl Algorithm for Cristian {
    type Msg = CristianMsg;
    type Timer = CristianTimer;

    fn on_start(&mut self, cx: &mut Cx<'_, Self>) {
        // Request ids unique across this node's boots: a late reply to a request of an older
        // boot, with an id a fresh count from 0 would reuse, must not be taken for the answer
        // to this boot's request (its server reading may predate that request). The clock at
        // start, in microseconds, times 4096: two boots' ids meet only if their clocks read
        // within (ids used) / 4096 microseconds of each other when they started.
        self.next_id = cx.pt.wrapping_mul(4096);
        if let Some(note) = self.restart_note.take() {
            cx.state_change(note);
        }
        if cx.me != self.opts.server {
            // Spread the clients' rounds over half a period so that they do not all hit the
            // server at once: requests queued there inflate the round trips, and the bounds.
            let jitter = cx.rng.range(0, self.opts.period.as_micros() as u64 / 2 + 1);
            cx.set_timer(CristianTimer::Round, Duration::from_micros(jitter));
        }
    }

    fn on_msg(&mut self, cx: &mut Cx<'_, Self>, from: NodeId, msg: CristianMsg) {
        match msg {
            CristianMsg::Request { id } if cx.me == self.opts.server => {
                let t_us = cx.pt;
                cx.send(from, CristianMsg::Reply { id, t_us });
            }
            CristianMsg::Request { .. } => cx.discard(from, "asked for the time, but this node is no server"),
            CristianMsg::Reply { id, t_us } => match self.pending {
                Some((want, sent)) if want == id && from == self.opts.server => {
                    let s = Sample {
                        rtt: cx.now - sent,
                        t_us,
                        seq: cx.msg_seq,
                        at: cx.now,
                    };
                    if self.best.is_none_or(|b| s.rtt < b.rtt) {
                        self.best = Some(s);
                    }
                    self.sampled(cx);
                }
                _ => cx.discard(from, format!("reply {id} is not the outstanding sample")),
            },
        }
    }

    fn on_timer(&mut self, cx: &mut Cx<'_, Self>, timer: CristianTimer) {
        match timer {
            CristianTimer::Round => {
                cx.set_timer(CristianTimer::Round, self.opts.period);
                self.taken = 0;
                self.best = None;
                self.sample(cx);
            }
            CristianTimer::Sample if self.pending.is_some() => self.sampled(cx),
            CristianTimer::Sample => {}
        }
    }
}
