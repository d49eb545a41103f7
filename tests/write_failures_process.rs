//! Process tests of hostile files and failed writes: `coordlab check` refuses a FIFO or a link
//! to /dev/zero among the traces at once, `--key` refuses a FIFO and a 2 GiB sparse file before
//! reading them, output that cannot be written (`> /dev/full`) and a `summary.txt` that cannot
//! be written exit with status 3 (not a panic, not a violation), and a run whose disk fills up
//! (a small tmpfs, when the test may mount one) is stopped with status 3.
//! Every wait has a deadline, and every process started is reaped.

mod common;

use common::*;
use std::fs::{self, File};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::Instant;

/// Runs `coordlab <args>` with stdout to `stdout` and stderr to a file; waits with the deadline.
fn run_to(args: &[&str], stdout: File, name: &str) -> (ExitStatus, String) {
    let err = std::env::temp_dir().join(format!("coordlab-wf-{name}-{}.err", std::process::id()));
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let status = wait_until(&mut child, Instant::now() + DEADLINE).expect("coordlab ended in time");
    let text = fs::read_to_string(&err).unwrap_or_default();
    let _ = fs::remove_file(&err);
    (status, text)
}

/// A finished three-node ring's run directory, made by a real launch.
fn finished_run(name: &str) -> std::path::PathBuf {
    let logs = temp_logs(name);
    let mut l = Launch::start(3, &logs, &["--duration", "1"]);
    let status = l.wait();
    assert!(status.code().is_some(), "{}", l.output());
    let run = fs::canonicalize(l.run_dir()).unwrap();
    drop(l);
    logs.keep();
    run
}

#[test]
fn output_to_a_full_device_is_a_write_failure_not_a_crash() {
    let full = || File::options().write(true).open("/dev/full").unwrap();
    let (status, err) = run_to(&["algos"], full(), "algos");
    assert_eq!(status.signal(), None, "killed by a signal: {err}");
    assert_eq!(status.code(), Some(3), "{err}");
    assert!(err.contains("cannot write the output"), "{err}");
    let dir = finished_run("wf-check-full");
    let (status, err) = run_to(&["check", dir.to_str().unwrap()], full(), "check");
    assert_eq!(status.code(), Some(3), "{err}");
    let _ = fs::remove_dir_all(dir.parent().unwrap());
}

#[test]
fn check_refuses_a_fifo_and_a_link_to_dev_zero_at_once_and_an_unwritable_summary_is_status_3() {
    let dir = finished_run("wf-hostile");
    let null = || File::create("/dev/null").unwrap();
    let trace = dir.join("node-2.jsonl");
    fs::remove_file(&trace).unwrap();
    nix::unistd::mkfifo(&trace, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let (status, err) = run_to(&["check", dir.to_str().unwrap()], null(), "fifo");
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains("node-2.jsonl: a FIFO, not a regular file"), "{err}");
    fs::remove_file(&trace).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &trace).unwrap();
    let (status, err) = run_to(&["check", dir.to_str().unwrap()], null(), "zero");
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains("a character device"), "{err}");
    // A checked run whose summary.txt cannot be written: not a violation (1), a write failure.
    fs::remove_file(&trace).unwrap();
    fs::write(&trace, b"").unwrap();
    let _ = fs::remove_file(dir.join("summary.txt"));
    fs::create_dir(dir.join("summary.txt")).unwrap();
    let (status, err) = run_to(&["check", dir.to_str().unwrap()], null(), "summary");
    assert_eq!(status.code(), Some(3), "{err}");
    assert!(err.contains("cannot write"), "{err}");
    let _ = fs::remove_dir_all(dir.parent().unwrap());
}

#[test]
fn a_key_that_is_a_fifo_or_a_huge_sparse_file_is_refused_before_it_is_read() {
    let logs = temp_logs("wf-key");
    fs::create_dir_all(&logs).unwrap();
    let fifo = logs.join("key.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let (code, err) = refused(&["3", "--key", fifo.to_str().unwrap()], &logs.join("runs"));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("a FIFO, not a regular file"), "{err}");
    let sparse = logs.join("key.sparse");
    File::create(&sparse).unwrap().set_len(2 << 30).unwrap();
    fs::set_permissions(&sparse, fs::Permissions::from_mode(0o600)).unwrap();
    let (code, err) = refused(&["3", "--key", sparse.to_str().unwrap()], &logs.join("runs"));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("this one 2147483648"), "{err}");
    let _ = fs::remove_dir_all(&logs);
}

/// Mounts a tmpfs of `size` at `dir`; false (with the reason printed) when it cannot.
fn mount_tmpfs(dir: &Path, size: &str) -> bool {
    fs::create_dir_all(dir).unwrap();
    let out = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(dir)
        .output();
    match out {
        Ok(o) if o.status.success() => true,
        Ok(o) => {
            eprintln!(
                "skipped: cannot mount a tmpfs here ({}); run as root to test a full disk",
                String::from_utf8_lossy(&o.stderr).trim()
            );
            false
        }
        Err(e) => {
            eprintln!("skipped: cannot run mount ({e})");
            false
        }
    }
}

/// Unmounts `dir` when dropped, even if the test fails.
struct Mounted<'a>(&'a Path);

impl Drop for Mounted<'_> {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0).status();
        let _ = fs::remove_dir_all(self.0);
    }
}

#[test]
fn a_run_whose_disk_fills_up_stops_with_a_warning_and_status_3() {
    let dir = temp_logs("wf-tmpfs");
    if !mount_tmpfs(&dir, "160k") {
        return;
    }
    let _guard = Mounted(&dir);
    let out = std::env::temp_dir().join(format!("coordlab-wf-tmpfs-{}.out", std::process::id()));
    let file = File::create(&out).unwrap();
    let mut child = Command::new(BIN)
        .args(["ring", "4", "--base-port", "0", "--duration", "30", "--logs"])
        .arg(&dir)
        .stdin(Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .spawn()
        .unwrap();
    let status = wait_until(&mut child, Instant::now() + DEADLINE);
    let text = fs::read_to_string(&out).unwrap_or_default();
    let _ = fs::remove_file(&out);
    let status = status.unwrap_or_else(|| panic!("the launcher did not stop:\n{text}"));
    assert_eq!(status.code(), Some(3), "{text}");
    assert!(
        text.contains("WARNING: node") && text.contains("could not write its trace"),
        "{text}"
    );
}
