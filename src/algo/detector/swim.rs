//! SWIM (Das, Gupta, Motivala 2002) with Lifeguard (Dadgar, Phillips, Currey 2018), after
//! HashiCorp memberlist (state.go, suspicion.go, awareness.go):
//!
//! - each round this node pings one member: in round r, its partner in round r of a
//!   round-robin tournament over the members in id order ([`Swim::target_in_round`]). A round is
//!   period / `swim_probes` of the node's physical clock, and r is the clock's reading divided
//!   by it, so members ping each other in pairs: every member is pinged once a round, a crashed
//!   member within a round of its crash, and each hears its target's own PING. memberlist's
//!   lists, shuffled at each lap, leave a member unpinged through a period with a chance of
//!   about 1/e, which cost this detector 0.6 periods of detection time on average
//!   (docs/detectors.md, Measured). A member stretched by its health multiplier skips rounds;
//!   a restarted one is back on the grid at once; one whose clock is set off (the clock-sync
//!   experiments' offsets) pings off the pairs, still every member once a lap. No ACK within
//!   the probe timeout: it asks `swim_k` others to ping it
//!   (PING-REQ), and they relay its ACK, or a NACK when it does not answer them either (and
//!   still relay an ACK that comes after the NACK, while the requester's period lasts).
//! - `swim_probes` probes overlap (4 by default, a departure from SWIM and memberlist, which
//!   start one a period): a probe starts every period / `swim_probes`, each to the next round's
//!   partner, and each is judged a whole period after its first PING. A crash then waits a
//!   fraction of a period for its first PING instead of half a period on average, while each
//!   probe keeps the whole period for its retries and its indirect probes' four hops.
//! - `swim_window=rtt` (the default, a departure too): a probe is judged sooner than its
//!   period's end when the network answers quickly, once its probe timeout and two round trips
//!   have passed (the PING-REQ's relay), no sooner than half a period. The round trip is
//!   bounded by the member's own ACKs ([`rtt`]: each ACK echoes its PING's stamp): the larger
//!   of RFC 6298's SRTT + 4 RTTVAR and the slowest of the last 16. On a mesh of 64 on 2 cores,
//!   with 5 +- 20 ms of delay, that judged probes about 200 ms after their first PING instead of
//!   240, and a crash was suspected 176 and 221 ms after it instead of 290.
//! - no ACK, direct or relayed, by the end of the probe's window: the member is suspected (not
//!   dead), and the suspicion is gossiped, piggybacked on every PING, PING-REQ and ACK.
//! - `swim_hold=rtt` (the default, a departure): a suspicion this node raises itself goes to
//!   the suspect at once and twice more within two round-trip bounds, and is gossiped only
//!   when no refutation came back by then ([`Swim::hold`]). A live member whose probe failed refutes
//!   to its suspecter alone, and the others never hear of it; a crashed one is suspected as
//!   soon, and its suspicion reaches the others a hold later. SWIM gossips at once, and every
//!   member believed the mistake until the refutation caught up (60 of 63 at 64 members).
//! - a suspected node that hears of it refutes it with a higher incarnation number (ALIVE
//!   gossip), which withdraws the suspicion everywhere it reaches; a node pinging a suspect or
//!   dead member piggybacks that member's own suspicion, so that it learns and can refute.
//! - gossip also goes out on its own timer, as memberlist's GossipInterval/GossipNodes: every
//!   third of a period (not stretched by the health multiplier) the pending rumours go to
//!   [`GOSSIP_NODES`] random members that are not dead (a suspect among them hears of its own
//!   suspicion), and a refutation goes out at once to as many. Piggybacking alone is too slow:
//!   a node resumed from a pause probes only every (LHM + 1) periods and is pinged about once
//!   a period, so it heard of its suspicion and its ALIVE spread only after the suspecters'
//!   shortest timeout had run out, and a 600 ms pause was confirmed dead.
//! - a suspicion not refuted within the suspicion timeout is confirmed: the member is
//!   declared dead (DEAD gossip), and taken off the probe list (as memberlist does). A dead
//!   member that speaks again (restarted, or back from a long pause, when it also announces
//!   itself with an ALIVE of its incarnation) is answered with its own death at once, refutes
//!   it with a higher incarnation, and is probed again; whoever tells a node of a suspicion it
//!   already refuted gets the refutation directly, not only by random gossip. The timeout starts at its maximum and shrinks as independent
//!   suspicions of the same incarnation arrive (memberlist's log formula), to its minimum of
//!   `swim_suspicion_mult * log10(members) * period` once `swim_suspicion_mult - 2` have.
//! - Lifeguard's local health multiplier (LHM, 0..8): a probe that failed without the NACKs
//!   that would show the network was at fault raises it by the missing NACKs, a probe
//!   answered lowers it by one, refuting a suspicion of itself raises it by one, and a stall of
//!   this node's own loop (SIGSTOP, starved of CPU) sets it to its maximum. The probe period
//!   and timeout are stretched by (LHM + 1), so a node that was itself slow gives the others
//!   more time instead of accusing them.
//! - a stall of this node also forgets its probes in flight and starts every suspicion's
//!   clock again: the silence it slept through is no evidence.
//!
//! Host mapping: suspect and dead members are what [`Liveness::is_suspected`] reports, so the
//! host carries on without them; an ALIVE with a higher incarnation withdraws them
//! (`unsuspect`). Messages from a suspect do not (SWIM trusts incarnations, not traffic).
//!
//! [`Liveness::is_suspected`]: super::Liveness::is_suspected

use super::config::SwimParams;
pub use super::swim_messages::{Rumour, SwimMsg, SwimTimer};
use super::Silence;
use crate::algo::{Context, Event, NodeId};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

mod gossip;
mod rtt;
mod suspicion;

/// What this node believes of a member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Alive.
    Alive,
    /// Suspected since `since` (restarted by a stall of this node), by these members.
    Suspect {
        /// When the suspicion began (or this node last woke).
        since: Duration,
        /// When it truly began (for the trace).
        began: Duration,
        /// The members that suspect it (this node included when it does).
        confirmers: BTreeSet<NodeId>,
    },
    /// Declared dead.
    Dead,
}

#[derive(Debug, Clone)]
struct Member {
    inc: u64,
    state: State,
}

#[derive(Debug, Clone)]
struct Probe {
    seq: u64,
    target: NodeId,
    acked: bool,
    nacks: usize,
    expected: usize,
    /// A period after its first PING: no PING is sent again after this, and it is judged by
    /// then at the latest.
    ends: Duration,
    /// How long after its first PING it is judged: a period, or its window once one is set.
    window: Duration,
}

/// A failed probe judged before its period ended: the NACKs that may still come.
#[derive(Debug, Clone, Copy)]
struct Verdict {
    seq: u64,
    expected: usize,
    nacks: usize,
    /// The probe's period end, when the missing NACKs are counted.
    due: Duration,
}

/// A PING-REQ this node relays.
#[derive(Debug, Clone, Copy)]
struct Relay {
    to: NodeId,
    their: u64,
    nacked: bool,
}

/// A SWIM node's view of its members.
#[derive(Debug, Clone)]
pub struct Swim {
    /// The parameters.
    pub params: SwimParams,
    me: NodeId,
    /// Members it may reach, in id order.
    order: Vec<NodeId>,
    /// Where this node would stand in `order`: its first target is the member after it.
    pos: usize,
    /// This node's incarnation.
    pub inc: u64,
    members: BTreeMap<NodeId, Member>,
    /// Rumours and how many times each was sent.
    rumours: Vec<(Rumour, u32)>,
    seq: u64,
    /// The probes in flight, oldest first (one, or up to `swim_probes`).
    probes: Vec<Probe>,
    /// PING-REQs being relayed: this node's ping seq -> the requester, its seq, and whether
    /// the NACK has gone out.
    relays: BTreeMap<u64, Relay>,
    /// Lifeguard's local health multiplier.
    pub lhm: u32,
    /// Members counted for the suspicion timeout (this node included).
    n: usize,
    /// The round trips timed from this node's ACKs.
    rtt: rtt::Rtt,
    /// Probes judged before their NACKs were due (`swim_window=rtt`): their health verdict waits
    /// for the period's end, as memberlist's does.
    verdicts: Vec<Verdict>,
    /// This node's own suspicions not gossiped yet (`swim_hold`): the incarnation suspected,
    /// and how many times the suspect was told.
    held: BTreeMap<NodeId, (u64, u32)>,
}

/// What SWIM asks its host to do (send, set a timer, record, or change a suspicion).
pub(crate) type SwimCx<'a> = Context<'a, SwimMsg, SwimTimer>;

/// Rumours piggybacked on one message, at most.
const PIGGYBACK: usize = 6;
/// Each rumour is sent this many times log10(members + 1), rounded up (memberlist's
/// RetransmitMult for LAN).
const RETRANSMIT_MULT: u32 = 4;
/// Members each gossip round goes to (memberlist's GossipNodes).
pub(crate) const GOSSIP_NODES: usize = 3;
/// Gossip rounds per probe period: memberlist gossips every 200 ms against a 1 s probe
/// interval; a third of the period (the host's 100 ms heartbeat at a 300 ms period).
const GOSSIP_PER_PERIOD: u32 = 3;

/// The suspicion timeout after `confirmations` of `k` expected, between `min` and `max`
/// (memberlist's `remainingSuspicionTime` before subtracting the time elapsed).
pub(crate) fn suspicion_timeout(confirmations: usize, k: usize, min: Duration, max: Duration) -> Duration {
    if k == 0 {
        return min;
    }
    let frac = ((confirmations as f64) + 1.0).ln() / ((k as f64) + 1.0).ln();
    let raw = max.as_secs_f64() - frac * (max.as_secs_f64() - min.as_secs_f64());
    Duration::from_millis((raw * 1000.0).floor().max(0.0) as u64).max(min)
}

/// The shortest suspicion timeout among `n` members: `suspicion_mult * log10(n) * period`,
/// log10 floored at 1 (memberlist's `suspicionTimeout`).
pub(crate) fn shortest_suspicion(p: &SwimParams, n: usize) -> Duration {
    let scale = (n.max(1) as f64).log10().max(1.0);
    p.period.mul_f64(p.suspicion_mult as f64 * scale)
}

impl Swim {
    /// SWIM for `me` over `peers` (the members it may reach), out of `n` members in all.
    pub fn new(params: SwimParams, me: NodeId, peers: impl IntoIterator<Item = NodeId>, n: usize) -> Self {
        let mut order: Vec<NodeId> = peers.into_iter().filter(|&p| p != me).collect();
        order.sort_unstable();
        order.dedup();
        let pos = order.partition_point(|&p| p < me);
        let members = order
            .iter()
            .map(|&p| {
                (
                    p,
                    Member {
                        inc: 0,
                        state: State::Alive,
                    },
                )
            })
            .collect();
        Swim {
            params,
            me,
            order,
            pos,
            inc: 0,
            members,
            rumours: Vec::new(),
            seq: 0,
            probes: Vec::new(),
            relays: BTreeMap::new(),
            lhm: 0,
            n: n.max(1),
            rtt: rtt::Rtt::default(),
            held: BTreeMap::new(),
            verdicts: Vec::new(),
        }
    }

    /// Whether `node` is one of the members this node probes.
    pub(crate) fn knows(&self, node: NodeId) -> bool {
        self.members.contains_key(&node)
    }

    /// What this node believes of `node`.
    pub fn state(&self, node: NodeId) -> Option<&State> {
        self.members.get(&node).map(|m| &m.state)
    }

    /// The shortest and longest suspicion timeouts, and the confirmations expected.
    pub(crate) fn suspicion_bounds(&self) -> (Duration, Duration, usize) {
        let p = &self.params;
        let min = shortest_suspicion(p, self.n);
        let max = min * p.suspicion_max_mult;
        let k = (p.suspicion_mult as usize).saturating_sub(2);
        let k = if self.n.saturating_sub(2) < k { 0 } else { k };
        (min, max, k)
    }

    /// The probe period, stretched by the local health multiplier.
    pub fn period(&self) -> Duration {
        self.params.period * (self.lhm + 1)
    }

    /// The time between the starts of two probes: the period, or a fraction of it when
    /// `swim_probes` overlap.
    pub fn interval(&self) -> Duration {
        self.period() / self.params.probes.max(1)
    }

    /// The probes' grid: a probe round every period / `swim_probes` of the node's physical
    /// clock, µs (the health multiplier does not stretch it: a stretched node skips rounds).
    fn round_us(&self) -> u64 {
        ((self.params.period / self.params.probes.max(1)).as_micros() as u64).max(1)
    }

    /// The round that the clock reading `pt` (µs) falls in: the nearest grid point's.
    fn round_at(&self, pt: u64) -> usize {
        let r = self.round_us();
        ((pt + r / 2) / r) as usize
    }

    /// How long from the clock reading `pt` to this node's next probe: the grid point
    /// `LHM + 1` rounds after the current one.
    pub fn until_next_probe(&self, pt: u64) -> Duration {
        let r = self.round_us();
        let next = (self.round_at(pt) as u64 + u64::from(self.lhm) + 1) * r;
        Duration::from_micros(next.saturating_sub(pt).max(1000))
    }

    /// How long a probe waits for an answer before it is judged. A period, or with
    /// `swim_window=rtt` and round trips timed: the probe timeout and two round-trip bounds
    /// (the PING-REQ's relay: requester to helper, helper to target and back, helper to
    /// requester), between half a period and a period.
    pub(crate) fn window(&self) -> Duration {
        let period = self.period();
        match self.rtt.bound().filter(|_| self.params.rtt_window) {
            Some(b) => (self.probe_timeout() + 2 * b).clamp(period / 2, period),
            None => period,
        }
    }

    fn probe_mut(&mut self, seq: u64) -> Option<&mut Probe> {
        self.probes.iter_mut().find(|p| p.seq == seq)
    }

    /// How often rumours are gossiped on their own timer (not stretched by the LHM: a node
    /// that was slow must still spread its refutation quickly).
    pub(crate) fn gossip_interval(&self) -> Duration {
        (self.params.period / GOSSIP_PER_PERIOD).max(Duration::from_millis(1))
    }

    /// Starts the gossip timer.
    pub fn start(&mut self, cx: &mut SwimCx<'_>) {
        cx.set_timer(SwimTimer::Gossip, self.gossip_interval());
    }

    fn probe_timeout(&self) -> Duration {
        self.params.probe_timeout * (self.lhm + 1)
    }

    fn lhm_add(&mut self, d: i64) {
        self.lhm = (self.lhm as i64 + d).clamp(0, self.params.max_lhm as i64) as u32;
    }

    /// This node's own loop stalled: forget the probes in flight, start every suspicion's
    /// clock again, and stretch its timeouts to the most.
    pub(crate) fn stalled(&mut self, now: Duration) {
        self.probes.clear();
        self.verdicts.clear();
        self.relays.clear();
        self.rtt.forget();
        self.lhm = self.params.max_lhm;
        // Back from a stall, it may have been declared dead meanwhile, and nobody probes a dead
        // member: it announces itself (memberlist's alive on join), and a member that holds it
        // dead answers with that rumour, which it then refutes.
        self.spread(Rumour::Alive {
            node: self.me,
            inc: self.inc,
        });
        for m in self.members.values_mut() {
            if let State::Suspect { since, .. } = &mut m.state {
                *since = now;
            }
        }
    }

    /// The probe period (or its `swim_probes`-th part): judges the probes whose period is
    /// over, then pings the next member.
    pub(crate) fn on_period(&mut self, cx: &mut SwimCx<'_>, silence: &mut Silence) {
        // Judged on the tick nearest its end: ticks fire a little after their grid points,
        // each by its own delay.
        let now = cx.now + self.interval() / 2;
        let (due, going): (Vec<Probe>, Vec<Probe>) = std::mem::take(&mut self.probes)
            .into_iter()
            .partition(|p| p.ends <= now);
        self.probes = going;
        for p in due {
            self.judge_probe(cx, silence, p);
        }
        self.settle_verdicts(now);
        // The round is the clock's, not a count of this node's own ticks: members ping their
        // partners of the same round even after one's period was stretched or it restarted,
        // which left a count out of step (a crashed member then went unpinged for 211 ms where
        // its partners came every 60 ms; docs/detectors.md, "Overlapping probes").
        let Some(target) = self.target_in_round(self.round_at(cx.pt)) else {
            return;
        };
        self.seq += 1;
        let seq = self.seq;
        let ends = cx.now + self.period();
        self.probes.push(Probe {
            seq,
            target,
            acked: false,
            nacks: 0,
            expected: 0,
            ends,
            window: self.period(),
        });
        let rumours = self.gossip(Some(target));
        let ts = rtt::stamp(cx.now);
        cx.send(target, SwimMsg::Ping { seq, ts, rumours });
        cx.set_timer(SwimTimer::ProbeTimeout(seq), self.probe_timeout());
        if let Some(r) = self.retry_after(cx.now, ends) {
            cx.set_timer(SwimTimer::Retry(seq), r);
        }
    }

    /// A probe's time is up: unanswered, its target is suspected, and this node's health
    /// multiplier rises by the NACKs that did not come to show the network at fault.
    ///
    /// Judged before its period's end (its window), the NACKs are counted at the period's end:
    /// a helper NACKs a probe timeout after the PING-REQ, later than the window's half period.
    /// Counted at the window, every probe of a crashed member had missed all its NACKs and
    /// raised its prober's multiplier by `swim_k`, a period stretched 7 times.
    fn judge_probe(&mut self, cx: &mut SwimCx<'_>, silence: &mut Silence, p: Probe) {
        if p.acked {
            return;
        }
        if !matches!(self.state(p.target), Some(State::Alive)) {
            return;
        }
        if p.expected == 0 {
            self.lhm_add(1);
        } else if p.ends <= cx.now || p.nacks >= p.expected {
            self.lhm_add(p.expected.saturating_sub(p.nacks) as i64);
        } else {
            self.verdicts.push(Verdict {
                seq: p.seq,
                expected: p.expected,
                nacks: p.nacks,
                due: p.ends,
            });
        }
        self.suspect(cx, silence, p.target, None, p.window);
    }

    /// Counts the missing NACKs of the verdicts whose period is over.
    fn settle_verdicts(&mut self, now: Duration) {
        let (due, waiting): (Vec<Verdict>, Vec<Verdict>) = std::mem::take(&mut self.verdicts)
            .into_iter()
            .partition(|v| v.due <= now);
        self.verdicts = waiting;
        for v in due {
            self.lhm_add(v.expected.saturating_sub(v.nacks) as i64);
        }
    }

    /// When to PING the target of the probe in flight again, if at all: every `swim_retry_ms`
    /// (stretched by the LHM) while an answer could still come back before the period ends,
    /// a probe timeout (the round trip allowed) after it is sent.
    fn retry_after(&self, now: Duration, ends: Duration) -> Option<Duration> {
        let r = self.params.retry * (self.lhm + 1);
        (!r.is_zero() && now + r + self.probe_timeout() <= ends).then_some(r)
    }

    /// A message of any kind from `node` arrived: the probe of `node` in flight counts as
    /// answered. It proves `node` alive as well as its ACK would, and under heavy loss a probe
    /// whose PINGs and relays were all lost often overlaps a message from its target (a first-hand
    /// suspicion 11 ms after hearing the target, in the simulator at 25% loss).
    ///
    /// Answered this way, it lowers the health multiplier as its ACK would: in step, members
    /// hear their partner's own PING before its ACK, and a multiplier that only an ACK lowered
    /// stayed raised for good.
    pub(crate) fn heard_from(&mut self, node: NodeId) {
        let mut answered = 0;
        for p in self.probes.iter_mut().filter(|p| p.target == node && !p.acked) {
            p.acked = true;
            answered += 1;
        }
        self.lhm_add(-answered);
    }

    /// The member to probe in round `r`: its partner in a round-robin tournament over the
    /// members in id order (the circle method: each round pairs every member with one other,
    /// and n - 1 rounds pair every two once), or, for the member left over when they are odd,
    /// the round's member after it. Paired members ping each other, so each also hears its
    /// target's own PING in the period, which answers its probe as an ACK would. A member
    /// declared dead is skipped for the next in id order not declared dead (memberlist takes
    /// a dead member off its probe list; one that comes back says so itself, see
    /// [`on_msg`](Self::on_msg)); a skip does not shift the rounds that follow.
    pub(crate) fn target_in_round(&self, r: usize) -> Option<NodeId> {
        let len = self.order.len();
        if len == 0 {
            return None;
        }
        // Indices over the members with this node among them (at `pos`); an odd count gets a
        // dummy member (index len + 1) that stands for "no partner this round".
        let players = if (len + 1).is_multiple_of(2) { len + 1 } else { len + 2 };
        let q = players - 1;
        let partner = match self.pos {
            p if p == q => r % q,
            p => match (2 * (r % q) + q - p) % q {
                b if b == p => q,
                b => b,
            },
        };
        // A partner index above this node's own stands one place further in `order`.
        let base = match partner {
            b if b > len => self.pos + r,
            b if b > self.pos => b - 1,
            b => b,
        };
        (0..len)
            .map(|k| self.order[(base + k) % len])
            .find(|&t| self.state(t) != Some(&State::Dead))
    }

    /// A SWIM timer.
    pub(crate) fn on_timer(&mut self, cx: &mut SwimCx<'_>, silence: &mut Silence, t: SwimTimer) {
        match t {
            SwimTimer::ProbeTimeout(seq) => {
                let Some(p) = self.probes.iter().find(|p| p.seq == seq && !p.acked) else {
                    return;
                };
                let target = p.target;
                // Declared dead meanwhile (on another member's word): nothing left to ask.
                if self.state(target) == Some(&State::Dead) {
                    return;
                }
                let mut helpers: Vec<NodeId> = self
                    .members
                    .iter()
                    .filter(|(&n, m)| n != target && m.state == State::Alive)
                    .map(|(&n, _)| n)
                    .collect();
                let mut chosen = Vec::new();
                while chosen.len() < self.params.k && !helpers.is_empty() {
                    let i = cx.rng.range(0, helpers.len() as u64) as usize;
                    chosen.push(helpers.swap_remove(i));
                }
                if let Some(p) = self.probe_mut(seq) {
                    p.expected = chosen.len();
                }
                for h in chosen {
                    let rumours = self.gossip(None);
                    cx.send(h, SwimMsg::PingReq { seq, target, rumours });
                }
                // Judged at the end of its window, if that comes before its period's end (where
                // `on_period` judges it otherwise); the window as the round trips measured by now.
                let window = self.window();
                if window < self.period() {
                    if let Some(p) = self.probe_mut(seq) {
                        p.window = window;
                    }
                    cx.set_timer(SwimTimer::Judge(seq), window.saturating_sub(self.probe_timeout()));
                }
            }
            SwimTimer::Judge(seq) => {
                if let Some(i) = self.probes.iter().position(|p| p.seq == seq) {
                    let p = self.probes.remove(i);
                    self.judge_probe(cx, silence, p);
                }
            }
            SwimTimer::Retry(seq) => {
                let Some((target, ends)) = self
                    .probes
                    .iter()
                    .find(|p| p.seq == seq && !p.acked)
                    .map(|p| (p.target, p.ends))
                else {
                    return;
                };
                if self.state(target) == Some(&State::Dead) {
                    return;
                }
                let rumours = self.gossip(Some(target));
                let ts = rtt::stamp(cx.now);
                cx.send(target, SwimMsg::Ping { seq, ts, rumours });
                if let Some(r) = self.retry_after(cx.now, ends) {
                    cx.set_timer(SwimTimer::Retry(seq), r);
                }
            }
            // The NACK tells the requester (Lifeguard) that the network, not it, is slow; the
            // relay is kept for the rest of the requester's period after it, since an ACK that
            // comes later still proves the target alive.
            SwimTimer::Relay(seq) => match self.relays.get_mut(&seq) {
                Some(r) if !r.nacked => {
                    r.nacked = true;
                    cx.send(r.to, SwimMsg::Nack { seq: r.their });
                    let rest = self.period().saturating_sub(self.probe_timeout());
                    cx.set_timer(SwimTimer::Relay(seq), rest.max(self.probe_timeout()));
                }
                _ => {
                    self.relays.remove(&seq);
                }
            },
            SwimTimer::Suspicion(node) => self.judge(cx, node),
            SwimTimer::Hold(node) => self.hold_over(cx, node),
            SwimTimer::Gossip => {
                self.gossip_round(cx);
                cx.set_timer(SwimTimer::Gossip, self.gossip_interval());
            }
        }
    }

    /// A SWIM message from `from`.
    /// A member declared dead that speaks (restarted, or back from a pause) is told that it is
    /// held dead at once, so that it refutes: nobody probes it any more, and the ALIVE it
    /// announces on waking carries no higher incarnation.
    pub(crate) fn on_msg(&mut self, cx: &mut SwimCx<'_>, silence: &mut Silence, from: NodeId, msg: &SwimMsg) {
        match msg {
            SwimMsg::Ping { seq, ts, rumours } => {
                self.hear(cx, silence, from, rumours);
                let rumours = self.gossip(Some(from));
                cx.send(
                    from,
                    SwimMsg::Ack {
                        seq: *seq,
                        ts: *ts,
                        rumours,
                    },
                );
                return;
            }
            SwimMsg::PingReq { seq, target, rumours } => {
                self.hear(cx, silence, from, rumours);
                self.seq += 1;
                let mine = self.seq;
                self.relays.insert(
                    mine,
                    Relay {
                        to: from,
                        their: *seq,
                        nacked: false,
                    },
                );
                let rumours = self.gossip(Some(*target));
                let ts = rtt::stamp(cx.now);
                cx.send(*target, SwimMsg::Ping { seq: mine, ts, rumours });
                cx.set_timer(SwimTimer::Relay(mine), self.probe_timeout());
            }
            SwimMsg::Ack { seq, ts, rumours } => {
                self.hear(cx, silence, from, rumours);
                // Every ACK of this node's own PINGs is timed, its probe's or a relay's, judged
                // or not: leaving out the ones that came too late would bias the bound low.
                self.rtt.sample(cx.now, *ts);
                if let Some(r) = self.relays.remove(seq) {
                    cx.cancel_timer(SwimTimer::Relay(*seq));
                    let rumours = self.gossip(None);
                    cx.send(
                        r.to,
                        SwimMsg::Ack {
                            seq: r.their,
                            ts: 0,
                            rumours,
                        },
                    );
                } else if let Some(p) = self.probe_mut(*seq).filter(|p| !p.acked) {
                    p.acked = true;
                    self.lhm_add(-1);
                }
            }
            SwimMsg::Nack { seq } => {
                if let Some(p) = self.probe_mut(*seq) {
                    p.nacks += 1;
                } else if let Some(v) = self.verdicts.iter_mut().find(|v| v.seq == *seq) {
                    v.nacks += 1;
                }
            }
            SwimMsg::Gossip { rumours } => self.hear(cx, silence, from, rumours),
        }
        if self.state(from) == Some(&State::Dead) {
            let rumours = self.gossip(Some(from));
            cx.send(from, SwimMsg::Gossip { rumours });
        }
    }
}
