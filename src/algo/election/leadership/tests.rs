//! Simulator tests of the leadership wrapper: majority mode, pauses and restarts of the leader.

use super::*;
use crate::algo::election::chang_roberts::ChangRoberts;
use crate::algo::election::testkit::one_leader_per_term;
use crate::sim::{ring, NetConfig, Sim};
use crate::trace::Record;

pub(super) type Cr = Leadership<ChangRoberts>;

/// A test-only protocol for meshes: the largest member this node does not suspect leads; it
/// decides alone and everyone else learns it from the (flooded) heartbeat.
pub(super) struct Fixed;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Never;

impl Message for Never {
    fn name(&self) -> &'static str {
        "NEVER"
    }
}

impl Election for Fixed {
    type Msg = Never;
    type Timer = ();
    fn new(_: &Setup) -> Self {
        Fixed
    }
    fn start(&mut self, cx: &mut ElectionCx<'_, Self>) {
        let best = cx
            .view()
            .setup()
            .members
            .iter()
            .copied()
            .filter(|&m| !cx.view().is_suspected(m))
            .max();
        if best == Some(cx.me) {
            cx.ask(Ask::Elected(cx.me));
        }
    }
    fn on_msg(&mut self, _: &mut ElectionCx<'_, Self>, _: NodeId, _: Never) {}
    fn reset(&mut self) {}
}

pub(super) fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

pub(super) fn all(n: u64) -> Vec<NodeId> {
    (1..=n).collect()
}

pub(super) fn majority(mut setups: Vec<Setup>, weights: Option<&str>) -> Vec<Setup> {
    for s in &mut setups {
        s.opts.insert("majority".into(), "true".into());
        if let Some(w) = weights {
            s.opts.insert("weights".into(), w.into());
        }
    }
    setups
}

pub(super) fn net(seed: u64) -> NetConfig {
    NetConfig {
        seed,
        ..NetConfig::default()
    }
}

/// Runs until every node of `group` believes the same leader, in `group`, of a term after
/// `after`; returns (term, leader).
pub(super) fn agree<E: Election>(s: &mut Sim<Leadership<E>>, group: &[NodeId], after: u64) -> (u64, NodeId) {
    let limit = s.now() + Duration::from_secs(30);
    let done = s.run_until(limit, |s| {
        let b: Vec<_> = group.iter().map(|&i| s.node(i).belief()).collect();
        b[0].0 > after && b[0].1.is_some_and(|l| group.contains(&l)) && b.iter().all(|x| *x == b[0])
    });
    assert!(done, "{group:?} did not agree by {limit:?}");
    let (t, l) = s.node(group[0]).belief();
    (t, l.unwrap())
}

/// Every (term, leader) a node recorded about itself, i.e. every claim to lead.
pub(super) fn claims(trace: &[Record]) -> Vec<(u64, NodeId)> {
    trace
        .iter()
        .filter_map(|r| match r.event {
            Event::Leader { leader, term } if Some(leader) == r.node => Some((term, leader)),
            _ => None,
        })
        .collect()
}

pub(super) fn since(s: &Sim<impl Algorithm>, t: Duration) -> Vec<Record> {
    s.trace
        .iter()
        .filter(|r| r.t >= t.as_micros() as u64)
        .cloned()
        .collect()
}

pub(super) fn sent_by(trace: &[Record], node: NodeId, name: &str) -> usize {
    trace
        .iter()
        .filter(|r| r.node == Some(node) && matches!(&r.event, Event::Send { msg, .. } if msg == name))
        .count()
}

pub(super) fn max_term<E: Election>(s: &Sim<Leadership<E>>) -> u64 {
    s.ids().iter().map(|&i| s.node(i).belief().0).max().unwrap()
}

#[test]
fn majority_elects_with_votes_and_others_learn_from_the_heartbeat() {
    let ids = all(5);
    let mut s = Sim::new(net(1), majority(ring(&ids, &ids), None), Cr::new);
    assert_eq!(agree(&mut s, &ids, 0), (1, 5));
    assert!(s.sent("VOTE_REQ") >= 4 && s.sent("PRE_VOTE") > 0);
    // Node 5 claimed term 1 only after the votes; the others only after its heartbeat.
    let first_vote = s
        .trace
        .iter()
        .position(|r| matches!(&r.event, Event::Recv { msg, .. } if msg == "VOTE"));
    let claim = s.trace.iter().position(|r| matches!(r.event, Event::Leader { .. }));
    assert!(first_vote.unwrap() < claim.unwrap());
    for r in s.events("leader") {
        let hb = s
            .trace
            .iter()
            .position(|x| x.node == r.node && matches!(&x.event, Event::Recv { msg, .. } if msg == "HEARTBEAT"));
        if r.node != Some(5) {
            assert!(hb.is_some(), "node {:?} followed without a heartbeat", r.node);
        }
    }
}

#[test]
fn partition_three_two_only_the_three_side_elects_and_the_old_leader_steps_down() {
    for seed in 0..5 {
        let ids = all(5);
        let mut s = Sim::new(net(seed), majority(ring(&ids, &ids), None), Cr::new);
        assert_eq!(agree(&mut s, &ids, 0), (1, 5));
        let cut = s.now();
        s.partition(&[1, 2, 3], &[4, 5]);
        let (t, l) = agree(&mut s, &[1, 2, 3], 1);
        assert_eq!(l, 3, "seed {seed}");
        s.run_for(Duration::from_secs(5));
        let after = since(&s, cut);
        assert!(
            after.iter().any(|r| r.node == Some(5)
                && matches!(&r.event, Event::StepDown { term: 1, reason } if reason == "lost quorum")),
            "seed {seed}: node 5 did not step down for lost quorum"
        );
        for (term, leader) in claims(&after) {
            assert!(
                [1, 2, 3].contains(&leader),
                "seed {seed}: node {leader} led term {term} on the minority side"
            );
        }
        // The minority never even moved to a new term: its pre-votes found no majority.
        assert_eq!(s.node(4).belief(), (1, Some(5)));
        assert_eq!(s.node(5).belief(), (1, None));
        assert!(sent_by(&after, 4, "PRE_VOTE") > 0);
        s.heal();
        assert_eq!(agree(&mut s, &ids, t - 1), (t, 3), "seed {seed}");
        one_leader_per_term(&s);
    }
}

#[test]
fn isolated_leader_steps_down_and_the_rest_elect() {
    let ids = all(5);
    let mut s = Sim::new(net(2), majority(ring(&ids, &ids), None), Cr::new);
    agree(&mut s, &ids, 0);
    s.partition(&[5], &[1, 2, 3, 4]);
    assert_eq!(agree(&mut s, &[1, 2, 3, 4], 1).1, 4);
    // The new leader may be established first (terms differ, so this is no split within a
    // term); the old one steps down within a timeout and a heartbeat of the cut.
    let limit = s.now() + Duration::from_secs(1);
    assert!(s.run_until(limit, |s| s.node(5).belief() == (1, None)));
    let downs: Vec<_> = s
        .events("step_down")
        .into_iter()
        .filter(|r| r.node == Some(5))
        .collect();
    assert!(matches!(&downs[0].event, Event::StepDown { reason, .. } if reason == "lost quorum"));
    one_leader_per_term(&s);
}

#[test]
fn paused_leader_resumes_without_an_extra_election() {
    let ids = all(5);
    let mut s = Sim::new(net(3), majority(ring(&ids, &ids), None), Cr::new);
    agree(&mut s, &ids, 0);
    s.pause(5);
    let (t, l) = agree(&mut s, &[1, 2, 3, 4], 1);
    assert_eq!(l, 4);
    s.run_for(Duration::from_secs(1));
    let resumed = s.now();
    s.resume(5);
    s.run_for(Duration::from_secs(5));
    let after = since(&s, resumed);
    assert_eq!(s.node(5).belief(), (t, Some(4)));
    assert_eq!(max_term(&s), t, "nobody moved past term {t}");
    assert_eq!(sent_by(&after, 5, "PRE_VOTE"), 0);
    assert!(claims(&after).is_empty(), "nobody claimed to lead after the resume");
    one_leader_per_term(&s);
}

#[test]
fn restarted_leader_asks_first_and_follows_the_new_one() {
    let ids = all(5);
    let mut s = Sim::new(net(9), majority(ring(&ids, &ids), None), Cr::new);
    agree(&mut s, &ids, 0);
    s.crash(5);
    let (t, l) = agree(&mut s, &[1, 2, 3, 4], 1);
    let back = s.now();
    s.restart(5);
    assert_eq!(agree(&mut s, &ids, t - 1), (t, l));
    s.run_for(Duration::from_secs(3));
    let after = since(&s, back);
    assert!(
        sent_by(&after, 5, "PRE_VOTE") > 0,
        "the restarted initiator asked before disrupting"
    );
    assert!(claims(&after).is_empty());
    assert_eq!(max_term(&s), t);
}

/// Follower 2 is paused and everything sent to it meanwhile is lost (as when a stopped
/// process's socket buffer overflows): it wakes with a stale view and a leader timeout due.
pub(super) fn stale_follower(majority_mode: bool) -> (Sim<Cr>, Vec<Record>) {
    cut_off_follower(majority_mode, true)
}

/// Follower 2 is `paused` or merely cut off from every other node for two seconds, then comes back.
pub(super) fn cut_off_follower(majority_mode: bool, paused: bool) -> (Sim<Cr>, Vec<Record>) {
    let ids = all(5);
    let setups = if majority_mode {
        majority(ring(&ids, &ids), None)
    } else {
        ring(&ids, &ids)
    };
    let mut s = Sim::new(net(4), setups, Cr::new);
    assert_eq!(agree(&mut s, &ids, 0), (1, 5));
    if paused {
        s.pause(2);
    }
    let cut = s.now();
    s.partition(&[2], &[1, 3, 4, 5]);
    s.run_for(Duration::from_secs(2));
    s.heal();
    let back = s.now();
    if paused {
        s.resume(2);
    }
    s.run_for(Duration::from_secs(5));
    let after = since(&s, if paused { back } else { cut });
    (s, after)
}

#[test]
fn a_follower_woken_from_a_pause_does_not_count_its_own_sleep_as_the_leaders_silence() {
    for majority_mode in [true, false] {
        let (s, after) = stale_follower(majority_mode);
        assert!(
            !after
                .iter()
                .any(|r| r.node == Some(2) && matches!(r.event, Event::Suspect { target: 5, .. })),
            "majority={majority_mode}: node 2 suspected the leader for its own sleep"
        );
        // An ACK really lost in the cut may make it suspect its successor: for one timeout or so.
        for r in after.iter().filter(|r| r.node == Some(2)) {
            if let Event::Suspect { target, .. } = r.event {
                let back = after.iter().find(|x| {
                    x.node == Some(2) && x.t > r.t && matches!(x.event, Event::Unsuspect { target: t } if t == target)
                });
                assert!(back.is_some_and(|x| x.t - r.t <= 600_000), "{r:?} lasted");
            }
        }
        assert!(after
            .iter()
            .any(|r| r.node == Some(2) && matches!(&r.event, Event::Note { text, .. } if text.starts_with("stalled"))));
        assert_eq!(max_term(&s), 1, "majority={majority_mode}: no new term");
        assert!(s.ids().iter().all(|&i| s.node(i).belief() == (1, Some(5))));
        assert!(s.events("step_down").is_empty());
    }
}

#[test]
fn pre_vote_refuses_a_cut_off_follower_while_the_leader_lives() {
    let (s, after) = cut_off_follower(true, false);
    assert!(after
        .iter()
        .any(|r| r.node == Some(2) && matches!(r.event, Event::Suspect { target: 5, .. })));
    assert!(sent_by(&after, 2, "PRE_VOTE") > 0, "node 2 asked");
    assert_eq!(max_term(&s), 1, "no new term");
    assert!(s.ids().iter().all(|&i| s.node(i).belief() == (1, Some(5))));
    assert!(s.events("step_down").is_empty());
    // Without pre-vote the same cut deposes the live leader into a new term.
    let (s, _) = cut_off_follower(false, false);
    assert!(max_term(&s) > 1);
    assert!(s.events("step_down").iter().any(|r| r.node == Some(5)));
}

#[test]
fn weight_not_numbers_decides_which_side_elects() {
    // Total weight 9: {1, 2} hold 6 with two nodes, {3, 4, 5} hold 3 with three.
    let ids = all(5);
    let setups = majority(ring(&ids, &ids), Some("1:3,2:3"));
    let mut s = Sim::new(net(5), setups, Cr::new);
    agree(&mut s, &ids, 0);
    let cut = s.now();
    s.partition(&[1, 2], &[3, 4, 5]);
    assert_eq!(agree(&mut s, &[1, 2], 1).1, 2);
    s.run_for(Duration::from_secs(5));
    let after = since(&s, cut);
    assert!(claims(&after).iter().all(|&(_, l)| l == 2));
    assert!(after
        .iter()
        .any(|r| r.node == Some(5) && matches!(r.event, Event::StepDown { .. })));
    assert!([3, 4, 5].iter().all(|&i| s.node(i).belief().0 == 1));
}

#[test]
fn majority_keeps_one_leader_per_term_under_loss_crashes_and_partitions() {
    for seed in 0..12 {
        let ids = all(6);
        let lossy = crate::algo::election::testkit::lossy_net(seed, 0.05, 6);
        let mut s = Sim::new(lossy, majority(ring(&ids, &ids), Some("6:2")), Cr::new);
        agree(&mut s, &ids, 0);
        let mut rng = Rng::new(seed);
        for _ in 0..3 {
            let mut order = ids.clone();
            rng.shuffle(&mut order);
            let (a, b) = order.split_at(rng.range(1, 6) as usize);
            s.partition(a, b);
            s.run_for(ms(rng.range(200, 3000)));
            s.heal();
            s.run_for(ms(rng.range(0, 1000)));
        }
        s.crash(order_max(&s));
        let live = s.live();
        agree(&mut s, &live, 0);
        one_leader_per_term(&s);
    }
}

#[test]
fn a_ring_message_for_a_suspected_node_does_not_loop_forever_at_an_isolated_node() {
    // Cut node 2 off while ring messages are in flight: its ACK timeouts make it suspect
    // everyone, and what it holds (ELECTION(4), ELECTED(4)) comes back to it alone. This
    // used to spin forever inside one handler.
    for cut_at in 0..12 {
        let ids = all(4);
        let mut s = Sim::new(net(cut_at), ring(&ids, &ids), Cr::new);
        s.run_for(Duration::from_micros(cut_at * 700));
        s.partition(&[2], &[1, 3, 4]);
        let (t, l) = agree(&mut s, &[2], 0);
        assert_eq!(l, 2, "alone, without majority=true, node 2 leads its own term {t}");
        assert_eq!(agree(&mut s, &[1, 3, 4], 0).1, 4);
    }
}

pub(super) fn order_max(s: &Sim<Cr>) -> NodeId {
    s.node(1).belief().1.unwrap_or(6)
}
