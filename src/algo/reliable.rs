//! Reliable FIFO channels over UDP, shared by every algorithm that assumes them
//! (Lamport's mutex, Ricart-Agrawala, Maekawa, the bank's Chandy-Lamport snapshots).
//!
//! UDP may lose, duplicate and reorder datagrams, and a peer may crash and come back as a new
//! boot that remembers nothing. Rules, per directed channel i -> j:
//! - send: number the item (1, 2, 3, ... within the channel's incarnation `inc`), keep it until
//!   acknowledged, send DATA(inc, n, item).
//! - on DATA(inc, n) at j: an incarnation older than the one j follows is stale, ignored; a newer
//!   one starts the channel afresh (i renumbered from 1). Deliver strictly in order, holding
//!   early items back and dropping duplicates; answer ACK(inc, highest n delivered in order).
//! - on ACK(inc, n) at i for the current incarnation: forget every item up to n.
//! - every retransmission period: send again whatever is unacknowledged.
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
        inc: u32,
        /// The item's number in the incarnation, from 1.
        n: u64,
        /// The item.
        item: M,
    },
    /// Every item up to `upto` of incarnation `inc` arrived and was delivered.
    Ack {
        /// The incarnation acknowledged.
        inc: u32,
        /// The highest number delivered in order.
        upto: u64,
    },
}

#[derive(Debug, Clone)]
struct Out<M> {
    inc: u32,
    next: u64,
    /// Unacknowledged items by number, with the time they were last sent.
    unacked: BTreeMap<u64, (M, Duration)>,
}

impl<M> Default for Out<M> {
    fn default() -> Self {
        Out {
            inc: 0,
            next: 0,
            unacked: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Clone)]
struct In<M> {
    inc: u32,
    delivered: u64,
    early: BTreeMap<u64, M>,
}

/// The most items held early per channel; more are dropped (the sender sends them again).
pub(crate) const EARLY_LIMIT: usize = 1024;

/// What an arriving frame means for the algorithm.
#[derive(Debug)]
pub(crate) struct Arrival<M> {
    /// Items now deliverable, in channel order.
    pub deliver: Vec<M>,
    /// The acknowledgement to send back (None for an ACK frame).
    pub ack: Option<Frame<M>>,
    /// Why nothing was delivered, when that is worth saying (a duplicate, a stale incarnation).
    pub ignored: Option<String>,
}

/// Both ends of every channel of one node.
#[derive(Debug, Clone)]
pub(crate) struct Channels<M> {
    out: BTreeMap<NodeId, Out<M>>,
    inn: BTreeMap<NodeId, In<M>>,
}

impl<M> Default for Channels<M> {
    fn default() -> Self {
        Channels {
            out: BTreeMap::new(),
            inn: BTreeMap::new(),
        }
    }
}

impl<M: Clone> Channels<M> {
    /// Numbers `item` on the channel to `to` at time `now`; returns the frame to send.
    pub fn send(&mut self, to: NodeId, item: M, now: Duration) -> Frame<M> {
        let o = self.out.entry(to).or_default();
        o.next += 1;
        o.unacked.insert(o.next, (item.clone(), now));
        Frame::Data {
            inc: o.inc,
            n: o.next,
            item,
        }
    }

    /// A frame arrived from `from`.
    pub fn arrive(&mut self, from: NodeId, frame: Frame<M>) -> Arrival<M> {
        match frame {
            Frame::Ack { inc, upto } => {
                // An ACK above anything numbered yet was meant for an older boot of this node
                // (same incarnation number, counted afresh): acting on it would forget items
                // never delivered.
                if let Some(o) = self.out.get_mut(&from).filter(|o| o.inc == inc && upto <= o.next) {
                    o.unacked = o.unacked.split_off(&(upto + 1));
                }
                Arrival {
                    deliver: Vec::new(),
                    ack: None,
                    ignored: None,
                }
            }
            Frame::Data { inc, n, item } => {
                let i = self.inn.entry(from).or_insert(In {
                    inc,
                    delivered: 0,
                    early: BTreeMap::new(),
                });
                let mut ignored = None;
                if inc < i.inc {
                    ignored = Some(format!("item {n} of channel incarnation {inc}, now {}: stale", i.inc));
                    // Its sender moved on; no ACK would mean anything to it.
                    return Arrival {
                        deliver: Vec::new(),
                        ack: None,
                        ignored,
                    };
                }
                if inc > i.inc {
                    *i = In {
                        inc,
                        delivered: 0,
                        early: BTreeMap::new(),
                    };
                }
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
                    ignored,
                }
            }
        }
    }

    /// The frames to send again at `now`: every item unacknowledged for `rto` or more.
    pub(crate) fn due(&mut self, now: Duration, rto: Duration) -> Vec<(NodeId, Frame<M>)> {
        let mut again = Vec::new();
        for (&to, o) in &mut self.out {
            for (&n, (item, at)) in o.unacked.iter_mut() {
                if now >= *at + rto {
                    *at = now;
                    again.push((
                        to,
                        Frame::Data {
                            inc: o.inc,
                            n,
                            item: item.clone(),
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
        let o = self.out.entry(peer).or_default();
        o.inc += 1;
        o.next = 0;
        std::mem::take(&mut o.unacked).into_values().map(|x| x.0).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::ZERO;

    fn data(f: &Frame<char>) -> (u32, u64) {
        match f {
            Frame::Data { inc, n, .. } => (*inc, *n),
            Frame::Ack { .. } => panic!("not data"),
        }
    }

    #[test]
    fn delivery_is_once_and_in_order_whatever_the_arrival_order() {
        let mut a: Channels<char> = Channels::default();
        let f: Vec<_> = "abc".chars().map(|c| a.send(2, c, T)).collect();
        let mut b: Channels<char> = Channels::default();
        assert!(b.arrive(1, f[2].clone()).deliver.is_empty());
        assert_eq!(b.arrive(1, f[0].clone()).deliver, vec!['a']);
        let dup = b.arrive(1, f[0].clone());
        assert!(dup.deliver.is_empty() && dup.ignored.unwrap().contains("duplicate"));
        let last = b.arrive(1, f[1].clone());
        assert_eq!(last.deliver, vec!['b', 'c']);
        a.arrive(2, last.ack.unwrap());
        assert!(!a.pending());
    }

    #[test]
    fn unacknowledged_items_are_sent_again_after_the_period() {
        let mut a: Channels<char> = Channels::default();
        a.send(2, 'a', T);
        let rto = Duration::from_millis(100);
        assert!(a.due(Duration::from_millis(50), rto).is_empty());
        let again = a.due(Duration::from_millis(100), rto);
        assert_eq!(again.len(), 1);
        assert_eq!(data(&again[0].1), (0, 1));
        assert!(
            a.due(Duration::from_millis(150), rto).is_empty(),
            "not before another period"
        );
    }

    #[test]
    fn a_restarted_receiver_gets_a_new_incarnation_numbered_from_one() {
        let mut a: Channels<char> = Channels::default();
        let mut b: Channels<char> = Channels::default();
        for c in "ab".chars() {
            let f = a.send(2, c, T);
            let ack = b.arrive(1, f).ack.unwrap();
            a.arrive(2, ack);
        }
        let lost = a.send(2, 'c', T);
        // b restarts: a fresh process; a learns it and drops what the old boot never took.
        let mut b: Channels<char> = Channels::default();
        assert_eq!(a.peer_restarted(2), vec!['c']);
        // The old incarnation's item reaches the new boot first: held, then superseded.
        assert!(b.arrive(1, lost).deliver.is_empty());
        let f = a.send(2, 'x', T);
        assert_eq!(data(&f), (1, 1));
        assert_eq!(b.arrive(1, f).deliver, vec!['x']);
        // A straggler of the old incarnation is stale now.
        let stale = b.arrive(
            1,
            Frame::Data {
                inc: 0,
                n: 1,
                item: 'z',
            },
        );
        assert!(stale.deliver.is_empty() && stale.ack.is_none());
    }

    #[test]
    fn a_restarted_sender_numbers_from_one_again_and_is_heard() {
        let mut a: Channels<char> = Channels::default();
        let mut b: Channels<char> = Channels::default();
        for c in "abc".chars() {
            b.arrive(1, a.send(2, c, T));
        }
        // a restarts: its new boot numbers the channel from 1 in incarnation 0.
        let mut a: Channels<char> = Channels::default();
        b.peer_restarted(1);
        assert_eq!(b.arrive(1, a.send(2, 'n', T)).deliver, vec!['n']);
    }
}
