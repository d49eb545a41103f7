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
//! The detector itself is the family's [`PeerWatch`](super::peer_watch::PeerWatch), which the
//! token ring hosts too. Central's own rule (checked by [`check`]): `regrant_ms` is the lease
//! the detector replaces, so both given is refused.

use super::central::{CentralMsg, CentralTimer};
pub(super) use super::peer_watch::wanted;
use crate::algo::detector::{LiveMsg, LiveTimer};
use crate::algo::Setup;

crate::algo::compose::slot! {
    /// The detector's slot in central's messages and timers.
    pub(super) struct LiveSlot;
    impl for CentralMsg, CentralTimer: LiveMsg => CentralMsg::Live, LiveTimer => CentralTimer::Live
}

/// The combinations of central's keys that would leave one unread; the error is one line.
pub(super) fn check(setup: &Setup, regrant_ms: u64) -> Result<(), String> {
    let detector = super::peer_watch::check_keys(setup, "central")?;
    if detector.is_some() && regrant_ms > 0 {
        return Err(
            "--set regrant_ms and --set detector both judge a silent holder on central: give one \
             (regrant_ms: the hand-written lease; detector: the family's failure detector)"
                .into(),
        );
    }
    Ok(())
}

/// Central's detector: the family's, in central's slot.
pub(super) type HolderWatch = super::peer_watch::PeerWatch<LiveSlot>;
