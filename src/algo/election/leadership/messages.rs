//! The leadership wrapper's messages and timers around the protocol's, and the places of its
//! components (liveness, ring repair; majority mode's are in `majority`) in them.

use super::*;

/// The wrapper's messages around the protocol's.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum LMsg<M> {
    /// The leader is alive, in `term`.
    Heartbeat {
        /// The leader's term.
        term: u64,
    },
    /// Your term is old: this is mine, and who leads it if known.
    Newer {
        /// The newer term.
        term: u64,
        /// Its leader, if decided.
        leader: Option<NodeId>,
    },
    /// A protocol message of `term`; `ack` is nonzero when the sender waits for an ACK.
    Inner {
        /// The sender's term.
        term: u64,
        /// Sequence number to acknowledge, or 0.
        ack: u64,
        /// The protocol's message.
        msg: M,
    },
    /// Acknowledges `Inner` numbers `seqs` (ring repair).
    Ack {
        /// The acknowledged sequence numbers.
        seqs: Vec<u64>,
    },
    /// A leader's heartbeat flooded over a sparse mesh: each node forwards it once.
    Flood {
        /// The leader's term.
        term: u64,
        /// The leader.
        leader: NodeId,
        /// Grows with every heartbeat the leader sends.
        seq: u64,
    },
    /// Majority mode's votes, pre-votes and heartbeat acknowledgements.
    Majority(MajorityMsg),
    /// The liveness detector's PROBE and ALIVE.
    Live(LiveMsg),
}

impl<M> LMsg<M> {
    /// The term a message carries.
    pub(super) fn term(&self) -> Option<u64> {
        match self {
            LMsg::Heartbeat { term }
            | LMsg::Newer { term, .. }
            | LMsg::Inner { term, .. }
            | LMsg::Flood { term, .. } => Some(*term),
            LMsg::Majority(m) => Some(m.term()),
            LMsg::Live(m) => Some(m.epoch()),
            LMsg::Ack { .. } => None,
        }
    }
}

impl<M: Message> Message for LMsg<M> {
    fn name(&self) -> &'static str {
        match self {
            LMsg::Heartbeat { .. } | LMsg::Flood { .. } => "HEARTBEAT",
            LMsg::Newer { .. } => "NEWER",
            LMsg::Inner { msg, .. } => msg.name(),
            LMsg::Ack { .. } => "ACK",
            LMsg::Majority(m) => m.name(),
            LMsg::Live(m) => m.name(),
        }
    }
    fn brief(&self) -> String {
        match self {
            LMsg::Inner { term, msg, .. } => with_term(msg.brief(), *term),
            LMsg::Live(m) => crate::algo::brief_of(m.name(), m),
            LMsg::Majority(m) => crate::algo::brief_of(m.name(), m),
            other => crate::algo::brief_of(other.name(), other),
        }
    }
}

/// `ELECTION(3)` in term 2 is `ELECTION(3, term=2)`; `TOKEN` is `TOKEN(term=2)`.
fn with_term(mut brief: String, term: u64) -> String {
    // In place: a brief goes into every record of a ring's hop, twice.
    if brief.ends_with(')') {
        brief.pop();
        brief.push_str(", term=");
    } else {
        brief.push_str("(term=");
    }
    crate::algo::brief::push_decimal(&mut brief, term);
    brief.push(')');
    brief
}

/// The wrapper's timers around the protocol's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LTimer<T> {
    /// The leader's heartbeat period.
    Heartbeat,
    /// No heartbeat from the leader for a timeout.
    LeaderTimeout,
    /// No leader learned in this term.
    ElectionTimeout,
    /// Ring repair's: no ACK for a ring message, or ACKs to send.
    Ring(RingTimer),
    /// The protocol's own timer.
    Inner(T),
    /// Majority mode's timers.
    Majority(MajorityTimer),
    /// The liveness detector's timers.
    Live(LiveTimer),
    /// The waking window after a stall is over: an election deferred meanwhile may start.
    Settled,
}

crate::algo::compose::slot! {
    /// The liveness detector's place in the wrapper's enums.
    pub(super) struct LiveSlot;
    impl<M, T> for LMsg<M>, LTimer<T>: LiveMsg => LMsg::Live, LiveTimer => LTimer::Live
}

/// Ring repair's place in the wrapper's enums: its hops are the protocol's `Inner` messages.
pub(super) struct RingSlot<M>(PhantomData<M>);

impl<M, T> Embed<LMsg<M>, LTimer<T>> for RingSlot<M> {
    type Msg = RingMsg<M>;
    type Timer = RingTimer;
    fn msg(m: RingMsg<M>) -> LMsg<M> {
        match m {
            RingMsg::Hop { epoch, ack, msg } => LMsg::Inner { term: epoch, ack, msg },
            RingMsg::Ack { seqs } => LMsg::Ack { seqs },
        }
    }
    fn timer(t: RingTimer) -> LTimer<T> {
        LTimer::Ring(t)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_brief_gains_its_term_inside_its_parentheses_or_in_its_own() {
        assert_eq!(super::with_term("ELECTION(3)".into(), 2), "ELECTION(3, term=2)");
        assert_eq!(super::with_term("TOKEN".into(), 2), "TOKEN(term=2)");
    }
}
