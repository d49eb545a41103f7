//! The pictures of graph elections in the simulator: the echo tree, Yo-Yo's orientation and
//! pruning, and a ring repaired around a dead node.

use super::draw::count_class as count;
use super::graph::Drawing;
use super::tests::{agree, run_dir, Cr};
use crate::algo::election::{echo::Echo, yoyo::YoYo, Leadership};
use crate::algo::Setup;
use crate::sim::{ring, NetConfig, Sim};
use crate::trace::NodeId;
use std::collections::BTreeSet;
use std::time::Duration;

fn mesh(ids: &[NodeId], edges: &[(NodeId, NodeId)], initiators: &[NodeId]) -> Vec<Setup> {
    ids.iter()
        .map(|&me| {
            let nb = edges
                .iter()
                .filter_map(|&(a, b)| (a == me).then_some(b).or((b == me).then_some(a)))
                .collect();
            let mut s = Setup::new(me, ids.to_vec(), nb);
            s.initiator = initiators.contains(&me);
            s
        })
        .collect()
}

const GRID: [(NodeId, NodeId); 7] = [(1, 2), (2, 3), (4, 5), (5, 6), (1, 4), (2, 5), (3, 6)];

#[test]
fn the_echo_tree_spans_the_graph() {
    let ids: Vec<NodeId> = (1..=6).collect();
    let setups = mesh(&ids, &GRID, &[1]);
    let mut s = Sim::new(NetConfig::default(), setups, Leadership::<Echo>::new);
    s.run_for(Duration::from_secs(2));
    let d = Drawing::build(&run_dir(&s, "echo", "mesh:grid"));
    assert_eq!(d.edges.len(), GRID.len());
    assert_eq!(d.tree.len(), 5, "n-1 tree edges: {:?}", d.tree);
    assert_eq!(d.root(), Some(1), "the initiator is the root");
    let parents: BTreeSet<NodeId> = d.tree.iter().map(|e| e.0).collect();
    assert_eq!(parents.len(), 5, "every node but the root has one parent");
    for &(c, p) in &d.tree {
        assert!(d.edges.contains(&(c.min(p), c.max(p))), "tree edges are graph edges");
    }
    let svg = d.svg();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    assert_eq!(count(&doc, "g", "node"), 6);
    assert_eq!(count(&doc, "line", "tree"), 5);
}

#[test]
fn with_every_node_initiating_the_tree_is_the_winning_wave_s() {
    let ids: Vec<NodeId> = (1..=6).collect();
    let setups = mesh(&ids, &GRID, &ids);
    let mut s = Sim::new(NetConfig::default(), setups, Leadership::<Echo>::new);
    s.run_for(Duration::from_secs(2));
    let run = run_dir(&s, "echo", "mesh:grid");
    let d = Drawing::build(&run);
    assert_eq!(
        d.tree.len(),
        5,
        "n-1 tree edges, not the dead waves' echoes too: {:?}",
        d.tree
    );
    assert_eq!(d.root(), Some(6), "the highest initiator's wave completes");
}

#[test]
fn yoyo_shows_its_orientation_and_pruning() {
    let ids: Vec<NodeId> = (1..=6).collect();
    let setups = mesh(&ids, &GRID, &ids);
    let mut s = Sim::new(NetConfig::default(), setups, Leadership::<YoYo>::new);
    s.run_for(Duration::from_secs(2));
    let d = Drawing::build(&run_dir(&s, "yoyo", "mesh:grid"));
    assert_eq!(d.leader, Some((1, 1)));
    assert!(!d.pruned.is_empty());
    assert!(d.pruned.keys().all(|e| d.edges.contains(e)));
    let doc_text = d.svg();
    let doc = roxmltree::Document::parse(&doc_text).unwrap();
    assert_eq!(count(&doc, "line", "edge"), GRID.len());
    assert_eq!(count(&doc, "g", "pruned"), d.pruned.len());
    // Every iteration is drawn; the first is every edge from the smaller id to the larger; later
    // ones keep to the graph's edges; the last leaves the winner alone.
    let its = &d.iterations;
    assert!(its.len() >= 2, "{its:?}");
    assert_eq!(
        its.iter().map(|i| i.iter).collect::<Vec<_>>(),
        (1..=its.len() as u64).collect::<Vec<_>>()
    );
    assert_eq!(its[0].arcs, GRID.iter().copied().collect::<BTreeSet<_>>());
    assert!(its
        .iter()
        .all(|i| i.arcs.iter().all(|&(a, b)| d.edges.contains(&(a.min(b), a.max(b))))));
    let last = its.last().unwrap();
    assert!(last.arcs.is_empty() && last.nodes == [1].into(), "{last:?}");
    assert_eq!(count(&doc, "g", "iteration"), its.len());
    let arcs: usize = its.iter().map(|i| i.arcs.len()).sum();
    assert_eq!(count(&doc, "line", "arc"), arcs);
}

#[test]
fn yoyo_on_a_path_turns_an_edge_round_then_prunes_down_to_the_winner() {
    // 1 - 3 - 2, all starting: sources 1 and 2 in iteration 1; 3 says NO to 2, and the edge
    // turns round (3 -> 2); in iteration 2 YO goes 1 -> 3 -> 2 and both edges are pruned; in
    // iteration 3 node 1 is alone: it wins.
    let ids: Vec<NodeId> = vec![1, 3, 2];
    let setups = mesh(&ids, &[(1, 3), (3, 2)], &ids);
    let mut s = Sim::new(NetConfig::default(), setups, Leadership::<YoYo>::new);
    s.run_for(Duration::from_secs(2));
    let d = Drawing::build(&run_dir(&s, "yoyo", "mesh:path"));
    assert_eq!(d.leader, Some((1, 1)));
    let arcs: Vec<BTreeSet<(NodeId, NodeId)>> = d.iterations.iter().map(|i| i.arcs.clone()).collect();
    assert_eq!(
        arcs,
        vec![[(1, 3), (2, 3)].into(), [(1, 3), (3, 2)].into(), BTreeSet::new()]
    );
    assert_eq!(d.iterations[0].sources(), [1, 2].into());
    assert_eq!(d.iterations[1].sources(), [1].into());
    assert_eq!(d.iterations[2].nodes, [1].into());
    let svg = d.svg();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    assert_eq!(count(&doc, "g", "iteration"), 3);
    assert_eq!(count(&doc, "line", "arc"), 4);
    // The turned edge is drawn orange in iteration 2, both of its edges red dashed (pruned).
    let iteration = |k: &str| doc.descendants().find(|n| n.attribute("data-iter") == Some(k)).unwrap();
    let strokes = |k: &str| -> Vec<String> {
        iteration(k)
            .descendants()
            .filter(|n| n.has_tag_name("line"))
            .map(|n| n.attribute("stroke").unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(strokes("1"), vec!["#444", "#444"]);
    assert_eq!(strokes("2"), vec!["#d62728", "#d62728"], "both pruned at its end");
    let turned = iteration("2")
        .descendants()
        .filter(|n| n.has_tag_name("title"))
        .filter(|n| n.text().is_some_and(|t| t.contains("3 -> 2") && t.contains("pruned")))
        .count();
    assert_eq!(turned, 1);
}

#[test]
fn the_ring_shows_its_repair_around_a_dead_node() {
    let ids: Vec<NodeId> = (1..=5).collect();
    let setups = ring(&ids, &ids);
    let mut s = Sim::new(NetConfig::default(), setups, Cr::new);
    agree(&mut s, |s, i| s.node(i).belief(), (1, 5));
    s.crash(5);
    agree(&mut s, |s, i| s.node(i).belief(), (2, 4));
    let d = Drawing::build(&run_dir(&s, "chang-roberts", "ring"));
    assert!(d.repairs.contains(&(4, 1)), "{:?}", d.repairs);
    assert!(d.dead.contains(&5));
    assert_eq!(d.leader, Some((4, 2)));
    roxmltree::Document::parse(&d.svg()).unwrap();
}
