//! `coordlab bench --only detectors`: the same seeded fault schedule against each failure
//! detector (`fixed`, `phi`, `swim`) on a ring and a complete mesh of 8 and 64 real processes
//! ([`DETECTOR_SIZES`], or `--sizes`), judged
//! with Chen, Toueg and Aguilera's quality figures ([`figures`]): detection time T_D of real
//! crashes, mistake rate, mistake duration T_M, query accuracy P_A, and the plain counts.
//!
//! The schedule (times jittered by the seed): loss and delay with jitter on every link for
//! most of the run, a pause shorter than the timeout, a pause longer than it, a node starved
//! of CPU (a duty cycle of SIGSTOP/SIGCONT), then two kills, the second of the leader.
//!
//! The two kills are reported apart as well as together: every member watches the leader
//! under every detector, but with `fixed` nobody watches a node it does not wait on, so a
//! follower's crash is noticed only when an election happens to route through it (on a ring),
//! or never (bully on a mesh). That is the fixed detector's design (it probes only what its host
//! waits on), not a slow timeout: the leader's column compares the detectors on equal terms.

use super::plot::{figure, Axes, Look, Series};
use crate::error::{failed, CliError};
use crate::rng::Rng;
use crate::trace::{Event, NodeId, Record, RunDir};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The detectors compared, with the `--set` words that choose each.
const DETECTORS: [&str; 3] = ["fixed", "phi", "swim"];
/// Nodes per run when `--sizes` is not given: the issue's 8 and 64.
pub const DETECTOR_SIZES: &[usize] = &[8, 64];
/// Seconds each run lasts.
const RUN_S: f64 = 24.0;

/// What happened to processes, from faults.jsonl: (t µs, node, what).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Killed (SIGKILL): dead from then on, until a restart.
    Killed,
    /// Restarted.
    Restarted,
    /// Stopped (SIGSTOP): slow, not dead.
    Paused,
    /// Running again (SIGCONT).
    Resumed,
}

/// One detector event: (t µs, observer, target, what).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opinion {
    /// The observer suspects the target.
    Suspect,
    /// The observer withdrew its suspicion.
    Unsuspect,
    /// SWIM: the observer declared the target dead.
    Confirm,
}

/// What the launcher did to one node: (t µs, node, what).
pub(crate) type FateAt = (u64, NodeId, Fate);
/// What one observer said of one target: (t µs, observer, target, what).
pub(crate) type OpinionAt = (u64, NodeId, NodeId, Opinion);

/// Chen-Toueg-Aguilera figures of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    /// Processes killed.
    pub crashes: usize,
    /// Of those, suspected by some other node before the run ended (or it restarted).
    pub detected: usize,
    /// Mean detection time: from the kill to the first suspicion of it, ms.
    pub td_mean_ms: f64,
    /// Longest detection time, ms.
    pub td_max_ms: f64,
    /// Each crash in time order: the node killed, and its detection time in ms (None: missed).
    pub td_each: Vec<(NodeId, Option<f64>)>,
    /// Suspicions of a node that was not dead (paused, starved, cut off, or just slow).
    pub false_suspicions: usize,
    /// False suspicions per node-hour of observing.
    pub mistake_rate_per_node_hour: f64,
    /// Mean time a false suspicion was held (until withdrawn, the target died, or the end), ms.
    pub mistake_duration_ms: f64,
    /// The fraction of (observer, live target) time in which the observer did not suspect.
    pub query_accuracy: f64,
    /// SWIM: confirmations (declared dead) of a node that was not dead.
    pub false_confirmations: usize,
    /// Of the false suspicions, those of a node running at that moment (not paused): the
    /// mistakes loss and jitter cause, rather than a real stop no detector can tell from death.
    pub false_of_running: usize,
    /// The false suspicions split by cause (filled by [`Row`]'s reader from faults.jsonl):
    /// [running under loss and jitter, paused, starved, cut off].
    pub by_cause: [usize; 4],
}

/// The figures of a run from `start_us` to `end_us` with `nodes`, given what the launcher did
/// (`fates`, in time order) and what the detectors said (`opinions`, in time order). A node
/// is dead from its kill to its restart; an observer's opinions count while it is alive.
pub fn figures(nodes: &[NodeId], start_us: u64, end_us: u64, fates: &[FateAt], opinions: &[OpinionAt]) -> Figures {
    let dead_at = |node: NodeId, t: u64| {
        let mut dead = false;
        for &(_, _, f) in fates.iter().filter(|x| x.1 == node && x.0 <= t) {
            match f {
                Fate::Killed => dead = true,
                Fate::Restarted => dead = false,
                Fate::Paused | Fate::Resumed => {}
            }
        }
        dead
    };
    let paused_at = |node: NodeId, t: u64| {
        let mut paused = false;
        for &(_, _, f) in fates.iter().filter(|x| x.1 == node && x.0 <= t) {
            match f {
                Fate::Paused => paused = true,
                Fate::Resumed | Fate::Restarted | Fate::Killed => paused = false,
            }
        }
        paused
    };
    // When `node` next dies or comes back after `t` (or the end).
    let next_fate = |node: NodeId, t: u64| {
        fates
            .iter()
            .filter(|x| x.1 == node && x.0 > t && matches!(x.2, Fate::Killed | Fate::Restarted))
            .map(|x| x.0)
            .next()
            .unwrap_or(end_us)
    };
    // Detection: the first suspicion of a killed node by another, before it came back.
    let mut tds = Vec::new();
    let mut td_each = Vec::new();
    let mut crashes = 0;
    for &(t, n, f) in fates {
        if f != Fate::Killed {
            continue;
        }
        crashes += 1;
        let back = next_fate(n, t);
        let td = opinions
            .iter()
            .find(|o| o.2 == n && o.1 != n && o.3 == Opinion::Suspect && o.0 >= t && o.0 <= back)
            .map(|&(st, ..)| (st - t) as f64 / 1000.0);
        tds.extend(td);
        td_each.push((n, td));
    }
    // Mistakes: suspicions of a node not dead, held until withdrawn, its target died, its
    // observer died, or the end.
    let mut open: BTreeMap<(NodeId, NodeId), u64> = BTreeMap::new();
    let mut mistakes: Vec<f64> = Vec::new();
    let mut false_confirmations = 0;
    let mut false_of_running = 0;
    let close = |from: u64, to: u64, mistakes: &mut Vec<f64>| mistakes.push(to.saturating_sub(from) as f64 / 1000.0);
    for &(t, by, target, op) in opinions {
        if t < start_us || t > end_us || dead_at(by, t) {
            continue;
        }
        match op {
            Opinion::Suspect if !dead_at(target, t) => {
                if let std::collections::btree_map::Entry::Vacant(e) = open.entry((by, target)) {
                    e.insert(t);
                    false_of_running += usize::from(!paused_at(target, t));
                }
            }
            Opinion::Suspect => {}
            Opinion::Unsuspect => {
                if let Some(s) = open.remove(&(by, target)) {
                    close(s, t, &mut mistakes);
                }
            }
            Opinion::Confirm => false_confirmations += usize::from(!dead_at(target, t)),
        }
    }
    for ((by, target), s) in open {
        let to = next_fate(target, s).min(next_fate(by, s)).min(end_us);
        close(s, to, &mut mistakes);
    }
    let seconds = end_us.saturating_sub(start_us) as f64 / 1e6;
    // Observing time: each node's live time; pair time: each observer's live time times the
    // live targets (dead time of either is left out, roughly: a kill ends both).
    let live_s = |n: NodeId| {
        let mut dead_us = 0;
        let mut since: Option<u64> = None;
        for &(t, _, f) in fates.iter().filter(|x| x.1 == n) {
            match (f, since) {
                (Fate::Killed, None) => since = Some(t),
                (Fate::Restarted, Some(s)) => {
                    dead_us += t - s;
                    since = None;
                }
                _ => {}
            }
        }
        if let Some(s) = since {
            dead_us += end_us.saturating_sub(s);
        }
        (seconds - dead_us as f64 / 1e6).max(0.0)
    };
    let node_s: f64 = nodes.iter().map(|&n| live_s(n)).sum();
    let pair_s: f64 = nodes
        .iter()
        .flat_map(|&a| nodes.iter().filter(move |&&b| b != a).map(move |&b| (a, b)))
        .map(|(a, b)| live_s(a).min(live_s(b)))
        .sum();
    let mistaken_s: f64 = mistakes.iter().sum::<f64>() / 1000.0;
    let mean = |v: &[f64]| {
        if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    Figures {
        crashes,
        detected: tds.len(),
        td_mean_ms: mean(&tds),
        td_max_ms: tds.iter().copied().fold(0.0, f64::max),
        td_each,
        false_suspicions: mistakes.len(),
        mistake_rate_per_node_hour: if node_s > 0.0 {
            mistakes.len() as f64 / (node_s / 3600.0)
        } else {
            0.0
        },
        mistake_duration_ms: mean(&mistakes),
        query_accuracy: if pair_s > 0.0 {
            (1.0 - mistaken_s / pair_s).max(0.0)
        } else {
            1.0
        },
        false_confirmations,
        false_of_running,
        by_cause: [0; 4],
    }
}

/// The false suspicions (first of each observer-target episode) of `run` split by cause, as
/// [`Figures::by_cause`]: judged from faults.jsonl by [`crate::check::detection::Truth::cause`].
pub fn by_cause(run: &RunDir, opinions: &[OpinionAt]) -> [usize; 4] {
    use crate::check::detection::{Cause, Truth};
    let truth = Truth::of(run);
    let mut open = std::collections::BTreeSet::new();
    let mut out = [0; 4];
    for &(t, by, target, op) in opinions {
        if truth.dead_at(by, t) {
            continue;
        }
        match op {
            Opinion::Suspect if !truth.dead_at(target, t) && open.insert((by, target)) => {
                let i = match truth.cause(by, target, t) {
                    Cause::Running => 0,
                    Cause::Paused => 1,
                    Cause::Starved => 2,
                    Cause::CutOff => 3,
                };
                out[i] += 1;
            }
            Opinion::Unsuspect => {
                open.remove(&(by, target));
            }
            _ => {}
        }
    }
    out
}

/// The fates and opinions of a run directory.
pub(crate) fn read_run(run: &RunDir) -> (Vec<FateAt>, Vec<OpinionAt>) {
    let fates = run
        .faults
        .iter()
        .filter_map(|r| match (&r.event, r.node) {
            (Event::Kill { .. }, Some(n)) => Some((r.t, n, Fate::Killed)),
            (Event::Restart { .. }, Some(n)) => Some((r.t, n, Fate::Restarted)),
            (Event::Pause { .. }, Some(n)) => Some((r.t, n, Fate::Paused)),
            (Event::Resume { .. }, Some(n)) => Some((r.t, n, Fate::Resumed)),
            _ => None,
        })
        .collect();
    let opinions = run.node_events.iter().filter_map(opinion).collect();
    (fates, opinions)
}

fn opinion(r: &Record) -> Option<OpinionAt> {
    let by = r.node?;
    match r.event {
        Event::Suspect { target, .. } => Some((r.t, by, target, Opinion::Suspect)),
        Event::Unsuspect { target } => Some((r.t, by, target, Opinion::Unsuspect)),
        Event::Confirm { target, .. } => Some((r.t, by, target, Opinion::Confirm)),
        _ => None,
    }
}

/// The seeded schedule, as `--faults` lines, for `n` nodes (node `n` leads a Chang-Roberts
/// ring: the second kill is of the leader).
pub fn schedule(seed: u64, n: usize) -> String {
    let mut rng = Rng::new(seed);
    let mut jit = |base: f64| base + rng.range(0, 400) as f64 / 1000.0;
    let mut out = String::new();
    let nodes: Vec<u64> = (1..=n as u64).collect();
    let pick = |i: usize| nodes[i % nodes.len()];
    let _ = writeln!(
        out,
        "# seed {seed}: loss and jittered delay on every link, then pauses, a starved node, kills"
    );
    let _ = writeln!(out, "{:.3} net loss 5", jit(3.0));
    let _ = writeln!(out, "{:.3} net delay 5:20", jit(3.0));
    let short = jit(6.0);
    let _ = writeln!(out, "{short:.3} pause {}", pick(1));
    let _ = writeln!(out, "{:.3} resume {}", short + 0.15, pick(1));
    let long = jit(8.0);
    let _ = writeln!(out, "{long:.3} pause {}", pick(2));
    let _ = writeln!(out, "{:.3} resume {}", long + 1.5, pick(2));
    // Starved: runs 40 ms of every 100 for 3 s.
    let starve = jit(11.0);
    for i in 0..30 {
        let t = starve + i as f64 * 0.1;
        let _ = writeln!(out, "{t:.3} pause {}", pick(3));
        let _ = writeln!(out, "{:.3} resume {}", t + 0.06, pick(3));
    }
    let _ = writeln!(out, "{:.3} kill {}", jit(15.5), pick(5));
    let _ = writeln!(out, "{:.3} kill {}", jit(18.5), n);
    out
}

/// One run: `detector` on `shape` (`ring` or `mesh`), the schedule in `faults`.
fn run_one(logs: &Path, shape: &str, n: usize, detector: &str, faults: &Path) -> Result<RunDir, CliError> {
    let exe = std::env::current_exe().map_err(|e| failed(e.to_string()))?;
    let mut cmd = Command::new(exe);
    cmd.arg(shape).arg(n.to_string());
    if shape == "mesh" {
        cmd.args(["--topology", "complete"]);
    }
    let set = format!("detector={detector}");
    let mut child = cmd
        .args(["--logs", &logs.to_string_lossy()])
        .args(["--timeout-ms", "300", "--heartbeat-ms", "100"])
        .args(["--duration", &RUN_S.to_string()])
        .args(["--faults", &faults.to_string_lossy()])
        .args(["--set", &set])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| failed(format!("cannot launch: {e}")))?;
    let deadline = Instant::now() + Duration::from_secs_f64(RUN_S + 90.0 + n as f64);
    loop {
        if child.try_wait().map_err(|e| failed(e.to_string()))?.is_some() {
            break;
        }
        if Instant::now() > deadline {
            super::launch::stop(&mut child);
            return Err(failed(format!(
                "{shape} {n} detector={detector} did not finish in time"
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // The run is judged here, not by the launcher's exit status: a check that finds the
    // kills' consequences is no failure of the measurement.
    RunDir::load(&logs.join("latest")).map_err(|e| failed(e.to_string()))
}

/// The run's span: from the first node event to the last.
fn span(run: &RunDir) -> (u64, u64) {
    let first = run.node_events.first().map_or(0, |r| r.t);
    let last = run.node_events.last().map_or(first, |r| r.t);
    (first, last)
}

/// One row: a detector on a shape.
#[derive(Debug, Clone)]
pub struct Row {
    /// `ring` or `mesh`.
    pub shape: String,
    /// Nodes.
    pub n: usize,
    /// The detector.
    pub detector: String,
    /// Its figures.
    pub figures: Figures,
}

impl Row {
    /// Detection time of the leader's crash (node n, killed second), ms; None if missed.
    pub fn td_leader(&self) -> Option<f64> {
        let n = self.n as NodeId;
        self.figures.td_each.iter().find(|c| c.0 == n).and_then(|c| c.1)
    }

    /// Detection time of the follower's crash (the other kill), ms; None if missed.
    pub fn td_follower(&self) -> Option<f64> {
        let n = self.n as NodeId;
        self.figures.td_each.iter().find(|c| c.0 != n).and_then(|c| c.1)
    }

    /// The row as one JSON object (the issue's keys, plus topology and false confirmations).
    pub fn json(&self) -> serde_json::Value {
        let f = &self.figures;
        serde_json::json!({
            "detector": self.detector,
            "topology": format!("{} {}", self.shape, self.n),
            "crashes": f.crashes,
            "detected": f.detected,
            "td_mean_ms": (f.td_mean_ms * 10.0).round() / 10.0,
            "td_max_ms": (f.td_max_ms * 10.0).round() / 10.0,
            "td_leader_ms": self.td_leader().map(|x| (x * 10.0).round() / 10.0),
            "td_follower_ms": self.td_follower().map(|x| (x * 10.0).round() / 10.0),
            "false_suspicions": f.false_suspicions,
            "mistake_rate_per_node_hour": f.mistake_rate_per_node_hour.round(),
            "mistake_duration_ms": (f.mistake_duration_ms * 10.0).round() / 10.0,
            "query_accuracy": (f.query_accuracy * 1e5).round() / 1e5,
            "false_confirmations": f.false_confirmations,
            "false_suspicions_of_running": f.false_of_running,
            "false_suspicions_by_cause": {
                "running_under_loss_and_jitter": f.by_cause[0],
                "paused": f.by_cause[1],
                "starved": f.by_cause[2],
                "cut_off": f.by_cause[3],
            },
        })
    }
}

/// The table of `rows`.
pub fn table(rows: &[Row]) -> String {
    let mut out = format!(
        "{:<8} {:<6} {:>7} {:>8} {:>8} {:>8} {:>7} {:>7} {:>10} {:>15} {:>12} {:>8} {:>8} {:>6}\n",
        "topology",
        "det",
        "crashes",
        "detected",
        "TD mean",
        "TD max",
        "TD ldr",
        "TD fol",
        "false sus",
        "run/pau/sta/cut",
        "mistakes/nh",
        "TM ms",
        "P_A",
        "f.conf"
    );
    for r in rows {
        let f = &r.figures;
        let td = |x: Option<f64>| x.map_or("missed".to_string(), |x| format!("{x:.0}"));
        let _ = writeln!(
            out,
            "{:<8} {:<6} {:>7} {:>8} {:>8.0} {:>8.0} {:>7} {:>7} {:>10} {:>15} {:>12.0} {:>8.0} {:>8.5} {:>6}",
            format!("{} {}", r.shape, r.n),
            r.detector,
            f.crashes,
            f.detected,
            f.td_mean_ms,
            f.td_max_ms,
            td(r.td_leader()),
            td(r.td_follower()),
            f.false_suspicions,
            format!(
                "{}/{}/{}/{}",
                f.by_cause[0], f.by_cause[1], f.by_cause[2], f.by_cause[3]
            ),
            f.mistake_rate_per_node_hour,
            f.mistake_duration_ms,
            f.query_accuracy,
            f.false_confirmations
        );
    }
    out
}

/// T_D against the mistake rate, one point per detector and topology.
fn plot(rows: &[Row]) -> String {
    let mut ax = Axes::new(
        "failure detectors: detection time against mistakes (log-log)",
        "mean detection time T_D, ms",
        "false suspicions per node-hour",
    );
    let colours = crate::render::draw::PALETTE;
    for (i, r) in rows.iter().enumerate() {
        let rate = r.figures.mistake_rate_per_node_hour.max(1.0);
        ax.add(
            Series {
                name: format!("{} on {} {} (rate floored at 1)", r.detector, r.shape, r.n),
                points: vec![(r.figures.td_mean_ms.max(1.0), rate)],
            },
            Look::Dots,
            colours[i % colours.len()],
        );
    }
    figure("coordlab bench --only detectors", 1, 520.0, 320.0, &[ax])
}

/// Runs the detectors' benchmark; prints a table (or, with `json`, one object a line), writes
/// bench/detectors.md and bench/detectors.svg.
pub fn run_detectors(sizes: &[usize], seed: u64, json: bool) -> Result<(), CliError> {
    let tmp = std::env::temp_dir().join(format!("coordlab-detectors-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(|e| failed(e.to_string()))?;
    let result = run_all(&tmp, sizes, seed, json);
    let _ = std::fs::remove_dir_all(&tmp);
    result
}

fn run_all(tmp: &Path, sizes: &[usize], seed: u64, json: bool) -> Result<(), CliError> {
    let mut rows = Vec::new();
    let mut texts = String::new();
    let mut unfinished = String::new();
    let began = Instant::now();
    for &n in sizes {
        let faults = tmp.join(format!("detectors-{n}.faults"));
        let text = schedule(seed, n);
        std::fs::write(&faults, &text).map_err(|e| failed(e.to_string()))?;
        let _ = write!(texts, "{n} nodes:\n{text}");
        for shape in ["ring", "mesh"] {
            for det in DETECTORS {
                let logs = tmp.join(format!("{shape}-{n}-{det}"));
                let run = match run_one(&logs, shape, n, det, &faults) {
                    Ok(run) => run,
                    // One size too heavy for the machine must not lose the others' figures.
                    Err(e) => {
                        eprintln!("coordlab bench: {e}");
                        let _ = writeln!(unfinished, "{shape} {n} detector={det}: {e}");
                        let _ = std::fs::remove_dir_all(&logs);
                        continue;
                    }
                };
                let (fates, opinions) = read_run(&run);
                let (start, end) = span(&run);
                let nodes: Vec<NodeId> = (1..=n as u64).collect();
                let mut figures = figures(&nodes, start, end, &fates, &opinions);
                figures.by_cause = by_cause(&run, &opinions);
                let row = Row {
                    shape: shape.into(),
                    n,
                    detector: det.into(),
                    figures,
                };
                if json {
                    println!("{}", row.json());
                }
                rows.push(row);
                let _ = std::fs::remove_dir_all(&logs);
            }
        }
    }
    let took = began.elapsed().as_secs();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load = load.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
    let sizes_s = sizes.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
    let t = table(&rows);
    if !json {
        print!("{t}");
    }
    let out = Path::new("bench");
    std::fs::create_dir_all(out).map_err(|e| failed(e.to_string()))?;
    let md = format!(
        "# Failure detectors side by side\n\nWritten by `coordlab bench --only detectors --seed {seed} --sizes {sizes_s}` \
         in {took} s (load average at the end: {load}; the machine's other work moves these figures between runs): \
         `--timeout-ms 300 --heartbeat-ms 100`, {RUN_S} s per run, the same schedule for each \
         detector:\n\n```\n{texts}```\n\n```\n{t}```\n\nTD: from the kill to the first suspicion by any node; \
         TD ldr, TD fol: of the leader's crash (watched by every member under every detector) and of the follower's \
         (with `fixed`, watched by nobody unless an election routes through it). \
         false sus: suspicions of a node that was not dead, split by cause (run/pau/sta/cut: of a running node under the loss and jitter every link had, of a node paused, starved of CPU, or cut off from its observer at the time or within 1.5 s before); TM: how long they were held; P_A: the share of \
         (observer, live target) time without a wrong suspicion; f.conf: SWIM's dead declarations of live nodes.\n\n\
         ![T_D against mistakes](detectors.svg)\n"
    );
    let md = match unfinished.is_empty() {
        true => md,
        false => format!("{md}\nRuns that did not finish (no row):\n\n```\n{unfinished}```\n"),
    };
    std::fs::write(out.join("detectors.md"), md).map_err(|e| failed(e.to_string()))?;
    std::fs::write(out.join("detectors.svg"), plot(&rows)).map_err(|e| failed(e.to_string()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_of_a_hand_built_run() {
        // Three nodes, 10 s. Node 3 is killed at 4 s: node 1 suspects it 300 ms later, node 2
        // 500 ms later. Node 2 was wrongly suspected by 1 from 1.0 s to 1.2 s and by 3 from
        // 2.0 s to 2.6 s; node 1 was wrongly suspected by 2 at 9 s until the end (1 s).
        // A suspicion by the dead node 3 (at 5 s) does not count; SWIM confirmed 2 at 2.5 s.
        let s = 1_000_000;
        let ms = 1000;
        // Node 2 was paused from 0.9 s to 1.1 s: 1's suspicion of it is of a stopped node.
        let fates = [
            (900 * ms, 2, Fate::Paused),
            (1100 * ms, 2, Fate::Resumed),
            (4 * s, 3, Fate::Killed),
        ];
        let ops = [
            (s, 1, 2, Opinion::Suspect),
            (s + 200 * ms, 1, 2, Opinion::Unsuspect),
            (2 * s, 3, 2, Opinion::Suspect),
            (2 * s + 500 * ms, 3, 2, Opinion::Confirm),
            (2 * s + 600 * ms, 3, 2, Opinion::Unsuspect),
            (4 * s + 300 * ms, 1, 3, Opinion::Suspect),
            (4 * s + 500 * ms, 2, 3, Opinion::Suspect),
            (5 * s, 3, 1, Opinion::Suspect),
            (9 * s, 2, 1, Opinion::Suspect),
        ];
        let f = figures(&[1, 2, 3], 0, 10 * s, &fates, &ops);
        assert_eq!(f.crashes, 1);
        assert_eq!(f.detected, 1);
        assert!((f.td_mean_ms - 300.0).abs() < 1e-9);
        assert!((f.td_max_ms - 300.0).abs() < 1e-9);
        assert_eq!(f.td_each, vec![(3, Some(300.0))]);
        assert_eq!(f.false_suspicions, 3);
        assert_eq!(f.false_confirmations, 1);
        assert_eq!(f.false_of_running, 2);
        // Mistakes of 200, 600 and 1000 ms.
        assert!((f.mistake_duration_ms - 600.0).abs() < 1e-9);
        // Node time: 10 + 10 + 4 = 24 s; 3 mistakes in 24/3600 h = 450 per node-hour.
        assert!((f.mistake_rate_per_node_hour - 450.0).abs() < 1e-6);
        // Pair time: (1,2) (2,1) 10 s each, the four pairs with 3: 4 s each = 36 s; 1.8 s wrong.
        assert!((f.query_accuracy - (1.0 - 1.8 / 36.0)).abs() < 1e-9);
    }

    #[test]
    fn the_leaders_crash_and_the_followers_are_reported_apart() {
        // Eight nodes: the follower 6 killed first and never suspected (fixed on a mesh),
        // the leader 8 suspected 250 ms after its kill.
        let s = 1_000_000;
        let fates = [(15 * s, 6, Fate::Killed), (18 * s, 8, Fate::Killed)];
        let ops = [(18 * s + 250_000, 1, 8, Opinion::Suspect)];
        let nodes: Vec<NodeId> = (1..=8).collect();
        let figures = figures(&nodes, 0, 24 * s, &fates, &ops);
        assert_eq!(figures.td_each, vec![(6, None), (8, Some(250.0))]);
        let row = Row {
            shape: "mesh".into(),
            n: 8,
            detector: "fixed".into(),
            figures,
        };
        assert_eq!((row.td_leader(), row.td_follower()), (Some(250.0), None));
        let t = table(std::slice::from_ref(&row));
        let line = t.lines().nth(1).expect("a row");
        assert!(line.starts_with("mesh 8   fixed"), "{line}");
        assert!(line.contains(" 250  missed "), "{line}");
        assert_eq!(row.json()["td_leader_ms"], 250.0);
        assert!(row.json()["td_follower_ms"].is_null());
    }

    #[test]
    fn the_schedule_is_the_same_for_the_same_seed_and_parses() {
        let a = schedule(7, 8);
        assert_eq!(a, schedule(7, 8));
        assert_ne!(a, schedule(8, 8));
        let ids: Vec<NodeId> = (1..=8).collect();
        let s = crate::cluster::schedule::Schedule::parse("detectors", &a, &ids, &ids).expect("valid");
        assert_eq!(s.entries.iter().filter(|e| e.line.starts_with("kill")).count(), 2);
        assert!(s.entries.iter().any(|e| e.line == "kill 8"));
    }
}
