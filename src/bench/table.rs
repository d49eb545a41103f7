//! The elections table as `scripts/bench.sh` prints it, and as it writes it in markdown
//! (`bench/elections.md`): one row per launch, its first count beside it and the rest below.

use super::elections::ElectionRow;
use std::fmt::Write as _;

/// What the table's columns and cases mean, printed under it and written under its markdown.
pub(super) const NOTES: &str = "\
elect ms: first election_start to the last node's leader event. exact/DIFFERS: the count this setup
must give; within/OVER: an upper bound; ratio: measured / an average over random arrangements.
chang-roberts 'this arrangement': each id travels to the first larger id (the largest all round).
franklin: rounds predicted from the arrangement (every active node larger than both active
neighbours survives a round; one last round for the winner); 'halving' ids reach the bound when n
is a power of two. bully 'n killed, only n-1 awake': after n leads, nodes 1..n-2 are paused and
n killed, so n-1 alone detects it; counts are the sends after the kill; elect ms: from the kill
to n-1's claim, detection (one --timeout-ms) included; the others read COORDINATOR when resumed.
yoyo/echo: m edges of the seeded graph; yoyo's YO count depends on the graph (one vote per YO).";

const COLUMNS: [&str; 10] = [
    "algorithm",
    "graph",
    "case",
    "n",
    "elect ms",
    "messages",
    "measured",
    "formula",
    "expected",
    "verdict",
];

const WIDTHS: [usize; 10] = [13, 18, 25, 4, 9, 20, 9, 22, 9, 10];

fn line(cells: [&str; 10]) {
    let mut s = String::new();
    for (i, (c, w)) in cells.iter().zip(WIDTHS).enumerate() {
        // Numbers right-aligned, words left.
        if matches!(i, 3 | 4 | 6 | 8) {
            s.push_str(&format!("{c:>w$}  "));
        } else {
            s.push_str(&format!("{c:<w$}  "));
        }
    }
    println!("{}", s.trim_end());
}

/// Prints the column names.
pub(super) fn print_header() {
    line(COLUMNS);
}

/// The cells of a row's lines: its first count beside the launch, the rest below it (launch
/// cells empty); a launch that gave no counts is one line, with why.
fn cells(r: &ElectionRow) -> Vec<[String; 10]> {
    let n = r.n.to_string();
    let ms = r.election_ms.map(|m| format!("{m:.1}")).unwrap_or_else(|| "-".into());
    let head = [r.algo.to_string(), r.graph.clone(), r.case.clone(), n, ms];
    let counts = match &r.counts {
        Err(e) => {
            let [a, g, c, n, _] = head;
            return vec![[
                a,
                g,
                c,
                n,
                "-".into(),
                format!("not measured: {e}"),
                "".into(),
                "".into(),
                "".into(),
                "".into(),
            ]];
        }
        Ok(counts) => counts,
    };
    counts
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let [a, g, cs, n, ms] = if i == 0 { head.clone() } else { Default::default() };
            [
                a,
                g,
                cs,
                n,
                ms,
                c.messages.clone(),
                c.measured.to_string(),
                c.formula.clone(),
                c.claim.expected(),
                c.claim.verdict(c.measured),
            ]
        })
        .collect()
}

/// Prints one row: its first count beside the launch, the rest below it.
pub(super) fn print_row(r: &ElectionRow) {
    for c in cells(r) {
        if r.counts.is_err() {
            // Why it was not measured, on a line of its own: it is longer than a cell.
            line(std::array::from_fn(|k| if k < 5 { c[k].as_str() } else { "" }));
            println!("    {}", c[5]);
        } else {
            line(std::array::from_fn(|k| c[k].as_str()));
        }
    }
    for note in &r.notes {
        println!("    note: {note}");
    }
}

/// The whole table in markdown, numbers right-aligned, each launch's notes under the table.
pub(super) fn markdown(rows: &[ElectionRow]) -> String {
    let mut md = format!("| {} |\n|", COLUMNS.join(" | "));
    for (i, _) in COLUMNS.iter().enumerate() {
        md.push_str(if matches!(i, 3 | 4 | 6 | 8) { "---:|" } else { "---|" });
    }
    md.push('\n');
    for r in rows {
        for c in cells(r) {
            let c: Vec<String> = c.iter().map(|s| s.replace('|', "\\|")).collect();
            let _ = writeln!(md, "| {} |", c.join(" | "));
        }
    }
    let notes: Vec<String> = rows
        .iter()
        .flat_map(|r| {
            r.notes
                .iter()
                .map(move |n| format!("- {} ({}, {}, n = {}): {n}", r.algo, r.graph, r.case, r.n))
        })
        .collect();
    if !notes.is_empty() {
        let _ = write!(md, "\nNotes on single launches:\n\n{}\n", notes.join("\n"));
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{Claim, Count};

    #[test]
    fn markdown_has_a_line_per_count_and_says_why_a_launch_gave_none() {
        let count = |m: &str, v, f: &str, c| Count {
            messages: m.into(),
            measured: v,
            formula: f.into(),
            claim: c,
        };
        let ok = ElectionRow {
            algo: "chang-roberts",
            graph: "ring".into(),
            case: "ids increasing, all start".into(),
            n: 8,
            election_ms: Some(3.3),
            counts: Ok(vec![
                count("ELECTION", 15, "2n-1 (best)", Claim::Exact(15)),
                count("ELECTED", 9, "n", Claim::Exact(8)),
            ]),
            notes: vec!["2 terms ([1, 2]): the counts include a re-election".into()],
        };
        let bad = ElectionRow {
            algo: "bully",
            counts: Err("a | b did not start".into()),
            notes: Vec::new(),
            ..ok.clone()
        };
        let md = markdown(&[ok, bad]);
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(
            lines[0],
            "| algorithm | graph | case | n | elect ms | messages | measured | formula | expected | verdict |"
        );
        assert_eq!(lines[1], "|---|---|---|---:|---:|---|---:|---|---:|---|");
        assert_eq!(
            lines[2],
            "| chang-roberts | ring | ids increasing, all start | 8 | 3.3 | ELECTION | 15 | 2n-1 (best) | 15 | exact |"
        );
        assert_eq!(lines[3], "|  |  |  |  |  | ELECTED | 9 | n | 8 | DIFFERS (+1) |");
        assert!(
            lines[4].contains("| - | not measured: a \\| b did not start |"),
            "{}",
            lines[4]
        );
        assert!(md.contains("- chang-roberts (ring, ids increasing, all start, n = 8): 2 terms"));
    }
}
