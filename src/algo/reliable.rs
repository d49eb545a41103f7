//! Reliable FIFO channels over UDP, shared by every algorithm that assumes them
//! (Lamport's mutex, Ricart-Agrawala, Maekawa, the bank's Chandy-Lamport snapshots).
//!
//! UDP may lose, duplicate and reorder datagrams, and a peer may crash and come back as a new
//! boot that remembers nothing. Rules, per directed channel i -> j:
//! - send: number the item (1, 2, 3, ... within the channel's incarnation `inc`), keep it until
//!   acknowledged, send DATA(inc, n, item).
//! - on DATA(inc, n) at j: an incarnation older than the one j follows is stale, ignored; a newer
//!   one starts the channel afresh (i renumbered from 1). Deliver strictly in order, holding
//!   early items back and dropping duplicates; j now owes i the acknowledgement (inc, highest
//!   n delivered in order).
//! - acknowledging, as TCP and QUIC do: every DATA frame j sends to i carries the cumulative
//!   acknowledgement of the reverse channel i -> j (piggybacked, at no datagram of its own). A
//!   bare ACK(inc, n) goes only when nothing carried it: at the end of the acknowledgement
//!   delay (the user's timer, well under the retransmission period: [`ack_delay`]), or at
//!   once when [`ACK_EVERY`] items wait for it on one channel.
//! - on ACK(inc, n) at i, bare or carried, for the current incarnation: forget every item up
//!   to n.
//! - every retransmission period: send again whatever is unacknowledged.
//! - a boot's channels start at incarnation [`Channels::start`]'s: its physical clock at start,
//!   in microseconds, so that no boot's incarnations are its earlier boots'. An acknowledgement
//!   of a channel of an old boot -- carried by a DATA frame sent, or sent again, before its
//!   sender learned of the restart -- names an incarnation the new boot never had and is
//!   ignored; with every boot starting at 0 it would forget the new boot's first items unsent.
//! - peer j came back as a new boot (the host says so before its first datagram of that boot
//!   is delivered): both channels with j start afresh. i's unacknowledged items were meant for
//!   a process that no longer exists; they are dropped, and the algorithm is told so that it
//!   sends again whatever its new peer must know. i's channel to j moves to the next
//!   incarnation, so anything j's new boot got of the old one is discarded once the new one
//!   arrives; j's channel to i restarts at 1, as j's new boot numbers it.
//!
//! So each item is delivered at most once, in order, and every item sent to a boot that stays
//! up is delivered eventually.

use crate::trace::NodeId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// What the channel layer puts on the wire around an item `M`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Frame<M> {
    /// Item number `n` of incarnation `inc` of the sender's channel to the receiver.
    Data {
        /// The channel's incarnation (moves on when the receiver restarted).
        inc: u64,
        /// The item's number in the incarnation, from 1.
        n: u64,
        /// The item.
        item: M,
        /// The reverse channel's cumulative acknowledgement, as a bare ACK would say it:
        /// (incarnation, highest number delivered in order); None before anything came back.
        ack: Option<(u64, u64)>,
    },
    /// Every item up to `upto` of incarnation `inc` arrived and was delivered.
    Ack {
        /// The incarnation acknowledged.
        inc: u64,
        /// The highest number delivered in order.
        upto: u64,
    },
}

#[derive(Debug, Clone)]
struct Out<M> {
    inc: u64,
    next: u64,
    /// Unacknowledged items by number, with the time they were last sent.
    unacked: BTreeMap<u64, (M, Duration)>,
}

impl<M> Out<M> {
    fn new(inc: u64) -> Self {
        Out {
            inc,
            next: 0,
            unacked: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Clone)]
struct In<M> {
    inc: u64,
    delivered: u64,
    early: BTreeMap<u64, M>,
    /// DATA frames arrived since the acknowledgement last went out (0: nothing owed).
    owed: u32,
    /// When the first of them arrived.
    owed_since: Duration,
}

impl<M> In<M> {
    fn new(inc: u64) -> Self {
        In {
            inc,
            delivered: 0,
            early: BTreeMap::new(),
            owed: 0,
            owed_since: Duration::ZERO,
        }
    }
}

/// The most items held early per channel; more are dropped (the sender sends them again).
pub(crate) const EARLY_LIMIT: usize = 1024;

/// A channel with this many DATA frames unacknowledged is acknowledged at once, without
/// waiting for the delay: a one-way burst then costs one ACK per this many items, and its
/// sender keeps at most about this many items per round trip for want of an ACK.
pub const ACK_EVERY: u32 = 16;

/// How long an acknowledgement may wait for a DATA frame to carry it, given the
/// retransmission period `rto`: a quarter of it (QUIC's default is 25 ms against a probe
/// timeout of at least that plus the round trip), so that the ACK reaches the sender well
/// before it would send the items again.
pub fn ack_delay(rto: Duration) -> Duration {
    rto / 4
}

/// What an arriving frame means for the algorithm.
#[derive(Debug)]
pub(crate) struct Arrival<M> {
    /// Items now deliverable, in channel order.
    pub deliver: Vec<M>,
    /// The acknowledgement owed now, as a bare ACK (None for an ACK frame or a stale one):
    /// for a user that sends its acknowledgements itself (the bank, after its store); the
    /// others leave it to [`Channels::send`]'s piggybacking and [`Channels::owed_acks`].
    pub ack: Option<Frame<M>>,
    /// [`ACK_EVERY`] DATA frames now wait on this channel: acknowledge at once
    /// ([`Channels::take_ack`]) rather than after the delay.
    pub ack_now: bool,
    /// Why nothing was delivered, when that is worth saying (a duplicate, a stale incarnation).
    pub ignored: Option<String>,
}

/// Both ends of every channel of one node.
#[derive(Debug, Clone)]
pub(crate) struct Channels<M> {
    out: BTreeMap<NodeId, Out<M>>,
    inn: BTreeMap<NodeId, In<M>>,
    /// The first incarnation of this boot's channels (see [`Channels::start`]).
    base: u64,
}

impl<M> Default for Channels<M> {
    fn default() -> Self {
        Channels {
            out: BTreeMap::new(),
            inn: BTreeMap::new(),
            base: 0,
        }
    }
}

impl<M: Clone> Channels<M> {
    /// The boot started at physical time `pt` (microseconds; `Context::pt` in its first
    /// handler, before anything is sent): its channels' incarnations start there.
    pub fn start(&mut self, pt: u64) {
        self.base = pt;
    }

    /// Numbers `item` on the channel to `to` at time `now`; returns the frame to send.
    /// The frame carries the acknowledgement of the channel from `to`, which `to` is then no
    /// longer owed.
    pub fn send(&mut self, to: NodeId, item: M, now: Duration) -> Frame<M> {
        let ack = self.carried_ack(to);
        let base = self.base;
        let o = self.out.entry(to).or_insert_with(|| Out::new(base));
        o.next += 1;
        o.unacked.insert(o.next, (item.clone(), now));
        Frame::Data {
            inc: o.inc,
            n: o.next,
            item,
            ack,
        }
    }

    /// The acknowledgement a DATA frame to `to` carries; `to` is owed nothing after it.
    fn carried_ack(&mut self, to: NodeId) -> Option<(u64, u64)> {
        self.inn.get_mut(&to).map(|i| {
            i.owed = 0;
            (i.inc, i.delivered)
        })
    }

    /// An acknowledgement of the channel to `from`, bare or carried.
    fn acked(&mut self, from: NodeId, inc: u64, upto: u64) {
        // An ACK above anything numbered yet was meant for an older boot of this node (same
        // incarnation number, counted afresh): acting on it would forget items never delivered.
        if let Some(o) = self.out.get_mut(&from).filter(|o| o.inc == inc && upto <= o.next) {
            // Item by item from the oldest: `split_off` built a new tree an ACK, and most ACKs
            // (carried on every message back) acknowledge nothing new.
            while let Some(oldest) = o.unacked.first_entry().filter(|e| *e.key() <= upto) {
                oldest.remove();
            }
        }
    }

    /// The bare ACK owed to `peer`, if any; it is owed nothing after it.
    pub(crate) fn take_ack(&mut self, peer: NodeId) -> Option<Frame<M>> {
        let i = self.inn.get_mut(&peer).filter(|i| i.owed > 0)?;
        i.owed = 0;
        Some(Frame::Ack {
            inc: i.inc,
            upto: i.delivered,
        })
    }

    /// Every bare ACK owed for `delay` or more at `now` (no DATA frame carried it since its
    /// items arrived), peer by peer; those peers are owed nothing after them.
    pub(crate) fn owed_acks(&mut self, now: Duration, delay: Duration) -> Vec<(NodeId, Frame<M>)> {
        let owed: Vec<NodeId> = self
            .inn
            .iter()
            .filter(|(_, i)| i.owed > 0 && now >= i.owed_since + delay)
            .map(|(&p, _)| p)
            .collect();
        owed.into_iter()
            .filter_map(|p| self.take_ack(p).map(|f| (p, f)))
            .collect()
    }

    /// Whether an acknowledgement is owed to anyone.
    pub(crate) fn owes_ack(&self) -> bool {
        self.inn.values().any(|i| i.owed > 0)
    }

    /// Since when the longest-owed acknowledgement is owed, if any is.
    pub(crate) fn owed_since(&self) -> Option<Duration> {
        self.inn.values().filter(|i| i.owed > 0).map(|i| i.owed_since).min()
    }

    /// A frame arrived from `from` at `now`.
    pub fn arrive(&mut self, from: NodeId, frame: Frame<M>, now: Duration) -> Arrival<M> {
        match frame {
            Frame::Ack { inc, upto } => {
                self.acked(from, inc, upto);
                Arrival {
                    deliver: Vec::new(),
                    ack: None,
                    ack_now: false,
                    ignored: None,
                }
            }
            Frame::Data { inc, n, item, ack } => {
                // The carried acknowledgement is about the other channel: it counts even when
                // this item turns out stale or a duplicate.
                if let Some((ainc, upto)) = ack {
                    self.acked(from, ainc, upto);
                }
                let i = self.inn.entry(from).or_insert(In::new(inc));
                let mut ignored = None;
                if inc < i.inc {
                    ignored = Some(format!("item {n} of channel incarnation {inc}, now {}: stale", i.inc));
                    // Its sender moved on; no ACK would mean anything to it.
                    return Arrival {
                        deliver: Vec::new(),
                        ack: None,
                        ack_now: false,
                        ignored,
                    };
                }
                if inc > i.inc {
                    *i = In::new(inc);
                }
                // A duplicate is owed an ACK too: its sender has not heard one.
                if i.owed == 0 {
                    i.owed_since = now;
                }
                i.owed = i.owed.saturating_add(1);
                let mut deliver = Vec::new();
                if n <= i.delivered {
                    ignored = Some(format!("item {n} on the channel again: a duplicate"));
                } else if n > i.delivered + 1 {
                    if i.early.len() < EARLY_LIMIT || i.early.contains_key(&n) {
                        i.early.insert(n, item);
                    }
                } else {
                    deliver.push(item);
                    i.delivered = n;
                    while let Some(x) = i.early.remove(&(i.delivered + 1)) {
                        deliver.push(x);
                        i.delivered += 1;
                    }
                }
                Arrival {
                    deliver,
                    ack: Some(Frame::Ack {
                        inc: i.inc,
                        upto: i.delivered,
                    }),
                    ack_now: i.owed >= ACK_EVERY,
                    ignored,
                }
            }
        }
    }

    /// The frames to send again at `now`: every item unacknowledged for `rto` or more (each
    /// carrying the current acknowledgement of the reverse channel).
    pub(crate) fn due(&mut self, now: Duration, rto: Duration) -> Vec<(NodeId, Frame<M>)> {
        let mut again = Vec::new();
        for (&to, o) in &mut self.out {
            let mut ack = None;
            for (&n, (item, at)) in o.unacked.iter_mut() {
                if now >= *at + rto {
                    *at = now;
                    let ack = *ack.get_or_insert_with(|| {
                        self.inn.get_mut(&to).map(|i| {
                            i.owed = 0;
                            (i.inc, i.delivered)
                        })
                    });
                    again.push((
                        to,
                        Frame::Data {
                            inc: o.inc,
                            n,
                            item: item.clone(),
                            ack,
                        },
                    ));
                }
            }
        }
        again
    }

    /// Every item not yet acknowledged, channel by channel in sending order.
    pub(crate) fn unacked(&self) -> impl Iterator<Item = (NodeId, &M)> + '_ {
        self.out
            .iter()
            .flat_map(|(&to, o)| o.unacked.values().map(move |(m, _)| (to, m)))
    }

    /// Whether any item waits for its acknowledgement.
    pub fn pending(&self) -> bool {
        self.out.values().any(|o| !o.unacked.is_empty())
    }

    /// Peer `peer` came back as a new boot: both channels with it start afresh; returns the
    /// items it never acknowledged (they were meant for its old boot).
    pub(crate) fn peer_restarted(&mut self, peer: NodeId) -> Vec<M> {
        self.inn.remove(&peer);
        let base = self.base;
        let o = self.out.entry(peer).or_insert_with(|| Out::new(base));
        o.inc += 1;
        o.next = 0;
        std::mem::take(&mut o.unacked).into_values().map(|x| x.0).collect()
    }
}

#[cfg(test)]
#[path = "reliable_tests.rs"]
mod tests;
