//! The registry at the front door: `coordlab algos` lists every algorithm with its keys, `--help`
//! points at it, and the launcher and a lone node refuse a `--set` key the algorithm does not
//! take (naming the keys it does), a launcher-only key, and a value of the wrong type, with one
//! line and exit 2, before anything starts.

mod common;

use common::*;
use coordlab::catalog::ENTRIES;
use std::process::Command;

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(BIN).args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn algos_lists_every_algorithm_with_its_family_fit_and_keys() {
    let (code, text, _) = run(&["algos"]);
    assert_eq!(code, Some(0));
    for e in ENTRIES {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{} ", e.name)))
            .unwrap_or_else(|| panic!("{} missing:\n{text}", e.name));
        assert!(
            line.contains(e.runs_on.describe()) && line.contains(e.summary),
            "{line}"
        );
        assert!(
            text.contains(&format!("{}: {}", e.family.name, e.family.summary)),
            "{text}"
        );
        for k in e.all_keys() {
            // A key name may stand in several families (mesh): one of its lines is this one.
            let found = text.lines().any(|l| {
                l.trim_start().starts_with(&format!("{} ", k.name))
                    && l.contains(&k.kind.describe())
                    && l.contains(k.default)
                    && l.contains(k.help)
            });
            assert!(found, "key {} of {} missing:\n{text}", k.name, e.name);
        }
    }
    let (_, help, _) = run(&["--help"]);
    assert!(help.contains("coordlab algos"), "{help}");
    assert!(help.contains("algos "), "the subcommand is listed: {help}");
    let (_, ring_help, _) = run(&["ring", "--help"]);
    // The option's help, which clap may wrap onto the lines below it.
    let from = ring_help.find("--algo").unwrap();
    let rest = &ring_help[from..];
    let algo = &rest[..rest[1..].find("\n  -").map_or(rest.len(), |i| i + 1)];
    for e in ENTRIES {
        assert!(algo.contains(e.name), "--algo help names {}: {algo}", e.name);
    }
}

#[test]
fn keys_an_algorithm_does_not_take_and_badly_typed_values_are_refused_up_front() {
    let logs = temp_logs("registry-refused");
    let logs_s = logs.to_string_lossy().into_owned();
    let cases: [(&[&str], &str); 9] = [
        (
            &[
                "ring",
                "3",
                "--algo",
                "ring-list",
                "--set",
                "pick=max",
                "--set",
                "pick=min",
            ],
            "--set pick is given twice (pick=max first)",
        ),
        (
            &["ring", "3", "--set", "majorty=true"],
            "unknown key majorty for chang-roberts (did you mean majority?); it takes: max_slew_ppm, step, vc, fsync, \
                 majority, weights, detector, detector_watch, phi_threshold, phi_window, phi_min_std_ms, phi_pause_ms, phi_beat_ms, phi_relay, swim_period_ms, swim_probes, swim_window, swim_probe_timeout_ms, swim_retry_ms, swim_k, swim_suspicion_mult, swim_suspicion_max_mult, swim_hold",
        ),
        (
            &["ring", "3", "--set", "loss=0.2"],
            "unknown key loss for chang-roberts; it takes: max_slew_ppm, step, vc, fsync, \
                 majority, weights, detector, detector_watch, phi_threshold, phi_window, phi_min_std_ms, phi_pause_ms, phi_beat_ms, phi_relay, swim_period_ms, swim_probes, swim_window, swim_probe_timeout_ms, swim_retry_ms, swim_k, swim_suspicion_mult, swim_suspicion_max_mult, swim_hold",
        ),
        (
            &["ring", "3", "--set", "pick=min"],
            "--set pick does not apply to chang-roberts (it is a key of ring-list)",
        ),
        (
            &["ring", "3", "--pick", "min"],
            "--set pick does not apply to chang-roberts",
        ),
        (
            &["ring", "3", "--algo", "ring-list", "--set", "pick=median"],
            "--set pick=median: expected max or min",
        ),
        (
            &["mesh", "3", "--algo", "bully", "--set", "stable=ture"],
            "--set stable=ture: expected true or false",
        ),
        (
            &["ring", "3", "--algo", "ring-probe", "--set", "laps=0"],
            "--set laps=0: expected a whole number >= 1",
        ),
        (
            &["ring", "3", "--algo", "ring-probe", "--majority"],
            "--set majority does not apply to ring-probe (it is a key of every election algorithm); it takes: max_slew_ppm, step, vc, fsync, laps",
        ),
    ];
    for (args, needle) in cases {
        let mut all = args.to_vec();
        all.extend(["--logs", &logs_s]);
        let (code, _, err) = run(&all);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("coordlab: ") && err.contains(needle), "{args:?}: {err}");
    }
    assert!(!logs.exists(), "nothing is created for a refused launch");

    // A lone node checks the same way before it binds anything.
    let (code, _, err) = run(&[
        "node",
        "--id",
        "1",
        "--listen",
        "127.0.0.1:0",
        "--members",
        "1=127.0.0.1:1,2=127.0.0.1:2",
        "--set",
        "majorty=true",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("unknown key majorty for chang-roberts"), "{err}");
}
