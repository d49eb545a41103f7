//! Process tests of mutual exclusion: every algorithm, 5 nodes and the shared resource as real
//! processes, 20 entries each under full contention, `--until done`; zero violations by the
//! nodes' traces and by the resource, and `coordlab check` agrees; Ricart-Agrawala and
//! Lamport send a leaving node's messages and its next request to a peer in one datagram. The regrant story violates
//! without fencing and not with it. Bad options are refused.

mod common;

use common::*;
use coordlab::catalog::{find, Fit, Promise, ENTRIES, MUTEX};
use coordlab::trace::{Event, RunDir};

fn layout(algo: &str) -> (&'static str, Vec<&'static str>) {
    match find(algo).unwrap_or_else(|| panic!("{algo} is not registered")).runs_on {
        Fit::Complete => ("mesh", vec!["--topology", "complete"]),
        _ => ("ring", vec![]),
    }
}

fn count(rd: &RunDir, kind: &str) -> usize {
    rd.node_events.iter().filter(|r| r.event.kind() == kind).count()
}

#[test]
fn every_algorithm_serves_twenty_entries_per_node_with_no_violation() {
    for algo in ENTRIES.iter().filter(|e| e.family.name == MUTEX.name).map(|e| e.name) {
        let (sub, mut extra) = layout(algo);
        extra.extend([
            "--algo",
            algo,
            "--requests",
            "20",
            "--think-ms",
            "0",
            "--hold-ms",
            "1",
            "--until",
            "done",
        ]);
        let logs = temp_logs(&format!("mutex-{algo}"));
        let mut l = Launch::command(sub, 5, &logs, &extra);
        let status = l.wait();
        let out = l.output();
        assert_eq!(status.code(), Some(0), "{algo}:\n{out}");
        assert!(
            out.contains("done: all 5 nodes completed their 20 requests"),
            "{algo}:\n{out}"
        );
        assert!(out.contains("mutual exclusion: held"), "{algo}:\n{out}");
        // FIFO is judged exactly for the algorithms whose registry entry promises it.
        let fifo = find(algo).unwrap().promises.contains(&Promise::FifoEntries);
        assert_eq!(out.contains("FIFO (central): held"), fifo, "{algo}:\n{out}");
        let rd = RunDir::load(&l.run_dir()).unwrap();
        assert_eq!(count(&rd, "cs_enter"), 100, "{algo}");
        assert_eq!(count(&rd, "cs_exit"), 100, "{algo}");
        let begins = rd
            .resource
            .iter()
            .filter(|r| matches!(&r.event, Event::Access { phase, .. } if phase == "begin"))
            .count();
        assert_eq!(begins, 100, "{algo}: every entry reached the resource");
        assert!(!rd.resource.iter().any(|r| r.event.kind() == "violation"), "{algo}");
        if ["ricart-agrawala", "lamport"].contains(&algo) {
            // Leaving, a node answers (or releases to) its peers and, thinking no time, requests
            // again in the same step: each peer gets both in one datagram.
            let (sent, datagrams) = rd.node_events.iter().fold((0, 0), |(s, d), r| match r.event {
                Event::Stop { sent, datagrams, .. } => (s + sent, d + datagrams),
                _ => (s, d),
            });
            assert!(
                datagrams > 0 && datagrams < sent,
                "{algo}: {sent} messages in {datagrams} datagrams"
            );
            assert!(
                out.contains(&format!("sent {sent} (in {datagrams} datagrams)")),
                "{algo}:\n{out}"
            );
        }
        assert_all_reaped(&rd);
    }
}

#[test]
fn the_regrant_story_violates_without_fencing_and_not_with_it() {
    for fencing in [false, true] {
        let logs = temp_logs(&format!("mutex-regrant-{fencing}"));
        let mut extra = vec!["--topology", "complete", "--algo", "central", "--demo", "regrant"];
        if fencing {
            extra.push("--fencing");
        }
        let mut l = Launch::command("mesh", 4, &logs, &extra);
        let status = l.wait();
        let out = l.output();
        let rd = RunDir::load(&l.run_dir()).unwrap();
        let violations = rd.resource.iter().filter(|r| r.event.kind() == "violation").count();
        let stale = rd.resource.iter().filter(|r| r.event.kind() == "reject_stale").count();
        if fencing {
            assert_eq!(status.code(), Some(0), "{out}");
            assert_eq!(violations, 0, "{out}");
            assert!(stale >= 1, "the stale holder's write was rejected:\n{out}");
        } else {
            assert_eq!(status.code(), Some(1), "{out}");
            assert!(violations >= 1, "{out}");
            assert!(out.contains("held the resource at once"), "{out}");
        }
        assert_all_reaped(&rd);
    }
}

#[test]
fn bad_mutex_options_are_refused_by_name() {
    let logs = temp_logs("mutex-refused");
    let cases: &[(&[&str], &str)] = &[
        (
            &["3", "--algo", "token-ring", "--set", "quorum=2"],
            "--set quorum does not apply to token-ring",
        ),
        (
            &["3", "--algo", "token-ring", "--until", "done"],
            "--until done needs --requests",
        ),
        (&["3", "--algo", "token-ring", "--until", "elected"], "elects no leader"),
        (
            &["3", "--algo", "token-ring", "--ids", "0,1,2"],
            "id 0 is the shared resource's",
        ),
        (&["3", "--algo", "token-ring", "--set", "hold_ms=x"], "hold_ms=x"),
        (
            &["3", "--algo", "token-ring", "--demo", "regrant"],
            "a story of --algo central",
        ),
    ];
    for (args, want) in cases {
        let (code, err) = refused(args, &logs);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn quorum_amnesia_violates_and_durable_grants_or_fencing_do_not() {
    // The grant kept by a rename alone survives the kill as one also fsynced does.
    for (durable, fencing, fsync) in [
        (false, false, false),
        (true, false, false),
        (true, false, true),
        (false, true, false),
    ] {
        let logs = temp_logs(&format!("mutex-amnesia-{durable}-{fencing}-{fsync}"));
        let mut extra = vec!["--topology", "complete", "--algo", "quorum", "--demo", "quorum-amnesia"];
        if durable {
            extra.push("--durable");
        }
        if fsync {
            extra.extend(["--set", "fsync=true"]);
        }
        if fencing {
            extra.push("--fencing");
        }
        let mut l = Launch::command("mesh", 3, &logs, &extra);
        let status = l.wait();
        let out = l.output();
        assert!(out.contains("demo complete"), "{out}");
        assert!(out.contains("Their quorums meet in ["), "{out}");
        let rd = RunDir::load(&l.run_dir()).unwrap();
        let kills = rd.faults.iter().filter(|r| r.event.kind() == "kill").count();
        assert_eq!(kills, 1, "exactly the coordinator in the intersection restarts:\n{out}");
        let violations = rd.resource.iter().filter(|r| r.event.kind() == "violation").count();
        let stale = rd.resource.iter().filter(|r| r.event.kind() == "reject_stale").count();
        match (durable, fencing) {
            (true, _) => assert_eq!((status.code(), violations), (Some(0), 0), "{out}"),
            (_, true) => {
                assert_eq!((status.code(), violations), (Some(0), 0), "{out}");
                assert!(stale >= 1, "the older holder's write was rejected:\n{out}");
            }
            _ => {
                assert_eq!(status.code(), Some(1), "{out}");
                assert!(violations >= 1, "{out}");
            }
        }
        assert_all_reaped(&rd);
    }
}
