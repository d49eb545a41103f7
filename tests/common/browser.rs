//! What the picture tests share: running a browser or a tool with a deadline, and reading SVG.

use super::{wait_until, BIN};
use std::fs::{self, File};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a browser or a tool may take.
pub const BROWSER_DEADLINE: Duration = Duration::from_secs(60);

/// Runs `cmd` with a deadline, its output to `out` (its stderr beside it, `.err`); true when
/// it exited 0.
pub fn run_to(mut cmd: Command, out: &Path) -> bool {
    let file = File::create(out).unwrap();
    let err = File::create(out.with_extension("err")).unwrap();
    let child = cmd.stdout(file).stderr(err).stdin(Stdio::null()).spawn();
    let Ok(mut child) = child else { return false };
    wait_until(&mut child, Instant::now() + BROWSER_DEADLINE).is_some_and(|s| s.success())
}

/// Headless Chromium at `bin`, as the tests run it.
pub fn headless(bin: &str) -> Command {
    let mut c = Command::new(bin);
    c.args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]);
    c
}

/// A file's URL.
pub fn url(p: &Path) -> String {
    format!("file://{}", fs::canonicalize(p).unwrap().display())
}

/// How many `tag` elements of `doc` have `class` among their classes.
pub fn class_count(doc: &roxmltree::Document<'_>, tag: &str, class: &str) -> usize {
    doc.descendants()
        .filter(|n| n.has_tag_name(tag) && n.attribute("class").is_some_and(|c| c.split(' ').any(|w| w == class)))
        .count()
}

/// Runs `coordlab ARGS DIR`, which must succeed; its output.
pub fn coordlab_ok(args: &[&str], dir: &Path) -> String {
    let out = Command::new(BIN).args(args).arg(dir).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "coordlab {args:?}: {text}");
    text
}

/// Screenshots `page` with headless Chromium at `bin` into `shot` (`size` as `W,H`, `extra`
/// flags before the page), and checks that a picture came out; its output goes to `log`.
pub fn screenshot(bin: &str, page: &Path, shot: &Path, size: &str, extra: &[&str], log: &Path) {
    let mut c = headless(bin);
    c.arg(format!("--screenshot={}", shot.display()))
        .arg(format!("--window-size={size}"))
        .args(extra)
        .arg(url(page));
    assert!(run_to(c, log), "chromium screenshots {}", page.display());
    let len = fs::metadata(shot).map(|m| m.len()).unwrap_or(0);
    assert!(len > 5_000, "{} is a picture ({len} bytes)", shot.display());
}
