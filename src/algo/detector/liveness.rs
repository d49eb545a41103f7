//! Liveness: the one failure detector every family hosts (through [`compose`](crate::algo::compose)).
//!
//! It keeps who was heard when and whom this node suspects ([`Silence`]), and does the probing:
//!
//! - any message from a node counts as hearing it ([`Liveness::heard`]); a suspected node that
//!   is heard is unsuspected (`unsuspect`).
//! - waits: while its host waits for a message from some nodes, a check runs every timeout
//!   ([`Liveness::watch`], [`Liveness::check`]). A node waited on that sent nothing since the
//!   last check gets a PROBE; one that sent nothing since its PROBE is suspected (`probe`), and
//!   the check returns it so that the host can carry on without it.
//! - on PROBE: answer ALIVE (to anyone, even to a node this one suspects).
//! - suspicion has a lifecycle: a suspected node is probed again, after a heartbeat period and
//!   then with the delay doubling up to one timeout, until it answers (or the run ends); its
//!   answer withdraws the suspicion. So a node that was paused, cut off or restarted is
//!   unsuspected within about one timeout of running again, whoever suspected it.
//! - stalls: a tick every half timeout guarantees that a running node's handlers are never
//!   further apart than that. A gap longer than the timeout between two handler calls means
//!   that this node itself was stopped (SIGSTOP, a starved process): the others' silence during
//!   the gap is no evidence, so every silence clock and pending probe starts again
//!   ([`Liveness::notice_stall`] says so to the host, which restarts its own watches).
//! - beacons: the flooded heartbeat of a sparse mesh is numbered here ([`Liveness::beacon`]),
//!   and a copy seen before is recognised ([`Liveness::fresh_beacon`]), so each node forwards
//!   each beacon once.
//!
//! - sweeps (`--set detector_watch=all`, fixed only): besides what its host waits on, the
//!   node watches every member it reaches, every half heartbeat period: a member silent for
//!   half a period gets a PROBE, one silent for the timeout is suspected (`cause: "watch"`)
//!   and re-probed as above. That puts fixed on the pairs phi and SWIM watch anyway, so a follower's crash is
//!   detected and false suspicions are counted over the same pairs (the detectors' bench). The
//!   default (`waits`) sends exactly what it always did.
//!
//! Which detector judges silence is the `detector` key ([`Choice`]): `fixed` is all of the
//! above; `phi` ([`Phi`]) and `swim` ([`Swim`]) run their own traffic (BEAT every `phi_beat_ms`;
//! PING, PING-REQ, ACK, NACK with gossip every SWIM period) and decide who is suspected, on their own
//! timers ([`Liveness::take_news`] tells the host) and when the host asks
//! ([`Liveness::suspect`] returns false when the detector does not agree: the host carries on
//! waiting). Nodes outside the detector's watch (a non-neighbour on a sparse mesh) are judged
//! by the fixed rule. The stall rule holds for every detector.
//!
//! Probes carry the host's `epoch` (a term for elections, 0 for hosts without one), so that
//! the host can treat a probe as a message of its epoch; `wait` tells a check's probe (the
//! sender waits on the receiver) from the re-probe of a suspect.

use super::config::Choice;
use super::live_messages::SwimSlot;
pub use super::live_messages::{LiveMsg, LiveTimer};
use super::phi::Phi;
use super::swim::{Swim, SwimTimer};
use super::Silence;
use crate::algo::{Context, NodeId, Setup};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

mod phi_beats;
mod reach;
mod sweep;

use reach::Reach;

/// The detector that judges silence.
#[derive(Debug, Clone)]
enum Mode {
    Fixed,
    Phi(Phi),
    Swim(Box<Swim>),
}

/// The context the detector runs in.
pub(crate) type LiveCx<'a> = Context<'a, LiveMsg, LiveTimer>;

/// One node's failure detector.
#[derive(Debug, Clone)]
pub struct Liveness {
    silence: Silence,
    timeout: Duration,
    heartbeat: Duration,
    /// The nodes it may send to (probes go nowhere else).
    reach: Reach,
    epoch: u64,
    /// When the host last ran a handler.
    last: Option<Duration>,
    /// When this node last came back from a stall (or started).
    running_since: Duration,
    /// Heard since the last check.
    fresh: BTreeSet<NodeId>,
    /// Sent a PROBE at the last check.
    probed: BTreeSet<NodeId>,
    armed: bool,
    /// The next re-probe delay of each suspect.
    backoff: BTreeMap<NodeId, Duration>,
    /// Newest beacon seen from each origin: (epoch, seq).
    beacons: BTreeMap<NodeId, (u64, u64)>,
    beacon_seq: u64,
    mode: Mode,
    /// Suspected by the detector's own judgement since the host last asked.
    news: Vec<NodeId>,
    /// The fixed detector watches every member it reaches (`detector_watch=all`).
    sweep: bool,
}

impl Liveness {
    /// A detector for `setup.me` that may reach every other member.
    pub fn over_members(setup: &Setup) -> Self {
        if !matches!(Choice::from_setup(setup), Choice::Fixed) {
            return Liveness::new(setup, setup.members.iter().copied());
        }
        let mut l = Liveness::new(setup, std::iter::empty());
        l.reach = Reach::Members(setup.members.clone(), setup.me);
        l
    }

    /// A detector for `setup.me`, with its timing and the nodes it may reach.
    pub fn new(setup: &Setup, reach: impl IntoIterator<Item = NodeId>) -> Self {
        let reach: BTreeSet<NodeId> = reach.into_iter().filter(|&n| n != setup.me).collect();
        let choice = Choice::from_setup(setup);
        let sweep = matches!(choice, Choice::Fixed) && super::config::watches_all(&setup.opts);
        let mode = match choice {
            Choice::Fixed => Mode::Fixed,
            Choice::Phi(p) => Mode::Phi(Phi::new(p, reach.iter().copied(), Duration::ZERO, setup.boot)),
            Choice::Swim(p) => Mode::Swim(Box::new(Swim::new(
                p,
                setup.me,
                reach.iter().copied(),
                setup.members.len(),
            ))),
        };
        Liveness {
            mode,
            news: Vec::new(),
            sweep,
            silence: Silence::default(),
            timeout: setup.timeout,
            heartbeat: setup.heartbeat,
            reach: Reach::Listed(reach),
            epoch: 0,
            last: None,
            running_since: Duration::ZERO,
            fresh: BTreeSet::new(),
            probed: BTreeSet::new(),
            armed: false,
            backoff: BTreeMap::new(),
            beacons: BTreeMap::new(),
            beacon_seq: 0,
        }
    }

    /// Starts the tick.
    pub fn start(&mut self, cx: &mut LiveCx<'_>) {
        self.last = Some(cx.now);
        self.running_since = cx.now;
        cx.set_timer(LiveTimer::Tick, self.timeout / 2);
        match &mut self.mode {
            Mode::Fixed => {}
            Mode::Phi(p) => p.restart(cx.now),
            Mode::Swim(s) => cx.within::<SwimSlot, _>(|c| s.start(c)),
        }
        match &self.mode {
            _ if self.sweep => cx.set_timer(LiveTimer::Period, self.sweep_period()),
            Mode::Fixed => {}
            Mode::Phi(p) => cx.set_timer(LiveTimer::Period, p.params.period),
            Mode::Swim(_) => cx.set_timer(LiveTimer::Period, self.heartbeat),
        }
    }

    /// The detector's name (`fixed`, `phi`, `swim`).
    pub fn detector(&self) -> &'static str {
        match self.mode {
            Mode::Fixed => "fixed",
            Mode::Phi(_) => "phi",
            Mode::Swim(_) => "swim",
        }
    }

    /// Whether the detector suspects nodes on its own timers (phi, swim), so the host must
    /// look at [`take_news`](Self::take_news) after its timers and messages.
    pub(crate) fn judges_alone(&self) -> bool {
        !matches!(self.mode, Mode::Fixed)
    }

    /// The nodes the detector came to suspect on its own since the last call.
    pub(crate) fn take_news(&mut self) -> Vec<NodeId> {
        std::mem::take(&mut self.news)
    }

    #[cfg(test)]
    /// Phi of every watched peer at `now` (empty unless the detector is phi).
    pub(crate) fn phis(&self, now: Duration) -> Vec<(NodeId, f64)> {
        match &self.mode {
            Mode::Phi(p) => p.all(now),
            _ => Vec::new(),
        }
    }

    /// SWIM's view, for tests and status: its state of `node`, its own incarnation, its LHM.
    pub fn swim(&self) -> Option<&Swim> {
        match &self.mode {
            Mode::Swim(s) => Some(s),
            _ => None,
        }
    }

    /// A new epoch (term): probes carry it, and the check starts afresh.
    pub(crate) fn new_epoch(&mut self, epoch: u64) {
        self.epoch = epoch;
        self.armed = false;
        self.probed.clear();
        self.fresh.clear();
    }

    /// Call first in every handler of the host: true when this node was itself stopped for longer
    /// than a timeout since the last call. Every silence clock then starts again from now.
    pub(crate) fn notice_stall(&mut self, now: Duration) -> bool {
        let stalled = self.last.is_some_and(|l| now.saturating_sub(l) > self.timeout);
        self.last = Some(now);
        if stalled {
            self.running_since = now;
            self.silence.restart(now);
            self.probed.clear();
            self.fresh.clear();
            match &mut self.mode {
                Mode::Fixed => {}
                Mode::Phi(p) => p.restart(now),
                Mode::Swim(s) => s.stalled(now),
            }
        }
        stalled
    }

    /// When this node last started running without a gap (its start, or the end of a stall).
    pub(crate) fn running_since(&self) -> Duration {
        self.running_since
    }

    /// A message from `node` arrived: it is alive.
    pub fn heard(&mut self, cx: &mut LiveCx<'_>, node: NodeId) {
        self.fresh.insert(node);

        match &mut self.mode {
            Mode::Phi(p) => p.heard(node, cx.now),
            // SWIM withdraws a suspicion only on a higher incarnation.
            Mode::Swim(s) if s.knows(node) => {
                s.heard_from(node);
                return self.silence.touch(node, cx.now);
            }
            _ => {}
        }
        self.alive(cx, node);
    }

    /// `node` proved alive now: a suspicion of it is withdrawn.
    pub(super) fn alive(&mut self, cx: &mut LiveCx<'_>, node: NodeId) {
        if let Some(ev) = self.silence.heard(node, cx.now) {
            cx.record(ev);
            self.backoff.remove(&node);
            cx.cancel_timer(LiveTimer::Reprobe(node));
        }
    }

    /// Starts the silence clock of `node` afresh (a new node to watch, e.g. a new leader).
    pub fn reset(&mut self, node: NodeId, now: Duration) {
        // Not phi's clock: phi hears every peer's BEATs all along, and a reset comes also on
        // hearsay (a NEWER naming a leader that may be dead), which must not keep it alive.
        self.silence.reset(node, now);
    }

    /// Suspects `node` now, after a timeout without the answer named by `cause`; it is probed
    /// again until it answers. With phi or SWIM watching `node`, the timeout is only the
    /// host's question: the detector's own judgement answers it. True when `node` is suspected.
    pub fn suspect(&mut self, cx: &mut LiveCx<'_>, node: NodeId, cause: &str) -> bool {
        match &self.mode {
            Mode::Phi(p) if p.watches(node) => {
                if p.over(node, cx.now) {
                    self.suspect_phi(cx, node);
                }
                return self.is_suspected(node);
            }
            Mode::Swim(s) if s.knows(node) => return self.is_suspected(node),
            _ => {}
        }
        self.suspect_fixed(cx, node, cause);
        true
    }

    fn suspect_fixed(&mut self, cx: &mut LiveCx<'_>, node: NodeId, cause: &str) {
        if let Some(ev) = self.silence.suspect(node, cx.now, self.timeout, cause) {
            cx.record(ev);
            if self.reach.contains(node) {
                self.backoff.insert(node, self.heartbeat);
                cx.set_timer(LiveTimer::Reprobe(node), self.heartbeat);
            }
        }
    }

    /// Drops the suspicions of nodes this one cannot reach, but `keep`. On a sparse mesh a
    /// node hears a non-neighbour only through the leader's flooded beacons, so suspecting one
    /// means only "that leader went silent"; it cannot be probed, so once a new term begins or
    /// another leader is followed the suspicion would otherwise outlive the fault for as long
    /// as the run lasts.
    pub(crate) fn forget_unreachable(&mut self, cx: &mut LiveCx<'_>, keep: Option<NodeId>) {
        let gone: Vec<NodeId> = self
            .silence
            .suspected()
            .iter()
            .copied()
            .filter(|&n| Some(n) != keep && !self.reach.contains(n))
            .collect();
        for n in gone {
            if let Some(ev) = self.silence.forget(n) {
                cx.record(ev);
            }
        }
    }

    /// Whether `node` is suspected.
    pub(crate) fn is_suspected(&self, node: NodeId) -> bool {
        self.silence.is_suspected(node)
    }

    /// Everyone suspected now.
    pub fn suspected(&self) -> &BTreeSet<NodeId> {
        self.silence.suspected()
    }

    /// Handles a detector message (the host has already called [`heard`](Self::heard)).
    pub(crate) fn on_msg(&mut self, cx: &mut LiveCx<'_>, from: NodeId, msg: &LiveMsg) {
        match msg {
            LiveMsg::Probe { .. } => cx.send(from, LiveMsg::Alive { epoch: self.epoch }),
            LiveMsg::Beat { stamp, relayed } => self.phi_beat(cx, from, *stamp, relayed),
            LiveMsg::Swim(m) => {
                if let Mode::Swim(s) = &mut self.mode {
                    let before = self.silence.suspected().clone();
                    let silence = &mut self.silence;
                    cx.within::<SwimSlot, _>(|c| s.on_msg(c, silence, from, m));
                    self.note_news(&before);
                }
            }
            LiveMsg::Alive { .. } => {}
        }
    }

    /// Adds the suspicions that are new since `before` to the news, each once, in id order.
    fn note_news(&mut self, before: &BTreeSet<NodeId>) {
        let new: Vec<NodeId> = self.silence.suspected().difference(before).copied().collect();
        self.news.extend(new);
        self.news.sort_unstable();
        self.news.dedup();
    }

    /// The period of phi and SWIM: beats and phi's judgement, or SWIM's next probe.
    fn on_period(&mut self, cx: &mut LiveCx<'_>) {
        if self.sweep {
            // Fixed has no news: its host asks (`suspect`) and reads `is_suspected`.
            self.sweep(cx);
            cx.set_timer(LiveTimer::Period, self.sweep_period());
            return;
        }
        let before = self.silence.suspected().clone();
        let next = match &mut self.mode {
            Mode::Fixed => return,
            Mode::Phi(_) => self.phi_period(cx),
            Mode::Swim(s) => {
                let silence = &mut self.silence;
                cx.within::<SwimSlot, _>(|c| s.on_period(c, silence));
                s.until_next_probe(cx.pt)
            }
        };
        self.note_news(&before);
        cx.set_timer(LiveTimer::Period, next);
    }

    /// Handles a detector timer other than [`LiveTimer::Check`] (which needs the host's list:
    /// see [`check`](Self::check)).
    pub(crate) fn on_timer(&mut self, cx: &mut LiveCx<'_>, t: LiveTimer) {
        match t {
            LiveTimer::Tick => cx.set_timer(LiveTimer::Tick, self.timeout / 2),
            LiveTimer::Reprobe(n) if self.is_suspected(n) => {
                let wait = self.backoff.get(&n).copied().unwrap_or(self.heartbeat);
                let next = (2 * wait).min(self.timeout).max(self.heartbeat);
                self.backoff.insert(n, next);
                cx.send(
                    n,
                    LiveMsg::Probe {
                        epoch: self.epoch,
                        wait: false,
                    },
                );
                cx.set_timer(LiveTimer::Reprobe(n), next);
            }
            LiveTimer::Reprobe(_) | LiveTimer::Check => {}
            LiveTimer::Period => self.on_period(cx),
            LiveTimer::PhiDue(n) => {
                if matches!(&self.mode, Mode::Phi(p) if p.over(n, cx.now)) {
                    self.suspect_phi(cx, n);
                }
            }
            LiveTimer::Swim(t) => {
                if let Mode::Swim(s) = &mut self.mode {
                    // Only a probe's judgement suspects anyone; the host hears of it as news.
                    let before = matches!(t, SwimTimer::Judge(_)).then(|| self.silence.suspected().clone());
                    let silence = &mut self.silence;
                    cx.within::<SwimSlot, _>(|c| s.on_timer(c, silence, t));
                    if let Some(before) = before {
                        self.note_news(&before);
                    }
                }
            }
        }
    }

    /// Arms the check while the host waits on someone (`waits`); call after every handler.
    pub(crate) fn watch(&mut self, cx: &mut LiveCx<'_>, waits: bool) {
        if waits && !self.armed {
            self.armed = true;
            self.fresh.clear();
            cx.set_timer(LiveTimer::Check, self.timeout);
        }
    }

    /// The check: probes the nodes of `waiting` silent since the last check, and suspects those
    /// silent since their PROBE; returns the ones newly found silent.
    pub fn check(&mut self, cx: &mut LiveCx<'_>, waiting: &[NodeId]) -> Vec<NodeId> {
        self.armed = false;
        self.probed.retain(|x| waiting.contains(x));
        let mut silent = Vec::new();
        for &x in waiting {
            if self.fresh.contains(&x) {
                self.probed.remove(&x);
            } else if self.probed.contains(&x) {
                if self.suspect(cx, x, "probe") {
                    self.probed.remove(&x);
                    silent.push(x);
                }
            } else {
                self.probed.insert(x);
                cx.send(
                    x,
                    LiveMsg::Probe {
                        epoch: self.epoch,
                        wait: true,
                    },
                );
            }
        }
        self.fresh.clear();
        silent
    }

    /// The next number of this node's own beacon in `epoch` (marked seen).
    pub(crate) fn beacon(&mut self, me: NodeId, epoch: u64) -> u64 {
        self.beacon_seq += 1;
        self.beacons.insert(me, (epoch, self.beacon_seq));
        self.beacon_seq
    }

    /// Marks beacon (epoch, seq) of `origin` seen; false when it (or a newer one) was seen already.
    pub(crate) fn fresh_beacon(&mut self, origin: NodeId, epoch: u64, seq: u64) -> bool {
        match self.beacons.get(&origin) {
            Some(&seen) if seen >= (epoch, seq) => false,
            _ => {
                self.beacons.insert(origin, (epoch, seq));
                true
            }
        }
    }
}

#[cfg(test)]
#[path = "liveness_tests.rs"]
mod tests;
