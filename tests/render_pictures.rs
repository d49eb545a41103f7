//! The README's pictures, taken from fresh runs by the test that checks them: the
//! false-suspicion demo's timeline, a Yo-Yo graph, and each family's own picture (a fenced
//! mutex run, a Cristian clock run, a bank with snapshots). Each run is checked as data first
//! (titles name the run, never the path it was read from; the mutex timeline draws what the
//! resource received; each view has what its family shows); then, where headless Chromium
//! can be had, each page is rendered (its script runs without errors) and screenshots are
//! written to docs/. Without a browser that part is skipped, saying so.

mod common;

use common::browser::*;
use common::*;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Headless Chromium as scripts/setup-browser.sh finds it (never installing: the browser
/// test does that), or None.
fn chromium(logs: &Path) -> Option<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/setup-browser.sh");
    let out = logs.join("setup.out");
    let mut c = Command::new("bash");
    c.arg(&script).env("COORDLAB_NO_INSTALL", "1");
    if !run_to(c, &out) {
        return None;
    }
    let text = fs::read_to_string(&out).unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("chromium="))
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}

/// A finished launch's run directory (its exit status is the checker's business, not this test's).
fn launch(sub: &str, n: usize, logs: &Path, extra: &[&str]) -> PathBuf {
    let mut l = Launch::command(sub, n, logs, extra);
    l.wait();
    let dir = fs::canonicalize(l.run_dir()).unwrap_or_else(|_| panic!("no run directory:\n{}", l.output()));
    assert!(dir.join("run.json").exists(), "{}", l.output());
    dir
}

/// The page's title and the SVG's heading name the run by its directory's name, never by the
/// temporary path it was read from.
fn titled_by_run(dir: &Path) {
    let name = dir.file_name().unwrap().to_string_lossy().to_string();
    let html = fs::read_to_string(dir.join("timeline.html")).unwrap();
    let title = html
        .split("<title>")
        .nth(1)
        .and_then(|t| t.split("</title>").next())
        .unwrap();
    assert!(title.contains(&format!("run {name}")), "{title}");
    let tmp = std::env::temp_dir().display().to_string();
    assert!(!title.contains(&tmp), "{title}");
    let svg = fs::read_to_string(dir.join("timeline.svg")).unwrap();
    assert!(svg.contains(&name) && !svg.contains(&tmp), "the SVG names the run");
}

#[test]
fn the_readme_pictures_come_from_fresh_runs() {
    let logs = temp_logs("render-pictures");
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");

    // The false-suspicion demo, as the README tells it.
    let story = launch("ring", 8, &logs.join("demo"), &["--demo", "false-suspicion"]);
    coordlab_ok(&["timeline"], &story);
    titled_by_run(&story);
    let svg = fs::read_to_string(story.join("timeline.svg")).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    assert!(
        class_count(&doc, "g", "suspect-false") >= 1,
        "a false suspicion is drawn"
    );
    assert_eq!(class_count(&doc, "rect", "paused"), 1);

    // Mutual exclusion, fenced: the stale holder's begin is refused by the resource.
    let mutex = launch(
        "mesh",
        4,
        &logs.join("mutex"),
        &[
            "--topology",
            "complete",
            "--algo",
            "central",
            "--demo",
            "regrant",
            "--fencing",
        ],
    );
    let said = coordlab_ok(&["timeline"], &mutex);
    assert!(
        said.contains("mutex.svg"),
        "the mutex view is chosen by the run's family: {said}"
    );
    titled_by_run(&mutex);
    let svg = fs::read_to_string(mutex.join("timeline.svg")).unwrap();
    // Every BEGIN and END the resource recorded is drawn received, none "never received".
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let lies = doc
        .descendants()
        .filter_map(|n| n.attribute("data-info"))
        .filter(|i| i.contains("-> node 0") && i.contains("never received"))
        .count();
    assert_eq!(lies, 0, "messages the resource received are drawn received");
    assert!(svg.contains(">resource</text>"));
    assert!(!svg.contains("Some(") && !svg.contains("Grant {"), "clean labels");
    let view = fs::read_to_string(mutex.join("mutex.svg")).unwrap();
    let vdoc = roxmltree::Document::parse(&view).unwrap();
    assert!(
        class_count(&vdoc, "g", "stale") >= 1,
        "the refused stale begin is marked"
    );
    assert!(class_count(&vdoc, "rect", "hold") >= 2);

    // Clocks: Cristian on skewed clocks.
    let clock = launch(
        "mesh",
        4,
        &logs.join("clock"),
        &[
            "--algo",
            "cristian",
            "--duration",
            "3",
            "--clock-skew",
            "random:200,100",
        ],
    );
    coordlab_ok(&["timeline"], &clock);
    let view = fs::read_to_string(clock.join("clock.svg")).unwrap();
    let vdoc = roxmltree::Document::parse(&view).unwrap();
    assert_eq!(class_count(&vdoc, "path", "offset"), 4);
    assert!(class_count(&vdoc, "g", "correction") >= 3);

    // A bank with both kinds of snapshot.
    let bank = launch(
        "mesh",
        4,
        &logs.join("bank"),
        &["--algo", "bank", "--set", "snapshot=both", "--duration", "3"],
    );
    coordlab_ok(&["timeline"], &bank);
    let view = fs::read_to_string(bank.join("snapshot.svg")).unwrap();
    let vdoc = roxmltree::Document::parse(&view).unwrap();
    assert!(class_count(&vdoc, "g", "cut") >= 2);
    assert!(view.contains("(the bank holds 4000)"));

    // Yo-Yo on a random graph of 12, as the README tells it.
    let yoyo = launch(
        "mesh",
        12,
        &logs.join("yoyo"),
        &["--topology", "random:3", "--algo", "yoyo", "--until", "elected"],
    );
    coordlab_ok(&["graph"], &yoyo);

    let Some(bin) = chromium(&logs) else {
        eprintln!("SKIPPED the screenshots: no headless Chromium (scripts/setup-browser.sh installs it)");
        return;
    };
    for dir in [&story, &mutex, &clock, &bank] {
        let dom = logs.join("page.dom");
        let mut c = headless(&bin);
        c.args(["--virtual-time-budget=3000", "--dump-dom"])
            .arg(url(&dir.join("timeline.html")));
        assert!(run_to(c, &dom), "chromium renders {}", dir.display());
        let dom = fs::read_to_string(dom).unwrap();
        assert!(
            dom.contains(r#"data-ok="yes""#),
            "{}: the page's script ran",
            dir.display()
        );
        assert!(!dom.contains("data-errors=\""), "script errors: {dom}");
    }
    let shots: [(PathBuf, &str, &str); 6] = [
        (story.join("timeline.html"), "timeline-false-suspicion.png", "1400,640"),
        (yoyo.join("graph.svg"), "graph-yoyo.png", "780,1420"),
        (mutex.join("timeline.html"), "timeline-mutex-fencing.png", "1400,560"),
        (mutex.join("mutex.svg"), "view-mutex-fencing.png", "1400,300"),
        (clock.join("clock.svg"), "view-clock-cristian.png", "1400,560"),
        (bank.join("snapshot.svg"), "view-snapshot-bank.png", "1400,420"),
    ];
    for (page, png, size) in shots {
        let shot = logs.join(png);
        let budget = ["--virtual-time-budget=3000"];
        screenshot(&bin, &page, &shot, size, &budget, &logs.join("shot.out"));
        fs::copy(&shot, docs.join(png)).unwrap();
    }
    let _ = fs::remove_dir_all(&logs);
}
