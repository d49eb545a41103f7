//! What a run is for, stepped after every tick: a console (until quit or `--duration`),
//! `--until elected`, or a `--demo` story. Each says when the run ends and with which status.

use super::chaos::{criteria, Chaos};
use super::demo::Demo;
use super::nodes::{Agreement, Fleet};
use super::plan::Plan;
use std::time::{Duration, Instant};

/// How a run ended, decided before the clean stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ending {
    /// The process exit status (unless the checker later finds a violation).
    pub code: i32,
    /// One line for the user.
    pub message: String,
    /// Whether to run `coordlab check` on the run after the stop.
    pub check: bool,
}

impl Ending {
    /// A success.
    pub fn ok(message: impl Into<String>) -> Self {
        Ending {
            code: crate::exit::OK,
            message: message.into(),
            check: false,
        }
    }

    /// The run's evidence could not be written (exit 3): the first failed write stops it.
    pub fn write_failed(message: impl Into<String>) -> Self {
        Ending {
            code: crate::error::WRITE_FAILED,
            message: message.into(),
            check: false,
        }
    }

    /// A failure (exit 1).
    pub fn failed(message: impl Into<String>) -> Self {
        Ending {
            code: crate::exit::VIOLATED,
            message: message.into(),
            check: false,
        }
    }
}

/// What the run is for.
pub(crate) enum Goal {
    /// A human at the console; news of agreement is printed as it changes.
    Console {
        /// When `--duration` ends the run.
        until: Option<Instant>,
        /// The last agreement printed: leader, term, how many agreed.
        shown: Option<(u64, u64, usize)>,
    },
    /// `--until done` (`--until elected`): end as soon as the family's goal holds (for elections:
    /// every live node agrees on a live leader).
    Elected {
        /// Give up then.
        deadline: Instant,
        /// How long that is from the start.
        limit: Duration,
        /// Whether the deadline is the user's `--duration` (else the launcher's patience).
        by_duration: bool,
    },
    /// A scripted story.
    Demo(Box<Demo>),
    /// A mutual-exclusion goal: `--until done` or a story.
    Mutex(Box<super::mutex_goal::MutexGoal>),
    /// The chaos soak: random faults for `--duration`, then the soak's criteria.
    Chaos(Box<Chaos>),
    /// `--demo snapshot`.
    Snapshot(super::snapshot_demo::SnapshotDemo),
    /// A network story: `--demo link-cut` or `--demo partition`.
    Net(Box<super::net_demo::NetStory>),
    /// `--demo slow-vs-dead`.
    SlowVsDead(Box<super::slow_vs_dead::SlowVsDead>),
}

/// A demo's failure, `at` its step, when a node other than `except` ended on its own: the
/// story needed it.
pub(crate) fn node_ended(fleet: &Fleet, except: Option<u64>, at: &str) -> Option<Ending> {
    let n = fleet
        .nodes
        .iter()
        .find(|n| matches!(n.state, super::model::State::Exited(_)) && Some(n.plan.id) != except)?;
    Some(Ending::failed(format!(
        "demo failed {at}: node {} ended on its own; see {}",
        n.plan.id,
        fleet.log_path(n.plan.id).display()
    )))
}

/// How long to wait for an election before calling it failed: generous, since a wait that is
/// too short fails a correct run while one that is long only delays a report.
pub(crate) fn patience(n: usize, timeout: Duration) -> Duration {
    Duration::from_secs(10) + 20 * timeout + Duration::from_millis(20 * n as u64)
}

impl Goal {
    /// The goal of `plan`, its clock starting at `t0` (when the nodes begin).
    pub fn new(plan: &Plan, timeout: Duration, t0: Instant) -> Self {
        let n = plan.nodes.len();
        if plan.snapshot_demo {
            return Goal::Snapshot(super::snapshot_demo::SnapshotDemo::new(t0));
        }
        if let Some(kind) = plan.net_demo {
            return Goal::Net(Box::new(super::net_demo::NetStory::new(
                kind, n, timeout, t0, &plan.set,
            )));
        }
        if plan.slow_vs_dead {
            return Goal::SlowVsDead(Box::new(super::slow_vs_dead::SlowVsDead::new(
                n, timeout, t0, &plan.set,
            )));
        }
        if let Some(g) = super::mutex_goal::MutexGoal::new(plan, timeout, t0) {
            return Goal::Mutex(Box::new(g));
        }
        if let (Some(seed), Some(d)) = (plan.chaos, plan.duration) {
            return Goal::Chaos(Box::new(Chaos::new(seed, t0, d, timeout).with_kinds(plan.chaos_faults)));
        }
        match (plan.demo, plan.until_elected) {
            (Some(kind), _) => Goal::Demo(Box::new(Demo::new(kind, n, timeout, t0))),
            (None, true) => {
                let limit = plan.duration.unwrap_or_else(|| patience(n, timeout));
                Goal::Elected {
                    deadline: t0 + limit,
                    limit,
                    by_duration: plan.duration.is_some(),
                }
            }
            (None, false) => Goal::Console {
                until: plan.duration.map(|d| t0 + d),
                shown: None,
            },
        }
    }

    /// Whether a human drives the run (stdin is the console).
    pub(crate) fn is_console(&self) -> bool {
        matches!(self, Goal::Console { .. })
    }

    /// Looks at the fleet after a tick (a demo also acts on it); `Some` ends the run.
    pub fn step(&mut self, fleet: &mut Fleet, net: &mut super::net::NetControl, now: Instant) -> Option<Ending> {
        match self {
            Goal::Console { until, shown } => {
                if let Some(a) = fleet.agreement() {
                    let now_shown = Some((a.leader, a.term, a.nodes.len()));
                    if *shown != now_shown {
                        let first = shown.is_none_or(|s| s.1 != a.term);
                        *shown = now_shown;
                        say!("{}", agreement_line(fleet, &a, first));
                    }
                }
                until
                    .filter(|&u| now >= u)
                    .map(|_| Ending::ok("stopped: --duration elapsed"))
            }
            Goal::Elected {
                deadline,
                limit,
                by_duration,
            } => {
                if let Some(done) = fleet.done() {
                    return Some(Ending::ok(done));
                }
                (now >= *deadline).then(|| {
                    let waited = if *by_duration {
                        "--duration"
                    } else {
                        "the launcher's patience"
                    };
                    let what = match fleet.progress {
                        Some(_) => "not done: the family's goal did not hold",
                        None => "not elected: the live nodes did not agree on a live leader",
                    };
                    Ending::failed(format!("{what} within {waited} ({:.1} s)", limit.as_secs_f64()))
                })
            }
            Goal::Demo(demo) => demo.step(fleet, now),
            Goal::Mutex(g) => g.step(fleet, now),
            Goal::Chaos(chaos) => chaos.step(fleet, net, now),
            Goal::Snapshot(demo) => demo.step(now),
            Goal::Net(story) => story.step(fleet, net, now),
            Goal::SlowVsDead(story) => story.step(fleet, net, now),
        }
    }

    /// What the goal adds to the checker's summary at the end (a demo's closing lines, the
    /// soak's criteria), and whether the run failed: by the checker's verdict, or for the soak
    /// by its criteria and any other violation that the algorithm does not allow by design.
    pub(crate) fn conclude(&self, analysis: &crate::check::Analysis) -> (Vec<String>, bool) {
        match self {
            Goal::Demo(demo) => (demo.conclude(analysis), analysis.violated()),
            Goal::Chaos(chaos) => {
                let c = criteria(analysis, chaos.settle);
                let by_design = |f: &crate::check::Finding| f.explanation.as_ref().is_some_and(|e| e.by_design);
                let failed = c.iter().any(|c| !c.ok) || analysis.findings().iter().any(|f| f.fails() && !by_design(f));
                let mut lines = vec!["Chaos soak criteria".to_string()];
                lines.extend(
                    c.iter()
                        .map(|c| format!("  {}: {}", if c.ok { "ok" } else { "FAILED" }, c.words)),
                );
                lines.extend(super::chaos_judge::figures(analysis).map(|f| format!("  {f}")));
                lines.push(format!("chaos: {}", if failed { "FAILED" } else { "passed" }));
                (lines, failed)
            }
            Goal::Snapshot(demo) => (demo.conclude(&analysis.dir), analysis.violated()),
            Goal::Net(story) => (story.conclude(analysis), analysis.violated()),
            Goal::SlowVsDead(story) => (story.conclude(analysis), analysis.violated()),
            _ => (Vec::new(), analysis.violated()),
        }
    }

    /// The run was stopped by `quit` or a signal before the goal said so.
    pub(crate) fn interrupted(&self, why: &str) -> Ending {
        match self {
            Goal::Console { .. } => Ending::ok(format!("stopped: {why}")),
            Goal::Elected { .. } => Ending::failed(format!("stopped ({why}) before every live node agreed")),
            Goal::Demo(demo) => Ending::failed(format!("demo stopped ({why}) {}", demo.where_now())),
            Goal::Mutex(_) => Ending::failed(format!("stopped ({why}) before the run's goal")),
            Goal::Chaos(_) => Ending::failed(format!("chaos stopped ({why}) before its duration")),
            Goal::Snapshot(_) => Ending::failed(format!("demo snapshot stopped ({why}) before its end")),
            Goal::Net(story) => Ending::failed(format!("demo stopped ({why}) {}", story.where_now())),
            Goal::SlowVsDead(story) => Ending::failed(format!("demo stopped ({why}) {}", story.where_now())),
        }
    }
}

/// `all 8 live nodes agree: node 8 leads term 1 (+312 ms since start; elected in 290 ms)`:
/// when the agreement formed, and for the `first` agreement of its term how long the election
/// took (see [`agreement_times`](super::narrate::agreement_times)).
pub(crate) fn agreement_line(fleet: &Fleet, a: &Agreement, first: bool) -> String {
    format!(
        "all {} live nodes agree: node {} leads term {} ({})",
        a.nodes.len(),
        a.leader,
        a.term,
        super::narrate::agreement_times(fleet, a, first)
    )
}
