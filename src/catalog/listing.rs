//! `coordlab algos`: every algorithm with its family, where it runs, its summary and its keys,
//! read from the registry. A family's keys are listed once, with the family.

use super::{Entry, Family, Key, SetBy, ENGINE, ENTRIES};
use std::fmt::Write as _;

fn key_line(out: &mut String, k: &Key, indent: &str) {
    let help = match k.set_by {
        SetBy::User => k.help.to_string(),
        SetBy::Launcher => format!("{} [set by the launcher, not by --set]", k.help),
    };
    let _ = writeln!(
        out,
        "{indent}{:<9} {:<15} default {:<8} {help}",
        k.name,
        k.kind.describe(),
        k.default
    );
}

fn family_block(out: &mut String, f: &Family, members: &[&Entry]) {
    let _ = writeln!(out, "{}: {}", f.name, f.summary);
    if !f.keys.is_empty() {
        let whose = if f.name == ENGINE.name {
            "every".to_string()
        } else {
            format!("every {}", f.name)
        };
        let _ = writeln!(out, "  keys of {whose} algorithm:");
        for k in f.keys {
            key_line(out, k, "    ");
        }
    }
    if super::hosts_liveness(f) {
        let _ = writeln!(out, "  keys of the failure detector (docs/detectors.md):");
        for k in super::DETECTOR_KEYS {
            key_line(out, k, "    ");
        }
    }
    for e in members {
        let _ = writeln!(out, "  {:<14} {:<28} {}", e.name, e.runs_on.describe(), e.summary);
        let detector = |k: &Key| super::DETECTOR_KEYS.iter().any(|d| d.name == k.name);
        for k in e.keys.iter().filter(|k| !detector(k)) {
            key_line(out, k, "      ");
        }
        if e.keys.iter().any(detector) {
            // Fifteen lines, the same for every host: listed once, under the election family.
            let _ = writeln!(
                out,
                "      (and the failure detector's keys, listed under election: detector, detector_watch, phi_*, swim_*)"
            );
        }
    }
}

/// The text of `coordlab algos`.
pub fn listing() -> String {
    let mut out = String::from("Algorithms (--algo NAME) by family, where each runs, and its --set KEY=VALUE keys:\n");
    let mut families: Vec<&Family> = Vec::new();
    for e in ENTRIES {
        if !families.iter().any(|f| f.name == e.family.name) {
            families.push(e.family);
        }
    }
    if !ENGINE.keys.is_empty() {
        out.push('\n');
        family_block(&mut out, &ENGINE, &[]);
    }
    for f in families {
        out.push('\n');
        let members: Vec<&Entry> = ENTRIES.iter().filter(|e| e.family.name == f.name).collect();
        family_block(&mut out, f, &members);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_algorithm_and_key_is_listed_once() {
        let text = listing();
        for e in ENTRIES {
            let line = text
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("{} ", e.name)))
                .unwrap_or_else(|| panic!("{} not listed:\n{text}", e.name));
            assert!(
                line.contains(e.summary) && line.contains(e.runs_on.describe()),
                "{line}"
            );
            let detector = |k: &Key| super::super::DETECTOR_KEYS.iter().any(|d| d.name == k.name);
            for k in e.keys.iter().filter(|k| !detector(k)) {
                // Listed under each algorithm that declares it (durable: quorum and maekawa);
                // key lines are indented below their algorithm's (quorum is both).
                let owners = ENTRIES
                    .iter()
                    .filter(|o| o.keys.iter().any(|x| x.name == k.name))
                    .count();
                let lines = text
                    .lines()
                    .filter(|l| l.starts_with("      ") && l.trim_start().starts_with(&format!("{} ", k.name)));
                assert_eq!(lines.count(), owners, "{}:\n{text}", k.name);
            }
        }
        assert!(text.contains("election: leader election"), "{text}");
        let majority = text.lines().find(|l| l.trim_start().starts_with("majority ")).unwrap();
        assert!(
            majority.contains("true|false") && majority.contains("default false"),
            "{majority}"
        );
        assert_eq!(
            text.matches("\n    majority ").count(),
            1,
            "a family's key is listed once"
        );
        assert!(text.contains("mesh") && text.contains("[set by the launcher"), "{text}");
        // The detector's keys: once under the election family, named by each mutex host.
        assert_eq!(text.matches("\n    phi_threshold ").count(), 1, "{text}");
        let hosts = ENTRIES
            .iter()
            .filter(|e| e.key("detector").is_some() && e.family.name != "election");
        assert_eq!(
            text.matches("(and the failure detector's keys").count(),
            hosts.count(),
            "{text}"
        );
        let pick = text.lines().find(|l| l.trim_start().starts_with("pick ")).unwrap();
        assert!(pick.contains("max|min") && pick.contains("default max"), "{pick}");
    }
}
