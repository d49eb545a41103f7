//! The README cannot go stale: every transcript block marked `<!-- transcript: COMMAND -->`
//! (in the README and docs/) is compared with a fresh run of COMMAND (numbers, times and paths aside), every command of
//! the quick tour runs and ends with the status it is annotated with (`# exit N`, else 0), and
//! no command in the README or docs/ is one a newcomer cannot paste (a bare `coordlab` that is
//! not on the PATH, a path outside the repository).

mod common;

use common::*;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn readme() -> String {
    fs::read_to_string(repo().join("README.md")).unwrap()
}

/// `scripts/ring.sh 8 ...` -> `ring 8 ...`: the arguments the binary under test takes.
fn args_of(command: &str) -> Vec<String> {
    let words: Vec<String> = command.split_whitespace().map(str::to_string).collect();
    let (first, rest) = words.split_first().expect("a command");
    let mut args = match first.as_str() {
        "scripts/coordlab" => Vec::new(),
        "scripts/ring.sh" => vec!["ring".to_string()],
        "scripts/mesh.sh" => vec!["mesh".to_string()],
        "scripts/chaos.sh" => vec!["chaos".to_string()],
        other => panic!("a README command must start with scripts/: {command} ({other})"),
    };
    args.extend(rest.iter().cloned());
    args
}

/// Runs a README command in `cwd` (stdin closed, as in a script); returns status and output.
fn run(command: &str, cwd: &Path) -> (Option<i32>, String) {
    let out = cwd.join("out.txt");
    let file = fs::File::create(&out).unwrap();
    let mut child = Command::new(BIN)
        .args(args_of(command))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .spawn()
        .unwrap();
    let status = wait_until(&mut child, Instant::now() + DEADLINE * 2);
    let text = fs::read_to_string(&out).unwrap_or_default();
    (status.and_then(|s| s.code()), text)
}

/// A line with its numbers, run names and paths blanked: what must not change between runs.
fn shape(line: &str) -> String {
    let mut out = String::new();
    let mut in_digits = false;
    for c in line.trim_end().chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('N');
            }
            in_digits = true;
        } else {
            in_digits = false;
            out.push(c);
        }
    }
    out
}

/// The README's blocks after `marker` lines: (the text after the marker, the block's lines).
fn blocks(text: &str, marker: &str) -> Vec<(String, Vec<String>)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let Some(rest) = l.trim().strip_prefix(marker) else {
            continue;
        };
        let what = rest.trim_end_matches("-->").trim().to_string();
        let start = lines[i + 1..]
            .iter()
            .position(|l| l.starts_with("```"))
            .map(|k| i + 1 + k + 1)
            .expect("a code block follows the marker");
        let end = lines[start..].iter().position(|l| l.starts_with("```")).unwrap() + start;
        out.push((what, lines[start..end].iter().map(|s| s.to_string()).collect()));
    }
    out
}

/// The README and every page of docs/.
fn pages() -> Vec<PathBuf> {
    let mut files = vec![repo().join("README.md")];
    for e in fs::read_dir(repo().join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            files.push(p);
        }
    }
    files.sort();
    files
}

#[test]
fn every_readme_transcript_matches_a_fresh_run() {
    let transcripts: Vec<(String, Vec<String>)> = pages()
        .iter()
        .flat_map(|p| blocks(&fs::read_to_string(p).unwrap(), "<!-- transcript:"))
        .collect();
    assert!(
        !blocks(&readme(), "<!-- transcript:").is_empty(),
        "the README has no marked transcript"
    );
    for (k, (command, lines)) in transcripts.iter().enumerate() {
        let cwd = temp_logs(&format!("readme-transcript-{k}"));
        fs::create_dir_all(&cwd).unwrap();
        let (_, out) = run(command, &cwd);
        let got: Vec<String> = out.lines().map(shape).collect();
        for line in lines.iter().filter(|l| !l.trim().is_empty() && l.trim() != "...") {
            assert!(
                got.contains(&shape(line)),
                "README transcript of `{command}` is stale: no line like\n  {line}\nin a fresh run:\n{out}"
            );
        }
        let _ = fs::remove_dir_all(&cwd);
    }
}

#[test]
fn every_quick_tour_command_runs_with_the_status_it_says() {
    let text = readme();
    let tour = blocks(&text, "<!-- quick-tour");
    assert_eq!(tour.len(), 1, "one quick tour");
    let cwd = temp_logs("readme-tour");
    fs::create_dir_all(&cwd).unwrap();
    let mut ran = 0;
    for line in &tour[0].1 {
        let (command, comment) = line.split_once('#').unwrap_or((line, ""));
        let command = command.trim();
        if command.is_empty() {
            continue;
        }
        let want = comment
            .trim()
            .strip_prefix("exit ")
            .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|s| s.parse::<i32>().ok())
            .unwrap_or(0);
        let (code, out) = run(command, &cwd);
        assert_eq!(code, Some(want), "`{command}` in {}:\n{out}", cwd.display());
        ran += 1;
    }
    assert!(ran >= 5, "the quick tour has {ran} commands");
    // Relative paths are the user's: the runs landed in the directory the commands ran in.
    assert!(cwd.join("logs/latest/run.json").is_file());
    let _ = fs::remove_dir_all(&cwd);
}

#[test]
fn every_command_in_the_readme_and_docs_can_be_pasted() {
    for f in pages() {
        let text = fs::read_to_string(&f).unwrap();
        assert!(
            !text.contains("../shared"),
            "{} points outside the repository",
            f.display()
        );
        let mut in_code = false;
        for (i, line) in text.lines().enumerate() {
            if line.starts_with("```") {
                in_code = !in_code;
                continue;
            }
            let bare_block = in_code && (line.starts_with("coordlab ") || line.starts_with("$ coordlab "));
            let bare_inline = line.contains("`coordlab ") || line.contains("target/release/coordlab");
            assert!(
                !bare_block && !bare_inline,
                "{}:{}: `coordlab` is not on the PATH; spell it scripts/coordlab: {line}",
                f.display(),
                i + 1
            );
        }
    }
}

#[test]
fn the_scripts_run_where_the_user_typed_them() {
    // A stand-in for cargo (the release build is not this test's business) and a target
    // directory holding the binary under test where the scripts look for the release build.
    let root = temp_logs("scripts-cwd");
    let bin_dir = root.join("bin");
    let target = root.join("target");
    let user = root.join("user");
    for d in [&bin_dir, &target.join("release"), &user] {
        fs::create_dir_all(d).unwrap();
    }
    let cargo = bin_dir.join("cargo");
    fs::write(&cargo, "#!/bin/sh\nexit 0\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&cargo, fs::Permissions::from_mode(0o755)).unwrap();
    fs::copy(BIN, target.join("release/coordlab")).unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let mut child = Command::new(repo().join("scripts/ring.sh"))
        .args(["3", "--until", "elected", "--logs", "mylogs"])
        .current_dir(&user)
        .env("PATH", path)
        .env("CARGO_TARGET_DIR", &target)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let status = wait_until(&mut child, Instant::now() + DEADLINE);
    let stray = repo().join("mylogs");
    let landed_in_repo = stray.exists();
    let _ = fs::remove_dir_all(&stray);
    assert_eq!(status.and_then(|s| s.code()), Some(0));
    assert!(!landed_in_repo, "--logs mylogs landed inside the repository");
    assert!(
        user.join("mylogs/latest/run.json").is_file(),
        "--logs mylogs is relative to the user's directory"
    );
    let _ = fs::remove_dir_all(&root);
}
