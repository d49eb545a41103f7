//! A `send` and a `recv` read alike, and built by one constructor: the trace schema keeps the
//! two variants (`to` and `from`), the code that handles both goes through here.

use super::{Event, NodeId};

/// A `send` or a `recv` seen alike: which way it went, the other end, and the message.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Datagram<'a> {
    /// Sent (`to` the peer) rather than received (`from` it).
    pub sent: bool,
    /// The other end.
    pub peer: NodeId,
    /// The message type.
    pub msg: &'a str,
    /// Its size on the wire.
    pub bytes: usize,
    /// The sender's per-boot sequence number.
    pub seq: u64,
    /// The message in brief; empty in older traces.
    pub brief: &'a str,
}

impl Event {
    /// A `send` or `recv` event, from its parts.
    pub(crate) fn datagram_event(
        sent: bool,
        peer: NodeId,
        msg: String,
        bytes: usize,
        seq: u64,
        brief: String,
    ) -> Event {
        match sent {
            true => Event::Send {
                to: peer,
                msg,
                bytes,
                seq,
                brief,
            },
            false => Event::Recv {
                from: peer,
                msg,
                bytes,
                seq,
                brief,
            },
        }
    }

    /// The event's datagram, if it is a `send` or a `recv`.
    pub(crate) fn datagram(&self) -> Option<Datagram<'_>> {
        let (sent, peer, msg, bytes, seq, brief) = match self {
            Event::Send {
                to,
                msg,
                bytes,
                seq,
                brief,
            } => (true, to, msg, bytes, seq, brief),
            Event::Recv {
                from,
                msg,
                bytes,
                seq,
                brief,
            } => (false, from, msg, bytes, seq, brief),
            _ => return None,
        };
        Some(Datagram {
            sent,
            peer: *peer,
            msg,
            bytes: *bytes,
            seq: *seq,
            brief,
        })
    }
}
