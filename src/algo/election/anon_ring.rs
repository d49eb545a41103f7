//! The course's "Ring 1": election on an anonymous unidirectional ring, where nodes have no ids
//! to compare. Each node is Seguidor (follower), Candidato (candidate), Eleito (elected) or
//! Empossado (installed).
//!
//! Rules (state starts as Seguidor in every term):
//! - start, in the first election of an initiator: become Candidato at once; send TOKEN to the
//!   successor.
//! - start, otherwise (a leader timed out, or no leader appeared): wait a random backoff within
//!   one timeout, then, if no TOKEN or ELECTED of this term arrived meanwhile, become Candidato.
//!   Coin flips are all an anonymous ring has to break symmetry with.
//! - on TOKEN, Seguidor: forward it (and give up a pending candidacy: someone else is running),
//!   unless a TOKEN already passed here this term: swallow it. Each token stops at the next
//!   candidate, so a follower normally sees one; a second is a network duplicate, or a token
//!   that went round because its candidate was skipped as dead, and would otherwise circle
//!   (and, duplicated, multiply) until the term ends.
//! - on TOKEN, Candidato: it must be mine, back from round the ring (a token carries nothing to
//!   tell otherwise): become Eleito; send ELECTED round the ring.
//! - on TOKEN, Eleito or Empossado: swallow it (it ends here, so no token circles for ever).
//! - on ELECTED, Seguidor: follow its sender; forward it (once per term, as for TOKEN).
//! - on ELECTED, Candidato: another node was elected before my token came back: become Seguidor,
//!   follow, forward.
//! - on ELECTED, Eleito: it must be mine, back from round the ring: become Empossado; I lead.
//! - on ELECTED, Empossado: swallow it.
//!
//! No id is ever compared. ELECTED carries its sender's id only as a return address, so that the
//! followers know whose heartbeats to watch. The flaw is the point: with two simultaneous
//! candidates, each takes the other's token for its own, and both end up Empossado in the same
//! term. The checker reports that as a uniqueness violation. The leadership wrapper then makes a
//! leader that hears the other's heartbeat of the same term step down and follow it, and the next
//! election, started after a random backoff, usually has a single candidate.
//!
//! Messages: n TOKEN and n ELECTED per election, however many candidates start at once.

use super::{Ask, Election, ElectionCx};
use crate::algo::{Message, NodeId, Setup};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Anonymous-ring messages.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum AnonMsg {
    /// A candidate's token, identical for every candidate.
    Token,
    /// Someone was elected; the id is only the address followers watch.
    Elected(NodeId),
}

impl Message for AnonMsg {
    fn name(&self) -> &'static str {
        match self {
            AnonMsg::Token => "TOKEN",
            AnonMsg::Elected(_) => "ELECTED",
        }
    }
}

/// The states of the course.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// Follower.
    Seguidor,
    /// Candidate: sent a token, waits for it.
    Candidato,
    /// Elected: its token came back; announces.
    Eleito,
    /// Installed: its announcement came back; leads.
    Empossado,
}

/// The anonymous ring's only timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Backoff;

/// One node's anonymous-ring state.
#[derive(Debug, Clone)]
pub(crate) struct AnonRing {
    state: State,
    /// A TOKEN was already forwarded in this term.
    relayed_token: bool,
    /// An ELECTED was already forwarded in this term.
    relayed_elected: bool,
    /// Waiting for the backoff to end before becoming a candidate.
    pending: bool,
    /// The next start is this initiator's first election.
    first: bool,
}

impl AnonRing {
    #[cfg(test)]
    /// The node's state in the course's words.
    pub fn state(&self) -> State {
        self.state
    }

    fn go(&mut self, cx: &mut ElectionCx<'_, Self>, to: State) {
        let text = format!("{:?} -> {to:?} in term {}", self.state, cx.view().term());
        cx.state_change(text);
        self.state = to;
    }

    fn candidate(&mut self, cx: &mut ElectionCx<'_, Self>) {
        self.pending = false;
        self.go(cx, State::Candidato);
        cx.ask(Ask::SendNext(AnonMsg::Token));
    }
}

impl Election for AnonRing {
    type Msg = AnonMsg;
    type Timer = Backoff;

    fn new(setup: &Setup) -> Self {
        AnonRing {
            state: State::Seguidor,
            relayed_token: false,
            relayed_elected: false,
            pending: false,
            first: setup.initiator,
        }
    }

    fn start(&mut self, cx: &mut ElectionCx<'_, Self>) {
        if std::mem::take(&mut self.first) {
            return self.candidate(cx);
        }
        self.pending = true;
        let t = cx.view().setup().timeout.as_micros() as u64;
        let wait = Duration::from_micros(cx.rng.range(0, t.max(1)));
        cx.set_timer(Backoff, wait);
    }

    fn on_msg(&mut self, cx: &mut ElectionCx<'_, Self>, from: NodeId, msg: AnonMsg) {
        self.pending = false;
        match (msg, self.state) {
            (AnonMsg::Token, State::Seguidor) if std::mem::replace(&mut self.relayed_token, true) => {
                cx.discard(from, "a TOKEN already passed here this term")
            }
            (AnonMsg::Token, State::Seguidor) => cx.ask(Ask::SendNext(AnonMsg::Token)),
            // Woken from a stall into this term: claim a fresh one instead (see Leadership).
            (AnonMsg::Token, State::Candidato) if !cx.view().may_claim() => cx.ask(Ask::StartElection),
            (AnonMsg::Token, State::Candidato) => {
                self.go(cx, State::Eleito);
                let me = cx.me;
                cx.ask(Ask::SendNext(AnonMsg::Elected(me)));
            }
            (AnonMsg::Token, _) => cx.discard(from, "TOKEN reached an elected node: it ends here"),
            (AnonMsg::Elected(_), State::Seguidor) if self.relayed_elected => {
                cx.discard(from, "an ELECTED already passed here this term")
            }
            (AnonMsg::Elected(l), State::Seguidor | State::Candidato) => {
                self.relayed_elected = true;
                if self.state == State::Candidato {
                    self.go(cx, State::Seguidor);
                }
                cx.ask(Ask::Elected(l));
                cx.ask(Ask::SendNext(AnonMsg::Elected(l)));
            }
            (AnonMsg::Elected(_), State::Eleito) => {
                self.go(cx, State::Empossado);
                let me = cx.me;
                cx.ask(Ask::Elected(me));
            }
            (AnonMsg::Elected(_), State::Empossado) => {
                cx.discard(from, "ELECTED reached an installed node: it ends here")
            }
        }
    }

    fn on_timer(&mut self, cx: &mut ElectionCx<'_, Self>, _: Backoff) {
        if self.pending && self.state == State::Seguidor && cx.view().leader().is_none() {
            self.candidate(cx);
        }
    }

    fn reset(&mut self) {
        self.state = State::Seguidor;
        self.relayed_token = false;
        self.relayed_elected = false;
        self.pending = false;
    }
}

#[cfg(test)]
mod tests {
    use super::{AnonRing, State};
    use crate::algo::election::testkit::{elect, self_declared, sim_net};
    use crate::algo::NodeId;
    use crate::sim::ring;
    use std::time::Duration;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    #[test]
    fn a_single_candidate_is_installed_with_n_tokens_and_n_announcements() {
        for n in [2u64, 5, 12] {
            let ids: Vec<NodeId> = (1..=n).rev().collect();
            for c in [1, n] {
                let mut s = sim_net::<AnonRing>(ring(&ids, &[c]), 1, 1, 0.0);
                assert_eq!(elect(&mut s, None), c, "n={n}");
                s.run_for(ms(50));
                assert_eq!(s.sent("TOKEN") as u64, n, "n={n}");
                assert_eq!(s.sent("ELECTED") as u64, n, "n={n}");
                assert_eq!(s.node(c).protocol().state(), State::Empossado);
                assert!(ids
                    .iter()
                    .filter(|&&i| i != c)
                    .all(|&i| s.node(i).protocol().state() == State::Seguidor));
            }
        }
    }

    #[test]
    fn two_simultaneous_candidates_both_declare_themselves_leader_of_one_term() {
        let ids = [1, 2, 3, 4, 5, 6];
        let mut s = sim_net::<AnonRing>(ring(&ids, &[2, 5]), 1, 1, 0.0);
        s.run_for(ms(20));
        // Each took the other's token for its own, and the other's announcement too.
        assert_eq!(s.node(2).protocol().state(), State::Empossado);
        assert_eq!(s.node(5).protocol().state(), State::Empossado);
        assert_eq!(s.node(2).belief(), (1, Some(2)));
        assert_eq!(s.node(5).belief(), (1, Some(5)));
        assert_eq!(self_declared(&s).get(&1).cloned(), Some([2, 5].into()));
        // Followers between them follow the one whose announcement reached them.
        assert_eq!(s.node(3).belief(), (1, Some(2)));
        assert_eq!(s.node(6).belief(), (1, Some(5)));
        assert_eq!(s.sent("TOKEN"), 6);
        assert_eq!(s.sent("ELECTED"), 6);
        // Heartbeats of the same term expose the conflict; a later term settles on one leader.
        elect(&mut s, None);
        assert!(s
            .events("step_down")
            .iter()
            .any(|r| matches!(r.node, Some(2) | Some(5))));
    }

    #[test]
    fn every_node_a_candidate_every_node_installed() {
        let ids: Vec<NodeId> = (1..=5).collect();
        let mut s = sim_net::<AnonRing>(ring(&ids, &ids), 1, 1, 0.0);
        s.run_for(ms(20));
        assert_eq!(self_declared(&s).get(&1).map(|w| w.len()), Some(5));
    }

    #[test]
    fn crash_of_the_leader_leads_to_a_new_leader_after_random_backoffs() {
        for seed in 0..40 {
            let ids: Vec<NodeId> = (1..=7).collect();
            let mut s = sim_net::<AnonRing>(ring(&ids, &[3]), seed, 3, 0.0);
            assert_eq!(elect(&mut s, None), 3, "seed {seed}");
            s.crash(3);
            let l = elect(&mut s, Some(3));
            assert_ne!(l, 3);
            s.crash(l);
            elect(&mut s, Some(l));
        }
    }

    #[test]
    fn nobody_initiating_still_elects_someone() {
        for seed in 0..40 {
            let ids: Vec<NodeId> = (1..=6).collect();
            let mut s = sim_net::<AnonRing>(ring(&ids, &[]), seed, 1, 0.0);
            elect(&mut s, None);
        }
    }

    #[test]
    fn message_loss_and_duplication_are_survived() {
        for seed in 0..40 {
            let ids: Vec<NodeId> = (1..=6).collect();
            let mut s = sim_net::<AnonRing>(ring(&ids, &[4]), seed, 4, 0.1);
            elect(&mut s, None);
        }
    }
}
