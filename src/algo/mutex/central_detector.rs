//! Central's failure detector: with `--set detector=fixed|phi|swim`, the coordinator judges a
//! silent holder with the family's [`Liveness`] component (the one the election family hosts),
//! instead of the hand-written `regrant_ms` lease.
//!
//! Every participant hosts the detector over every other participant (a complete membership:
//! central runs on complete graphs only, and SWIM's indirect probes and gossip need the others),
//! so each one answers PROBEs, sends phi's BEATs or takes part in SWIM. Only the coordinator acts
//! on it:
//! - `fixed`: while a participant other than itself holds the grant, the coordinator checks it
//!   every timeout: a holder silent since the last check is PROBEd, one silent since its PROBE is
//!   suspected (`cause: "probe"`).
//! - `phi`, `swim`: the detector suspects on its own timers and gossip; its verdict on the
//!   holder is read after every handler.
//!
//! A holder that the detector takes for dead is regranted (`state_change` says by which
//! detector): with `fixed` and `phi` as soon as it is suspected; with `swim` once it is declared
//! dead (`confirm`): a SWIM suspicion is the tentative step the suspect refutes with a higher
//! incarnation, and acting on it would throw away what Lifeguard's suspicion timeout buys. The
//! head of the queue is granted whatever the detector thinks of it (FIFO, as without a detector)
//! and, if taken for dead, taken back at once: a node killed while it waited in the queue does
//! not block the others.
//!
//! The stall rule is the detector's: the first handler after a gap longer than the timeout
//! restarts every silence clock, so a coordinator that was itself paused never regrants because
//! of the silence it slept through.
//!
//! Opt-in and its rules (checked by [`check`]): the `detector` key turns the detector on;
//! without it central has no detector and its default runs send exactly what they always did.
//! `regrant_ms` is the lease the detector replaces: both given is refused. A tuning key
//! (`phi_*`, `swim_*`) is refused unless `detector` names its detector, since nothing would
//! read it.

use super::central::{CentralMsg, CentralTimer};
use super::MutexCx;
use super::RESOURCE_ID;
use crate::algo::detector::config::DetectorOptions;
use crate::algo::detector::swim::State;
use crate::algo::detector::{LiveMsg, LiveTimer, Liveness};
use crate::algo::{NodeId, Setup};

crate::algo::compose::slot! {
    /// The detector's slot in central's messages and timers.
    pub(super) struct LiveSlot;
    impl for CentralMsg, CentralTimer: LiveMsg => CentralMsg::Live, LiveTimer => CentralTimer::Live
}

/// Whether `setup` asks central for a detector.
pub(super) fn wanted(setup: &Setup) -> bool {
    setup.opts.contains_key("detector")
}

/// The combinations of central's keys that would leave one unread; the error is one line.
pub(super) fn check(setup: &Setup, regrant_ms: u64) -> Result<(), String> {
    let detector = match setup.opts.get("detector") {
        Some(d) => {
            DetectorOptions::from_setup(setup)?;
            Some(d.as_str())
        }
        None => None,
    };
    if detector.is_some() && regrant_ms > 0 {
        return Err(
            "--set regrant_ms and --set detector both judge a silent holder on central: give one \
             (regrant_ms: the hand-written lease; detector: the family's failure detector)"
                .into(),
        );
    }
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
            return Err(
                "--set detector_watch says whom central's detector watches, and this run has none: add --set detector=fixed|phi|swim"
                    .into(),
            );
        }
        let needs = if key.starts_with("phi_") { "phi" } else { "swim" };
        if key != "detector_watch" && detector != Some(needs) {
            return Err(format!(
                "--set {key} tunes detector={needs}, which this run of central does not use: add --set detector={needs}"
            ));
        }
    }
    Ok(())
}

/// Whether the detector's verdict on `node` is "dead": suspected (fixed, phi), or declared
/// dead (SWIM: its suspicion is the tentative step that the suspect refutes, and Lifeguard's
/// point is that only a confirmation after the suspicion timeout is acted on).
fn dead(live: &Liveness, node: NodeId) -> bool {
    match live.swim() {
        Some(s) => matches!(s.state(node), Some(State::Dead)),
        None => live.is_suspected(node),
    }
}

/// One participant's detector.
#[derive(Debug, Clone)]
pub(super) struct HolderWatch {
    live: Liveness,
}

impl HolderWatch {
    /// The detector of participant `setup.me`, watching every other participant.
    pub(super) fn new(setup: &Setup, peers: &[NodeId]) -> Self {
        let others = peers.iter().copied().filter(|&p| p != setup.me && p != RESOURCE_ID);
        HolderWatch {
            live: Liveness::new(setup, others),
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

    /// Starts the detector's tick and traffic.
    pub(super) fn start(&mut self, cx: &mut MutexCx<'_, super::central::Central>) {
        cx.within::<LiveSlot, _>(|c| self.live.start(c));
    }

    /// First in every handler: notices a stall of this node (the detector restarts its clocks).
    pub(super) fn notice_stall(&mut self, cx: &MutexCx<'_, super::central::Central>) {
        self.live.notice_stall(cx.now);
    }

    /// A message from `from` arrived (any message is a sign of life); a detector message is
    /// handled here too.
    pub(super) fn on_msg(
        &mut self,
        cx: &mut MutexCx<'_, super::central::Central>,
        from: NodeId,
        msg: Option<&LiveMsg>,
    ) {
        cx.within::<LiveSlot, _>(|c| {
            self.live.heard(c, from);
            if let Some(m) = msg {
                self.live.on_msg(c, from, m);
            }
        });
    }

    /// A detector timer; `holder` is the holder the coordinator waits on (None elsewhere).
    pub(super) fn on_timer(
        &mut self,
        cx: &mut MutexCx<'_, super::central::Central>,
        t: LiveTimer,
        holder: Option<NodeId>,
    ) {
        cx.within::<LiveSlot, _>(|c| match t {
            LiveTimer::Check => {
                let waiting: Vec<NodeId> = holder.into_iter().collect();
                self.live.check(c, &waiting);
            }
            t => self.live.on_timer(c, t),
        });
    }

    /// Whether the detector takes `node` for dead.
    pub(super) fn takes_for_dead(&self, node: NodeId) -> bool {
        dead(&self.live, node)
    }

    /// Last in every handler: arms the fixed detector's check while a holder other than this
    /// node is waited on (`holder`, at the coordinator).
    pub(super) fn after(&mut self, cx: &mut MutexCx<'_, super::central::Central>, holder: Option<NodeId>) {
        // The news is read through `takes_for_dead`; dropped here so that it does not pile up.
        self.live.take_news();
        let waits = holder.is_some_and(|h| h != cx.me);
        // Phi and SWIM judge on their own traffic; PROBEs would only add to it.
        let check = waits && !self.live.judges_alone();
        cx.within::<LiveSlot, _>(|c| self.live.watch(c, check));
    }
}
