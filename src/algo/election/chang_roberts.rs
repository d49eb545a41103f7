//! Chang-Roberts election on a unidirectional ring (Chang & Roberts 1979), with the second
//! round that announces the winner to everyone.
//!
//! Rules (each node: `participant`, initially false):
//! - start: participant := true; send ELECTION(me) to the successor.
//! - on ELECTION(j), when this term is already decided: ignore it, tell the sender the leader.
//! - on ELECTION(j), j > me: participant := true; forward ELECTION(j).
//! - on ELECTION(j), j < me: if not participant: participant := true; send ELECTION(me);
//!   otherwise swallow it (a larger candidate of ours is already on its way).
//! - on ELECTION(j), j = me: my id went all the way round: I lead; send ELECTED(me).
//! - on ELECTED(j), j != me: j leads; participant := false; forward ELECTED(j).
//! - on ELECTED(me): the announcement has been round: done.
//!
//! Messages: with every node initiating, 2n-1 ELECTION messages when the ids increase along
//! the ring (best: each id dies at the next node, the largest goes all round), n(n+1)/2 when
//! they decrease (worst), about n*H_n on average; then n ELECTED.
//! Terms, heartbeats and skipping dead successors come from [`Leadership`](super::Leadership).
//! Both messages carry a candidate's id: one whose candidate is suspected (not in the repaired
//! ring) dies where it is, so no ELECTION circles a shrunken ring for ever.

use super::{Ask, Election, ElectionCx};
use crate::algo::{Brief, Message, NodeId, Setup};
use serde::{Deserialize, Serialize};

/// Chang-Roberts messages.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum CrMsg {
    /// A candidate's id travelling round the ring.
    Election(NodeId),
    /// The winner, announced round the ring.
    Elected(NodeId),
}

impl Message for CrMsg {
    fn name(&self) -> &'static str {
        match self {
            CrMsg::Election(_) => "ELECTION",
            CrMsg::Elected(_) => "ELECTED",
        }
    }
    /// By hand: two briefs a hop (see `algo::Brief`).
    fn brief(&self) -> String {
        let (CrMsg::Election(id) | CrMsg::Elected(id)) = self;
        Brief::new(self.name()).value(*id).done()
    }
}

/// One node's Chang-Roberts state.
#[derive(Debug, Clone)]
pub struct ChangRoberts {
    participant: bool,
}

impl Election for ChangRoberts {
    type Msg = CrMsg;
    type Timer = ();

    fn new(_setup: &Setup) -> Self {
        ChangRoberts { participant: false }
    }

    fn start(&mut self, cx: &mut ElectionCx<'_, Self>) {
        self.participant = true;
        let me = cx.me;
        cx.ask(Ask::SendNext(CrMsg::Election(me)));
    }

    fn on_msg(&mut self, cx: &mut ElectionCx<'_, Self>, from: NodeId, msg: CrMsg) {
        let me = cx.me;
        if matches!(msg, CrMsg::Election(_)) && cx.refuse_if_decided(from) {
            return;
        }
        match msg {
            CrMsg::Election(j) if j > me => {
                cx.note(format!("forwarded ELECTION({j}): {j} > my id {me}"));
                self.participant = true;
                cx.ask(Ask::SendNext(CrMsg::Election(j)));
            }
            CrMsg::Election(j) if j < me => {
                if !self.participant {
                    cx.note(format!("ELECTION({j}) replaced by ELECTION({me}): {j} < my id {me}"));
                    self.participant = true;
                    cx.ask(Ask::SendNext(CrMsg::Election(me)));
                } else {
                    cx.note(format!("ELECTION({j}) swallowed: {j} < my id {me}"));
                }
            }
            // Woken from a stall into this term: claim a fresh one instead (see Leadership).
            CrMsg::Election(_) if !cx.view().may_claim() => cx.ask(Ask::StartElection),
            CrMsg::Election(_) => {
                cx.note(format!("my ELECTION({me}) came back round: I lead"));
                cx.ask(Ask::Elected(me));
                cx.ask(Ask::SendNext(CrMsg::Elected(me)));
            }
            CrMsg::Elected(j) if j == me => {}
            CrMsg::Elected(j) => {
                self.participant = false;
                cx.ask(Ask::Elected(j));
                cx.ask(Ask::SendNext(CrMsg::Elected(j)));
            }
        }
    }

    fn reset(&mut self) {
        self.participant = false;
    }

    fn node_named_by(msg: &CrMsg) -> Option<NodeId> {
        match msg {
            CrMsg::Election(j) | CrMsg::Elected(j) => Some(*j),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::algo::election::Leadership;
    use crate::algo::NodeId;
    use crate::sim::{ring, NetConfig, Sim};
    use std::time::Duration;

    type Cr = Leadership<super::ChangRoberts>;

    fn sim(ids: &[NodeId], initiators: &[NodeId], seed: u64) -> Sim<Cr> {
        let net = NetConfig {
            seed,
            ..NetConfig::default()
        };
        Sim::new(net, ring(ids, initiators), Cr::new)
    }

    /// Runs until every live node knows a leader; returns the leader all agree on.
    fn elect(s: &mut Sim<Cr>) -> NodeId {
        elect_other_than(s, 0)
    }

    /// Runs until every live node agrees on one leader other than `old`.
    fn elect_other_than(s: &mut Sim<Cr>, old: NodeId) -> NodeId {
        let limit = s.now() + Duration::from_secs(30);
        let done = s.run_until(limit, |s| {
            let b: Vec<_> = s.live().iter().map(|&i| s.node(i).belief()).collect();
            b[0].1.is_some_and(|l| l != old) && b.iter().all(|x| *x == b[0])
        });
        assert!(done, "no agreement by {limit:?}");
        s.node(s.live()[0]).belief().1.unwrap()
    }

    fn all(n: u64) -> Vec<NodeId> {
        (1..=n).collect()
    }

    #[test]
    fn best_case_ids_increasing_along_the_ring() {
        for n in [3u64, 8, 20] {
            let ids = all(n);
            let mut s = sim(&ids, &ids, 1);
            assert_eq!(elect(&mut s), n);
            s.run_for(Duration::from_millis(50));
            assert_eq!(s.sent("ELECTION") as u64, 2 * n - 1, "n={n}");
            assert_eq!(s.sent("ELECTED") as u64, n, "n={n}");
        }
    }

    #[test]
    fn worst_case_ids_decreasing_along_the_ring() {
        for n in [3u64, 8, 20] {
            let ids: Vec<_> = all(n).into_iter().rev().collect();
            let mut s = sim(&ids, &ids, 1);
            assert_eq!(elect(&mut s), n);
            s.run_for(Duration::from_millis(50));
            assert_eq!(s.sent("ELECTION") as u64, n * (n + 1) / 2, "n={n}");
            assert_eq!(s.sent("ELECTED") as u64, n);
        }
    }

    #[test]
    fn decisions_and_contents_are_written_in_words() {
        use crate::trace::Event;
        // Ring 3 -> 2 -> 1, all start: ELECTION(1) and ELECTION(2) both die at node 3.
        let mut s = sim(&[3, 2, 1], &[3, 2, 1], 1);
        assert_eq!(elect(&mut s), 3);
        let notes: Vec<(u64, String)> = s
            .events("note")
            .iter()
            .filter_map(|r| match &r.event {
                Event::Note { text, .. } => Some((r.node.unwrap(), text.clone())),
                _ => None,
            })
            .collect();
        assert!(
            notes.contains(&(3, "ELECTION(1) swallowed: 1 < my id 3".into())),
            "{notes:?}"
        );
        assert!(
            notes.contains(&(3, "ELECTION(2) swallowed: 2 < my id 3".into())),
            "{notes:?}"
        );
        assert!(
            notes.contains(&(3, "my ELECTION(3) came back round: I lead".into())),
            "{notes:?}"
        );
        let briefs: Vec<String> = s
            .events("send")
            .iter()
            .filter_map(|r| match &r.event {
                Event::Send { brief, .. } if r.node == Some(3) => Some(brief.clone()),
                _ => None,
            })
            .collect();
        assert!(briefs.contains(&"ELECTION(3, term=1)".to_string()), "{briefs:?}");
        assert!(briefs.contains(&"ELECTED(3, term=1)".to_string()), "{briefs:?}");
    }

    #[test]
    fn single_initiator_goes_round_to_the_max_then_once_more() {
        // Ring 3 -> 7 -> 1 -> 5 -> 8 -> 2 -> 6 -> 4; only 1 starts. Its id is replaced by 5, then 8;
        // 8's id goes the full ring: 2 hops (1->5->8) + 8 hops = 10 ELECTION messages.
        let ids = [3, 7, 1, 5, 8, 2, 6, 4];
        let mut s = sim(&ids, &[1], 1);
        assert_eq!(elect(&mut s), 8);
        s.run_for(Duration::from_millis(50));
        assert_eq!(s.sent("ELECTION"), 10);
        assert_eq!(s.sent("ELECTED"), 8);
        // Every node joined term 1 and no node started a second election.
        assert_eq!(s.events("election_start").len(), 8);
        assert!(s
            .events("leader")
            .iter()
            .all(|r| matches!(r.event, crate::trace::Event::Leader { leader: 8, term: 1 })));
    }

    #[test]
    fn average_over_random_arrangements_is_close_to_n_h_n() {
        let n = 32u64;
        let h: f64 = (1..=n).map(|k| 1.0 / k as f64).sum();
        let mut rng = crate::rng::Rng::new(7);
        let trials = 40;
        let mut total = 0;
        for seed in 0..trials {
            let mut ids = all(n);
            rng.shuffle(&mut ids);
            let mut s = sim(&ids, &ids, seed);
            assert_eq!(elect(&mut s), n);
            s.run_for(Duration::from_millis(50));
            total += s.sent("ELECTION");
        }
        let avg = total as f64 / trials as f64;
        let expect = n as f64 * h;
        assert!((avg - expect).abs() / expect < 0.15, "average {avg}, n*H_n = {expect}");
    }

    #[test]
    fn crashes_mid_election_still_terminate_with_the_highest_live_id() {
        for seed in 0..20 {
            let mut ids = all(10);
            crate::rng::Rng::new(seed).shuffle(&mut ids);
            let net = NetConfig {
                seed,
                min_delay: Duration::from_millis(1),
                max_delay: Duration::from_millis(5),
                ..NetConfig::default()
            };
            let mut s = Sim::new(net, ring(&ids, &ids), Cr::new);
            s.run_for(Duration::from_millis(3));
            s.crash(10);
            s.crash(9);
            assert_eq!(elect(&mut s), 8, "seed {seed}");
        }
    }

    #[test]
    fn paused_leader_wakes_up_and_steps_down_to_the_new_term() {
        let ids = all(8);
        let mut s = sim(&ids, &ids, 3);
        assert_eq!(elect(&mut s), 8);
        s.pause(8);
        assert_eq!(elect_other_than(&mut s, 8), 7);
        let (term7, _) = s.node(7).belief();
        assert!(term7 >= 2);
        // While paused, node 8 still believes it leads its old term.
        assert_eq!(s.node(8).belief(), (1, Some(8)));
        s.run_for(Duration::from_secs(1));
        s.resume(8);
        s.run_for(Duration::from_millis(50));
        assert_eq!(s.node(8).belief(), (term7, Some(7)));
        assert!(s.events("step_down").iter().any(|r| r.node == Some(8)));
        let suspects = s.events("suspect");
        assert!(suspects
            .iter()
            .any(|r| matches!(r.event, crate::trace::Event::Suspect { target: 8, .. })));
        assert_one_leader_per_term(&s);
    }

    fn assert_one_leader_per_term(s: &Sim<Cr>) {
        let mut leaders = std::collections::BTreeMap::new();
        for r in s.events("leader") {
            if let crate::trace::Event::Leader { leader, term } = r.event {
                if leader == r.node.unwrap() {
                    assert!(leaders.insert(term, leader).is_none(), "two leaders in term {term}");
                }
            }
        }
    }

    #[test]
    fn message_loss_and_duplication_are_survived() {
        for seed in 0..10 {
            let ids = all(6);
            let net = crate::algo::election::testkit::lossy_net(seed, 0.1, 4);
            let mut s = Sim::new(net, ring(&ids, &ids), Cr::new);
            // A node whose ACKs were lost can be skipped as if dead and lose: agreement and
            // one leader per term are what loss cannot break.
            elect(&mut s);
            assert_one_leader_per_term(&s);
        }
    }
}
