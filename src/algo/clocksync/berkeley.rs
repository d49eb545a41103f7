//! The Berkeley algorithm (Gusella & Zatti, 1989): a master polls every clock, averages them
//! leaving out the ones too far off, and tells each node how much to move.
//!
//! Rules (master: `--set server=ID`, default the smallest id):
//! - every period the master polls every node `samples` times, one poll at a time (POLL; the
//!   next when the answer came or the timeout passed; a node that did not answer in time is
//!   not polled again that round). A round still polling when the next is due finishes first.
//!   One at a time, because answers to a
//!   broadcast poll queue up at the master, and that wait, all on the way back, would skew the
//!   RTT/2 estimate of the later ones by up to the whole queue.
//! - on POLL at a node: answer CLOCK(C), C = its clock now; remember C and when it answered.
//! - on CLOCK(C) at the master: RTT on the monotonic clock; the node's offset is estimated as
//!   C + RTT/2 - M (M the master's clock now); keep the sample with the smallest RTT.
//! - when the polls are done: the master's own offset is 0; offsets farther than
//!   `--set outlier_ms` from the median are left out; avg = their mean. Each node j gets
//!   ADJUST(avg - offset_j) (a delta, so the network delay of ADJUST does not matter) with its
//!   bound RTT_j/2 - min; the master moves its own clock by avg. A node left out of the
//!   average is still corrected towards it.
//! - on ADJUST(delta) at a node: slew by delta, less whatever its own clock ran fast (by slewing
//!   an earlier correction) since it answered the poll that was used; the master likewise adds
//!   what its clock ran fast between estimating and sending.
//!
//! Messages per round: (n - 1) x (2 x samples + 1).

use super::SyncOptions;
use crate::algo::{Algorithm, ClockCorrection, Cx, Message, NodeId, Setup};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// Berkeley's messages.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum BerkeleyMsg {
    /// The master asks for a node's clock.
    Poll {
        /// The round.
        round: u64,
        /// The sample within the round.
        k: u32,
    },
    /// A node's clock when it answered.
    Clock {
        /// The round.
        round: u64,
        /// The sample.
        k: u32,
        /// The node's clock, microseconds.
        t_us: u64,
    },
    /// The master's correction for one node.
    Adjust {
        /// The round.
        round: u64,
        /// The sample the estimate used.
        k: u32,
        /// How far to move, microseconds.
        delta_us: i64,
        /// The error bound of the estimate, microseconds.
        bound_us: u64,
        /// The round trip of the sample used, microseconds.
        rtt_us: u64,
        /// The average offset from the master's clock the correction aims at.
        avg_us: i64,
    },
}

impl Message for BerkeleyMsg {
    fn name(&self) -> &'static str {
        match self {
            BerkeleyMsg::Poll { .. } => "POLL",
            BerkeleyMsg::Clock { .. } => "CLOCK",
            BerkeleyMsg::Adjust { .. } => "ADJUST",
        }
    }
}

/// Berkeley's timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BerkeleyTimer {
    /// Start a round (master).
    Round,
    /// Stop waiting for this poll's answers (master).
    Collect,
}

/// The master's best sample of one node.
#[derive(Debug, Clone, Copy)]
struct Estimate {
    offset_us: i64,
    rtt_us: u64,
    k: u32,
    /// The master's clock and monotonic time when it estimated.
    m_pt: u64,
    m_at: Duration,
}

/// One node's state (master or not).
#[derive(Debug, Clone)]
pub struct Berkeley {
    /// Restarted: whether its clock restored the correction it kept (said at start).
    restart_note: Option<String>,
    opts: SyncOptions,
    others: Vec<NodeId>,
    timeout: Duration,
    round: u64,
    /// The polls of this round still to make, in order: (node, sample).
    todo: Vec<(NodeId, u32)>,
    /// The outstanding poll: (node, sample, when sent).
    polling: Option<(NodeId, u32, Duration)>,
    est: BTreeMap<NodeId, Estimate>,
    /// At a node: its clock and monotonic time at each answer of the current round.
    answers: BTreeMap<(u64, u32), (u64, Duration)>,
    /// Master: the nodes left out of the last average.
    pub left_out: Vec<NodeId>,
    /// Master: the last average offset, microseconds.
    pub last_avg_us: i64,
}

impl Berkeley {
    /// A node set up as `setup` (options checked by [`SyncOptions::from_setup`] first).
    pub fn new(setup: &Setup) -> Self {
        let opts = SyncOptions::from_setup(setup).unwrap_or_else(|e| panic!("berkeley: {e}"));
        Berkeley {
            restart_note: super::restart_note(setup),
            others: setup.members.iter().copied().filter(|&m| m != setup.me).collect(),
            opts,
            timeout: setup.timeout,
            round: 0,
            todo: Vec::new(),
            polling: None,
            est: BTreeMap::new(),
            answers: BTreeMap::new(),
            left_out: Vec::new(),
            last_avg_us: 0,
        }
    }

    /// Sends the next poll, or averages when none is left.
    fn poll(&mut self, cx: &mut Cx<'_, Self>) {
        let Some((j, k)) = self.todo.pop() else {
            self.polling = None;
            return self.average(cx);
        };
        self.polling = Some((j, k, cx.now));
        cx.send(j, BerkeleyMsg::Poll { round: self.round, k });
        cx.set_timer(BerkeleyTimer::Collect, self.timeout);
    }

    fn average(&mut self, cx: &mut Cx<'_, Self>) {
        cx.cancel_timer(BerkeleyTimer::Collect);
        let mut offsets: Vec<i64> = self.est.values().map(|e| e.offset_us).collect();
        offsets.push(0);
        offsets.sort_unstable();
        let median = offsets[offsets.len() / 2];
        let keep = |o: i64| (o - median).abs() <= self.opts.outlier_us;
        let kept: Vec<i64> = offsets.iter().copied().filter(|&o| keep(o)).collect();
        let avg = kept.iter().sum::<i64>() / kept.len() as i64;
        self.left_out = self
            .est
            .iter()
            .filter(|(_, e)| !keep(e.offset_us))
            .map(|(&j, _)| j)
            .collect();
        self.last_avg_us = avg;
        for (&j, e) in &self.est {
            // What the master's clock ran beyond true time since it estimated (its own slew).
            let ran_fast = (cx.pt as i64 - e.m_pt as i64) - (cx.now - e.m_at).as_micros() as i64;
            let delta_us = avg - e.offset_us + ran_fast;
            let bound_us = (e.rtt_us / 2).saturating_sub(self.opts.min_delay_us);
            let msg = BerkeleyMsg::Adjust {
                round: self.round,
                k: e.k,
                delta_us,
                bound_us,
                rtt_us: e.rtt_us,
                avg_us: avg,
            };
            cx.send(j, msg);
        }
        cx.adjust_clock(ClockCorrection {
            offset_us: avg,
            ..ClockCorrection::default()
        });
    }
}

impl Algorithm for Berkeley {
    type Msg = BerkeleyMsg;
    type Timer = BerkeleyTimer;

    fn on_start(&mut self, cx: &mut Cx<'_, Self>) {
        if let Some(note) = self.restart_note.take() {
            cx.state_change(note);
        }
        if cx.me == self.opts.server {
            cx.set_timer(BerkeleyTimer::Round, Duration::from_millis(20));
        }
    }

    fn on_msg(&mut self, cx: &mut Cx<'_, Self>, from: NodeId, msg: BerkeleyMsg) {
        let master = self.opts.server;
        match msg {
            BerkeleyMsg::Poll { round, k } if from == master => {
                self.answers.retain(|&(r, _), _| r == round);
                self.answers.insert((round, k), (cx.pt, cx.now));
                cx.send(from, BerkeleyMsg::Clock { round, k, t_us: cx.pt });
            }
            BerkeleyMsg::Clock { round, k, t_us }
                if cx.me == master
                    && round == self.round
                    && self.polling.is_some_and(|(j, pk, _)| j == from && pk == k) =>
            {
                let sent = self.polling.map_or(cx.now, |p| p.2);
                let rtt_us = (cx.now - sent).as_micros() as u64;
                let e = Estimate {
                    offset_us: t_us as i64 + (rtt_us / 2) as i64 - cx.pt as i64,
                    rtt_us,
                    k,
                    m_pt: cx.pt,
                    m_at: cx.now,
                };
                if self.est.get(&from).is_none_or(|old| rtt_us < old.rtt_us) {
                    self.est.insert(from, e);
                }
                self.poll(cx);
            }
            BerkeleyMsg::Adjust {
                round,
                k,
                delta_us,
                bound_us,
                rtt_us,
                avg_us,
            } if from == master => {
                let Some(&(pt, at)) = self.answers.get(&(round, k)) else {
                    return cx.discard(
                        from,
                        format!("correction for round {round} sample {k}, which it never answered"),
                    );
                };
                let ran_fast = (cx.pt as i64 - pt as i64) - (cx.now - at).as_micros() as i64;
                cx.adjust_clock(ClockCorrection {
                    offset_us: delta_us - ran_fast,
                    rtt_us,
                    bound_us,
                    reference: Some(master),
                    ref_seq: Some(cx.msg_seq),
                    ref_offset_us: avg_us,
                });
            }
            other => cx.discard(
                from,
                format!("unexpected {} (stale round or not from the master)", other.name()),
            ),
        }
    }

    fn on_timer(&mut self, cx: &mut Cx<'_, Self>, timer: BerkeleyTimer) {
        match timer {
            BerkeleyTimer::Round => {
                cx.set_timer(BerkeleyTimer::Round, self.opts.period);
                if self.polling.is_some() {
                    // The round in progress is not over (answers delayed, a node timing out):
                    // starting afresh would throw its samples away, and under a delay longer than
                    // period / polls no round would ever end and no clock be corrected.
                    return;
                }
                self.round += 1;
                self.est.clear();
                // Popped from the back: sample 1 of every node, then sample 2, ...
                self.todo = (1..=self.opts.samples)
                    .rev()
                    .flat_map(|k| self.others.iter().rev().map(move |&j| (j, k)))
                    .collect();
                self.poll(cx);
            }
            BerkeleyTimer::Collect => {
                if let Some((j, _, _)) = self.polling {
                    // No answer in time: j is dead, paused or cut off; its other samples of this
                    // round would only wait as long, keeping every other node uncorrected.
                    self.todo.retain(|&(n, _)| n != j);
                    self.poll(cx);
                }
            }
        }
    }
}
