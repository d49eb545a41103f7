//! The elections section's figures: election time against n per algorithm beside the loopback
//! floor, and per algorithm its measured message counts against the formulas' curves; both on
//! log scales, written under `bench/` with the markdown table.

use super::claims::Claim;
use super::elections::ElectionRow;
use super::floor::Floor;
use super::plot::{figure, Axes, Look, Series};
use super::table::{markdown, NOTES};
use crate::error::{failed, CliError};
use crate::render::draw;
use std::collections::BTreeMap;
use std::path::Path;

/// Writes `bench/elections.md` (the table, the floor, what the columns mean, the figures) and
/// the two figures beside it; returns the files written.
pub(crate) fn write_files(rows: &[ElectionRow], floor: &Floor, build: &str) -> Result<Vec<String>, CliError> {
    let one_hop = floor.median_us / 2.0;
    let md = format!(
        "# Elections benchmark\n\n\
         Written by `scripts/bench.sh --only elections` ({build}, one process per node, loopback; \
         --timeout-ms 2000 --heartbeat-ms 500, --until elected; counts from the nodes' stop counters, \
         protocol messages only). Figures vary from run to run, and with the machine's load.\n\n\
         Loopback floor: a plain UDP ping-pong between two processes, round trip median {:.1} us, \
         p99 {:.1} us; one hop (half) {one_hop:.1} us.\n\n\
         ![election time against n](elections-time.svg)\n\n\
         ![messages against the formulas](elections-messages.svg)\n\n{}\n```\n{NOTES}\n```\n",
        floor.median_us,
        floor.p99_us,
        markdown(rows)
    );
    let out = Path::new("bench");
    let files = [
        ("elections.md", md),
        ("elections-time.svg", time_figure(rows, one_hop)),
        ("elections-messages.svg", messages_figure(rows)),
    ];
    std::fs::create_dir_all(out).map_err(|e| failed(format!("cannot create bench/: {e}")))?;
    let mut written = Vec::new();
    for (name, text) in files {
        let path = out.join(name);
        std::fs::write(&path, text).map_err(|e| failed(format!("cannot write {}: {e}", path.display())))?;
        written.push(path.display().to_string());
    }
    Ok(written)
}

const FLOOR: &str = "#000000";
const LAP: &str = "#999999";

/// Election time against n, one line per algorithm (its first case, the registry's leading
/// one), with the one-hop floor and n hops at the floor (one lap of a ring) as dashed lines.
pub(crate) fn time_figure(rows: &[ElectionRow], one_hop_us: f64) -> String {
    // Per algorithm its first (graph, case).
    let mut first_case: BTreeMap<&str, (&str, &str)> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    for r in rows {
        if !first_case.contains_key(r.algo) {
            first_case.insert(r.algo, (&r.graph, &r.case));
            order.push(r.algo);
        }
    }
    let mut axes = Axes::new(
        "election time against n (first election_start to the last leader event)",
        "nodes (n)",
        "milliseconds",
    );
    for (k, algo) in order.iter().enumerate() {
        let points = rows
            .iter()
            .filter(|r| r.algo == *algo && (r.graph.as_str(), r.case.as_str()) == first_case[algo])
            .filter_map(|r| Some((r.n as f64, r.election_ms?)))
            .collect();
        let (graph, case) = first_case[algo];
        let name = format!("{algo} ({graph}, {case})");
        axes.add(Series { name, points }, Look::Line, draw::colour(k));
    }
    let mut sizes: Vec<f64> = rows.iter().map(|r| r.n as f64).collect();
    sizes.sort_by(f64::total_cmp);
    sizes.dedup();
    let hop_ms = one_hop_us / 1000.0;
    axes.add(
        Series {
            name: format!("one hop at the loopback floor ({one_hop_us:.1} us: half a plain UDP ping-pong)"),
            points: sizes.iter().map(|&n| (n, hop_ms)).collect(),
        },
        Look::Dashed,
        FLOOR,
    );
    axes.add(
        Series {
            name: "n hops at the floor (one lap of a ring)".into(),
            points: sizes.iter().map(|&n| (n, n * hop_ms)).collect(),
        },
        Look::Dashed,
        LAP,
    );
    figure("coordlab elections: time", 1, 760.0, 380.0, &[axes])
}

/// The formula's value at one size.
fn value(c: &Claim) -> f64 {
    match *c {
        Claim::Exact(v) | Claim::Bound(v) => v as f64,
        Claim::Average(v) => v,
    }
}

/// Per algorithm a plot of its measured counts (dots) against the formulas' values (dashed),
/// per case: the counts of the row's first message type (the first not predicted zero), each
/// formula that speaks of it.
pub(crate) fn messages_figure(rows: &[ElectionRow]) -> String {
    let mut algos: Vec<&str> = Vec::new();
    for r in rows {
        if !algos.contains(&r.algo) {
            algos.push(r.algo);
        }
    }
    let plots: Vec<Axes> = algos.iter().map(|algo| messages_of(rows, algo)).collect();
    figure(
        "coordlab elections: messages against the formulas",
        2,
        500.0,
        230.0,
        &plots,
    )
}

fn messages_of(rows: &[ElectionRow], algo: &str) -> Axes {
    let mut axes = Axes::new(algo, "nodes (n)", "messages");
    // Per (graph, case): (message types, measured points, per formula its points).
    type Lines = (String, Vec<(f64, f64)>, Vec<(String, Vec<(f64, f64)>)>);
    let mut cases: Vec<((String, String), Lines)> = Vec::new();
    for r in rows.iter().filter(|r| r.algo == algo) {
        let Ok(counts) = &r.counts else { continue };
        // A count the formula puts at zero (bully's best case sends no ELECTION) has no place
        // on a log scale: the row's first other one speaks for it.
        let Some(first) = counts.iter().find(|c| value(&c.claim) > 0.0) else {
            continue;
        };
        let key = (r.graph.clone(), r.case.clone());
        let at = match cases.iter().position(|(c, _)| *c == key) {
            Some(i) => i,
            None => {
                cases.push((key, (first.messages.clone(), Vec::new(), Vec::new())));
                cases.len() - 1
            }
        };
        let (messages, measured, formulas) = &mut cases[at].1;
        let n = r.n as f64;
        measured.push((n, first.measured as f64));
        for c in counts.iter().filter(|c| c.messages == *messages) {
            let name = formula_name(&c.formula);
            match formulas.iter_mut().find(|(f, _)| *f == name) {
                Some((_, pts)) => pts.push((n, value(&c.claim))),
                None => formulas.push((name, vec![(n, value(&c.claim))])),
            }
        }
    }
    let mut k = 0;
    for ((graph, case), (messages, measured, formulas)) in cases {
        let graph = if graph == "ring" {
            String::new()
        } else {
            format!("{graph}, ")
        };
        axes.add(
            Series {
                name: format!("{messages} measured ({graph}{case})"),
                points: measured,
            },
            Look::Dots,
            draw::colour(k),
        );
        for (name, points) in formulas {
            axes.add(Series { name, points }, Look::Dashed, draw::colour(k));
            k += 1;
        }
    }
    axes
}

/// A formula's name without the value the table adds in brackets for one size
/// (`2m (m=16)` is the curve `2m`; `2n*rounds (4)`, `2n*rounds`).
fn formula_name(formula: &str) -> String {
    match formula.rfind(" (") {
        Some(i) if formula[i + 2..].starts_with(|c: char| c.is_ascii_digit() || c == 'm') => formula[..i].to_string(),
        _ => formula.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{Claim, Count};
    use crate::render::draw::count_class as count;

    fn row(algo: &'static str, case: &str, n: usize, ms: f64, counts: &[(&str, u64, &str, Claim)]) -> ElectionRow {
        ElectionRow {
            algo,
            graph: "ring".into(),
            case: case.into(),
            n,
            election_ms: Some(ms),
            counts: Ok(counts
                .iter()
                .map(|&(m, v, f, c)| Count {
                    messages: m.into(),
                    measured: v,
                    formula: f.into(),
                    claim: c,
                })
                .collect()),
            notes: Vec::new(),
        }
    }

    fn rows() -> Vec<ElectionRow> {
        let mut v = Vec::new();
        for n in [8usize, 64] {
            let nn = n as u64;
            v.push(row(
                "chang-roberts",
                "ids increasing",
                n,
                n as f64 / 4.0,
                &[
                    ("ELECTION", 2 * nn - 1, "2n-1 (best)", Claim::Exact(2 * nn - 1)),
                    ("ELECTED", nn, "n", Claim::Exact(nn)),
                ],
            ));
            v.push(row(
                "chang-roberts",
                "ids decreasing",
                n,
                n as f64,
                &[(
                    "ELECTION",
                    nn * (nn + 1) / 2,
                    "n(n+1)/2 (worst)",
                    Claim::Exact(nn * (nn + 1) / 2),
                )],
            ));
            v.push(row(
                "echo",
                "node 1 starts",
                n,
                2.0,
                &[(
                    "ELECTION+ECHO",
                    4 * nn,
                    &format!("2m (m={})", 2 * nn),
                    Claim::Exact(4 * nn),
                )],
            ));
        }
        v
    }

    #[test]
    fn the_time_figure_has_a_line_per_algorithm_and_the_floors() {
        let svg = time_figure(&rows(), 25.0);
        let doc = roxmltree::Document::parse(&svg).unwrap();
        // chang-roberts (first case only) and echo, then the two floor lines.
        assert_eq!(count(&doc, "polyline", "series"), 4);
        assert_eq!(count(&doc, "circle", "point"), 4);
        assert!(svg.contains("chang-roberts (ring, ids increasing)"));
        assert!(svg.contains("25.0 us"));
    }

    #[test]
    fn the_messages_figure_puts_each_formula_beside_its_measurements() {
        let svg = messages_figure(&rows());
        let doc = roxmltree::Document::parse(&svg).unwrap();
        // Two panels; dots for three cases at two sizes; a dashed curve per formula (ELECTED
        // is not the first message type of its row: left out).
        assert_eq!(count(&doc, "circle", "point"), 6);
        assert_eq!(count(&doc, "polyline", "series"), 3);
        for t in [
            ">2n-1 (best)<",
            ">n(n+1)/2 (worst)<",
            ">2m<",
            ">chang-roberts<",
            ">echo<",
        ] {
            assert!(svg.contains(t), "{t} missing");
        }
    }

    #[test]
    fn formula_names_drop_the_value_of_one_size() {
        assert_eq!(formula_name("2m (m=16)"), "2m");
        assert_eq!(formula_name("2n*rounds (4)"), "2n*rounds");
        assert_eq!(formula_name("2n-1 (best)"), "2n-1 (best)");
        assert_eq!(formula_name("YES+NO (40)"), "YES+NO");
    }
}
