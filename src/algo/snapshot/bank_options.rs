//! The [`bank`](super::bank)'s keys, declared once, and the options it reads from them.

use crate::algo::options::{options, Kind};
use crate::algo::Setup;
use std::time::Duration;

/// Which snapshots a bank takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Methods {
    /// Chandy-Lamport markers.
    pub markers: bool,
    /// Recording at a physical-clock time.
    pub clock: bool,
}

options! {
    /// The bank's keys, as declared once.
    pub(crate) struct BankKeys {
        snapshot: &'static str = none, Kind::Choice(&["none", "chandy-lamport", "clock", "both"]),
            "how global states are recorded: Chandy-Lamport markers, each node at a clock time, or both";
        snapshot_ms: u64 = 1000, Kind::Int { min: 10, max: 1_000_000_000 }, "how often a snapshot is taken";
        balance: u64 = 1000, Kind::Int { min: 0, max: 1_000_000_000 }, "every account's starting balance";
        transfer_ms: u64 = 20, Kind::Int { min: 1, max: 1_000_000_000 }, "mean time between one node's transfers";
        retransmit_ms: u64 = 100, Kind::Int { min: 1, max: 1_000_000_000 },
            "how often unacknowledged channel items are sent again";
        flush_ms: u64 = 25, Kind::Int { min: 1, max: 1_000_000_000 },
            "how often the account's state is stored before what depends on it is sent";
        settle_ms: u64 = 500, Kind::Int { min: 1, max: 1_000_000_000 },
            "how long a clock snapshot counts transfers sent before it";
    }
}

/// The bank's options, from `--set` ([`BankKeys`] in the units the bank uses).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct BankOptions {
    /// Starting balance of every account.
    pub balance: u64,
    /// Mean time between one node's transfers.
    pub transfer: Duration,
    /// Retransmission period.
    pub retransmit: Duration,
    /// How often the state is stored and what waits for it let out.
    pub flush: Duration,
    /// Snapshot period.
    pub every: Duration,
    /// How long a clock snapshot waits for transfers in flight.
    pub settle: Duration,
    /// Which snapshots are taken.
    pub methods: Methods,
}

impl BankOptions {
    /// Reads and checks the options; the error names the bad value.
    pub(crate) fn from_setup(setup: &Setup) -> Result<Self, String> {
        let k = BankKeys::from_setup(setup)?;
        if setup.neighbours.is_empty() {
            return Err(format!("bank: node {} has no neighbour to send money to", setup.me));
        }
        let ms = Duration::from_millis;
        Ok(BankOptions {
            balance: k.balance,
            transfer: ms(k.transfer_ms),
            retransmit: ms(k.retransmit_ms),
            flush: ms(k.flush_ms),
            every: ms(k.snapshot_ms),
            settle: ms(k.settle_ms),
            methods: Methods {
                markers: matches!(k.snapshot, "chandy-lamport" | "both"),
                clock: matches!(k.snapshot, "clock" | "both"),
            },
        })
    }
}
