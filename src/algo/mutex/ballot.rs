//! Whom a voting protocol asks and how many votes it needs (a [`Ballot`]), and the [`Voter`]
//! that runs the shared [`Voting`] rules with it: [`quorum`](super::quorum) and
//! [`maekawa`](super::maekawa) are both a `Voter` and differ only in their ballot.

use super::voting::{Durable, VoteMsg, Voting};
use super::wrapper::{MutexCx, Protocol};
use crate::algo::options::{options, Kind};
use crate::algo::{NodeId, Setup};
use std::marker::PhantomData;
use std::time::Duration;

options! {
    /// The keys of every voting protocol (quorum's coordinators, Maekawa's voters).
    pub(crate) struct VoterOptions {
        durable: bool = false, Kind::Bool,
            "coordinators persist their grant, stored before they answer; also --durable";
    }
}

/// Whom a voting protocol asks, and how many votes it needs.
pub(crate) trait Ballot {
    /// Whether the protocol's rules assume reliable FIFO channels (Maekawa's do): its messages
    /// then ride the shared reliable layer ([`Protocol::RELIABLE`]).
    const RELIABLE: bool = false;
    /// The voters participant `setup.me` asks among `peers` (in ring order), and the votes it
    /// needs; `setup` was checked by [`Ballot::check`].
    fn ballot(setup: &Setup, peers: &[NodeId]) -> (Vec<NodeId>, usize);
    /// Checks the ballot's own options; the error is one line.
    fn check(_setup: &Setup) -> Result<(), String> {
        Ok(())
    }
}

/// A participant and voter of a voting protocol with ballot `B`.
#[derive(Debug, Clone)]
pub struct Voter<B> {
    /// The voting state.
    pub voting: Voting,
    retry: Duration,
    ballot: PhantomData<B>,
}

/// The retry timer of the voting protocols.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Retry;

/// What a restarted voter persisted, if anything.
fn restored(setup: &Setup) -> Option<Durable> {
    setup.durable.as_ref().and_then(|b| serde_json::from_slice(b).ok())
}

impl<B: Ballot> Protocol for Voter<B> {
    const RELIABLE: bool = B::RELIABLE;
    type Msg = VoteMsg;
    type Timer = Retry;

    fn new(setup: &Setup, peers: &[NodeId]) -> Self {
        let (voters, need) = B::ballot(setup, peers);
        let durable = VoterOptions::read(setup).durable;
        Voter {
            voting: Voting::new(setup.me, voters, need, durable, restored(setup)),
            retry: setup.timeout,
            ballot: PhantomData,
        }
    }

    fn check(setup: &Setup) -> Result<(), String> {
        VoterOptions::from_setup(setup)?;
        B::check(setup)
    }

    fn start(&mut self, cx: &mut MutexCx<'_, Self>) {
        self.voting.start(cx);
    }

    fn request(&mut self, cx: &mut MutexCx<'_, Self>, req: u64) {
        self.voting.request(cx, req);
        cx.set_timer(Retry, self.retry);
    }

    fn release(&mut self, cx: &mut MutexCx<'_, Self>, req: u64) {
        self.voting.release(cx, req);
    }

    fn on_msg(&mut self, cx: &mut MutexCx<'_, Self>, from: NodeId, msg: VoteMsg) {
        self.voting.on_msg(cx, from, msg);
    }

    fn peer_restarted(&mut self, cx: &mut MutexCx<'_, Self>, peer: NodeId) {
        self.voting.peer_restarted(cx, peer);
    }

    fn on_timer(&mut self, cx: &mut MutexCx<'_, Self>, _t: Retry) {
        if self.voting.retry(cx) {
            cx.set_timer(Retry, self.retry);
        }
    }
}
