//! Checker tests of missing evidence: a cut or empty trace, a node that could not write its
//! trace, a FIFO or a link among the traces, and a summary that cannot be written.

use super::restart_tests::*;
use super::*;

#[test]
fn a_cut_or_empty_trace_is_missing_evidence_not_a_termination_violation() {
    let dir = temp("cut");
    let mut r = R::new("bully", &[1, 2, 3]);
    for n in [1, 2, 3] {
        r.ev(10, n, Event::Leader { leader: 3, term: 1 });
    }
    write_run(&dir, &r, 1000);
    // Node 2's trace stops mid-line (a full disk): its last line, the leader, is cut.
    let p2 = dir.join("node-2.jsonl");
    let text = std::fs::read_to_string(&p2).unwrap();
    std::fs::write(&p2, &text[..text.len() - 9]).unwrap();
    // Node 1's trace is empty.
    std::fs::write(dir.join("node-1.jsonl"), b"").unwrap();
    let report = check(&dir).unwrap();
    let a = &report.analysis;
    assert!(!report.violated, "{}", report.full);
    assert_eq!(a.bad_lines, 0, "a cut line is not a bad line");
    let files: Vec<&str> = a.incomplete.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(files, vec!["node-1.jsonl", "node-2.jsonl"]);
    assert!(
        report
            .text
            .contains("node-2.jsonl is INCOMPLETE: its last line is cut off"),
        "{}",
        report.text
    );
    assert!(!report.text.contains("VIOLATED: termination"), "{}", report.text);
    assert_eq!(a.election.as_ref().unwrap().unjudged, vec![1, 2]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_node_that_stopped_because_it_could_not_write_its_trace_is_not_judged_at_the_end() {
    let mut r = R::new("bully", &[1, 2, 3]);
    r.ev(10, 3, Event::Leader { leader: 3, term: 1 })
        .ev(11, 1, Event::Leader { leader: 3, term: 1 });
    r.fault(
        500,
        2,
        Event::Exit {
            pid: 102,
            status: format!("exit {}", crate::error::WRITE_FAILED),
        },
    );
    let a = analyse(&r.load(1000));
    assert!(a
        .incomplete
        .iter()
        .any(|(f, why)| f == "node-2.jsonl" && why.contains("could not write it")));
    assert!(!a.violated(), "{}", summary::render(&a, false));
}

#[test]
fn a_fifo_or_a_link_to_dev_zero_among_the_traces_is_refused_at_once() {
    let dir = temp("hostile");
    let r = R::new("bully", &[1, 2, 7]);
    write_run(&dir, &r, 1000);
    let p7 = dir.join("node-7.jsonl");
    std::fs::remove_file(&p7).unwrap();
    nix::unistd::mkfifo(&p7, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    match check(&dir) {
        Err(e @ CliError::Usage(_)) => assert!(e.to_string().contains("node-7.jsonl: a FIFO"), "{e}"),
        other => panic!("{other:?}"),
    }
    std::fs::remove_file(&p7).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &p7).unwrap();
    match check(&dir) {
        Err(e @ CliError::Usage(_)) => assert!(e.to_string().contains("a character device"), "{e}"),
        other => panic!("{other:?}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_summary_that_cannot_be_written_is_a_write_failure_with_its_own_exit_status() {
    let dir = temp("summary");
    write_run(&dir, &R::new("bully", &[1, 2]), 1000);
    std::fs::create_dir(dir.join("summary.txt")).unwrap();
    let e = check(&dir).unwrap_err();
    assert_eq!(e.exit_code(), 3, "{e}");
    assert!(e.to_string().contains("cannot write"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
