//! Whom a voting protocol asks and how many votes it needs (a [`Ballot`]), and the [`Voter`]
//! that runs the shared [`Voting`] rules with it: [`quorum`](super::quorum) and
//! [`maekawa`](super::maekawa) are both a `Voter` and differ only in their ballot.
//!
//! With `--set detector=fixed|phi|swim` (the family's detector,
//! [`peer_watch`](super::peer_watch)) a voter takes its vote back from a node taken for dead
//! and drops that node's queued requests, so that a holder that died keeps no vote for ever;
//! and a participant whose quorum holds a node taken for dead moves its request to a quorum
//! without it, where the ballot can build one ([`Ballot::avoiding`]: Maekawa's grid can, the
//! majority needs none). A node only slow, taken for dead while it held, then holds beside the
//! next one: fencing refuses the stale write. Without the key there is no detector and no
//! detector traffic.

use super::peer_watch::{self, PeerWatch};
use super::voting::{Durable, VoteMsg, Voting};
use super::wrapper::{MutexCx, Protocol};
use crate::algo::detector::{LiveMsg, LiveTimer};
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
    /// The algorithm's name, as errors and the log give it.
    const NAME: &'static str;
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
    /// Whether a request waiting on a voter taken for dead moves to another quorum
    /// ([`Ballot::avoiding`]); the majority waits on no voter in particular.
    const MOVES: bool = false;
    /// A quorum of participant `me` with none of the voters `avoid` picks, every vote of it
    /// needed, meeting every quorum of the ballot; None when none is left.
    fn avoiding(_peers: &[NodeId], _me: NodeId, _avoid: &dyn Fn(NodeId) -> bool) -> Option<Vec<NodeId>> {
        None
    }
}

/// A participant and voter of a voting protocol with ballot `B`.
#[derive(Debug, Clone)]
pub struct Voter<B> {
    /// The voting state.
    pub voting: Voting,
    retry: Duration,
    /// The quorum the ballot gives this node and the votes it needs: every request starts
    /// with them.
    home: (Vec<NodeId>, usize),
    /// The failure detector, when `--set detector` asks for one.
    watch: Option<Box<PeerWatch<VoterLive>>>,
    /// The voters the pending request's quorum was last built without (told in the log when
    /// it changes).
    skipped: Vec<NodeId>,
    ballot: PhantomData<B>,
}

/// The timers of the voting protocols.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VoterTimer {
    /// Ask again the voters whose vote is missing.
    Retry,
    /// The failure detector's (with `--set detector`).
    Live(LiveTimer),
}

crate::algo::compose::slot! {
    /// The detector's slot in the voting protocols' messages and timers.
    pub(super) struct VoterLive;
    impl for VoteMsg, VoterTimer: LiveMsg => VoteMsg::Live, LiveTimer => VoterTimer::Live
}

/// What a restarted voter persisted, if anything.
fn restored(setup: &Setup) -> Option<Durable> {
    setup.durable.as_ref().and_then(|b| serde_json::from_slice(b).ok())
}

impl<B: Ballot> Protocol for Voter<B> {
    const RELIABLE: bool = B::RELIABLE;
    type Msg = VoteMsg;
    type Timer = VoterTimer;

    fn new(setup: &Setup, peers: &[NodeId]) -> Self {
        let (voters, need) = B::ballot(setup, peers);
        let durable = VoterOptions::read(setup).durable;
        Voter {
            home: (voters.clone(), need),
            voting: Voting::new(setup.me, voters, need, durable, restored(setup)),
            retry: setup.timeout,
            watch: peer_watch::wanted(setup).then(|| Box::new(PeerWatch::new(setup, peers))),
            skipped: Vec::new(),
            ballot: PhantomData,
        }
    }

    fn check(setup: &Setup) -> Result<(), String> {
        VoterOptions::from_setup(setup)?;
        peer_watch::check_keys(setup, B::NAME)?;
        B::check(setup)
    }

    fn on_link(msg: &VoteMsg) -> bool {
        !matches!(msg, VoteMsg::Live(_))
    }

    fn start(&mut self, cx: &mut MutexCx<'_, Self>) {
        self.voting.start(cx);
        if let Some(w) = &mut self.watch {
            w.start(cx);
        }
    }

    fn request(&mut self, cx: &mut MutexCx<'_, Self>, req: u64) {
        peer_watch::handle(self, cx, |me, cx| {
            if let Some(w) = me.watch.as_deref() {
                (me.voting.quorum, me.voting.need) = me.home.clone();
                let me_id = cx.me;
                if !cx.view().peers.iter().any(|&v| v != me_id && w.takes_for_dead(v)) {
                    w.tell_skips(cx, Vec::new(), &mut me.skipped, "", "asking its own quorum again");
                }
            }
            me.voting.request(cx, req);
            cx.set_timer(VoterTimer::Retry, me.retry);
        });
    }

    fn release(&mut self, cx: &mut MutexCx<'_, Self>, req: u64) {
        peer_watch::handle(self, cx, |me, cx| me.voting.release(cx, req));
    }

    fn on_msg(&mut self, cx: &mut MutexCx<'_, Self>, from: NodeId, msg: VoteMsg) {
        peer_watch::handle(self, cx, |me, cx| {
            let live = match &msg {
                VoteMsg::Live(m) => Some(m),
                _ => None,
            };
            PeerWatch::hear(&mut me.watch, cx, from, live, B::NAME);
            me.voting.on_msg(cx, from, msg);
        });
    }

    fn peer_restarted(&mut self, cx: &mut MutexCx<'_, Self>, peer: NodeId) {
        peer_watch::handle(self, cx, |me, cx| me.voting.peer_restarted(cx, peer));
    }

    fn on_timer(&mut self, cx: &mut MutexCx<'_, Self>, t: VoterTimer) {
        match t {
            VoterTimer::Retry => peer_watch::handle(self, cx, |me, cx| {
                if me.voting.retry(cx) {
                    cx.set_timer(VoterTimer::Retry, me.retry);
                }
            }),
            VoterTimer::Live(t) => peer_watch::on_timer(self, cx, t),
        }
    }
}

impl<B> Voter<B> {
    /// The detector (tests read its opinions).
    #[cfg(test)]
    pub(super) fn watch(&self) -> Option<&PeerWatch<VoterLive>> {
        self.watch.as_deref()
    }
}

impl<B: Ballot> peer_watch::Hosted for Voter<B> {
    type Slot = VoterLive;

    fn watch_mut(&mut self) -> &mut Option<Box<PeerWatch<VoterLive>>> {
        &mut self.watch
    }

    /// The holder of this node's vote while another request waits for it, and where the
    /// request would move off a dead voter ([`Ballot::MOVES`]) the voters whose vote it lacks.
    fn waits_on(&self, _cx: &MutexCx<'_, Self>) -> Vec<NodeId> {
        let mut on = match B::MOVES {
            true => self.voting.missing(),
            false => Vec::new(),
        };
        on.extend(self.voting.awaited_owner());
        on
    }

    /// As voter, takes back its vote from a node taken for dead; as participant, moves a
    /// waiting request off a quorum with a voter taken for dead that it still waits on.
    fn settle(&mut self, cx: &mut MutexCx<'_, Self>) {
        let Some(w) = self.watch.as_deref() else { return };
        let dead = |n: NodeId| w.takes_for_dead(n);
        self.voting.forsake(cx, dead, w.detector());
        if !B::MOVES || !self.voting.missing().into_iter().any(dead) {
            return;
        }
        let me = cx.me;
        let peers = &cx.view().peers;
        let avoid: Vec<NodeId> = peers.iter().copied().filter(|&n| n != me && dead(n)).collect();
        let quorum = B::avoiding(peers, me, &|n| avoid.contains(&n));
        let without = match &quorum {
            Some(q) => format!("asking the quorum {q:?} without them"),
            None => "no quorum is left without them, the request waits".to_string(),
        };
        w.tell_skips(cx, avoid, &mut self.skipped, &without, "asking its own quorum again");
        if let Some(q) = quorum {
            self.voting.requorum(cx, q);
        }
    }
}
