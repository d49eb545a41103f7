//! Every election algorithm launched as real processes: election time and the protocol's own
//! message counts (from the nodes' `stop` counters), beside the textbook formulas. The cases
//! come from the registry: each entry names its function in [`cases`](super::cases).

use super::cases::{Case, How};
use super::claims::Count;
use super::election_plots::write_files;
use super::floor::floor;
use super::launch::{launch, Shape};
use super::readings::election_ms;
use super::table::{print_header, print_row};
use crate::catalog::{Bench, ENTRIES};
use crate::error::CliError;
use crate::trace::{Event, NodeId, RunDir};
use std::collections::BTreeSet;
use std::path::Path;

/// One launch: an algorithm on a graph in some setup, at one size.
#[derive(Debug, Clone)]
pub(crate) struct ElectionRow {
    /// The `--algo`.
    pub algo: &'static str,
    /// `ring`, or the mesh topology.
    pub graph: String,
    /// The setup (id arrangement, initiators).
    pub case: String,
    /// How many nodes.
    pub n: usize,
    /// First `election_start` to the last node's `leader` event, milliseconds.
    pub election_ms: Option<f64>,
    /// The counts, or why the launch gave none.
    pub counts: Result<Vec<Count>, String>,
    /// Anything that makes the counts not the plain election's (a second term, lost counters).
    pub notes: Vec<String>,
}

fn join(ids: &[NodeId]) -> String {
    ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",")
}

/// What in a run makes its counts more than one plain election: more terms than expected, fewer
/// nodes with their `stop` counters than expected.
pub(super) fn notes(run: &RunDir, stopping: usize, terms_expected: usize) -> Vec<String> {
    let mut out = Vec::new();
    let terms: BTreeSet<u64> = run
        .node_events
        .iter()
        .filter_map(|r| match r.event {
            Event::ElectionStart { term } => Some(term),
            _ => None,
        })
        .collect();
    if terms.len() > terms_expected {
        out.push(format!(
            "{} terms ({:?}): the counts include a re-election",
            terms.len(),
            terms
        ));
    }
    let stopped = run
        .node_events
        .iter()
        .filter(|r| matches!(r.event, Event::Stop { .. }))
        .count();
    if stopped < stopping {
        out.push(format!("only {stopped} of {stopping} nodes wrote their stop counters"));
    }
    out
}

/// Runs one case of `algo` in `dir` and reads its row.
fn measure(dir: &Path, algo: &'static str, n: usize, seed: u64, c: &Case) -> ElectionRow {
    let graph = match c.shape {
        Shape::Ring => "ring".to_string(),
        Shape::Mesh(spec) => spec.to_string(),
    };
    let measured = match &c.how {
        How::Launch {
            ids,
            initiators,
            counts,
        } => {
            let ids = join(ids);
            let seed = seed.to_string();
            let args = [
                "--seed",
                &seed,
                "--algo",
                algo,
                "--until",
                "elected",
                "--ids",
                &ids,
                "--initiators",
                initiators,
            ];
            let mut mem = None;
            launch(dir, c.shape, n, &args, &mut mem)
                .map(|run| (election_ms(&run), counts(&run), notes(&run, n, 1)))
                .map_err(|e| e.to_string())
        }
        How::Script(script) => script(dir, algo, n),
    };
    let _ = std::fs::remove_dir_all(dir);
    let (election_ms, counts, notes) = match measured {
        Ok((ms, counts, notes)) => (ms, Ok(counts), notes),
        Err(e) => (None, Err(e), Vec::new()),
    };
    ElectionRow {
        algo,
        graph,
        case: c.case.clone(),
        n,
        election_ms,
        counts,
        notes,
    }
}

/// Every registry entry's cases at size `n`, in registry order, with the entry's name.
fn all_cases(n: usize, seed: u64) -> Vec<(&'static str, Case)> {
    ENTRIES
        .iter()
        .filter_map(|e| match e.bench {
            Bench::Elections(cases) => Some((e.name, cases)),
            _ => None,
        })
        .flat_map(|(algo, cases)| cases(n, seed).into_iter().map(move |c| (algo, c)))
        .collect()
}

/// Measures every election case of every registry entry at each size, printing each row as it
/// comes (the whole takes minutes); then the loopback floor (`rounds` ping-pongs), and writes
/// the table and its figures under `bench/`.
pub(crate) fn run_elections(sizes: &[usize], seed: u64, rounds: usize) -> Result<Vec<ElectionRow>, CliError> {
    let root = std::env::temp_dir().join(format!("coordlab-el-{}", std::process::id()));
    print_header();
    let mut out = Vec::new();
    for &n in sizes {
        for (index, (algo, c)) in all_cases(n, seed).into_iter().enumerate() {
            // Short: the control socket's path inside it must fit in a sockaddr_un.
            let row = measure(&root.join(format!("{n}-{index}")), algo, n, seed, &c);
            print_row(&row);
            out.push(row);
        }
    }
    let _ = std::fs::remove_dir_all(&root);
    // After the launches: none of their processes is left to disturb it.
    let f = floor(rounds)?;
    println!(
        "loopback floor: round trip median {:.1} us; one hop {:.1} us",
        f.median_us,
        f.median_us / 2.0
    );
    let written = write_files(&out, &f, super::BUILD)?;
    println!("wrote {}", written.join(", "));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_gives_the_table_its_rows_in_order_each_on_a_graph_its_entry_runs_on() {
        let rows = all_cases(8, 1);
        let ids: Vec<u64> = (1..=8).collect();
        let elections: Vec<&crate::catalog::Entry> = ENTRIES
            .iter()
            .filter(|e| matches!(e.bench, Bench::Elections(_)))
            .collect();
        // In registry order, every entry with its own rows, at least one each.
        let mut order: Vec<&str> = rows.iter().map(|r| r.0).collect();
        order.dedup();
        assert_eq!(order, elections.iter().map(|e| e.name).collect::<Vec<_>>());
        for (algo, c) in &rows {
            let e = crate::catalog::find(algo).unwrap();
            let fits = match c.shape {
                Shape::Ring => e.runs_on.check(algo, None),
                Shape::Mesh(spec) => {
                    let g = crate::topology::build(spec, &ids, 1).unwrap();
                    e.runs_on.check(algo, Some((spec, &g)))
                }
            };
            assert_eq!(fits, Ok(()), "{algo}: {}", c.case);
            assert!(!c.case.is_empty(), "{algo} has a row without a case");
        }
    }
}
