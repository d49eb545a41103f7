//! The checker as a user runs it: `coordlab check` into a closed pipe, and summary.txt after
//! any ending (the chaos soaks are in soak_process.rs).

mod common;

use common::*;
use std::fs;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Instant;

/// A finished run: a ring of 3 that elected, stopped by `--until done`.
fn finished_run(name: &str) -> std::path::PathBuf {
    let logs = temp_logs(name);
    let mut l = Launch::start(3, &logs, &["--until", "done"]);
    assert!(l.wait().success(), "{}", l.output());
    logs.keep().join("latest")
}

#[test]
fn check_into_a_closed_pipe_does_not_panic_and_every_run_writes_summary_txt() {
    let run = finished_run("check-pipe");
    // `--until done` ended it: summary.txt is there, and the launcher said so.
    let summary = fs::read_to_string(run.join("summary.txt")).expect("summary.txt written");
    assert!(summary.contains("Verdict: no property violated"), "{summary}");

    // `coordlab check | head -c 1`: the reader goes away after one byte.
    let mut child = Command::new(BIN)
        .args(["check", "--verbose"])
        .arg(&run)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 1];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    let status = wait_until(&mut child, Instant::now() + DEADLINE).expect("check ended");
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(status.code(), Some(0), "{err}");

    // The short summary is short; --verbose has every line.
    let short = Command::new(BIN).arg("check").arg(&run).output().unwrap();
    let long = Command::new(BIN)
        .args(["check", "--verbose"])
        .arg(&run)
        .output()
        .unwrap();
    assert_eq!(short.status.code(), Some(0));
    let (s, l) = (short.stdout.len(), long.stdout.len());
    assert!(s < l, "short {s} bytes, verbose {l} bytes");
    assert!(String::from_utf8_lossy(&short.stdout).lines().count() <= 30);

    // A console run stopped by `quit` writes it too.
    let logs = temp_logs("check-quit");
    let mut l = Launch::start(3, &logs, &[]);
    l.wait_for("a leader", |rd| agreed(rd, &[1, 2, 3]));
    assert!(l.quit().success());
    assert!(logs.join("latest/summary.txt").is_file(), "{}", l.output());
    let _ = fs::remove_dir_all(&logs);
    let _ = fs::remove_dir_all(run.parent().unwrap());
}
