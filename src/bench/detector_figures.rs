//! The quality figures of a failure detector (Chen, Toueg and Aguilera), from a run's
//! faults and the opinions its nodes recorded: what [`detectors`](super::detectors) reports.

use crate::trace::{Event, NodeId, Record, RunDir};
use std::collections::BTreeMap;

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
    /// The observer suspects the target: on evidence of its own (`first_hand`), or on another
    /// member's word (SWIM's gossip).
    Suspect {
        /// Not on another member's word.
        first_hand: bool,
    },
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
    /// Of `by_cause[0]`, those the observer began on evidence of its own (filled with it): with
    /// SWIM one failed probe's suspicion is gossiped to every member, and each member's counts
    /// there, so this counts the probes that failed.
    pub running_first_hand: usize,
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
            .find(|o| o.2 == n && o.1 != n && matches!(o.3, Opinion::Suspect { .. }) && o.0 >= t && o.0 <= back)
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
            Opinion::Suspect { .. } if !dead_at(target, t) => {
                if let std::collections::btree_map::Entry::Vacant(e) = open.entry((by, target)) {
                    e.insert(t);
                    false_of_running += usize::from(!paused_at(target, t));
                }
            }
            Opinion::Suspect { .. } => {}
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
        running_first_hand: 0,
    }
}

/// The false suspicions (first of each observer-target episode) of `run` split by cause, as
/// [`Figures::by_cause`], and of those of running nodes the ones begun first hand
/// ([`Figures::running_first_hand`]): judged from faults.jsonl by
/// [`crate::check::detection::Truth::cause`].
pub fn by_cause(run: &RunDir, opinions: &[OpinionAt]) -> ([usize; 4], usize) {
    causes(&crate::check::detection::Truth::of(run), opinions)
}

/// [`by_cause`], given the run's faults folded.
pub(crate) fn causes(truth: &crate::check::detection::Truth, opinions: &[OpinionAt]) -> ([usize; 4], usize) {
    use crate::check::detection::Cause;
    let mut open = std::collections::BTreeSet::new();
    let mut out = [0; 4];
    let mut first_hand_running = 0;
    for &(t, by, target, op) in opinions {
        if truth.dead_at(by, t) {
            continue;
        }
        match op {
            Opinion::Suspect { first_hand } if !truth.dead_at(target, t) && open.insert((by, target)) => {
                let i = match truth.cause(by, target, t) {
                    Cause::Running => 0,
                    Cause::Paused => 1,
                    Cause::Starved => 2,
                    Cause::CutOff => 3,
                };
                out[i] += 1;
                first_hand_running += usize::from(i == 0 && first_hand);
            }
            Opinion::Unsuspect => {
                open.remove(&(by, target));
            }
            _ => {}
        }
    }
    (out, first_hand_running)
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

pub(crate) fn opinion(r: &Record) -> Option<OpinionAt> {
    let by = r.node?;
    match r.event {
        Event::Suspect { target, ref cause, .. } => {
            let first_hand = cause != "gossip";
            Some((r.t, by, target, Opinion::Suspect { first_hand }))
        }
        Event::Unsuspect { target } => Some((r.t, by, target, Opinion::Unsuspect)),
        Event::Confirm { target, .. } => Some((r.t, by, target, Opinion::Confirm)),
        _ => None,
    }
}
