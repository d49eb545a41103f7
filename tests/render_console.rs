//! The console tells the story: a ring of 4 elects, its leader is paused, and the console says
//! who suspected it (falsely: it was paused), that an election started, who won and how long it
//! took, and when all agreed; a violation the shared resource reports is told at once; `coordlab logs` and
//! `coordlab quit` work from another terminal. With `--quiet`, only the terse lines.

mod common;

use common::*;
use std::fs;
use std::time::Instant;

/// Waits until the launcher's output contains `what`.
fn wait_output(l: &Launch, what: &str) {
    let deadline = Instant::now() + DEADLINE;
    while !l.output().contains(what) {
        assert!(Instant::now() < deadline, "no {what:?} in:\n{}", l.output());
        std::thread::sleep(POLL);
    }
}

#[test]
fn the_console_narrates_and_obeys_another_terminal() {
    let logs = temp_logs("render-console");
    let mut l = Launch::start(4, &logs, &["--heartbeat-ms", "50", "--timeout-ms", "200"]);
    let all = [1, 2, 3, 4];
    let (leader, term) = l.wait_for("a first leader", |rd| agreed(rd, &all));
    wait_output(&l, &format!("node {leader} declared itself leader of term {term}"));
    l.console(&format!("pause {leader}"));
    let others: Vec<u64> = all.iter().copied().filter(|&i| i != leader).collect();
    let (second, t2) = l.wait_for("a leader while the first is paused", |rd| {
        agreed(rd, &others).filter(|&(_, t)| t > term)
    });
    wait_output(&l, &format!("node {second} declared itself leader of term {t2}"));
    let out = l.output();
    assert!(
        out.contains(&format!("suspected node {leader} after"))
            && out.contains("it is paused, not dead: a false suspicion"),
        "{out}"
    );
    // One node ("node 1 starts ...") or several that started together ("nodes 1, 2 start ...").
    assert!(
        out.contains(&format!("starts an election: term {t2}"))
            || out.contains(&format!("start an election: term {t2}")),
        "{out}"
    );
    // The agreement line says when it formed and how long the election took (to the agreement).
    let agree = format!("live nodes agree: node {second} leads term {t2} (+");
    wait_output(&l, &agree);
    let out = l.output();
    let line = out.lines().find(|l| l.contains(&agree)).unwrap_or_default();
    assert!(
        line.contains(" ms since start; elected in ") && line.ends_with(" ms)"),
        "{line}"
    );

    // A shared resource that saw two holders at once is told the moment it says so.
    let line = r#"{"t":1,"ev":"violation","nodes":[1,2]}"#;
    fs::write(l.run_dir().join("resource.jsonl"), format!("{line}\n")).unwrap();
    wait_output(&l, "VIOLATION: node 1 and node 2 in the critical section at once");

    // From another terminal: the tail of a node's log, then quit.
    let logs_out = coordlab(&["logs", "1", "3"], &l.run_dir());
    assert!(logs_out.status.success());
    let text = String::from_utf8_lossy(&logs_out.stdout);
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(text.contains("node 1"), "{text}");
    let quit = coordlab(&["quit"], &l.run_dir());
    assert!(quit.status.success(), "{quit:?}");
    l.done = None;
    let status = l.wait();
    assert_eq!(status.code(), Some(0), "{}", l.output());
    drop(l);

    // --quiet: agreement lines, no story.
    let mut q = Launch::start(3, &logs.join("quiet"), &["--quiet", "--heartbeat-ms", "50"]);
    q.wait_for("a leader", |rd| agreed(rd, &[1, 2, 3]));
    wait_output(&q, "live nodes agree");
    assert_eq!(q.quit().code(), Some(0));
    assert!(!q.output().contains("declared itself"), "{}", q.output());
    drop(q);
    let _ = fs::remove_dir_all(&logs);
}
