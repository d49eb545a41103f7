//! Several messages to one node in one datagram.
//!
//! A step of a broadcasting algorithm often sends two messages to the same node: a
//! Ricart-Agrawala node leaving the section answers the requests it deferred and, thinking no
//! time, sends its next REQUEST to the same nodes; a Lamport node's RELEASE and its next
//! REQUEST go to every peer. Each datagram costs a send, a receive and a wake-up of its
//! receiver, far more than the message's own bytes, so the messages of one step to one node
//! leave in one datagram:
//!
//! ```text
//! BUNDLE u8 | len u16 | message | len u16 | message | ...
//! ```
//!
//! (lengths little-endian). Each message in it is a whole sealed message as
//! [`wire`](super::wire) makes it -- its own header, sequence number, clocks and MAC -- so a
//! receiver checks and handles each one as if it had come alone, and the trace's `send` and
//! `recv` records are the messages', not the datagram's. The network acts on datagrams: a lost
//! bundle loses every message in it (the reliable layer sends each again).
//!
//! The datagram takes the place of the first of its messages among the step's datagrams, so
//! no message leaves later than its place in the step, though a later one may leave before an
//! earlier one to another node. A network promises no order between two destinations, and the
//! algorithms assume none; but the order in which the shared resource hears BEGIN and END is
//! the lab's evidence of who held it. Such a message is a *fence* ([`Message::fence`]): it
//! leaves alone, after every datagram of the messages before it and before every one of the
//! messages after it. (Without the fence, a Lamport node whose acknowledgement timer and
//! section's end came due together sent its RELEASE to a peer in the datagram of the CH_ACK
//! before its END: the peer's BEGIN reached the resource first, and the resource saw two
//! holders.)
//!
//! [`Message::fence`]: crate::algo::Message::fence

use super::wire::{WireError, HEADER_LEN, MAC_LEN, MAX_DATAGRAM, VERSION};
use crate::trace::NodeId;
use rustc_hash::FxHashMap;

/// The first byte of a bundle; a single message begins with [`VERSION`].
pub(crate) const BUNDLE: u8 = 0x80 | VERSION;
/// The bytes a message's length takes in a bundle.
const LEN: usize = 2;

/// The messages of datagram `bytes`, in order: the datagram itself when it is not a bundle.
/// A bundle whose framing breaks yields an error for the rest of it, and nothing after.
pub(crate) fn parts(bytes: &[u8]) -> Parts<'_> {
    match bytes.first() {
        Some(&BUNDLE) if bytes.len() > MAX_DATAGRAM => Parts::Broken(Some(WireError::TooLarge(bytes.len()))),
        Some(&BUNDLE) if bytes.len() == 1 => Parts::Broken(Some(WireError::Bundle("no message in it".into()))),
        Some(&BUNDLE) => Parts::Bundle(&bytes[1..]),
        _ => Parts::One(Some(bytes)),
    }
}

/// What [`parts`] returns.
pub(crate) enum Parts<'a> {
    /// A single message, until taken.
    One(Option<&'a [u8]>),
    /// A bundle's messages not yet read.
    Bundle(&'a [u8]),
    /// A bundle refused, until told.
    Broken(Option<WireError>),
}

impl<'a> Iterator for Parts<'a> {
    type Item = Result<&'a [u8], WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Parts::One(b) => b.take().map(Ok),
            Parts::Broken(e) => e.take().map(Err),
            Parts::Bundle([]) => None,
            Parts::Bundle(rest) => {
                let r = *rest;
                let len = match r {
                    [a, b, ..] => usize::from(u16::from_le_bytes([*a, *b])),
                    _ => usize::MAX,
                };
                let why = if len > r.len().saturating_sub(LEN) {
                    format!(
                        "a message's length runs past the datagram's end ({} bytes left)",
                        r.len()
                    )
                } else if len < HEADER_LEN + MAC_LEN {
                    // Shorter than any sealed message: refused with the rest, so that a bundle
                    // of empty messages costs no more checks a byte than small datagrams do.
                    format!("a message of {len} bytes, shorter than a header and a MAC")
                } else {
                    *rest = &r[LEN + len..];
                    return Some(Ok(&r[LEN..LEN + len]));
                };
                *self = Parts::Broken(None);
                Some(Err(WireError::Bundle(why)))
            }
        }
    }
}

/// A message of a step: its destination, its sealed bytes, whether it is a fence.
pub(crate) type Msg<'a> = (NodeId, &'a [u8], bool);

/// Where a datagram of a step comes from.
#[derive(Clone, Copy)]
enum Source {
    /// One message, sent as it is: its index among the step's.
    One(usize),
    /// A bundle: its buffer.
    Many(usize),
}

/// Packs a step's messages into datagrams; its buffers are kept from one step to the next,
/// so a warm node allocates nothing here.
#[derive(Default)]
pub(crate) struct Packer {
    bufs: Vec<Vec<u8>>,
    plan: Vec<(NodeId, Source)>,
    /// The datagram each destination's next message may join.
    open: FxHashMap<NodeId, usize>,
}

impl Packer {
    /// The datagrams of `msgs` (destination, sealed message, whether it is a fence), in the
    /// order of their first message: each destination's messages together between fences, as
    /// many to a datagram as fit.
    pub fn pack<'a>(&'a mut self, msgs: &'a [Msg<'a>]) -> impl Iterator<Item = (NodeId, &'a [u8])> + 'a {
        self.plan.clear();
        if msgs.len() < 2 {
            self.plan.extend(msgs.iter().map(|&(to, _, _)| (to, Source::One(0))));
        } else {
            self.group(msgs);
        }
        let bufs = &self.bufs;
        self.plan.iter().map(move |&(to, src)| match src {
            Source::One(k) => (to, msgs[k].1),
            Source::Many(m) => (to, bufs[m].as_slice()),
        })
    }

    fn group(&mut self, msgs: &[Msg<'_>]) {
        self.open.clear();
        let mut used = 0;
        for (i, &(to, b, fence)) in msgs.iter().enumerate() {
            if fence {
                // Nothing after it joins a datagram before it, nor its own.
                self.open.clear();
                self.plan.push((to, Source::One(i)));
                continue;
            }
            let joined = match self.open.get(&to).map(|&d| (d, self.plan[d].1)) {
                Some((d, Source::One(k))) if fits(1 + LEN + msgs[k].1.len(), b) => {
                    if self.bufs.len() == used {
                        self.bufs.push(Vec::new());
                    }
                    let buf = &mut self.bufs[used];
                    buf.clear();
                    buf.push(BUNDLE);
                    put(buf, msgs[k].1);
                    put(buf, b);
                    self.plan[d].1 = Source::Many(used);
                    used += 1;
                    true
                }
                Some((_, Source::Many(m))) if fits(self.bufs[m].len(), b) => {
                    put(&mut self.bufs[m], b);
                    true
                }
                _ => false,
            };
            if !joined {
                self.open.insert(to, self.plan.len());
                self.plan.push((to, Source::One(i)));
            }
        }
    }
}

/// Whether message `b` fits in a bundle of `len` bytes so far.
fn fits(len: usize, b: &[u8]) -> bool {
    len + LEN + b.len() <= MAX_DATAGRAM
}

fn put(buf: &mut Vec<u8>, b: &[u8]) {
    // A sealed message is at most MAX_DATAGRAM (32 KiB) bytes: its length fits in two.
    buf.extend_from_slice(&(b.len() as u16).to_le_bytes());
    buf.extend_from_slice(b);
}

#[cfg(test)]
#[path = "bundle_tests.rs"]
mod tests;
