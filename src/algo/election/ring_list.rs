//! The ring election that collects ids (Tanenbaum & van Steen's "ring algorithm"): ELECTION
//! carries the list of live nodes it has passed; once round, a COORDINATOR round carries the
//! winner and that list, the membership of the new ring.
//!
//! Rules (per term; `--set pick=max|min` chooses the winner from the list, default max):
//! - start: send ELECTION([me]) to the next live successor.
//! - on ELECTION(list), me not in list: append me; forward ELECTION(list).
//! - on ELECTION(list), me in list: it has been all the way round (back at its initiator, or at
//!   the first node of the list still alive if the initiator died meanwhile): winner :=
//!   pick(list); the new ring is the list; winner leads; send COORDINATOR(winner, list, me).
//!   A copy of a list already turned into a COORDINATOR here (a duplicate) is dropped.
//! - on COORDINATOR(w, list, origin), origin = me: it has been all the way round: remove it.
//! - on COORDINATOR(w, list, origin), the same round (same origin, same initiator of the list)
//!   already passed here this term (a duplicate, or the origin died): remove it.
//! - on COORDINATOR(w, list, origin), a winner that `pick` prefers to w is already known here
//!   this term: remove it. Otherwise: w leads; the new ring is the list; forward it.
//!   (Lists differ only when nodes died or were skipped between rounds; every round visits
//!   every live node, so all of them end on the same, best, winner. A turned ELECTION whose
//!   winner loses in the same way starts no round.)
//!
//! "Forward" skips a successor that does not acknowledge within a timeout (the wrapper's
//! `send_next`), so a dead node is left out of both the list and the new ring. Several
//! initiators each send their own ELECTION round and COORDINATOR round; they all carry the same
//! members in the same ring order, so they elect on the winner.
//!
//! Messages: with one initiator and n live nodes, n ELECTION + n COORDINATOR = 2n per election
//! (plus one more send for each dead successor skipped, which is lost).
//!
//! Limits: the lists elect only if nothing changes between the rounds. A node that dies or is
//! skipped (a lost ACK looks like a dead successor) while several initiators' lists travel can
//! leave lists with different winners. An initiator whose list comes back without a better
//! candidate that another list of the term carried through it does not announce (that list
//! will); but a list that has not passed it yet cannot be known, so two COORDINATORs of one
//! term remain possible, until the rounds (or the heartbeats) finish. The checker reports it,
//! and explains it when the skipped node was in fact down. A node skipped as dead stays out of
//! ring rounds until it is heard again.

use super::{Ask, Election, ElectionCx};
use crate::algo::options::{options, Kind};
use crate::algo::{Message, NodeId, Setup};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

options! {
    /// Ring-list's own keys.
    pub(crate) struct RingListOptions {
        pick: &'static str = max, Kind::Choice(&["max", "min"]),
            "the winner is the largest or the smallest id of the collected list";
    }
}

/// Ring-list messages.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum RlMsg {
    /// The ids collected so far, in ring order from the initiator.
    Election(Vec<NodeId>),
    /// The winner and the new ring's members.
    Coordinator {
        /// Who leads.
        leader: NodeId,
        /// The members of the new ring, in ring order.
        ring: Vec<NodeId>,
        /// The node that turned the ELECTION into this COORDINATOR (where it stops).
        origin: NodeId,
    },
}

impl Message for RlMsg {
    fn name(&self) -> &'static str {
        match self {
            RlMsg::Election(_) => "ELECTION",
            RlMsg::Coordinator { .. } => "COORDINATOR",
        }
    }
}

/// Which id of the list wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pick {
    /// The highest id.
    Max,
    /// The lowest id.
    Min,
}

impl Pick {
    /// Parses `--set pick=...`; None when it is neither `max` nor `min`.
    pub fn parse(s: &str) -> Option<Pick> {
        match s {
            "max" => Some(Pick::Max),
            "min" => Some(Pick::Min),
            _ => None,
        }
    }
}

/// One node's ring-list state.
#[derive(Debug, Clone)]
pub(crate) struct RingList {
    pick: Pick,
    /// The members of the ring as last announced.
    ring: Vec<NodeId>,
    /// The ELECTION lists that reached this node this term, as they arrived.
    heard: Vec<Vec<NodeId>>,
    /// Initiators whose ELECTION this node turned into a COORDINATOR this term.
    converted: BTreeSet<NodeId>,
    /// The COORDINATOR rounds that passed here this term, as (initiator of the list, origin).
    relayed: BTreeSet<(NodeId, NodeId)>,
}

impl RingList {
    #[cfg(test)]
    /// The members of the new ring, as the last COORDINATOR announced them.
    pub fn ring(&self) -> &[NodeId] {
        &self.ring
    }

    #[cfg(test)]
    /// The ELECTION lists that reached this node in the current term, as they arrived.
    pub fn heard(&self) -> &[Vec<NodeId>] {
        &self.heard
    }

    fn winner(&self, list: &[NodeId]) -> Option<NodeId> {
        match self.pick {
            Pick::Max => list.iter().copied().max(),
            Pick::Min => list.iter().copied().min(),
        }
    }

    /// Adopts `leader` and `ring` unless a winner preferred by `pick` is already known in this
    /// term; false when it was not adopted.
    fn install(&mut self, cx: &mut ElectionCx<'_, Self>, leader: NodeId, ring: Vec<NodeId>) -> bool {
        if let Some(known) = cx.view().leader() {
            if self.winner(&[known, leader]) != Some(leader) {
                return false;
            }
        }
        cx.state_change(format!("term {} leader {leader}, new ring {ring:?}", cx.view().term()));
        self.ring = ring;
        cx.ask(Ask::Elected(leader));
        true
    }
}

/// Which round a COORDINATOR is: its list's initiator (with its origin).
fn round(ring: &[NodeId]) -> NodeId {
    ring.first().copied().unwrap_or_default()
}

impl Election for RingList {
    type Msg = RlMsg;
    type Timer = ();

    fn new(setup: &Setup) -> Self {
        // `registry::check_setup` refuses any other value before a node is built.
        let pick = Pick::parse(RingListOptions::read(setup).pick).unwrap_or(Pick::Max);
        RingList {
            pick,
            ring: Vec::new(),
            heard: Vec::new(),
            converted: BTreeSet::new(),
            relayed: BTreeSet::new(),
        }
    }

    fn start(&mut self, cx: &mut ElectionCx<'_, Self>) {
        let me = cx.me;
        cx.ask(Ask::SendNext(RlMsg::Election(vec![me])));
    }

    fn on_msg(&mut self, cx: &mut ElectionCx<'_, Self>, from: NodeId, msg: RlMsg) {
        let me = cx.me;
        match msg {
            RlMsg::Election(mut list) => {
                self.heard.push(list.clone());
                // Woken from a stall (or restarted) into this term: it may have been decided
                // without this node, which must not become its winner now; it passes the list on.
                if !list.contains(&me) && !cx.view().may_claim() {
                    cx.note(format!(
                        "passed the ELECTION list on without my id (joined term {} while catching up): {list:?}",
                        cx.view().term()
                    ));
                    return cx.ask(Ask::SendNext(RlMsg::Election(list)));
                }
                if !list.contains(&me) {
                    list.push(me);
                    cx.note(format!("added my id to the ELECTION list: {list:?}"));
                    return cx.ask(Ask::SendNext(RlMsg::Election(list)));
                }
                let (Some(&first), Some(leader)) = (list.first(), self.winner(&list)) else {
                    return;
                };
                // Woken from a stall into this term: claim a fresh one instead (see Leadership).
                if leader == me && !cx.view().may_claim() {
                    return cx.ask(Ask::StartElection);
                }
                if !self.converted.insert(first) {
                    return cx.discard(from, format!("ELECTION of {first} already went round"));
                }
                // This list skipped a node that another list of the term carried through here
                // (suspected here, yet taking part): that list names the better winner, and two
                // COORDINATORs of one term would split the followers.
                let seen: Vec<NodeId> = self.heard.iter().flatten().copied().collect();
                if let Some(better) = self.winner(&seen).filter(|b| !list.contains(b)) {
                    return cx.discard(
                        from,
                        format!(
                            "my list skipped {better}, which another list of this term carries: that one announces"
                        ),
                    );
                }
                if !self.install(cx, leader, list.clone()) {
                    return cx.discard(from, format!("its winner {leader} loses to the one known here"));
                }
                self.relayed.insert((first, me));
                cx.note(format!("the ELECTION list came back round: {leader} wins; COORDINATOR"));
                cx.ask(Ask::SendNext(RlMsg::Coordinator {
                    leader,
                    ring: list,
                    origin: me,
                }));
            }
            RlMsg::Coordinator { origin, .. } if origin == me => {}
            RlMsg::Coordinator { origin, ref ring, .. } if self.relayed.contains(&(round(ring), origin)) => {
                cx.discard(from, format!("COORDINATOR from {origin} already passed here"))
            }
            RlMsg::Coordinator { leader, ring, origin } => {
                self.relayed.insert((round(&ring), origin));
                if !self.install(cx, leader, ring.clone()) {
                    return cx.discard(from, format!("its winner {leader} loses to the one known here"));
                }
                cx.ask(Ask::SendNext(RlMsg::Coordinator { leader, ring, origin }));
            }
        }
    }

    fn reset(&mut self) {
        self.heard.clear();
        self.converted.clear();
        self.relayed.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::RingList;
    use crate::algo::election::testkit::{elect, one_leader_per_term, sim_net, with_opt};
    use crate::algo::NodeId;
    use crate::sim::ring;
    use std::time::Duration;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    /// `a` and `b` hold the same members in the same cyclic order.
    fn same_ring(a: &[NodeId], b: &[NodeId]) -> bool {
        a.len() == b.len() && (0..a.len()).any(|k| a.iter().cycle().skip(k).take(a.len()).eq(b.iter()))
    }

    #[test]
    fn one_initiator_costs_2n_messages_and_everyone_learns_the_ring() {
        let mut rng = crate::rng::Rng::new(11);
        for n in [2u64, 5, 8, 17] {
            for trial in 0..5 {
                let mut ids: Vec<NodeId> = (1..=n).collect();
                rng.shuffle(&mut ids);
                let starter = ids[trial % ids.len()];
                let mut s = sim_net::<RingList>(ring(&ids, &[starter]), trial as u64, 1, 0.0);
                assert_eq!(elect(&mut s, None), n);
                s.run_for(ms(50));
                assert_eq!(s.sent("ELECTION") as u64, n, "n={n} ids {ids:?}");
                assert_eq!(s.sent("COORDINATOR") as u64, n, "n={n} ids {ids:?}");
                for &i in &ids {
                    assert!(same_ring(s.node(i).protocol().ring(), &ids), "node {i}");
                }
            }
        }
    }

    /// The soak's term 27 (ring-list, 28 % loss on every link): a forward whose ACK was lost
    /// made its sender skip a successor it had heard from milliseconds before, and two partial
    /// rings each elected their own leader. A live successor gets the hop again before it is
    /// skipped. (Two leaders in a term can still follow from lost heartbeats: a leader
    /// suspected after a timeout of silence is inherent without majority mode.)
    #[test]
    fn a_lost_hop_or_ack_does_not_skip_a_live_successor() {
        use crate::algo::election::testkit::sim;
        use crate::sim::NetConfig;
        use crate::trace::Event;
        let ids: Vec<NodeId> = (1..=5).collect();
        for seed in 1..=6 {
            let net = NetConfig {
                seed,
                min_delay: ms(1),
                max_delay: ms(3),
                drop: 0.2,
                duplicate: 0.05,
            };
            let mut s = sim::<RingList>(net, ring(&ids, &ids));
            s.run_for(Duration::from_secs(20));
            // Nobody died: every suspicion of a neighbour heard within the timeout is false.
            let mut heard_recently = 0;
            for r in s.events("suspect") {
                if let Event::Suspect {
                    silence_ms,
                    timeout_ms,
                    ref cause,
                    ..
                } = r.event
                {
                    if cause == "ack" && silence_ms < timeout_ms {
                        heard_recently += 1;
                    }
                }
            }
            assert_eq!(
                heard_recently, 0,
                "seed {seed}: skipped a successor heard within the timeout"
            );
        }
    }

    /// The soak's term 6 (seed 108, 12 nodes): a restarted node began a new term at once, its
    /// ELECTION stuck behind its paused successor; the leader's next heartbeat to it came back
    /// NEWER, so the leader left its term, and went silent to followers that had not heard of
    /// the new term. They suspected the running node after a timeout and left it out of their
    /// own lists: two lists, two winners. A leader that leaves its term for a newer one now
    /// tells its followers, so none of them takes its silence for a death.
    #[test]
    fn a_leader_that_joins_a_newer_term_tells_its_followers() {
        use crate::trace::Event;
        for seed in 0..20 {
            let ids: Vec<NodeId> = (1..=6).collect();
            let mut s = sim_net::<RingList>(ring(&ids, &ids), seed, 3, 0.0);
            assert_eq!(elect(&mut s, None), 6, "seed {seed}");
            s.run_for(ms(200));
            let before = s.now();
            s.pause(2);
            s.crash(1);
            s.restart(1);
            s.run_for(ms(1500));
            s.resume(2);
            elect(&mut s, None);
            s.run_for(ms(500));
            one_leader_per_term(&s);
            let false_suspicions = s
                .events("suspect")
                .iter()
                .filter(|r| r.t >= before.as_micros() as u64)
                .filter(|r| matches!(r.event, Event::Suspect { target: 6, .. }))
                .count();
            assert_eq!(false_suspicions, 0, "seed {seed}: the running node 6 was suspected");
        }
    }

    #[test]
    fn pick_min_elects_the_lowest() {
        let ids = [4, 9, 2, 7, 5];
        let mut s = sim_net::<RingList>(with_opt(ring(&ids, &[7]), "pick", "min"), 1, 1, 0.0);
        assert_eq!(elect(&mut s, None), 2);
        s.crash(2);
        assert_eq!(elect(&mut s, Some(2)), 4);
        assert!(same_ring(s.node(9).protocol().ring(), &[4, 9, 7, 5]));
    }

    #[test]
    fn course_example_7_has_failed_2_and_5_start_both_arrive_at_6() {
        // Tanenbaum's figure: ring 0..7, 7 has crashed, 2 and 5 start at once.
        let ids: Vec<NodeId> = (0..=7).collect();
        let mut setups = ring(&ids, &[2, 5]);
        // 0 and 1 hear nothing until 6 gives up on 7 (one timeout); a long timeout of their own
        // keeps them from starting a third election meanwhile, so that only 2 and 5 start.
        setups[0].timeout = ms(1000);
        setups[1].timeout = ms(1000);
        let mut s = sim_net::<RingList>(setups, 1, 1, 0.0);
        s.crash(7);
        assert_eq!(elect(&mut s, None), 6);
        s.run_for(ms(50));
        let at6 = s.node(6).protocol().heard();
        assert_eq!(at6, &[vec![5], vec![2, 3, 4, 5]]);
        let live: Vec<NodeId> = (0..=6).collect();
        for &i in &live {
            assert!(same_ring(s.node(i).protocol().ring(), &live), "node {i}");
            assert_eq!(s.node(i).belief(), (1, Some(6)));
        }
        // Two rounds of each kind over 7 live nodes; each ELECTION was also sent three times to
        // 7 (lost: tried again a third of a timeout apart) before 6 gave up on it; by the
        // COORDINATOR rounds 6 skipped 7 at once.
        assert_eq!(s.sent("ELECTION"), 2 * 7 + 2 * 3);
        assert_eq!(s.sent("COORDINATOR"), 2 * 7);
        one_leader_per_term(&s);
    }

    #[test]
    fn crash_of_the_leader_re_elects_around_the_gap() {
        for seed in 0..40 {
            let mut ids: Vec<NodeId> = (1..=9).collect();
            crate::rng::Rng::new(seed).shuffle(&mut ids);
            let mut s = sim_net::<RingList>(ring(&ids, &ids[..2]), seed, 5, 0.0);
            assert_eq!(elect(&mut s, None), 9, "seed {seed}");
            s.crash(9);
            assert_eq!(elect(&mut s, Some(9)), 8, "seed {seed}");
            // A node may learn the winner from a NEWER reply before the COORDINATOR reaches it.
            s.run_for(ms(50));
            let rest: Vec<NodeId> = ids.iter().copied().filter(|&i| i != 9).collect();
            for &i in &rest {
                assert!(same_ring(s.node(i).protocol().ring(), &rest), "seed {seed} node {i}");
            }
            one_leader_per_term(&s);
        }
    }

    #[test]
    fn crashes_mid_election_still_terminate() {
        for seed in 0..40 {
            let mut ids: Vec<NodeId> = (1..=8).collect();
            crate::rng::Rng::new(seed + 100).shuffle(&mut ids);
            let mut s = sim_net::<RingList>(ring(&ids, &ids), seed, 5, 0.0);
            s.run_for(ms(4));
            s.crash(8);
            s.crash(ids[0]);
            let l = elect(&mut s, Some(8));
            let max_live = *s.live().iter().max().unwrap();
            assert_eq!(l, max_live, "seed {seed}");
        }
    }

    #[test]
    fn paused_leader_resumes_and_steps_down() {
        let ids: Vec<NodeId> = (1..=6).collect();
        let mut s = sim_net::<RingList>(ring(&ids, &[1]), 2, 1, 0.0);
        assert_eq!(elect(&mut s, None), 6);
        s.pause(6);
        assert_eq!(elect(&mut s, Some(6)), 5);
        s.run_for(ms(1000));
        s.resume(6);
        s.run_for(ms(100));
        let b = s.node(5).belief();
        assert_eq!(s.node(6).belief(), b);
        assert!(s.events("step_down").iter().any(|r| r.node == Some(6)));
        one_leader_per_term(&s);
    }

    #[test]
    fn message_loss_and_duplication_are_survived() {
        for seed in 0..40 {
            let ids: Vec<NodeId> = (1..=6).collect();
            let mut s = sim_net::<RingList>(ring(&ids, &ids[..2]), seed, 4, 0.1);
            // A node whose ACK was lost is skipped as if dead and misses that list. Two
            // initiators' lists can then differ, and each winner may declare itself before the
            // better COORDINATOR reaches it (two leaders in one term, briefly): what loss cannot
            // break is that everyone ends up agreeing.
            elect(&mut s, None);
        }
    }
}
