//! The family's failure detector inside a mutual-exclusion protocol: with `--set
//! detector=fixed|phi|swim`, a protocol that hosts it (every one of the family: [`central`](super::central),
//! [`token_ring`](super::token_ring), the voters of [`ballot`](super::ballot), ...) judges a silent participant with the [`Liveness`]
//! component the election family hosts, instead of its own hand-written timeout.
//!
//! Every participant hosts the detector over every other participant, so each one answers
//! PROBEs, sends phi's BEATs or takes part in SWIM. The protocol acts on the verdicts it reads
//! through [`PeerWatch::takes_for_dead`]: with `fixed` and `phi` a suspicion; with `swim` a
//! declaration of death (`confirm`), since a SWIM suspicion is the tentative step the suspect
//! refutes with a higher incarnation, and acting on it would throw away what Lifeguard's
//! suspicion timeout buys. `fixed` PROBEs only the participant the protocol says it waits on
//! ([`PeerWatch::after`]), unless `detector_watch=all`.
//!
//! The stall rule is the detector's: the first handler after a gap longer than the timeout
//! restarts every silence clock ([`PeerWatch::notice_stall`]), so a node that was itself paused
//! never acts on the silence it slept through.
//!
//! Opt-in and its rules (checked by [`check_keys`]): the `detector` key turns the detector on;
//! without it the protocol has none and its default runs send exactly what they always did. A
//! tuning key (`phi_*`, `swim_*`, `detector_watch`) is refused unless `detector` names its
//! detector, since nothing would read it.

use super::wrapper::{Ask, MutexCx, MutexView, Protocol};
use super::RESOURCE_ID;
use crate::algo::compose::Embed;
use crate::algo::detector::config::DetectorOptions;
use crate::algo::detector::swim::State;
use crate::algo::detector::{LiveMsg, LiveTimer, Liveness};
use crate::algo::{Context, Message, NodeId, Setup};
use std::marker::PhantomData;

/// Whether `setup` asks for a detector.
pub(super) fn wanted(setup: &Setup) -> bool {
    setup.opts.contains_key("detector")
}

/// The detector keys of `algo`'s run that would go unread; the error is one line. Returns the
/// detector asked for, if any.
pub(super) fn check_keys<'a>(setup: &'a Setup, algo: &str) -> Result<Option<&'a str>, String> {
    let detector = match setup.opts.get("detector") {
        Some(d) => {
            DetectorOptions::from_setup(setup)?;
            Some(d.as_str())
        }
        None => None,
    };
    crate::algo::detector::config::check_watch(&setup.opts)?;
    for key in DetectorOptions::KEYS
        .iter()
        .map(|k| k.name)
        .filter(|&k| k != "detector")
    {
        if !setup.opts.contains_key(key) {
            continue;
        }
        if key == "detector_watch" && detector.is_none() {
            return Err(format!(
                "--set detector_watch says whom {algo}'s detector watches, and this run has none: add --set detector=fixed|phi|swim"
            ));
        }
        let needs = if key.starts_with("phi_") { "phi" } else { "swim" };
        if key != "detector_watch" && detector != Some(needs) {
            return Err(format!(
                "--set {key} tunes detector={needs}, which this run of {algo} does not use: add --set detector={needs}"
            ));
        }
    }
    Ok(detector)
}

/// One participant's detector, its messages and timers in the protocol's enums at slot `S`.
pub(crate) struct PeerWatch<S> {
    live: Liveness,
    slot: PhantomData<fn() -> S>,
}

// By hand: derived, they would ask the slot (a unit struct naming a place) for Debug and Clone.
impl<S> std::fmt::Debug for PeerWatch<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.live.fmt(f)
    }
}

impl<S> Clone for PeerWatch<S> {
    fn clone(&self) -> Self {
        PeerWatch {
            live: self.live.clone(),
            slot: PhantomData,
        }
    }
}

/// The context of a protocol whose messages and timers are `M` and `T`.
type Cx<'a, M, T> = Context<'a, M, T, Ask, MutexView>;

impl<S> PeerWatch<S> {
    /// The detector of participant `setup.me`, watching every other participant.
    pub(super) fn new(setup: &Setup, peers: &[NodeId]) -> Self {
        let others = peers.iter().copied().filter(|&p| p != setup.me && p != RESOURCE_ID);
        PeerWatch {
            live: Liveness::new(setup, others),
            slot: PhantomData,
        }
    }

    /// The detector's name (`fixed`, `phi`, `swim`).
    pub(super) fn detector(&self) -> &'static str {
        self.live.detector()
    }

    /// The detector itself (tests read its opinions).
    #[cfg(test)]
    pub(super) fn live(&self) -> &Liveness {
        &self.live
    }

    /// Whether the detector takes `node` for dead: suspected (fixed, phi), or declared dead
    /// (SWIM).
    pub(super) fn takes_for_dead(&self, node: NodeId) -> bool {
        match self.live.swim() {
            Some(s) => matches!(s.state(node), Some(State::Dead)),
            None => self.live.is_suspected(node),
        }
    }

    /// Says in the log (a state change) which nodes a step went on without as dead, when that
    /// changed since the last step (`last`): `without` is what it did without them, `again`
    /// what it does once none is skipped.
    pub(super) fn tell_skips<M, T>(
        &self,
        cx: &mut Cx<'_, M, T>,
        skipped: Vec<NodeId>,
        last: &mut Vec<NodeId>,
        without: &str,
        again: &str,
    ) {
        if skipped == *last {
            return;
        }
        let name = self.detector();
        cx.state_change(if skipped.is_empty() {
            format!("detector={name} takes every node for alive: {again}")
        } else {
            format!("detector={name} takes {skipped:?} for dead: {without}")
        });
        *last = skipped;
    }

    /// First in every handler: notices a stall of this node (the detector restarts its clocks).
    pub(super) fn notice_stall<M, T>(&mut self, cx: &Cx<'_, M, T>) {
        self.live.notice_stall(cx.now);
    }
}

impl<S> PeerWatch<S> {
    /// A message from `from` reached a protocol that hosts `watch` or not (`algo` names it):
    /// any message is a sign of life, and a detector message (`live`) is the detector's
    /// business alone; one that reaches a run without a detector is dropped and counted.
    pub(super) fn hear<M, T>(
        watch: &mut Option<Box<Self>>,
        cx: &mut Cx<'_, M, T>,
        from: NodeId,
        live: Option<&LiveMsg>,
        algo: &str,
    ) where
        S: Embed<M, T, Msg = LiveMsg, Timer = LiveTimer>,
    {
        match (watch, live) {
            (Some(w), live) => w.on_msg(cx, from, live),
            (None, Some(m)) => cx.discard(
                from,
                format!("{}: this run of {algo} hosts no failure detector", m.name()),
            ),
            (None, None) => {}
        }
    }

    /// Starts the detector's tick and traffic.
    pub(super) fn start<M, T>(&mut self, cx: &mut Cx<'_, M, T>)
    where
        S: Embed<M, T, Msg = LiveMsg, Timer = LiveTimer>,
    {
        cx.within::<S, _>(|c| self.live.start(c));
    }

    /// A message from `from` arrived (any message is a sign of life); a detector message is
    /// handled here too.
    pub(super) fn on_msg<M, T>(&mut self, cx: &mut Cx<'_, M, T>, from: NodeId, msg: Option<&LiveMsg>)
    where
        S: Embed<M, T, Msg = LiveMsg, Timer = LiveTimer>,
    {
        cx.within::<S, _>(|c| {
            self.live.heard(c, from);
            if let Some(m) = msg {
                self.live.on_msg(c, from, m);
            }
        });
    }

    /// A detector timer; `waits_on` are the participants the protocol waits on.
    pub(super) fn on_timer<M, T>(&mut self, cx: &mut Cx<'_, M, T>, t: LiveTimer, waits_on: &[NodeId])
    where
        S: Embed<M, T, Msg = LiveMsg, Timer = LiveTimer>,
    {
        cx.within::<S, _>(|c| match t {
            LiveTimer::Check => {
                // Never itself: central's coordinator may hold its own grant when the check
                // armed for another holder fires, and it once suspected itself.
                let others: Vec<NodeId> = waits_on.iter().copied().filter(|&n| n != c.me).collect();
                self.live.check(c, &others);
            }
            t => self.live.on_timer(c, t),
        });
    }

    /// Last in every handler: arms the fixed detector's check while the protocol waits on a
    /// participant other than this node (`waits_on`).
    pub(super) fn after<M, T>(&mut self, cx: &mut Cx<'_, M, T>, waits_on: &[NodeId])
    where
        S: Embed<M, T, Msg = LiveMsg, Timer = LiveTimer>,
    {
        // The news is read through `takes_for_dead`; dropped here so that it does not pile up.
        self.live.take_news();
        let waits = waits_on.iter().any(|&h| h != cx.me);
        // Phi and SWIM judge on their own traffic; PROBEs would only add to it.
        let check = waits && !self.live.judges_alone();
        cx.within::<S, _>(|c| self.live.watch(c, check));
    }
}

/// A protocol that may host the detector: where it keeps it, whom it waits on, and what it does
/// with the verdicts. Its handlers run inside [`handle`], its detector timers in [`on_timer`].
pub(super) trait Hosted: Protocol + Sized {
    /// The detector's slot in the protocol's messages and timers.
    type Slot: Embed<Self::Msg, Self::Timer, Msg = LiveMsg, Timer = LiveTimer>;
    /// The detector, when the run hosts one.
    fn watch_mut(&mut self) -> &mut Option<Box<PeerWatch<Self::Slot>>>;
    /// The participants the protocol waits on now (`fixed` checks them).
    fn waits_on(&self, cx: &MutexCx<'_, Self>) -> Vec<NodeId>;
    /// Acts on the detector's verdicts as they stand (called after every handler).
    fn settle(&mut self, cx: &mut MutexCx<'_, Self>);
}

/// Runs handler `f` of `p`: the detector first notices a stall of this node; last, `p` acts on
/// the verdicts as they stand, and `fixed` is set to check whom `p` now waits on.
pub(super) fn handle<P: Hosted>(p: &mut P, cx: &mut MutexCx<'_, P>, f: impl FnOnce(&mut P, &mut MutexCx<'_, P>)) {
    if let Some(w) = p.watch_mut() {
        w.notice_stall(cx);
    }
    f(p, cx);
    if p.watch_mut().is_none() {
        return;
    }
    p.settle(cx);
    let waiting = p.waits_on(cx);
    if let Some(w) = p.watch_mut() {
        w.after(cx, &waiting);
    }
}

/// A detector timer of `p`, run as a handler.
pub(super) fn on_timer<P: Hosted>(p: &mut P, cx: &mut MutexCx<'_, P>, t: LiveTimer) {
    handle(p, cx, |p, cx| {
        let waiting = p.waits_on(cx);
        if let Some(w) = p.watch_mut() {
            w.on_timer(cx, t, &waiting);
        }
    });
}
