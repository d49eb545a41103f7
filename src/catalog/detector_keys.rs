//! The `--set` keys of the failure detector (src/algo/detector/config.rs reads them), taken
//! by every algorithm whose family hosts liveness ([`LIVENESS_HOSTS`](super::LIVENESS_HOSTS)).

use super::{Key, Kind, SetBy};

/// The keys of the detector, taken by every algorithm whose family hosts liveness.
pub const KEYS: &[Key] = &[
    Key {
        name: "detector",
        kind: Kind::Choice(&["fixed", "phi", "swim"]),
        default: "fixed",
        help: "failure detector: fixed timeout, phi accrual (Hayashibara), or SWIM with Lifeguard",
        set_by: SetBy::User,
    },
    Key {
        name: "phi_threshold",
        kind: Kind::Float { min: 0.5, max: 100.0 },
        default: "8",
        help: "phi: suspect a peer once phi (-log10 of the chance it is still alive) exceeds this",
        set_by: SetBy::User,
    },
    Key {
        name: "phi_window",
        kind: Kind::Int { min: 2, max: 10_000 },
        default: "100",
        help: "phi: inter-arrival times kept per peer",
        set_by: SetBy::User,
    },
    Key {
        name: "phi_min_std_ms",
        kind: Kind::Int { min: 1, max: 60_000 },
        default: "25",
        help: "phi: the smallest standard deviation of inter-arrival times assumed, ms",
        set_by: SetBy::User,
    },
    Key {
        name: "phi_pause_ms",
        kind: Kind::Int { min: 0, max: 60_000 },
        default: "100",
        help: "phi: acceptable heartbeat pause added to the mean inter-arrival time, ms",
        set_by: SetBy::User,
    },
    Key {
        name: "swim_period_ms",
        kind: Kind::Int { min: 1, max: 60_000 },
        default: "300",
        help: "swim: one probe per period, ms (stretched by the local health multiplier)",
        set_by: SetBy::User,
    },
    Key {
        name: "swim_probe_timeout_ms",
        kind: Kind::Int { min: 1, max: 60_000 },
        default: "100",
        help: "swim: how long a direct probe's ACK is awaited before asking others, ms",
        set_by: SetBy::User,
    },
    Key {
        name: "swim_k",
        kind: Kind::Int { min: 0, max: 16 },
        default: "3",
        help: "swim: members asked to probe indirectly when a direct probe goes unanswered",
        set_by: SetBy::User,
    },
    Key {
        name: "swim_suspicion_mult",
        kind: Kind::Int { min: 1, max: 100 },
        default: "3",
        help: "swim: shortest suspicion timeout, in probe periods times log10(members)",
        set_by: SetBy::User,
    },
    Key {
        name: "swim_suspicion_max_mult",
        kind: Kind::Int { min: 1, max: 100 },
        default: "4",
        help: "swim: longest suspicion timeout (no confirmations), as a multiple of the shortest",
        set_by: SetBy::User,
    },
];
