//! The layers hold: every `crate::` path in the library's non-test code names a top-level
//! module its folder may use, by the table below. Algorithms sit near the bottom and use only
//! the clock, the trace schema and the seeded rng: never the catalogue, the bench, the checker,
//! the simulator or the launcher. Test code (`#[cfg(test)]` modules, inline or in their own
//! files) may reach anything: the simulator and the checker are how algorithms are tested.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// What each top-level module of `src/` may use (besides itself and std or other crates).
/// Read top down: a folder uses those below it. Cycles still standing are marked.
const ALLOWED: &[(&str, &[&str])] = &[
    ("exit", &[]),
    ("error", &["exit"]),
    ("rng", &[]),
    // Two pieces of work at once, for the end of a launch: a leaf, as the rng.
    ("both", &[]),
    // The trace schema and the clocks are one layer: events carry clock stamps, clocks record events.
    ("trace", &["both", "clock"]),
    ("clock", &["algo", "rng", "trace"]),
    ("net", &["trace"]),
    // The algorithms: pure state machines over the clock, the trace schema and the rng.
    ("algo", &["clock", "rng", "trace"]),
    ("topology", &["algo", "rng", "trace"]),
    ("engine", &["algo", "clock", "rng", "trace"]),
    ("sim", &["algo", "engine", "rng", "trace"]),
    ("tools", &["algo", "rng", "sim"]),
    // The catalogue joins algorithms to where they run, their checks and their bench rows.
    // Still standing: it names the bench's row functions, and the bench reads the catalogue.
    ("catalog", &["algo", "bench", "clock", "topology"]),
    ("node", &["algo", "catalog", "engine", "error", "net", "rng", "trace"]),
    ("check", &["algo", "both", "catalog", "error", "net", "sim", "trace"]),
    ("render", &["algo", "catalog", "check", "error", "trace"]),
    (
        "cluster",
        &[
            "algo", "both", "catalog", "check", "clock", "error", "exit", "net", "node", "rng", "topology", "trace",
        ],
    ),
    (
        "bench",
        &[
            "algo", "catalog", "check", "cluster", "engine", "error", "net", "node", "render", "rng", "trace",
        ],
    ),
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module name declared by `line` when it is `[pub[(..)]] mod NAME;`.
fn declared_mod(line: &str) -> Option<&str> {
    let mut l = line.trim();
    if let Some(rest) = l.strip_prefix("pub") {
        l = rest.trim_start();
        if l.starts_with('(') {
            l = l[l.find(')')? + 1..].trim_start();
        }
    }
    l.strip_prefix("mod ")?.strip_suffix(';').map(str::trim)
}

/// Files that are test modules (`#[cfg(test)] mod x;`), and everything under them.
fn test_only(files: &[PathBuf]) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for p in files {
        let text = fs::read_to_string(p).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let dir = match p.file_name().and_then(|f| f.to_str()) {
            Some("mod.rs" | "lib.rs") => p.parent().unwrap().to_path_buf(),
            _ => p.with_extension(""),
        };
        for (i, w) in lines.windows(2).enumerate() {
            if w[0].trim() == "#[cfg(test)]" {
                // `#[path = "x_tests.rs"]` between the two lines names the file itself.
                let attr = w[1]
                    .trim()
                    .strip_prefix("#[path = \"")
                    .and_then(|r| r.strip_suffix("\"]"));
                if let (Some(file), Some(next)) = (attr, lines.get(i + 2)) {
                    if declared_mod(next).is_some() {
                        out.insert(p.parent().unwrap().join(file));
                    }
                }
                if let Some(name) = declared_mod(w[1]) {
                    out.insert(dir.join(format!("{name}.rs")));
                    out.insert(dir.join(name));
                }
            }
        }
    }
    out
}

/// The top-level modules `text` names through `crate::`, before its first inline test module.
fn crate_paths(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut prev_cfg_test = false;
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        if prev_cfg_test && code.trim_start().starts_with("mod ") && code.contains('{') {
            break;
        }
        prev_cfg_test = code.trim() == "#[cfg(test)]";
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            let after = &rest[i + "crate::".len()..];
            let name: String = after.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                out.insert(name);
            }
            rest = after;
        }
    }
    out
}

#[test]
fn every_module_uses_only_the_layers_its_folder_may() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let tests = test_only(&files);
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut wrong = Vec::new();
    let mut checked = 0;
    for p in &files {
        if tests.iter().any(|t| p.starts_with(t)) {
            continue;
        }
        let rel = p.strip_prefix(&src).unwrap();
        let top = rel.components().next().unwrap().as_os_str().to_str().unwrap();
        let top = top.strip_suffix(".rs").unwrap_or(top);
        if top == "lib" {
            continue;
        }
        let Some(may) = allowed.get(top) else {
            wrong.push(format!(
                "{}: folder {top} has no row in the layers table",
                rel.display()
            ));
            continue;
        };
        checked += 1;
        for used in crate_paths(&fs::read_to_string(p).unwrap()) {
            if used != top && !may.contains(&used.as_str()) {
                wrong.push(format!("{}: {top} uses crate::{used}", rel.display()));
            }
        }
    }
    assert!(checked > 100, "only {checked} files read");
    assert!(wrong.is_empty(), "uses against the layers:\n{}", wrong.join("\n"));
}

#[test]
fn the_scanner_sees_paths_and_skips_inline_tests() {
    let text = "use crate::trace::Event;\nfn f() { crate::rng::Rng::new(1); } // crate::sim in a comment\n#[cfg(test)]\nmod tests {\n    use crate::sim::Sim;\n}\n";
    let got: Vec<String> = crate_paths(text).into_iter().collect();
    assert_eq!(got, ["rng", "trace"]);
    assert_eq!(declared_mod("pub(crate) mod testkit;"), Some("testkit"));
    assert_eq!(declared_mod("mod tests {"), None);
}
