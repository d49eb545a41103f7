//! `coordlab bench --only detectors`: the same seeded fault schedule against each failure
//! detector (`fixed`, `phi`, `swim`) on a ring and a complete mesh of 8 and 64 real processes
//! ([`DETECTOR_SIZES`], or `--sizes`), judged
//! with Chen, Toueg and Aguilera's quality figures ([`figures`]): detection time T_D of real
//! crashes, mistake rate, mistake duration T_M, query accuracy P_A, and the plain counts.
//!
//! The schedule (times jittered by the seed): loss and delay with jitter on every link for
//! most of the run, a pause shorter than the timeout, a pause longer than it, a node starved
//! of CPU (a duty cycle of SIGSTOP/SIGCONT), then two kills, the second of the leader; then,
//! while the survivors all run, 12 s of heavy loss (25%) and jitter (5..55 ms) on every link.
//!
//! Every detector watches every member it reaches (`--set detector_watch=all`): phi and SWIM do
//! by design, and `fixed` then sweeps every member instead of probing only what its host waits
//! on (its default, under which a follower's crash goes unnoticed). So the detectors are judged
//! on the same pairs: the same crashes to detect, the same pairs to be wrong about. The two
//! kills are still reported apart (the leader's, the follower's).

pub use super::detector_confirms::{false_confirms, FalseConfirm};
pub(crate) use super::detector_figures::read_run;
pub use super::detector_figures::{by_cause, figures, Fate, Figures, Opinion};
use super::plot::{figure, Axes, Look, Series};
use crate::error::{failed, CliError};
use crate::rng::Rng;
use crate::trace::{NodeId, RunDir};
pub use cost::Cost;
use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The detectors compared, with the `--set` words that choose each.
const DETECTORS: [&str; 3] = ["fixed", "phi", "swim"];
/// Nodes per run when `--sizes` is not given: the issue's 8 and 64.
pub const DETECTOR_SIZES: &[usize] = &[8, 64];
/// The heartbeat period of every run, ms.
const HEARTBEAT_MS: u64 = 100;
/// Seconds each run lasts.
const RUN_S: f64 = 36.0;
/// When the phase of heavy loss and jitter begins (before the seed's jitter), s: after the
/// second kill has been detected.
const HEAVY_FROM_S: f64 = 21.0;
/// How long it lasts, s (at least).
const HEAVY_S: f64 = 12.0;
/// The share of datagrams lost on every link during it, %.
pub(crate) const HEAVY_LOSS_PCT: u32 = 25;

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
    // Heavy loss and jitter on every link while the survivors all run: the weather that fools
    // a fixed timeout tens of times, against which phi and SWIM are to make 10x fewer mistakes.
    let heavy = jit(HEAVY_FROM_S);
    let _ = writeln!(out, "{heavy:.3} net loss {HEAVY_LOSS_PCT}");
    let _ = writeln!(out, "{heavy:.3} net delay 30:25");
    let calm = HEAVY_FROM_S + HEAVY_S + 0.4;
    let _ = writeln!(out, "{calm:.3} net loss 5");
    let _ = writeln!(out, "{calm:.3} net delay 5:20");
    out
}

/// The `--set` values of a run of `detector`: each watches every member it reaches.
pub(crate) fn settings(detector: &str) -> [String; 2] {
    [format!("detector={detector}"), "detector_watch=all".into()]
}

/// The shortest suspicion timeout of `detector`'s runs on `n` nodes (zero for the detectors
/// that never confirm a death).
fn shortest_suspicion(detector: &str, n: usize) -> Duration {
    use crate::algo::detector::Choice;
    let opts = settings(detector)
        .iter()
        .filter_map(|s| s.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    match Choice::from_opts(&opts, Duration::from_millis(HEARTBEAT_MS)) {
        Choice::Swim(p) => crate::algo::detector::swim::shortest_suspicion(&p, n),
        _ => Duration::ZERO,
    }
}

/// The most a kill may come after its time in the schedule (from the nodes' start) before the
/// run is refused: the detectors are compared on the same schedule.
const LATE_KILL: Duration = Duration::from_millis(500);

/// The times of the kills in a schedule's text, s.
fn kill_times(schedule: &str) -> Vec<f64> {
    schedule
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let at = w.next()?.parse().ok()?;
            (w.next() == Some("kill")).then_some(at)
        })
        .collect()
}

/// One run: `detector` on `shape` (`ring` or `mesh`), the schedule in `faults`, whose kills
/// are due at `kills` (s).
fn run_one(
    logs: &Path,
    shape: &str,
    n: usize,
    detector: &str,
    faults: &Path,
    kills: &[f64],
) -> Result<RunDir, CliError> {
    let exe = std::env::current_exe().map_err(|e| failed(e.to_string()))?;
    let mut cmd = Command::new(exe);
    cmd.arg(shape).arg(n.to_string());
    if shape == "mesh" {
        cmd.args(["--topology", "complete"]);
    }
    let sets = settings(detector);
    let mut child = cmd
        .args(["--logs", &logs.to_string_lossy()])
        .args(["--timeout-ms", "300", "--heartbeat-ms", &HEARTBEAT_MS.to_string()])
        .args(["--duration", &RUN_S.to_string()])
        .args(["--faults", &faults.to_string_lossy()])
        .args(sets.iter().flat_map(|s| ["--set", s.as_str()]))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| failed(format!("cannot launch: {e}")))?;
    let deadline = Instant::now() + Duration::from_secs_f64(RUN_S + 90.0 + n as f64);
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| failed(e.to_string()))? {
            break status;
        }
        if Instant::now() > deadline {
            super::launch::stop(&mut child);
            return Err(failed(format!(
                "{shape} {n} detector={detector} did not finish in time"
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // The run is judged here, not by the launcher's exit status: a check that finds the
    // kills' consequences is no failure of the measurement. A run that ended before its
    // schedule's kills is: its figures would say no crash happened.
    let run = RunDir::load(&logs.join("latest")).map_err(|e| failed(e.to_string()))?;
    let done: Vec<u64> = run
        .faults
        .iter()
        .filter(|r| r.event.kind() == "kill")
        .map(|r| r.t)
        .collect();
    if done.len() < kills.len() {
        return Err(failed(format!(
            "{shape} {n} detector={detector}: the launcher ended ({status}) after {} of its schedule's {} kills",
            done.len(),
            kills.len()
        )));
    }
    // A launcher that fell behind its schedule ran other faults than the other detectors had.
    // Its schedule's clock starts when the nodes start (all at once, once every node is
    // spawned, which took a complete mesh of 64 a second).
    let first = run
        .node_events
        .iter()
        .find(|r| r.event.kind() == "start")
        .map_or(0, |r| r.t);
    for (&at, &t) in kills.iter().zip(&done) {
        let was = t.saturating_sub(first) as f64 / 1e6;
        if was > at + LATE_KILL.as_secs_f64() {
            return Err(failed(format!(
                "{shape} {n} detector={detector}: the launcher fell behind its schedule (a kill due at {at:.1} s came at {was:.1} s)"
            )));
        }
    }
    Ok(run)
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
    /// SWIM's confirmations of nodes that were not dead, attributed.
    pub confirms: Vec<FalseConfirm>,
    /// Datagrams sent per node-second.
    pub cost: Cost,
}

impl Row {
    /// Detection time of the leader's crash (node n, killed second), ms; None if missed.
    pub(crate) fn td_leader(&self) -> Option<f64> {
        let n = self.n as NodeId;
        self.figures.td_each.iter().find(|c| c.0 == n).and_then(|c| c.1)
    }

    /// Detection time of the follower's crash (the other kill), ms; None if missed.
    pub(crate) fn td_follower(&self) -> Option<f64> {
        let n = self.n as NodeId;
        self.figures.td_each.iter().find(|c| c.0 != n).and_then(|c| c.1)
    }

    /// Of SWIM's false confirmations, those the goal forbids (of a node not paused longer
    /// than the suspicion timeout).
    pub(crate) fn confirms_breaking_goal(&self) -> usize {
        self.confirms.iter().filter(|c| !c.allowed).count()
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
            "false_confirmations_breaking_goal": self.confirms_breaking_goal(),
            "false_confirmations_each": self.confirms.iter().map(FalseConfirm::json).collect::<Vec<_>>(),
            "false_suspicions_of_running": f.false_of_running,
            "detector_messages_per_node_s": (self.cost.detector_per_node_s * 10.0).round() / 10.0,
            "messages_per_node_s": (self.cost.all_per_node_s * 10.0).round() / 10.0,
            "detector_messages_per_node_s_heavy_loss": (self.cost.heavy_detector_per_node_s * 10.0).round() / 10.0,
            "false_suspicions_by_cause": {
                "running_under_loss_and_jitter": f.by_cause[0],
                "running_under_loss_and_jitter_first_hand": f.running_first_hand,
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
        "{:<8} {:<6} {:>7} {:>8} {:>8} {:>8} {:>7} {:>7} {:>10} {:>15} {:>8} {:>12} {:>8} {:>8} {:>10} {:>15}\n",
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
        "run 1st",
        "mistakes/nh",
        "TM ms",
        "P_A",
        "f.conf/bad",
        "msg/n/s"
    );
    for r in rows {
        let f = &r.figures;
        let td = |x: Option<f64>| x.map_or("missed".to_string(), |x| format!("{x:.0}"));
        let _ = writeln!(
            out,
            "{:<8} {:<6} {:>7} {:>8} {:>8.0} {:>8.0} {:>7} {:>7} {:>10} {:>15} {:>8} {:>12.0} {:>8.0} {:>8.5} {:>10} {:>15}",
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
            f.running_first_hand,
            f.mistake_rate_per_node_hour,
            f.mistake_duration_ms,
            f.query_accuracy,
            format!("{}/{}", f.false_confirmations, r.confirms_breaking_goal()),
            format!(
                "{:.0}/{:.0}/{:.0}",
                r.cost.detector_per_node_s, r.cost.heavy_detector_per_node_s, r.cost.all_per_node_s
            )
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
    let mut confirm_lines = String::new();
    let began = Instant::now();
    for &n in sizes {
        let faults = tmp.join(format!("detectors-{n}.faults"));
        let text = schedule(seed, n);
        std::fs::write(&faults, &text).map_err(|e| failed(e.to_string()))?;
        let kills = kill_times(&text);
        let _ = write!(texts, "{n} nodes:\n{text}");
        for shape in ["ring", "mesh"] {
            for det in DETECTORS {
                let logs = tmp.join(format!("{shape}-{n}-{det}"));
                let run = match run_one(&logs, shape, n, det, &faults, &kills) {
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
                (figures.by_cause, figures.running_first_hand) = by_cause(&run, &opinions);
                // Attributed now: the run directory is deleted below.
                let confirms = false_confirms(&run, start, shortest_suspicion(det, n));
                for c in &confirms {
                    let _ = writeln!(confirm_lines, "{shape} {n} {det}: {}", c.line());
                }
                let cost = cost::cost(&run, &nodes, start, end, &fates);
                let row = Row {
                    shape: shape.into(),
                    n,
                    detector: det.into(),
                    figures,
                    confirms,
                    cost,
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
        print!("{t}{confirm_lines}");
    }
    let out = Path::new("bench");
    std::fs::create_dir_all(out).map_err(|e| failed(e.to_string()))?;
    let md = format!(
        "# Failure detectors side by side\n\nWritten by `coordlab bench --only detectors --seed {seed} --sizes {sizes_s}` \
         in {took} s (load average at the end: {load}; the machine's other work moves these figures between runs): \
         `--timeout-ms 300 --heartbeat-ms 100`, {RUN_S} s per run, the same schedule for each \
         detector:\n\n```\n{texts}```\n\n```\n{t}```\n\nTD: from the kill to the first suspicion by any node; \
         TD ldr, TD fol: of the leader's crash and of the follower's; every detector watches every member \
         (`--set detector_watch=all`). \
         false sus: suspicions of a node that was not dead, split by cause (run/pau/sta/cut: of a running node under the loss and jitter every link had, of a node paused, starved of CPU, or cut off from its observer at the time or within 1.5 s before); run 1st: of those under run, the ones \
         the observer began on evidence of its own (with SWIM, each failed probe's suspicion is \
         gossiped to every member, and every member's counts under run); TM: how long they were held; P_A: the share of \
         (observer, live target) time without a wrong suspicion; f.conf/bad: SWIM's dead declarations of live nodes, \
         and of those the ones the goal forbids (of a node not paused longer than the shortest suspicion timeout); \
         msg/n/s: messages sent per node per second of its life, from the traces' send records (a message may share its datagram with others its step sent to the same node): the detector's own \
         (PROBE, ALIVE, BEAT, PING, PING-REQ, ACK, NACK, GOSSIP) over the run / the same during the heavy-loss phase / \
         all over the run (with the host's heartbeats, ring ACKs and elections).\n\n\
         ![T_D against mistakes](detectors.svg)\n"
    );
    let md = match confirm_lines.is_empty() {
        true => md,
        false => format!("{md}\nSWIM's declarations of death of nodes that were not dead, each attributed:\n\n```\n{confirm_lines}```\n"),
    };
    let md = match unfinished.is_empty() {
        true => md,
        false => format!("{md}\nRuns that did not finish (no row):\n\n```\n{unfinished}```\n"),
    };
    std::fs::write(out.join("detectors.md"), md).map_err(|e| failed(e.to_string()))?;
    std::fs::write(out.join("detectors.svg"), plot(&rows)).map_err(|e| failed(e.to_string()))?;
    Ok(())
}

#[path = "detectors_cost.rs"]
mod cost;

#[cfg(test)]
#[path = "detectors_tests.rs"]
mod tests;
