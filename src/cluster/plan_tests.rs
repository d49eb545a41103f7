//! Tests of [`plan`](super).

use super::*;

use super::test_options as opts;

fn err(o: LaunchOptions) -> String {
    match plan(&o) {
        Err(CliError::Usage(m)) => m,
        other => panic!("expected a usage error, got {other:?}"),
    }
}

#[test]
fn a_ring_knows_its_neighbours_and_initiators() {
    let mut o = opts(3);
    o.ids = Some(vec![5, 2, 8]);
    o.initiators = "2".into();
    let p = plan(&o).unwrap();
    let got: Vec<_> = p
        .nodes
        .iter()
        .map(|n| (n.id, n.neighbours.clone(), n.initiator))
        .collect();
    assert_eq!(
        got,
        vec![(5, vec![8, 2], false), (2, vec![5, 8], true), (8, vec![2, 5], false)]
    );
    let two = plan(&opts(2)).unwrap();
    assert_eq!(two.nodes[0].neighbours, vec![2]);
}

#[test]
fn every_bad_option_is_named() {
    assert!(err(opts(1)).contains("at least 2 nodes"));
    let mut o = opts(3);
    o.ids = Some(vec![1, 2]);
    assert!(err(o).contains("--ids lists 2 ids"));
    let mut o = opts(3);
    o.ids = Some(vec![1, 2, 1]);
    assert!(err(o).contains("id 1 appears twice"));
    let mut o = opts(3);
    o.algo = "paxos".into();
    assert!(err(o).contains("unknown algorithm 'paxos'"));
    let mut o = opts(3);
    o.initiators = "4".into();
    assert!(err(o).contains("node 4 is not in the ring"));
    let mut o = opts(3);
    o.until = Some("forever".into());
    assert!(err(o).contains("--until"));
    let mut o = opts(3);
    o.algo = "ring-probe".into();
    o.until = Some("elected".into());
    assert!(err(o).contains("ring-probe is not an election; use --until done"));
    let mut o = opts(3);
    o.demo = Some("party".into());
    assert!(err(o).contains("known: false-suspicion, split-brain, snapshot, regrant, quorum-amnesia"));
    let mut o = opts(3);
    o.duration = Some(-1.0);
    assert!(err(o).contains("--duration"));
    let mut o = opts(3);
    o.base_port = 65_535;
    assert!(err(o).contains("past 65535"));
    let mut o = opts(3);
    o.timeout_ms = o.heartbeat_ms;
    assert!(err(o).contains("must be above --heartbeat-ms"));
}

#[test]
fn a_mesh_gets_its_graph_the_mesh_option_and_the_setup_checks() {
    let mut o = opts(6);
    o.topology = Layout::Mesh("grid".into());
    o.algo = "yoyo".into();
    let p = plan(&o).unwrap();
    assert_eq!(p.topology, "mesh:grid");
    assert_eq!(p.nodes[0].neighbours, vec![2, 4]);
    assert_eq!(p.nodes[4].neighbours, vec![2, 4, 6]);
    assert_eq!(p.set.get(MESH_KEY).map(String::as_str), Some("true"));
    let s = p.setup(&o, &p.nodes[4]);
    assert!(s.flag(MESH_KEY, false) && *s.members == [1, 2, 3, 4, 5, 6] && s.initiator);
    assert!(plan(&opts(3)).unwrap().set.is_empty(), "a ring is not a mesh");

    o.topology = Layout::Mesh("random:9".into());
    assert!(err(o.clone()).contains("random:9"));
    o.topology = Layout::Mesh("grid".into());
    o.algo = "franklin".into();
    assert!(err(o.clone()).contains("node 2 has 3 neighbours"));
    o.algo = "chang-roberts".into();
    assert!(err(o.clone()).contains("coordlab ring N"));
    o.algo = "echo".into();
    o.set.insert("weights".into(), "1:5,x".into());
    assert!(err(o.clone()).contains("weights"), "{}", err(o.clone()));
    o.set.clear();
    o.set.insert(MESH_KEY.into(), "false".into());
    assert!(err(o).contains("the launcher sets this itself"));
}

#[test]
fn keys_come_from_the_algorithms_registry_entry() {
    let mut o = opts(4);
    o.topology = Layout::Mesh("bidirectional-ring".into());
    o.algo = "ring-probe".into();
    assert!(
        plan(&o).unwrap().set.is_empty(),
        "mesh=true only for an entry that takes it"
    );
    o.set.insert("laps".into(), "3".into());
    assert_eq!(plan(&o).unwrap().set.get("laps").map(String::as_str), Some("3"));
    o.set.insert("majority".into(), "true".into());
    assert!(err(o.clone()).contains("--set majority does not apply to ring-probe"));
    o.set.clear();
    o.demo = Some("split-brain".into());
    assert_eq!(
        err(o),
        "--demo tells an election story, and ring-probe is a probe algorithm, not an election"
    );
    let mut o = opts(3);
    o.set.insert("loss".into(), "0.2".into());
    assert_eq!(
        err(o),
        "unknown key loss for chang-roberts; it takes: max_slew_ppm, step, vc, fsync, majority, weights, detector, detector_watch, \
         phi_threshold, phi_window, phi_min_std_ms, phi_pause_ms, phi_beat_ms, phi_relay, swim_period_ms, swim_probes, swim_window, swim_probe_timeout_ms, swim_retry_ms, swim_k, \
         swim_suspicion_mult, swim_suspicion_max_mult, swim_hold"
    );
}
