//! The network stories and chaos with network faults, as a user runs them: `--demo link-cut`
//! (with and without majority mode), `--demo partition` (with and without fencing), on the
//! user backend always and on the kernel backend (nftables) when this machine allows it, and a
//! short chaos soak drawing network faults. Each asserts the story's lines, the exit status,
//! the ground truth in faults.jsonl and that every process was reaped.

mod common;

use common::*;
use coordlab::trace::{Event, RunDir};
use std::process::Command;
use std::time::{Duration, Instant};

/// A story may wait for the nodes to start; the kernel backend's table is set up first.
const STORY_DEADLINE: Duration = Duration::from_secs(120);

/// Runs `coordlab <sub> N extra...` to its end; returns (exit code, output, run directory).
fn run(name: &str, sub: &str, n: usize, extra: &[&str]) -> (Option<i32>, String, RunDir) {
    let logs = temp_logs(name);
    let mut l = Launch::command(sub, n, &logs, extra);
    let status = wait_until(&mut l.child, Instant::now() + STORY_DEADLINE);
    l.done = status;
    let out = l.output();
    let status = status.unwrap_or_else(|| panic!("{name}: the launcher did not end in time:\n{out}"));
    let rd = RunDir::load(&l.run_dir()).unwrap_or_else(|e| panic!("{name}: {e}:\n{out}"));
    assert_all_reaped(&rd);
    (status.code(), out, rd)
}

/// Whether the kernel backend can run here (root, and nftables answers); else why not.
fn kernel_backend() -> Result<(), String> {
    if !nix_is_root() {
        return Err("not root".into());
    }
    match Command::new("nft").args(["list", "tables"]).output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!(
            "nft list tables failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Err(format!("nft cannot run ({e}); scripts/setup-nftables.sh installs it")),
    }
}

fn nix_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

/// The network events of faults.jsonl, as (kind, backend).
fn net_events(rd: &RunDir) -> Vec<(String, String)> {
    rd.faults
        .iter()
        .filter_map(|r| match &r.event {
            Event::Cut { backend, .. }
            | Event::Partition { backend, .. }
            | Event::Heal { backend, .. }
            | Event::Loss { backend, .. }
            | Event::Delay { backend, .. }
            | Event::NetError { backend, .. } => Some((r.event.kind().to_string(), backend.clone())),
            _ => None,
        })
        .collect()
}

/// Asserts that every line of `want` is in `out`, in that order.
fn in_order(out: &str, want: &[&str]) {
    let mut from = 0;
    for w in want {
        match out[from..].find(w) {
            Some(i) => from += i + w.len(),
            None => panic!("{w:?} missing (or out of order) in:\n{out}"),
        }
    }
}

fn link_cut(backend: &str) {
    let (code, out, rd) = run(
        &format!("link-cut-{backend}"),
        "mesh",
        10,
        &["--demo", "link-cut", "--net", backend],
    );
    assert_eq!(code, Some(0), "{out}");
    in_order(
        &out,
        &[
            "mesh (link-cut: 22 links between the 10 nodes) of 10 nodes running echo",
            "1. all 10 live nodes agree",
            "2. cut the link 2-10 at",
            "the only channel between nodes 1,2,3,4 and nodes 5,6,7,8,9,10",
            "3. two leaders, one per side: node ",
            "split-brain by partition",
            "4. healed the network at",
            "all 10 live nodes agree",
            "demo complete: the cut split the graph and each side elected its own, and after the heal one leader remains",
            "Network (from faults.jsonl): 2 changes",
            "cut the link 2-10 (both ways)",
            "split from ",
            "of a running node the network cut off",
            "Verdict: no property violated",
            "5. from the traces:",
        ],
    );
    let cut = rd.faults.iter().find_map(|r| match &r.event {
        Event::Cut { links, backend } => Some((links.clone(), backend.clone())),
        _ => None,
    });
    assert_eq!(cut, Some((vec![(2, 10), (10, 2)], backend.to_string())), "{out}");
    // The live narration already tells a node cut off from one that is slow.
    assert!(
        out.contains("it is running, but the network cuts it off from this node: cut off, not dead"),
        "{out}"
    );
    assert_eq!(
        net_events(&rd).iter().map(|e| e.0.as_str()).collect::<Vec<_>>(),
        vec!["cut", "heal"]
    );
}

fn link_cut_majority(backend: &str) {
    let (code, out, rd) = run(
        &format!("link-cut-majority-{backend}"),
        "mesh",
        10,
        &["--demo", "link-cut", "--set", "majority=true", "--net", backend],
    );
    assert_eq!(code, Some(0), "{out}");
    in_order(
        &out,
        &[
            "1. all 10 live nodes agree",
            "2. cut the channel 2-10 at",
            "the partition 1,2,3,4 | 5,6,7,8,9,10",
            "3. only the side holding a majority has a leader: node ",
            "for nodes 5, 6, 7, 8, 9 and 10 (6 of 10 votes)",
            "nodes 1, 2, 3 and 4 (4 of 10 votes) cannot reach a majority: no node there leads",
            "4. healed the network at",
            "demo complete: the cut split the graph; only the majority side had a leader",
            "Violations: none",
        ],
    );
    assert_eq!(
        net_events(&rd)
            .iter()
            .map(|e| (e.0.as_str(), e.1.as_str()))
            .collect::<Vec<_>>(),
        vec![("partition", backend), ("heal", backend)]
    );
}

fn partition(backend: &str, fencing: bool) {
    let mut extra = vec!["--demo", "partition", "--net", backend];
    if fencing {
        extra.push("--fencing");
    }
    let (code, out, rd) = run(&format!("partition-{backend}-{fencing}"), "mesh", 4, &extra);
    in_order(
        &out,
        &[
            "running central",
            "1. node ",
            "holds the section",
            "can no longer hear it",
            "2. the coordinator heard nothing from node ",
            "now both hold the section by their own traces",
            "3. node ",
            "healed the network at",
            "demo complete: the coordinator took a holder it could not hear for dead",
        ],
    );
    let violations = rd.resource.iter().filter(|r| r.event.kind() == "violation").count();
    let stale = rd.resource.iter().filter(|r| r.event.kind() == "reject_stale").count();
    if fencing {
        assert_eq!(code, Some(0), "{out}");
        assert_eq!(violations, 0, "{out}");
        assert!(stale >= 1, "{out}");
        assert!(out.contains("with --fencing the resource rejected"), "{out}");
    } else {
        assert_eq!(code, Some(1), "{out}");
        assert!(violations >= 1, "{out}");
        assert!(out.contains("the resource caught two holders at once"), "{out}");
        assert!(out.contains("the network then: in force since"), "{out}");
    }
    assert!(
        out.contains("but the link ") && out.contains(" was cut: cut off, not dead"),
        "{out}"
    );
    assert_eq!(net_events(&rd).first().map(|e| e.0.as_str()), Some("cut"), "{out}");
}

#[test]
fn link_cut_on_the_user_backend_splits_the_graph_into_two_leaders_then_one() {
    link_cut("user");
}

#[test]
fn link_cut_in_majority_mode_on_the_user_backend_leaves_only_the_majority_a_leader() {
    link_cut_majority("user");
}

#[test]
fn partition_on_the_user_backend_catches_two_holders_and_fencing_rejects_the_stale_one() {
    partition("user", false);
    partition("user", true);
}

#[test]
fn both_demos_on_the_kernel_backend_when_nftables_is_usable() {
    if let Err(why) = kernel_backend() {
        eprintln!("skipped: the kernel backend cannot run here: {why}");
        return;
    }
    link_cut("kernel");
    link_cut_majority("kernel");
    partition("kernel", false);
    partition("kernel", true);
    let tables = Command::new("nft").args(["list", "tables"]).output().unwrap();
    let ours = format!("coordlab-{}", std::process::id());
    assert!(
        !String::from_utf8_lossy(&tables.stdout).contains(&ours),
        "a table outlived its run"
    );
}

#[test]
fn bad_network_demo_launches_are_refused_by_name() {
    let logs = temp_logs("net-demo-refused");
    let cases: &[(&str, &[&str], &str)] = &[
        ("mesh", &["8", "--demo", "link-cut"], "runs on 10 nodes with ids 1-10"),
        (
            "mesh",
            &["10", "--demo", "link-cut", "--algo", "bully"],
            "bully cannot run two groups",
        ),
        ("ring", &["10", "--demo", "link-cut"], "runs on a mesh"),
        (
            "mesh",
            &["10", "--demo", "link-cut", "--topology", "grid"],
            "leave --topology out",
        ),
        (
            "mesh",
            &["4", "--demo", "partition", "--algo", "lamport"],
            "a story of --algo central",
        ),
    ];
    for (sub, args, want) in cases {
        let (code, msg) = refused_cmd(sub, args, &logs);
        assert_eq!(code, Some(2), "{args:?}: {msg}");
        assert!(msg.contains(want), "{args:?}: {msg}");
        assert_eq!(msg.trim().lines().count(), 1, "{args:?}: one line: {msg}");
    }
    assert!(!logs.join("latest").exists(), "nothing started");
}

#[test]
fn a_short_chaos_soak_with_network_faults_passes() {
    let (code, out, rd) = run(
        "chaos-net",
        "chaos",
        5,
        &[
            "--duration",
            "10",
            "--seed",
            "7",
            "--faults",
            "network",
            "--net",
            "user",
        ],
    );
    let net = net_events(&rd);
    assert!(net.iter().filter(|e| e.0 != "heal").count() >= 2, "{net:?}:\n{out}");
    assert_eq!(
        net.last().map(|e| e.0.as_str()),
        Some("heal"),
        "healed before settling:\n{out}"
    );
    assert!(
        !rd.faults
            .iter()
            .any(|r| matches!(r.event, Event::Pause { .. } | Event::Kill { .. })),
        "--faults network draws no process fault"
    );
    assert!(out.contains("chaos: passed"), "{out}");
    assert_eq!(code, Some(0), "{out}");
}
