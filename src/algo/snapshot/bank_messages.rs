//! What the [`bank`](super::bank) sends: the items of its FIFO channels, their datagrams, and
//! its timers.

use crate::algo::reliable::Frame;
use crate::algo::Message;
use serde::{Deserialize, Serialize};

/// What travels on a FIFO channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) enum Item {
    /// Money.
    Transfer {
        /// The sender's transfer number: its receiver applies each id once.
        id: u64,
        /// How much.
        amount: u64,
        /// The sender's physical clock at the debit, microseconds.
        sent_pt: u64,
    },
    /// Chandy-Lamport's marker of snapshot `snap`.
    Marker {
        /// The snapshot.
        snap: u64,
    },
}

/// The bank's messages.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum BankMsg {
    /// A channel item of the reliable layer, or its acknowledgement.
    Link(Frame<Item>),
    /// A restarted account's first word to every neighbour: my old boot is gone.
    Hello,
}

impl Message for BankMsg {
    fn name(&self) -> &'static str {
        match self {
            BankMsg::Link(Frame::Data {
                item: Item::Transfer { .. },
                ..
            }) => "TRANSFER",
            BankMsg::Link(Frame::Data {
                item: Item::Marker { .. },
                ..
            }) => "MARKER",
            BankMsg::Link(Frame::Ack { .. }) => "ACK",
            BankMsg::Hello => "HELLO",
        }
    }
    fn brief(&self) -> String {
        match self {
            BankMsg::Link(Frame::Data { item, n, .. }) => {
                format!("{} #{n}", crate::algo::brief_of(self.name(), item))
            }
            BankMsg::Link(Frame::Ack { inc, upto }) => format!("ACK(upto={upto}, inc={inc})"),
            BankMsg::Hello => "HELLO".into(),
        }
    }
}

/// The bank's timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum BankTimer {
    /// Send a transfer.
    Transfer,
    /// Store the state if it changed, then let out what waits for it and send again what is
    /// unacknowledged.
    Flush,
    /// Start a Chandy-Lamport snapshot (initiator).
    Initiate,
    /// Check whether the clock reached the next recording time.
    ClockSnap,
    /// Write the clock snapshot taken at this time (ms).
    Settle(u64),
}
