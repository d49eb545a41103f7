//! Simulator tests of the leadership wrapper on meshes and rings: flooded heartbeats, sends
//! only to neighbours, the options' validation, and ring repair's acknowledgements.

use super::tests::*;
use super::*;
use crate::algo::election::testkit::one_leader_per_term;
use crate::sim::{ring, NetConfig, Sim};
use crate::topology::{build, mesh_setups, Graph};
use crate::trace::Record;

fn assert_sends_follow_the_graph(trace: &[Record], g: &Graph, replies: &[&str]) {
    for r in trace {
        if let Event::Send { to, msg, .. } = &r.event {
            let from = r.node.unwrap();
            let ok = g.neighbours(from).contains(to) || replies.contains(&msg.as_str());
            assert!(ok, "node {from} sent {msg} to non-neighbour {to}");
        }
    }
}

#[test]
fn flooded_heartbeats_keep_a_grid_quiet_until_the_leader_dies() {
    let ids = all(9);
    let g = build("grid", &ids, 0).unwrap();
    let jittery = NetConfig {
        seed: 6,
        min_delay: ms(1),
        max_delay: ms(8),
        ..NetConfig::default()
    };
    let mut s = Sim::new(jittery, mesh_setups(&g, &ids), Leadership::<Fixed>::new);
    assert_eq!(agree(&mut s, &ids, 0), (1, 9));
    s.run_for(Duration::from_secs(10));
    assert!(s.ids().iter().all(|&i| s.node(i).belief() == (1, Some(9))));
    assert!(s.events("suspect").is_empty(), "a live leader was suspected");
    assert_eq!(s.events("election_start").len(), 9, "one election, joined once by each");
    // Node 1, two hops from 9's corner... four hops away, heard it only through others.
    assert!(!g.neighbours(9).contains(&1));
    assert_sends_follow_the_graph(&s.trace, &g, &[]);
    s.crash(9);
    let live = s.live();
    assert_eq!(agree(&mut s, &live, 1).1, 8);
    for &i in &live {
        assert!(s
            .events("suspect")
            .iter()
            .any(|r| r.node == Some(i) && matches!(r.event, Event::Suspect { target: 9, .. })));
    }
    assert_sends_follow_the_graph(&s.trace, &g, &[]);
}

#[test]
fn chang_roberts_on_mesh_rings_talks_only_to_neighbours() {
    for topo in ["bidirectional-ring", "ring"] {
        let ids = [3, 7, 1, 5, 8, 2, 6, 4];
        let g = build(topo, &ids, 0).unwrap();
        let mut s = Sim::new(net(7), mesh_setups(&g, &ids), Cr::new);
        assert_eq!(agree(&mut s, &ids, 0), (1, 8), "{topo}");
        s.run_for(Duration::from_secs(10));
        assert!(s.events("suspect").is_empty(), "{topo}: a live leader was suspected");
        assert!(ids.iter().all(|&i| s.node(i).belief() == (1, Some(8))));
        // On the one-way ring, ACKs (and NEWERs) answer the predecessor on its own link.
        assert_sends_follow_the_graph(&s.trace, &g, &["ACK", "NEWER", "ALIVE"]);
        // With 8 dead there is no path around it: 5 keeps offering its ring messages to
        // 8 alone, and no election completes until 8 is back.
        let crashed = s.now();
        s.crash(8);
        s.run_for(Duration::from_secs(5));
        let after = since(&s, crashed);
        assert!(
            claims(&after).is_empty(),
            "{topo}: a ring election completed around a dead node"
        );
        assert!(after
            .iter()
            .any(|r| r.node == Some(5) && matches!(&r.event, Event::Send { to: 8, msg, .. } if msg == "ELECTION")));
        assert_sends_follow_the_graph(&s.trace, &g, &["ACK", "NEWER", "ALIVE"]);
        s.restart(8);
        assert_eq!(agree(&mut s, &ids, 1).1, 8, "{topo}");
    }
}

#[test]
fn ring_messages_do_not_jump_to_a_successor_that_is_not_a_neighbour() {
    let ids = all(4);
    let g = build("grid", &ids, 0).unwrap(); // 1-2 / 3-4: 2's ring successor 3 is not adjacent
    let mut s = Sim::new(net(8), mesh_setups(&g, &ids), Cr::new);
    s.run_for(Duration::from_secs(2));
    assert!(s.events("ignore").iter().any(|r| r.node == Some(2)
        && matches!(&r.event, Event::Ignore { reason, .. } if reason.contains("ring successor 3 is not a neighbour"))));
    assert_sends_follow_the_graph(&s.trace, &g, &[]);
}

#[test]
fn validate_names_the_bad_option() {
    let g = build("grid", &all(4), 0).unwrap();
    let mut setups = mesh_setups(&g, &[]);
    assert_eq!(validate(&setups[0]), Ok(()));
    setups[0].opts.insert("majority".into(), "true".into());
    assert_eq!(
        validate(&setups[0]).unwrap_err(),
        "majority=true needs every member reachable directly (coordlab ring, or a mesh with --topology \
         complete): node 4 is not a neighbour of node 1"
    );
    let mut c = mesh_setups(&build("complete", &all(4), 0).unwrap(), &[])[0].clone();
    c.opts.insert("majority".into(), "yes".into());
    assert_eq!(validate(&c), Ok(()));
    let bad = |k: &str, v: &str| {
        let mut r = ring(&all(3), &[])[0].clone();
        r.opts.insert("majority".into(), "true".into());
        r.opts.insert(k.into(), v.into());
        validate(&r).unwrap_err()
    };
    #[rustfmt::skip]
    let cases = [
        ("mesh", "maybe", "mesh=maybe: expected true or false"),
        ("majority", "2", "majority=2: expected true or false"),
        ("weights", "1=5", "weights: '1=5' is not ID:WEIGHT (e.g. weights=1:5,2:3)"),
        ("weights", "x:5", "weights: 'x' is not a node id"),
        ("weights", "1:y", "weights: 'y' is not a whole number"),
        ("weights", "9:2", "weights: node 9 is not a member"),
        ("weights", "1:0", "weights: node 1 has weight 0; a weight is 1 to 1000000"),
        ("weights", "1:2,1:3", "weights: node 1 appears twice"),
    ];
    for (k, v, want) in cases {
        assert_eq!(bad(k, v), want, "{k}={v}");
    }
    let mut ok = ring(&all(3), &[])[0].clone();
    ok.opts.insert("majority".into(), "true".into());
    ok.opts.insert("weights".into(), "1:5, 3:2".into());
    assert_eq!(validate(&ok), Ok(()));
    let w = crate::algo::weights::Weights::parse(&ok).unwrap();
    assert_eq!(w.of(), &std::collections::BTreeMap::from([(1, 5), (2, 1), (3, 2)]));
}

#[test]
fn ring_acks_are_owed_then_sent_together_and_a_silent_successor_is_still_skipped() {
    // Every node initiates: ring 6 sees many forwards per link, yet each predecessor gets
    // one ACK per flush, a tenth of the timeout after the first forward it acknowledges.
    let ids = all(6);
    let mut s = Sim::new(net(3), ring(&ids, &ids), Cr::new);
    let (_, l) = agree(&mut s, &ids, 0);
    assert_eq!(l, 6);
    // The default timeout (300 ms): every owed ACK has left by then.
    s.run_for(ms(300));
    let forwards = s.sent("ELECTION") + s.sent("ELECTED");
    let acks = s.sent("ACK");
    assert!(acks > 0, "owed ACKs are sent");
    assert!(
        acks < forwards,
        "{acks} ACKs for {forwards} forwards: not one per forward"
    );
    for r in &s.trace {
        if let Event::Send { msg, brief, .. } = &r.event {
            if msg == "ACK" {
                assert!(brief.contains("seqs=["), "{brief}");
            }
        }
    }
    one_leader_per_term(&s);
    assert!(
        !s.trace.iter().any(|r| matches!(r.event, Event::Suspect { .. })),
        "no live successor is suspected for a late ACK"
    );

    // A successor that dies before it acknowledges is skipped: node 3 crashes as soon as
    // ELECTION reaches it, and node 2 forwards round it.
    let mut s = Sim::new(net(4), ring(&ids, &ids), Cr::new);
    s.run_until(Duration::from_secs(5), |s| {
        s.trace
            .iter()
            .any(|r| r.node == Some(3) && matches!(&r.event, Event::Recv { msg, .. } if msg == "ELECTION"))
    });
    s.crash(3);
    let alive = [1, 2, 4, 5, 6];
    assert_eq!(agree(&mut s, &alive, 0).1, 6);
    assert!(s
        .trace
        .iter()
        .any(|r| r.node == Some(2) && matches!(&r.event, Event::Suspect { target: 3, .. })));
}
