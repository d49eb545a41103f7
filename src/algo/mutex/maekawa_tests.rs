//! Simulator tests of Maekawa on the shared reliable layer (issue 18): mutual exclusion and
//! every request served under 20% loss with reordering, and across the kill and restart of a
//! voter holding a vote for another's request and of a requester holding votes.

use super::maekawa::Maekawa;
use super::testkit::*;
use super::wrapper::Phase;
use super::Mutex;
use crate::algo::NodeId;
use crate::sim::Sim;
use crate::trace::Event;
use std::time::Duration;

fn exits_after(s: &Sim<Mutex<Maekawa>>, id: NodeId, t: Duration) -> usize {
    let t = t.as_micros() as u64;
    s.trace
        .iter()
        .filter(|r| r.node == Some(id) && r.t > t && matches!(r.event, Event::CsExit { .. }))
        .count()
}

/// Every participant of `s` completes `k` more entries after now (within 60 s simulated);
/// panics otherwise, or on two holders at once.
fn everyone_served(s: &mut Sim<Mutex<Maekawa>>, n: u64, k: usize, crashed: &[(NodeId, Duration)], what: &str) {
    let t = s.now();
    let who: Vec<NodeId> = (1..=n).collect();
    let served = s.run_until(t + Duration::from_secs(60), |s| {
        who.iter().all(|&i| exits_after(s, i, t) >= k)
    });
    let entries = assert_safe(s, crashed);
    assert!(
        served,
        "{what}: a stall: exits since {t:?}: {:?} (entries {entries}); states:\n{}",
        who.iter().map(|&i| exits_after(s, i, t)).collect::<Vec<_>>(),
        who.iter()
            .map(|&i| format!(
                "{i}: {:?} {:?}",
                s.node(i).phase(),
                s.node(i).protocol().map(|p| &p.voting)
            ))
            .collect::<Vec<_>>()
            .join("\n"),
    );
}

#[test]
fn maekawa_keeps_mutual_exclusion_and_serves_everyone_under_loss_and_reordering() {
    for seed in 0..3 {
        let mut s = sim::<Maekawa>(9, lossy(seed), &[("think_ms", "2"), ("hold_ms", "1")]);
        everyone_served(&mut s, 9, 8, &[], &format!("seed {seed}"));
        // The reliable layer did the work: items were lost and sent again, and acknowledged.
        assert!(s.sent("CH_ACK") > 0, "seed {seed}");
    }
}

#[test]
fn a_restarted_voter_that_held_a_vote_for_another_blocks_no_one() {
    for seed in 0..3 {
        let mut s = sim::<Maekawa>(9, lossy(seed), &[("think_ms", "2"), ("hold_ms", "1")]);
        // Node 5 sits in every row and column's middle: in the quorum of 5 of the 9 nodes.
        let victim = 5;
        let locked_for_other = s.run_until(Duration::from_secs(10), |s| {
            s.node(victim)
                .protocol()
                .and_then(|p| p.voting.locked())
                .is_some_and(|t| t.1 != victim)
        });
        assert!(
            locked_for_other,
            "seed {seed}: the premise: node 5 locked its vote for another"
        );
        let crashed = vec![(victim, s.now())];
        s.crash(victim);
        s.run_for(Duration::from_millis(100));
        s.restart(victim);
        everyone_served(&mut s, 9, 6, &crashed, &format!("seed {seed}, voter restarted"));
    }
}

#[test]
fn a_restarted_requester_does_not_keep_the_votes_of_its_old_request() {
    for seed in 0..3 {
        let mut s = sim::<Maekawa>(9, lossy(seed), &[("think_ms", "2"), ("hold_ms", "20")]);
        let victim = 1;
        // Crash it while it waits with some votes locked for its request somewhere.
        let holds_votes = s.run_until(Duration::from_secs(10), |s| {
            matches!(s.node(victim).phase(), Some(Phase::Waiting(_)))
                && (2..=9).any(|v| {
                    s.node(v)
                        .protocol()
                        .and_then(|p| p.voting.locked())
                        .is_some_and(|t| t.1 == victim)
                })
        });
        assert!(holds_votes, "seed {seed}: the premise: node 1 waits holding a vote");
        let crashed = vec![(victim, s.now())];
        s.crash(victim);
        s.run_for(Duration::from_millis(100));
        s.restart(victim);
        everyone_served(&mut s, 9, 6, &crashed, &format!("seed {seed}, requester restarted"));
        // The vote its old boot held was taken back when its new boot said hello.
        assert!(
            s.trace
                .iter()
                .any(|r| matches!(&r.event, Event::Note { text, .. } if text.contains("is taken back"))),
            "seed {seed}"
        );
    }
}
