//! Property checkers over a run's merged traces, and the narrated summary.
//!
//! [`analyse`] turns a loaded run directory into facts ([`Analysis`]); [`summary`] puts those
//! facts into words; [`check`] does both for `coordlab check` and writes `summary.txt`.
//! Each rule lives in one place: process truth in [`timeline`], beliefs in [`beliefs`], the
//! election properties in [`election`], suspicion verdicts in [`suspicion`], counters in
//! [`traffic`]. The words never recompute a fact.

pub mod beliefs;
pub mod clock;
pub mod cut;
pub mod election;
pub mod snapshot;
pub mod summary;
pub mod suspicion;
pub mod timeline;
pub mod traffic;

#[cfg(test)]
mod tests;

pub use beliefs::{Belief, LeadSpan, SpanEnd};
pub use election::{Claim, ElectionFacts, Overlap, TermSummary, Violation};
pub use suspicion::Suspicion;
pub use timeline::{End, Proc, Timeline};
pub use traffic::Traffic;

use crate::error::{failed, usage, CliError};
use crate::trace::{NodeId, RunDir};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What `coordlab check` concluded.
#[derive(Debug, Clone)]
pub struct Report {
    /// The summary in words (also written to `summary.txt`).
    pub text: String,
    /// Whether a property the algorithm promises was violated (exit status 1).
    pub violated: bool,
    /// The facts the words were built from.
    pub analysis: Analysis,
}

/// Everything the checker found in one run, as data.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// The run directory.
    pub dir: PathBuf,
    /// The algorithm (`run.json`).
    pub algo: String,
    /// The topology (`run.json`).
    pub topology: String,
    /// Wall-clock start of the run (`run.json`), microseconds: the zero of every `+ms`.
    pub start_us: u64,
    /// Which process was running, paused or dead, when; and the end of the run.
    pub timeline: Timeline,
    /// The election facts; None when the run had no election event at all.
    pub election: Option<ElectionFacts>,
    /// Every suspicion, judged.
    pub suspicions: Vec<Suspicion>,
    /// Drops and counters.
    pub traffic: Traffic,
    /// Per node, events written after its process had ended (left out of the beliefs).
    pub after_death: BTreeMap<NodeId, usize>,
    /// Trace lines that did not parse.
    pub bad_lines: usize,
}

impl Analysis {
    /// The election properties violated (none when there was no election).
    pub fn violations(&self) -> &[Violation] {
        self.election.as_ref().map_or(&[], |e| &e.violations)
    }

    /// Whether a property the algorithm promises was violated.
    pub fn violated(&self) -> bool {
        !self.violations().is_empty()
    }

    /// How many suspicions were true and how many false.
    pub fn suspicion_counts(&self) -> (usize, usize) {
        let right = self.suspicions.iter().filter(|s| s.is_true()).count();
        (right, self.suspicions.len() - right)
    }
}

/// Works out every fact of `run`.
pub fn analyse(run: &RunDir) -> Analysis {
    let timeline = Timeline::build(run);
    let beliefs = beliefs::Beliefs::replay(run, &timeline);
    let election = beliefs.any_election.then(|| ElectionFacts::judge(&beliefs, &timeline));
    Analysis {
        dir: run.path.clone(),
        algo: run.info.algo.clone(),
        topology: run.info.topology.clone(),
        start_us: run.info.start_us,
        suspicions: suspicion::judge(run, &timeline),
        traffic: Traffic::count(run),
        after_death: beliefs.after_death,
        bad_lines: run.bad_lines,
        election,
        timeline,
    }
}

/// Checks the run in `dir`, writes `summary.txt` there, and returns the report.
pub fn check(dir: &Path) -> Result<Report, CliError> {
    if !dir.is_dir() {
        return Err(usage(format!("{}: no such run directory", dir.display())));
    }
    let run = RunDir::load(dir).map_err(|e| {
        // The loader names run.json itself; other read errors need the directory named.
        let msg = e.to_string();
        let shown = dir.display().to_string();
        usage(if msg.contains(&shown) {
            msg
        } else {
            format!("{shown}: {msg}")
        })
    })?;
    let analysis = analyse(&run);
    let clocks = clock::analyse(&run);
    let snapshots = snapshot::analyse(&run);
    let text = summary::render(&analysis) + &clock::summary(&clocks) + &snapshot::summary(&snapshots);
    let out = dir.join("summary.txt");
    std::fs::write(&out, &text).map_err(|e| failed(format!("cannot write {}: {e}", out.display())))?;
    Ok(Report {
        violated: analysis.violated() || clocks.violations() > 0 || !snapshots.broken().is_empty(),
        text,
        analysis,
    })
}
