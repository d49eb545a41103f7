//! The bully election (Garcia-Molina 1982): the highest live id wins, by asking those above.
//! Nodes talk to each other directly, not round the ring.
//!
//! Rules (plain mode, the textbook's; `phase` is Idle, Asking or Waiting):
//! - start: ELECTION to every higher id this node does not suspect, and wait an answer timeout.
//!   Nobody higher to ask: this node is coordinator at once (but see "listening" below).
//! - on ELECTION from a lower id: answer OK (I am alive and outrank you); if Idle and no leader
//!   is known in this term, start my own election (same term).
//! - on OK: someone higher is alive and takes over: Waiting, for a coordinator timeout.
//! - on answer timeout, still Asking: no higher node answered: I am coordinator. COORDINATOR(me)
//!   to every member I do not suspect, except the higher ones that just failed to answer.
//! - on coordinator timeout, still Waiting and no leader: the higher node died meanwhile: start
//!   again (a new term).
//! - on COORDINATOR(j): j leads.
//! - woken: a node that was stopped for longer than a timeout (a SIGSTOP; the wrapper's
//!   detector sees the gap) does not claim a term it joined while waking, e.g. through an
//!   ELECTION that waited in its socket buffer while the term was decided without it. It starts
//!   a new term and claims there ([`Core::may_claim`](super::Core::may_claim), the same rule for every election).
//! - a leader becomes known (COORDINATOR, heartbeat, or a NEWER reply) and its id is lower than
//!   mine: start an election and depose it. This is the instability the course warns of: the
//!   highest id, paused and resumed, or restarted, takes over from a leader that was doing fine.
//! - listening: a process that has not heard anyone yet (just started or restarted) and has nobody
//!   higher to ask waits one answer timeout before claiming: a restarted node has forgotten the
//!   term, and would otherwise claim a term that someone else already leads. The live leader's
//!   heartbeat tells it the current term first; any message from a peer ends the wait. One
//!   that asked higher nodes and heard nothing from anyone waits one more answer timeout: with
//!   the leader down too, the others miss it within a timeout and their ELECTION reaches it.
//!
//! `--set stable=true`: leadership weighted by uninterrupted uptime. A node is *settled* once it
//! has run for three timeouts without a gap longer than one timeout (a pause or a restart starts
//! the count again: [`Core::running_since`](super::Core::running_since)), and nodes are ranked by (settled, id) instead of by id:
//! - a node that learns of a live leader follows it, whatever the ids: no deposing;
//! - ELECTION carries the sender's settledness; a node answers OK only when it outranks the sender;
//! - a settled node asks the higher ids; an unsettled one asks everyone (any settled node outranks it);
//! - COORDINATOR goes to every member not suspected (a silent node may merely rank lower).
//!
//! So a recovered or resumed node follows the incumbent, and when the incumbent fails, a node
//! that stayed up wins over one that has just come back, whatever their ids.
//!
//! Messages (plain mode, every node up, delays within the timeouts): best case n-2 (the
//! second-highest detects the death of the highest and sends COORDINATOR to the n-2 others);
//! worst case the lowest id starts: n(n-1)/2 ELECTION, as many OK, n-1 COORDINATOR, O(n^2).
//! The textbook assumes a synchronous system: a lost or late OK makes two coordinators in one
//! term until the higher one's COORDINATOR or heartbeat arrives.

use super::{Ask, Election, ElectionCx};
use crate::algo::options::{options, Kind};
use crate::algo::{Message, NodeId, Setup};
use serde::{Deserialize, Serialize};

options! {
    /// Bully's own keys.
    pub(crate) struct BullyOptions {
        stable: bool = false, Kind::Bool,
            "uptime-weighted: a recovered node follows a live leader instead of deposing it";
    }
}

/// Bully messages.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum BullyMsg {
    /// The sender runs an election and asks whether anyone outranking it is alive.
    Election {
        /// Whether the sender is settled (stable mode only; false otherwise).
        settled: bool,
    },
    /// The answer: I outrank you and am alive; I take over.
    Ok,
    /// The sender is the new coordinator.
    Coordinator(NodeId),
}

impl Message for BullyMsg {
    fn name(&self) -> &'static str {
        match self {
            BullyMsg::Election { .. } => "ELECTION",
            BullyMsg::Ok => "OK",
            BullyMsg::Coordinator(_) => "COORDINATOR",
        }
    }
}

/// Bully timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum BullyTimer {
    /// No OK came back.
    Answer,
    /// An OK came but no COORDINATOR followed.
    Coordinator,
}

#[derive(Debug, Clone, PartialEq)]
enum Phase {
    Idle,
    /// Asked these nodes; no OK yet.
    Asking(Vec<NodeId>),
    /// Got an OK; waiting for COORDINATOR.
    Waiting,
}

/// One node's bully state.
#[derive(Debug, Clone)]
pub(crate) struct Bully {
    stable: bool,
    phase: Phase,
    /// Nothing heard from any peer since this process started.
    fresh: bool,
    /// A fresh node already waited one more answer timeout before claiming.
    listened: bool,
}

impl Bully {
    /// Whether this node has run for three timeouts without a gap (stable mode).
    fn settled(&self, cx: &ElectionCx<'_, Self>) -> bool {
        cx.now.saturating_sub(cx.view().running_since()) >= 3 * cx.view().setup().timeout
    }

    /// Whether this node outranks `other`, whose settledness is `other_settled`.
    fn outranks(&self, cx: &ElectionCx<'_, Self>, other: NodeId, other_settled: bool) -> bool {
        if self.stable {
            (self.settled(cx), cx.me) > (other_settled, other)
        } else {
            cx.me > other
        }
    }

    /// Starts (or joins, in the same term) an election from this node.
    fn challenge(&mut self, cx: &mut ElectionCx<'_, Self>) {
        if cx.view().leader().is_some() {
            return;
        }
        let me = cx.me;
        let settled = self.stable && self.settled(cx);
        let ask_all = self.stable && !settled;
        let targets: Vec<NodeId> = cx
            .view()
            .setup()
            .members
            .iter()
            .copied()
            .filter(|&m| m != me && (ask_all || m > me) && !cx.view().is_suspected(m))
            .collect();
        if targets.is_empty() && !self.fresh {
            return self.claim(cx, &[]);
        }
        for &t in &targets {
            cx.send(t, BullyMsg::Election { settled });
        }
        self.phase = Phase::Asking(targets);
        cx.set_timer(BullyTimer::Answer, cx.view().setup().timeout);
    }

    /// This node is coordinator: tells everyone but `skip` (after a stop, only in a term of its own).
    fn claim(&mut self, cx: &mut ElectionCx<'_, Self>, skip: &[NodeId]) {
        self.phase = Phase::Idle;
        if !cx.view().may_claim() {
            return cx.ask(Ask::StartElection);
        }
        let me = cx.me;
        cx.ask(Ask::Elected(me));
        let to: Vec<NodeId> = cx
            .view()
            .setup()
            .members
            .iter()
            .copied()
            .filter(|&m| m != me && !skip.contains(&m) && !cx.view().is_suspected(m))
            .collect();
        for m in to {
            cx.send(m, BullyMsg::Coordinator(me));
        }
    }
}

impl Election for Bully {
    type Msg = BullyMsg;
    type Timer = BullyTimer;

    fn new(setup: &Setup) -> Self {
        Bully {
            stable: BullyOptions::read(setup).stable,
            phase: Phase::Idle,
            fresh: true,
            listened: false,
        }
    }

    fn start(&mut self, cx: &mut ElectionCx<'_, Self>) {
        self.challenge(cx);
    }

    fn on_msg(&mut self, cx: &mut ElectionCx<'_, Self>, from: NodeId, msg: BullyMsg) {
        self.fresh = false;
        match msg {
            BullyMsg::Election { settled } => {
                if !self.outranks(cx, from, settled) {
                    cx.note(format!("ELECTION from node {from}: it outranks me, no answer"));
                    return;
                }
                cx.note(format!("ELECTION from node {from}: I outrank it: OK, and I take over"));
                cx.send(from, BullyMsg::Ok);
                match &self.phase {
                    Phase::Idle => self.challenge(cx),
                    // This node was only listening; a peer spoke, so it knows the term is current.
                    Phase::Asking(asked) if asked.is_empty() => self.claim(cx, &[]),
                    _ => {}
                }
            }
            BullyMsg::Ok => {
                if matches!(self.phase, Phase::Asking(_)) && cx.view().leader().is_none() {
                    cx.note(format!(
                        "OK from node {from}: it takes over; I wait for its COORDINATOR"
                    ));
                    self.phase = Phase::Waiting;
                    cx.set_timer(BullyTimer::Coordinator, 2 * cx.view().setup().timeout);
                }
            }
            BullyMsg::Coordinator(j) => {
                self.phase = Phase::Idle;
                cx.ask(Ask::Elected(j));
            }
        }
    }

    fn on_timer(&mut self, cx: &mut ElectionCx<'_, Self>, timer: BullyTimer) {
        match timer {
            BullyTimer::Answer => {
                if let Phase::Asking(asked) = &self.phase {
                    // Still fresh: nobody higher answered, and nobody else spoke either. A
                    // restarted node has forgotten the term; the others, if any are up, will
                    // speak within a timeout (a leader's heartbeat, or their ELECTION once they
                    // miss it), so it listens once more before claiming a forgotten term.
                    if self.fresh && !asked.is_empty() && !std::mem::replace(&mut self.listened, true) {
                        cx.set_timer(BullyTimer::Answer, cx.view().setup().timeout);
                        return;
                    }
                    if cx.view().leader().is_none() {
                        cx.note("no OK from anyone who outranks me within the timeout: I claim");
                        let skip = if self.stable { Vec::new() } else { asked.clone() };
                        self.claim(cx, &skip);
                    }
                }
            }
            BullyTimer::Coordinator => {
                if self.phase == Phase::Waiting && cx.view().leader().is_none() {
                    cx.note("no COORDINATOR after an OK: a new election");
                    self.phase = Phase::Idle;
                    cx.ask(Ask::StartElection);
                }
            }
        }
    }

    fn reset(&mut self) {
        self.phase = Phase::Idle;
    }

    fn on_leader(&mut self, cx: &mut ElectionCx<'_, Self>, leader: NodeId) {
        self.fresh = false;
        self.phase = Phase::Idle;
        if !self.stable && leader < cx.me {
            let text = format!(
                "node {leader} leads term {} but has a lower id: deposing it",
                cx.view().term()
            );
            cx.state_change(text);
            cx.ask(Ask::StartElection);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Bully;
    use crate::algo::election::testkit::{elect, one_leader_per_term, self_declared, sent_since, sim_net, with_opt};
    use crate::algo::election::Leadership;
    use crate::algo::NodeId;
    use crate::sim::{ring, Sim};
    use crate::trace::Event;
    use std::time::Duration;

    fn all(n: u64) -> Vec<NodeId> {
        (1..=n).collect()
    }

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    #[test]
    fn worst_case_the_lowest_id_starts() {
        for n in [3u64, 5, 8, 16] {
            let mut ids = all(n);
            crate::rng::Rng::new(n).shuffle(&mut ids);
            let mut s = sim_net::<Bully>(ring(&ids, &[1]), 1, 1, 0.0);
            assert_eq!(elect(&mut s, None), n);
            s.run_for(ms(50));
            assert_eq!(s.sent("ELECTION") as u64, n * (n - 1) / 2, "n={n}");
            assert_eq!(s.sent("OK") as u64, n * (n - 1) / 2, "n={n}");
            assert_eq!(s.sent("COORDINATOR") as u64, n - 1, "n={n}");
            one_leader_per_term(&s);
        }
    }

    #[test]
    fn best_case_the_second_highest_detects_the_death_of_the_highest() {
        for n in [3u64, 5, 8, 16] {
            let ids = all(n);
            let mut setups = ring(&ids, &ids);
            // Node n-1 watches with a shorter timeout, so it alone notices the death.
            setups[n as usize - 2].timeout = ms(200);
            let mut s = sim_net::<Bully>(setups, 2, 1, 0.0);
            assert_eq!(elect(&mut s, None), n);
            s.run_for(ms(500));
            s.crash(n);
            let since = s.now();
            assert_eq!(elect(&mut s, Some(n)), n - 1);
            s.run_for(ms(50));
            assert_eq!(sent_since(&s, "ELECTION", since), 0, "n={n}");
            assert_eq!(sent_since(&s, "OK", since), 0, "n={n}");
            assert_eq!(sent_since(&s, "COORDINATOR", since) as u64, n - 2, "n={n}");
            assert_eq!(s.node(1).belief(), (2, Some(n - 1)));
        }
    }

    #[test]
    fn course_example_5_has_failed_2_and_3_start_4_wins() {
        let ids = all(5);
        let mut setups = ring(&ids, &[2, 3]);
        // Node 1 is slow to notice anything, so that only 2 and 3 start, as in the story.
        setups[0].timeout = ms(1000);
        let mut s = sim_net::<Bully>(setups, 3, 1, 0.0);
        s.crash(5);
        assert_eq!(elect(&mut s, None), 4);
        s.run_for(ms(50));
        // 2 asks 3, 4, 5; 3 asks 4, 5; 4 asks 5. 3 answers 2; 4 answers 2 and 3; 5 is silent.
        assert_eq!(s.sent("ELECTION"), 6);
        assert_eq!(s.sent("OK"), 3);
        // 4 hears nothing from 5 and tells 1, 2, 3.
        assert_eq!(s.sent("COORDINATOR"), 3);
        for i in 1..=4 {
            assert_eq!(s.node(i).belief(), (1, Some(4)), "node {i}");
        }
    }

    #[test]
    fn crash_of_the_leader_elects_the_next_highest_for_any_arrangement() {
        for seed in 0..40 {
            let mut ids = all(7);
            crate::rng::Rng::new(seed).shuffle(&mut ids);
            let mut s = sim_net::<Bully>(ring(&ids, &ids[..3]), seed, 5, 0.0);
            assert_eq!(elect(&mut s, None), 7, "seed {seed}");
            s.crash(7);
            assert_eq!(elect(&mut s, Some(7)), 6, "seed {seed}");
            s.crash(6);
            assert_eq!(elect(&mut s, Some(6)), 5, "seed {seed}");
        }
    }

    type S = Sim<Leadership<Bully>>;

    /// n nodes: the highest leads, is taken `away`, the next one takes over and leads for a
    /// second, the highest comes `back`. Returns the simulator and the second leader's term.
    fn comeback(n: u64, stable: bool, away: fn(&mut S, NodeId), back: fn(&mut S, NodeId)) -> (S, u64) {
        let ids = all(n);
        let mut s = sim_net::<Bully>(with_opt(ring(&ids, &ids), "stable", &stable.to_string()), n, 1, 0.0);
        assert_eq!(elect(&mut s, None), n);
        away(&mut s, n);
        assert_eq!(elect(&mut s, Some(n)), n - 1);
        let (term, _) = s.node(n - 1).belief();
        s.run_for(ms(1000));
        back(&mut s, n);
        (s, term)
    }

    /// Plain mode: after [`comeback`] the highest deposes the live leader in a newer term.
    fn deposes(away: fn(&mut S, NodeId), back: fn(&mut S, NodeId)) -> S {
        let (mut s, t4) = comeback(5, false, away, back);
        assert_eq!(elect(&mut s, Some(4)), 5);
        assert!(s.node(5).belief().0 > t4, "5 took over in a new term");
        assert!(s
            .events("step_down")
            .iter()
            .any(|r| r.node == Some(4) && matches!(r.event, Event::StepDown { term, .. } if term == t4)));
        one_leader_per_term(&s);
        s
    }

    #[test]
    fn a_resumed_node_never_claims_the_term_decided_while_it_was_stopped() {
        // Node 1 notices the pause first; 2 and 3 join its term without suspecting 5 and ask
        // 5 too: those ELECTIONs wait in 5's buffer while 4 wins the term. On waking, 5 must
        // not claim that term (as the process run that found this did), but take a new one.
        let ids = all(5);
        let mut setups = ring(&ids, &ids);
        setups[0].timeout = ms(200);
        let mut s = sim_net::<Bully>(setups, 5, 1, 0.0);
        assert_eq!(elect(&mut s, None), 5);
        s.pause(5);
        assert_eq!(elect(&mut s, Some(5)), 4);
        let t4 = s.node(4).belief().0;
        s.run_for(ms(1000));
        s.resume(5);
        assert_eq!(elect(&mut s, Some(4)), 5);
        assert!(s.node(5).belief().0 > t4);
        one_leader_per_term(&s);
    }

    #[test]
    fn the_highest_paused_and_resumed_deposes_the_live_leader() {
        deposes(Sim::pause, Sim::resume);
    }

    #[test]
    fn a_restarted_highest_deposes_the_live_leader_without_claiming_a_forgotten_term() {
        let s = deposes(Sim::crash, Sim::restart);
        // Restarted in term 1, it listened first: it led term 1 (before the crash) and the
        // last term, and no other.
        assert_eq!(self_declared(&s).values().filter(|w| w.contains(&5)).count(), 2);
    }

    /// Stable mode: after [`comeback`], for 300 ms the highest follows, with no election.
    fn stable_comeback(n: u64, away: fn(&mut S, NodeId), back: fn(&mut S, NodeId)) -> S {
        let (mut s, term) = comeback(n, true, away, back);
        let starts = s.events("election_start").len();
        s.run_for(ms(300));
        for i in 1..=n {
            assert_eq!(s.node(i).belief(), (term, Some(n - 1)), "node {i}");
        }
        // Joining the current term is recorded as one `election_start`; nothing else starts.
        let after = s.events("election_start").len() - starts;
        assert!(after <= 1, "{after} elections after the comeback");
        one_leader_per_term(&s);
        s
    }

    #[test]
    fn stable_a_resumed_highest_follows_and_uptime_decides_the_next_election() {
        let mut s = stable_comeback(5, Sim::pause, Sim::resume);
        // The incumbent fails while 5 has been back for less than three timeouts: a node that
        // stayed up (3) outranks it.
        s.crash(4);
        assert_eq!(elect(&mut s, Some(4)), 3);
        // Once 5 has run long enough, it outranks 3 again when 3 fails.
        s.run_for(ms(1000));
        s.crash(3);
        assert_eq!(elect(&mut s, Some(3)), 5);
        one_leader_per_term(&s);
    }

    #[test]
    fn stable_a_restarted_highest_follows_the_live_leader() {
        stable_comeback(6, Sim::crash, Sim::restart);
    }

    #[test]
    fn message_loss_and_duplication_end_with_the_highest_leading() {
        for seed in 0..40 {
            let ids = all(6);
            let mut s = sim_net::<Bully>(ring(&ids, &ids), seed, 4, 0.1);
            // A lost OK can make two coordinators in one term (the textbook assumes no loss);
            // what loss cannot break is that the highest ends up leading and everyone agrees.
            let limit = s.now() + Duration::from_secs(30);
            let done = s.run_until(limit, |s| {
                let b: Vec<_> = s.live().iter().map(|&i| s.node(i).belief()).collect();
                b[0].1 == Some(6) && b.iter().all(|x| *x == b[0])
            });
            assert!(done, "seed {seed}");
        }
    }
}
