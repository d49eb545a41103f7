//! The pictures of a real run, looked at as a person would: `coordlab timeline`, `--mermaid`,
//! `shiviz` and `graph` on a ring of 4 that elected, and `graph` on a Yo-Yo mesh of 6 (one
//! picture per iteration); the SVG is well-formed XML with one line
//! per node; then, where headless Chromium can be had (scripts/setup-browser.sh installs it),
//! timeline.html is rendered: its script runs without errors and counts the node lines and
//! arrows the SVG has; graph.svg renders; screenshots are taken; and the Mermaid CLI, where it
//! can be had, parses the diagram. Without a browser that part is skipped, saying so.

mod common;

use common::browser::*;
use common::*;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The tools scripts/setup-browser.sh found or installed: (chromium, mmdc).
fn tools(dir: &Path) -> (Option<String>, Option<String>) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/setup-browser.sh");
    let out = dir.join("setup.out");
    let file = File::create(&out).unwrap();
    let child = Command::new("bash")
        .arg(&script)
        .stdout(file)
        .stderr(Stdio::inherit())
        .stdin(Stdio::null())
        .spawn();
    let Ok(mut child) = child else { return (None, None) };
    // Installing takes a while the first time on a machine; after that the script only looks.
    let _ = wait_until(&mut child, Instant::now() + Duration::from_secs(600));
    let text = fs::read_to_string(&out).unwrap_or_default();
    let get = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .map(str::to_string)
            .filter(|v| !v.is_empty())
    };
    (get("chromium="), get("mmdc="))
}

#[test]
fn pictures_of_a_real_run_render_in_a_browser() {
    let logs = temp_logs("render-browser");
    let mut l = Launch::start(4, &logs, &["--until", "elected", "--heartbeat-ms", "50"]);
    assert!(l.wait().success(), "{}", l.output());
    let dir: PathBuf = fs::canonicalize(l.run_dir()).unwrap();

    coordlab_ok(&["timeline"], &dir);
    coordlab_ok(&["timeline", "--mermaid"], &dir);
    coordlab_ok(&["shiviz"], &dir);
    coordlab_ok(&["graph"], &dir);
    let bad = Command::new(BIN)
        .args(["timeline", "--show", "cats"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2), "an unknown --show is refused");
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--show"));

    let svg = fs::read_to_string(dir.join("timeline.svg")).unwrap();
    let doc = roxmltree::Document::parse(&svg).expect("timeline.svg is well-formed XML");
    assert_eq!(class_count(&doc, "line", "node-line"), 4);
    let arrows = class_count(&doc, "g", "msg");
    assert!(arrows >= 4, "an election has messages: {arrows}");
    let graph = fs::read_to_string(dir.join("graph.svg")).unwrap();
    let gdoc = roxmltree::Document::parse(&graph).expect("graph.svg is well-formed XML");
    assert_eq!(class_count(&gdoc, "g", "node"), 4);
    let mmd = fs::read_to_string(dir.join("timeline.mmd")).unwrap();
    assert!(mmd.starts_with("sequenceDiagram\n") && mmd.contains("->>"));
    let shiviz = fs::read_to_string(dir.join("shiviz.log")).unwrap();
    assert!(shiviz.starts_with("(?<host>"));

    // Yo-Yo on a mesh: its graph draws every iteration, the last leaving the winner alone.
    let yoyo_args = ["--topology", "random:3", "--algo", "yoyo", "--until", "elected"];
    let mut y = Launch::command("mesh", 6, &logs.join("yoyo"), &yoyo_args);
    assert!(y.wait().success(), "{}", y.output());
    let ydir: PathBuf = fs::canonicalize(y.run_dir()).unwrap();
    coordlab_ok(&["graph"], &ydir);
    let ygraph = fs::read_to_string(ydir.join("graph.svg")).unwrap();
    let ydoc = roxmltree::Document::parse(&ygraph).expect("yoyo's graph.svg is well-formed XML");
    assert_eq!(class_count(&ydoc, "g", "node"), 6);
    let iterations = class_count(&ydoc, "g", "iteration");
    assert!(iterations >= 2, "yoyo takes at least two iterations: {iterations}");
    assert!(
        ygraph.contains(&format!("iteration {iterations}: no edge left")),
        "{ygraph}"
    );

    let (Some(browser), mmdc) = tools(&logs) else {
        eprintln!(
            "SKIPPED the browser part: no headless Chromium (scripts/setup-browser.sh could not install it; \
             see target/tools/setup-browser.log)"
        );
        return;
    };
    let dom = logs.join("timeline.dom");
    let mut c = headless(&browser);
    c.args(["--virtual-time-budget=3000", "--dump-dom"])
        .arg(url(&dir.join("timeline.html")));
    assert!(run_to(c, &dom), "chromium renders timeline.html");
    let dom = fs::read_to_string(dom).unwrap();
    assert!(dom.contains(r#"data-ok="yes""#), "the page's script ran to its end");
    assert!(!dom.contains("data-errors=\""), "script errors: {dom}");
    assert!(dom.contains(r#"data-lines="4""#), "four node lines");
    assert!(dom.contains(&format!(r#"data-arrows="{arrows}""#)), "{arrows} arrows");

    // Zoom, pan and the filters, driven inside the page as a user would (see page.js).
    let dom = logs.join("timeline-selftest.dom");
    let mut c = headless(&browser);
    c.args(["--virtual-time-budget=3000", "--dump-dom"])
        .arg(format!("{}#selftest", url(&dir.join("timeline.html"))));
    assert!(run_to(c, &dom), "chromium renders timeline.html#selftest");
    let dom = fs::read_to_string(dom).unwrap();
    assert!(!dom.contains("data-errors=\""), "script errors: {dom}");
    let said = dom
        .split("data-selftest=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or("(no data-selftest: the self-test did not run)");
    assert_eq!(said, "ok", "zoom, pan and filters in a browser");

    for (page, png, size) in [
        (dir.join("timeline.html"), "timeline.png", "1400,500"),
        (dir.join("graph.svg"), "graph.png", "780,840"),
        (ydir.join("graph.svg"), "graph-yoyo.png", "780,1420"),
    ] {
        let shot = dir.join(png);
        screenshot(&browser, &page, &shot, size, &[], &logs.join("shot.out"));
    }

    match mmdc {
        Some(mmdc) => {
            let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/tools/puppeteer.json");
            let mut c = Command::new(mmdc);
            c.arg("-p")
                .arg(config)
                .arg("-i")
                .arg(dir.join("timeline.mmd"))
                .arg("-o")
                .arg(dir.join("timeline-mermaid.svg"));
            let out = logs.join("mmdc.out");
            let ok = run_to(c, &out);
            let said = fs::read_to_string(out.with_extension("err")).unwrap_or_default();
            assert!(ok, "the Mermaid CLI parses timeline.mmd: {said}");
        }
        None => eprintln!("SKIPPED the Mermaid CLI check: npm could not install @mermaid-js/mermaid-cli"),
    }
    drop(l);
    let _ = fs::remove_dir_all(&logs);
}
