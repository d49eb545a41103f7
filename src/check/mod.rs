//! Property checkers over a run's merged traces, and the narrated summary.
//!
//! [`analyse`] turns a loaded run directory into facts ([`Analysis`]); [`summary`] puts those
//! facts into words; [`check`] does both for `coordlab check` and writes `summary.txt`.
//! Each rule lives in one place: process truth in [`timeline`], beliefs in [`beliefs`] (the
//! only replay of beliefs: the launcher and the tests use it too), the election properties in
//! [`election`], their causes in [`explain`], storms and leaderless stretches in [`storms`],
//! suspicion verdicts in [`suspicion`], counters in [`traffic`]; each family's section in
//! [`section`]. The words never recompute a fact. [`sim_run`] feeds a simulation to it.

pub mod beliefs;
pub mod clock;
pub mod cut;
pub mod detection;
pub mod election;
pub mod explain;
pub mod mutex;
pub mod mutex_lesson;
pub mod mutex_progress;
pub mod network;
pub mod ring_probe;
pub mod section;
pub mod snapshot;
pub mod storms;
pub mod summary;
pub mod suspicion;
mod sweeps;
pub mod timeline;
pub mod traffic;

#[cfg(test)]
mod evidence_tests;
#[cfg(test)]
mod explained_tests;
#[cfg(test)]
mod network_tests;
#[cfg(test)]
mod resource_late_tests;
#[cfg(test)]
mod restart_tests;
#[cfg(test)]
mod test_run;
#[cfg(test)]
mod tests;

pub use beliefs::{Belief, LeadSpan, SpanEnd};
pub use election::{Claim, ElectionFacts, Overlap, TermSummary, Violation};
pub use suspicion::Suspicion;
pub use timeline::{End, Proc, Timeline};
pub use traffic::Traffic;

use crate::error::{usage, write_failed, CliError};
use crate::trace::{BadLine, Event, NodeId, RunDir};
#[cfg(test)]
use crate::trace::{Record, RunInfo, RunNode};
pub(crate) use section::{Finding, Section};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What `coordlab check` concluded.
#[derive(Debug, Clone)]
pub struct Report {
    /// The short summary in words (violations first, one line per property and node class).
    pub text: String,
    /// The summary with every detail (`--verbose`; written to `summary.txt`).
    pub full: String,
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
    /// The sections of the other families present in the run.
    pub sections: Vec<Arc<dyn Section>>,
    /// Every suspicion, judged (empty, and not judged, when faults.jsonl is missing).
    pub suspicions: Vec<Suspicion>,
    /// What the network was doing when (faults.jsonl folded through the rules model).
    pub network: network::Network,
    /// Per side of each network split, its longest stretch without a leader (elections).
    pub side_gaps: Vec<network::SideGap>,
    /// The failure-detector timeout of the run (`run.json`), microseconds, if known.
    pub timeout_us: Option<u64>,
    /// Suspicions held for more than twice the timeout while their target ran: never healed.
    pub stale: Vec<suspicion::Stale>,
    /// Drops and counters.
    pub traffic: Traffic,
    /// Per node, events written after its process had ended (left out of the beliefs).
    pub after_death: BTreeMap<NodeId, usize>,
    /// Trace lines that did not parse.
    pub bad_lines: usize,
    /// Each of them: file, line, why.
    pub bad: Vec<BadLine>,
    /// Lines of unknown event kinds, by kind.
    pub unknown: BTreeMap<String, usize>,
    /// Files the run should have and does not (`node-7.jsonl`, `faults.jsonl`).
    pub missing: Vec<String>,
    /// Traces that are incomplete evidence, and why: empty, cut mid-line, or written by a node
    /// that stopped because it could not write them. Their nodes' end states are not judged.
    pub incomplete: Vec<(String, String)>,
}

impl Analysis {
    /// The election properties violated (none when there was no election).
    pub fn violations(&self) -> &[Violation] {
        self.election.as_ref().map_or(&[], |e| &e.violations)
    }

    /// Every family's section: elections first.
    pub(crate) fn all_sections(&self) -> Vec<&dyn Section> {
        let mut out: Vec<&dyn Section> = Vec::new();
        if let Some(e) = &self.election {
            out.push(e);
        }
        out.extend(self.sections.iter().map(|s| s.as_ref()));
        out
    }

    /// Every violation and flag of every section, most important first; then the suspicions
    /// that never healed (a flag).
    pub(crate) fn findings(&self) -> Vec<Finding> {
        let mut out: Vec<Finding> = self.all_sections().iter().flat_map(|s| s.findings()).collect();
        if let Some(worst) = self.stale.iter().max_by_key(|s| s.us()) {
            out.push(Finding {
                property: "suspicions that did not heal".into(),
                what: format!(
                    "suspicions that did not heal: {} held for more than twice the timeout while the target ran \
                     (longest: node {} suspected node {} for {} after it ran)",
                    self.stale.len(),
                    worst.by,
                    worst.target,
                    summary::dur(worst.us())
                ),
                violation: false,
                explanation: None,
            });
        }
        out
    }

    /// Whether a property the algorithm promises was violated and no fault explains it.
    pub fn violated(&self) -> bool {
        self.findings().iter().any(Finding::fails)
    }

    /// Whether faults.jsonl (the ground truth) was there to judge suspicions and the end.
    pub(crate) fn faults_known(&self) -> bool {
        !self.missing.iter().any(|m| m == "faults.jsonl")
    }

    /// How many suspicions were true and how many false.
    pub(crate) fn suspicion_counts(&self) -> (usize, usize) {
        let right = self.suspicions.iter().filter(|s| s.is_true()).count();
        (right, self.suspicions.len() - right)
    }
}

/// How many failure-detector timeouts an election is given after the last fault before the
/// run's end: a run stopped sooner may end mid-election, which termination and agreement at the
/// end do not hold against it.
pub(crate) const END_SETTLE_TIMEOUTS: u64 = 10;

/// The last fault (a signal or a network change) if it came less than `settle` before the end
/// of the run, as the explanation of an end without a leader everyone agrees on.
fn late_fault(run: &RunDir, timeline: &timeline::Timeline, settle: u64) -> Option<explain::Explanation> {
    const FAULTS: [&str; 9] = [
        "pause",
        "resume",
        "kill",
        "restart",
        "cut",
        "partition",
        "heal",
        "loss",
        "delay",
    ];
    let last = run
        .faults
        .iter()
        .filter(|r| FAULTS.contains(&r.event.kind()) && r.t <= timeline.end_us)
        .max_by_key(|r| r.t)?;
    let before_end = timeline.end_us - last.t;
    (before_end < settle).then(|| explain::Explanation {
        term: 0,
        inherent: true,
        by_design: false,
        words: format!(
            "the run ended {} ms after its last fault ({}{}), less than {END_SETTLE_TIMEOUTS} timeouts: an election may still have been under way",
            before_end / 1000,
            last.event.kind(),
            last.node.map_or(String::new(), |n| format!(" of node {n}"))
        ),
    })
}

/// Works out every fact of `run`.
pub fn analyse(run: &RunDir) -> Analysis {
    let timeline = Timeline::build(run);
    let faults_known = !run.missing.iter().any(|m| m == "faults.jsonl");
    let timeout_us = run.info.options["timeout_ms"].as_u64().map(|ms| ms * 1000);
    let incomplete = incomplete(run);
    let unjudged: Vec<NodeId> = run
        .info
        .nodes
        .iter()
        .map(|n| n.id)
        .filter(|id| {
            let name = format!("node-{id}.jsonl");
            run.missing.contains(&name) || incomplete.iter().any(|(f, _)| *f == name)
        })
        .collect();
    // Each part reads the whole run: the beliefs and the election on a second thread, the
    // rest on this one (the launcher's check runs after the nodes have left the cores).
    let ((beliefs, election), (net, suspicions, stale, traffic, sections)) = crate::both::both(
        || {
            let beliefs = beliefs::Beliefs::replay(run, &timeline);
            let election = judge_election(run, &timeline, &beliefs, &unjudged, faults_known, timeout_us);
            (beliefs, election)
        },
        || {
            let net = network::Network::of(run);
            let suspicions = if faults_known {
                suspicion::judge_with(run, &timeline, &net)
            } else {
                Vec::new()
            };
            let stale = match timeout_us {
                Some(t) if faults_known => suspicion::stale_with(run, &timeline, t, &net),
                _ => Vec::new(),
            };
            let traffic = Traffic::count(run);
            let sections = section::FAMILIES
                .iter()
                .filter(|(f, _)| *f == section::family(&run.info.algo))
                .filter_map(|(_, build)| build(run, &timeline))
                .collect();
            (net, suspicions, stale, traffic, sections)
        },
    );
    Analysis {
        dir: run.path.clone(),
        algo: run.info.algo.clone(),
        topology: run.info.topology.clone(),
        start_us: run.info.start_us,
        side_gaps: election
            .as_ref()
            .map(|e| network::side_gaps(&net, &e.spans, &timeline))
            .unwrap_or_default(),
        suspicions,
        timeout_us,
        stale,
        traffic,
        after_death: beliefs.after_death,
        bad_lines: run.bad_lines,
        bad: run.bad.clone(),
        unknown: run.unknown.clone(),
        missing: run.missing.clone(),
        incomplete,
        sections,
        election,
        timeline,
        network: net,
    }
}

/// The election's facts, when the run recorded any election event.
fn judge_election(
    run: &RunDir,
    timeline: &Timeline,
    beliefs: &beliefs::Beliefs,
    unjudged: &[NodeId],
    faults_known: bool,
    timeout_us: Option<u64>,
) -> Option<ElectionFacts> {
    beliefs.any_election.then(|| {
        let mut e = ElectionFacts::judge_with(beliefs, timeline, unjudged, faults_known);
        let ground = explain::Ground::of(run);
        e.explanations = e
            .violations
            .iter()
            .filter_map(|v| explain::explain(v, run, timeline, &ground))
            .collect();
        let mut first_starts: BTreeMap<u64, u64> = BTreeMap::new();
        for s in &beliefs.started {
            first_starts.entry(s.term).or_insert(s.t);
        }
        e.storms = storms::count(run, &first_starts, timeline.end_us);
        e.leaderless = storms::leaderless(&e.spans, timeline, run.info.start_us);
        let timeout = timeout_us.filter(|&t| t > 0).unwrap_or(300_000);
        e.judge_progress(run, timeline, election::LEADERLESS_TIMEOUTS * timeout);
        e.end_explanation = late_fault(run, timeline, END_SETTLE_TIMEOUTS * timeout);
        e
    })
}

/// The traces of `run` that are incomplete evidence: what the reader found (empty, cut), and
/// the traces of nodes that stopped because they could not write them (their exit status,
/// [`crate::error::WRITE_FAILED`], in faults.jsonl).
pub(crate) fn incomplete(run: &RunDir) -> Vec<(String, String)> {
    let mut out = run.incomplete.clone();
    let status = format!("exit {}", crate::error::WRITE_FAILED);
    for r in &run.faults {
        if let (Some(n), Event::Exit { status: s, .. }) = (r.node, &r.event) {
            let name = if run.resource.is_empty() || n != crate::algo::mutex::RESOURCE_ID {
                format!("node-{n}.jsonl")
            } else {
                "resource.jsonl".to_string()
            };
            if *s == status && !out.iter().any(|(f, _)| *f == name) {
                out.push((
                    name,
                    format!(
                        "the node could not write it and stopped at {} (exit status {status})",
                        summary::at(run.info.start_us, r.t)
                    ),
                ));
            }
        }
    }
    out
}

/// A simulation as the launcher would have recorded it: the simulator's trace and its faults
/// (every node spawned at time 0, the run shut down now), for the checker to judge.
#[cfg(test)]
pub(crate) fn sim_run<A: crate::algo::Algorithm>(s: &crate::sim::Sim<A>, algo: &str, topology: &str) -> RunDir {
    let setups = s.setups();
    let rec = Record::unstamped;
    let mut faults: Vec<Record> = setups
        .keys()
        .map(|&id| {
            let addr = format!("sim:{id}");
            rec(0, Some(id), Event::Spawn { pid: 0, addr })
        })
        .collect();
    faults.extend(s.faults.iter().cloned());
    faults.push(rec(s.now().as_micros() as u64, None, Event::Shutdown {}));
    let first = setups.values().next();
    let set = first.map(|f| f.opts.clone()).unwrap_or_default();
    let timeout_ms = first.map_or(0, |f| f.timeout.as_millis() as u64);
    RunDir {
        path: PathBuf::from(format!("simulation of {algo}")),
        info: RunInfo {
            algo: algo.into(),
            topology: topology.into(),
            nodes: setups
                .values()
                .map(|st| RunNode {
                    id: st.me,
                    addr: format!("sim:{}", st.me),
                    peers: st.neighbours.clone(),
                })
                .collect(),
            start_us: 0,
            options: serde_json::json!({ "set": set, "timeout_ms": timeout_ms }),
            control: None,
        },
        node_events: s.trace.clone(),
        faults,
        resource: Vec::new(),
        bad_lines: 0,
        bad: Vec::new(),
        unknown: BTreeMap::new(),
        missing: Vec::new(),
        incomplete: Vec::new(),
    }
}

/// Checks the run in `dir`, writes `summary.txt` there, and returns the report.
pub fn check(dir: &Path) -> Result<Report, CliError> {
    check_with(dir, BTreeMap::new())
}

/// [`check`], with the traces of `given` already read (the launcher's, by file name).
pub(crate) fn check_with(dir: &Path, given: BTreeMap<String, crate::trace::Jsonl>) -> Result<Report, CliError> {
    check_keeping(dir, given).map(|(report, _)| report)
}

/// [`check_with`], handing back the run it read too: the launcher's clock table reads it
/// rather than every trace again (a third of a second at 4,096 nodes).
pub(crate) fn check_keeping(
    dir: &Path,
    given: BTreeMap<String, crate::trace::Jsonl>,
) -> Result<(Report, RunDir), CliError> {
    if !dir.is_dir() {
        return Err(usage(format!("{}: no such run directory", dir.display())));
    }
    let run = RunDir::load_with(dir, given).map_err(|e| {
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
    let text = summary::render(&analysis, false);
    let full = summary::render(&analysis, true);
    let out = dir.join("summary.txt");
    // Exit status 3, not 1: a summary that cannot be written is no verdict on the run.
    std::fs::write(&out, &full).map_err(|e| write_failed(format!("cannot write {}: {e}", out.display())))?;
    let report = Report {
        violated: analysis.violated(),
        text,
        full,
        analysis,
    };
    Ok((report, run))
}
