//! Tests of [`nodes`](super).

use super::*;
use crate::cluster::{plan, sockets, LaunchOptions};

/// An empty logs directory named for the test, and quiet launch options of `n` nodes writing
/// there.
fn fresh_launch(name: &str, n: usize) -> (PathBuf, LaunchOptions) {
    let dir = std::env::temp_dir().join(format!("coordlab-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let opts = LaunchOptions {
        quiet: true,
        logs: dir.clone(),
        ..plan::test_options(n)
    };
    (dir, opts)
}

/// A fleet of `n` planned nodes, none spawned, writing to a fresh directory.
fn unspawned_fleet(name: &str, n: usize) -> (PathBuf, plan::Plan, Fleet) {
    let (dir, opts) = fresh_launch(name, n);
    let plan = plan::plan(&opts).unwrap();
    let key = dir.join("key");
    crate::node::keyfile::write(&key, &crate::node::keyfile::generate().unwrap()).unwrap();
    let args = NodeArgs::new(&opts, &plan, &dir, &key).unwrap();
    let fleet = Fleet::new(&plan.nodes, args, &dir, 0).unwrap();
    (dir, plan, fleet)
}

#[test]
fn a_node_that_fails_to_start_fails_the_launch_with_its_own_words() {
    let (dir, opts) = fresh_launch("failstart", 2);
    let mut plan = plan::plan(&opts).unwrap();
    let socks = sockets::bind_all(&mut plan, 0).unwrap();
    // The "coordlab" spawned here is this test binary (current_exe), which refuses the
    // node's options and exits with an error line: a node that cannot start.
    let key = dir.join("key");
    crate::node::keyfile::write(&key, &crate::node::keyfile::generate().unwrap()).unwrap();
    let args = NodeArgs::new(&opts, &plan, &dir, &key).unwrap();
    let mut fleet = Fleet::new(&plan.nodes, args, &dir, 0).unwrap();
    fleet.spawn_all(socks, None, Gate::new().unwrap()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while fleet.start_failure.is_none() {
        assert!(Instant::now() < deadline, "no start failure seen");
        fleet.refresh();
        fleet.reap();
        std::thread::sleep(Duration::from_millis(10));
    }
    let why = fleet.start_failure.take().unwrap();
    assert!(
        why.starts_with("node ") && why.contains("failed to start (exit"),
        "{why}"
    );
    assert!(why.contains("error"), "the node's own words: {why}");
    fleet.stop_all();
    assert!(fleet.all_reaped());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_reading_past_its_deadline_reads_one_node_a_call_and_goes_on_from_there() {
    let (dir, plan, mut fleet) = unspawned_fleet("readbudget", 3);
    let write_all = |fleet: &Fleet, t: u64| {
        for p in &plan.nodes {
            let line = format!(
                "{{\"t\":{t},\"node\":{},\"ev\":\"leader\",\"leader\":1,\"term\":1}}\n",
                p.id
            );
            let path = fleet.args.trace_path(p.id);
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .unwrap();
            std::io::Write::write_all(&mut f, line.as_bytes()).unwrap();
        }
    };
    let counts = |fleet: &Fleet| fleet.nodes.iter().map(|n| n.tail.records().len()).collect::<Vec<_>>();
    write_all(&fleet, 1);
    // A deadline already past: one node a call, each call on from where the last stopped.
    let past = Some(Instant::now());
    fleet.refresh_until(past);
    assert_eq!(counts(&fleet), vec![1, 0, 0]);
    fleet.refresh_until(past);
    assert_eq!(counts(&fleet), vec![1, 1, 0]);
    write_all(&fleet, 2);
    fleet.refresh_until(past);
    assert_eq!(counts(&fleet), vec![1, 1, 2]);
    fleet.refresh_until(past);
    assert_eq!(counts(&fleet), vec![2, 1, 2], "round again, from the first");
    // No deadline: every node to its end.
    fleet.refresh();
    assert_eq!(counts(&fleet), vec![2, 2, 2]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_status_line_names_no_dead_node_as_a_holder() {
    // A node killed inside the section, reaped: its trace ends inside, and it was listed
    // beside the live holder.
    let (dir, _, mut fleet) = unspawned_fleet("statusholder", 3);
    let (dead, live) = (fleet.nodes[0].plan.id, fleet.nodes[1].plan.id);
    fleet.nodes[0].cs.holding = Some((4, 0));
    fleet.nodes[0].state = crate::cluster::model::State::Exited("signal SIGKILL".into());
    fleet.nodes[1].cs.holding = Some((7, 0));
    fleet.nodes[1].state = crate::cluster::model::State::Running;
    let line = crate::cluster::mutex_goal::status_line(&fleet);
    assert!(line.starts_with(&format!("holder: node {live} (req 7);")), "{line}");
    assert!(!line.contains(&format!("node {dead} ")), "{line}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_stop_waits_longer_for_more_nodes_and_names_its_stragglers_in_one_line() {
    assert_eq!(stop_grace(0), Duration::from_secs(2));
    assert!(stop_grace(16_384) > Duration::from_secs(10));
    let grace = Duration::from_millis(2500);
    assert_eq!(
        stragglers_line(&[7], grace),
        "coordlab: node 7 did not stop within 2.5 s of SIGTERM: SIGKILL"
    );
    let many: Vec<u64> = (100..2922).collect();
    let line = stragglers_line(&many, grace);
    assert_eq!(
        line,
        "coordlab: 2822 nodes (100, 101, 102, 103, 104, 105, 106, 107, and 2814 more) did not stop within 2.5 s of SIGTERM: SIGKILL"
    );
}

#[test]
fn the_narration_tells_a_holder_killed_inside_the_section_as_no_holder() {
    // The resource (paused, say) reads node 2's BEGIN after node 2 was killed inside the
    // section, then node 3's: it records two holders, and the live line says what the checker
    // will: node 2 held nothing then. A holder that was alive is a violation as before.
    for killed in [true, false] {
        let (dir, _plan, mut fleet) = unspawned_fleet(&format!("narrate-dead-holder-{killed}"), 3);
        let line = "{\"t\":1000200,\"node\":0,\"ev\":\"violation\",\"nodes\":[2,3]}\n";
        std::fs::write(dir.join("resource.jsonl"), line).unwrap();
        let i = fleet.find(2).unwrap();
        fleet.nodes[i].cs.entered_at = 1_000_100;
        fleet.nodes[i].died_at = killed.then_some(1_000_150);
        let news = crate::cluster::narrate::Narrator::default().news(&fleet);
        let told = news.iter().find(|l| l.contains("node 2 and node 3")).expect("told");
        if killed {
            assert!(
                told.contains(
                    "the resource counts node 2 and node 3 in the critical section at once, but node 2 died at"
                ) && told.ends_with("inside the section: a killed holder is not a holder"),
                "{told}"
            );
        } else {
            assert!(
                told.contains("VIOLATION: node 2 and node 3 in the critical section at once"),
                "{told}"
            );
        }
        // Restarted before the record, its new trace not read past it: it may hold again.
        fleet.nodes[i].restarted_at = Some(1_000_180);
        let unsure = crate::cluster::narrate::Narrator::default().news(&fleet);
        assert!(
            unsure.iter().any(|l| l.contains("VIOLATION: node 2 and node 3")),
            "{unsure:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_node_starting_a_term_later_is_told_at_its_own_start() {
    // Nodes 1 and 2, cut off from the leader, start term 2 at +705 ms; nodes 3, 4 and 5 hear
    // of it at the heal, +2010 ms. The second line says +2010, not the term's first start.
    let (dir, _plan, mut fleet) = unspawned_fleet("narrate-late-starters", 5);
    let start = fleet.start_us;
    let mut narrator = crate::cluster::narrate::Narrator::default();
    for id in [1, 2] {
        let i = fleet.find(id).unwrap();
        fleet.nodes[i].elections.push((start + 705_000 + id, 2));
    }
    let mut told = narrator.news(&fleet);
    told.extend(narrator.news(&fleet));
    assert!(
        told.iter().any(|l| l == "+705 ms nodes 1, 2 start an election: term 2"),
        "{told:?}"
    );
    for id in [3, 4, 5] {
        let i = fleet.find(id).unwrap();
        fleet.nodes[i].elections.push((start + 2_010_000 + id, 2));
    }
    let later = narrator.news(&fleet);
    assert_eq!(
        later,
        ["+2010 ms nodes 3, 4, 5 also start an election: term 2"],
        "{later:?}"
    );
    // Term 4 seen at one tick and term 3 first at the next: both are told then, in order.
    let i = fleet.find(1).unwrap();
    fleet.nodes[i].elections.push((start + 3_000_000, 4));
    assert!(narrator.news(&fleet).is_empty());
    fleet.nodes[i].elections.push((start + 3_000_000, 3));
    let both = narrator.news(&fleet);
    assert_eq!(
        both,
        [
            "+3000 ms node 1 starts an election: term 3",
            "+3000 ms node 1 starts an election: term 4"
        ],
        "{both:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
