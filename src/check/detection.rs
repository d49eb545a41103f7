//! What the failure detectors concluded about each node, against what really happened to it
//! (faults.jsonl): the `--demo slow-vs-dead` summary and the cause split of the detectors'
//! bench both read it. A suspicion is judged by its target's fate, not by the detector's own
//! words: a killed node suspected is a detection; a paused, starved or cut-off one is a mistake
//! no detector can always avoid; a running one suspected is a mistake of loss and jitter.

use crate::trace::{Event, NodeId, RunDir};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// A node whose process was stopped at least this many times within [`LOOKBACK_US`] was starved
/// of CPU (a duty cycle of SIGSTOP/SIGCONT), not paused once.
const STARVED_STOPS: usize = 3;
/// How far back a pause, a cut or a lossy link still explains a suspicion: a detector notices
/// a silence some time after it began, and a suspicion learnt by gossip arrives later still.
pub(crate) const LOOKBACK_US: u64 = 1_500_000;

/// What the launcher did to a node, from faults.jsonl.
#[derive(Debug, Clone, PartialEq)]
pub enum Fate {
    /// Killed at `at` (µs) and not restarted before the end.
    Killed {
        /// When.
        at: u64,
    },
    /// Stopped once or twice; `stopped_ms` in all, first at `at`.
    Paused {
        /// The first stop.
        at: u64,
        /// How long it was stopped in all, ms.
        stopped_ms: u64,
    },
    /// Stopped and resumed in a duty cycle: `stops` times from `from` to `to`, stopped
    /// `stopped_ms` of that span.
    Starved {
        /// The first stop.
        from: u64,
        /// The last resume.
        to: u64,
        /// How many stops.
        stops: usize,
        /// Time stopped in all, ms.
        stopped_ms: u64,
    },
    /// One of its links lost `pct`% of the datagrams from `at`.
    Lossy {
        /// When the rule began.
        at: u64,
        /// The other end.
        peer: NodeId,
        /// Percentage lost.
        pct: u32,
    },
    /// A link of it was cut from `at`.
    Cut {
        /// When.
        at: u64,
        /// The other end (None: a partition).
        peer: Option<NodeId>,
    },
}

impl Fate {
    /// The fate in words, times relative to `start_us`.
    pub fn words(&self, start_us: u64) -> String {
        let rel = |t: u64| format!("+{:.2} s", t.saturating_sub(start_us) as f64 / 1e6);
        match self {
            Fate::Killed { at } => format!("killed at {}", rel(*at)),
            Fate::Paused { at, stopped_ms } => format!("paused {stopped_ms} ms at {}", rel(*at)),
            Fate::Starved {
                from,
                to,
                stops,
                stopped_ms,
            } => {
                let span = to.saturating_sub(*from).max(1);
                format!(
                    "starved of CPU from {} for {:.1} s ({stops} stops, stopped {:.0}% of the time)",
                    rel(*from),
                    span as f64 / 1e6,
                    100.0 * (*stopped_ms * 1000) as f64 / span as f64
                )
            }
            Fate::Lossy { at, peer, pct } => format!("its link to {peer} lost {pct}% from {}", rel(*at)),
            Fate::Cut { at, peer: Some(p) } => format!("its link to {p} cut at {}", rel(*at)),
            Fate::Cut { at, peer: None } => format!("partitioned at {}", rel(*at)),
        }
    }
}

/// Why an observer suspected a node that was not dead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Cause {
    /// The target was stopped (SIGSTOP) at the time or shortly before.
    Paused,
    /// The target was being starved of CPU.
    Starved,
    /// The link between them was cut, partitioned, or made lossy on its own.
    CutOff,
    /// None of those: the target ran, the network only lost and delayed as it did everywhere.
    Running,
}

/// The faults of a run, folded for judging.
#[derive(Debug, Clone, Default)]
pub(crate) struct Truth {
    /// Per node, its stops and resumes: (t, stopped?).
    stops: BTreeMap<NodeId, Vec<(u64, bool)>>,
    /// Per node, when it was killed and when restarted: (t, dead?).
    deaths: BTreeMap<NodeId, Vec<(u64, bool)>>,
    /// Per-link rules: (t, a, b, what), `b` None for a partition of `a` from everyone else.
    links: Vec<(u64, NodeId, Option<NodeId>, LinkRule)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LinkRule {
    Lossy(u32),
    Cut,
    Healed,
}

impl Truth {
    /// The fates recorded in `run`'s faults.jsonl.
    pub fn of(run: &RunDir) -> Truth {
        let mut t = Truth::default();
        for r in &run.faults {
            let Some(n) = r.node.or(match &r.event {
                Event::Cut { .. }
                | Event::Partition { .. }
                | Event::Loss { .. }
                | Event::Heal { .. }
                | Event::Delay { .. } => Some(0),
                _ => None,
            }) else {
                continue;
            };
            match &r.event {
                Event::Pause { .. } => t.stops.entry(n).or_default().push((r.t, true)),
                Event::Resume { .. } => t.stops.entry(n).or_default().push((r.t, false)),
                Event::Kill { .. } => t.deaths.entry(n).or_default().push((r.t, true)),
                Event::Restart { .. } => t.deaths.entry(n).or_default().push((r.t, false)),
                Event::Loss { pct, links, .. } => {
                    // A loss on every link is the weather, not one node's fate.
                    for &(a, b) in links {
                        t.links.push((r.t, a, Some(b), LinkRule::Lossy(*pct)));
                    }
                }
                Event::Cut { links, .. } => {
                    for &(a, b) in links {
                        t.links.push((r.t, a, Some(b), LinkRule::Cut));
                    }
                }
                Event::Partition { sides, .. } => {
                    for side in sides {
                        for &a in side {
                            t.links.push((r.t, a, None, LinkRule::Cut));
                        }
                    }
                }
                Event::Heal { links, .. } if !links.is_empty() => {
                    for &(a, b) in links {
                        t.links.push((r.t, a, Some(b), LinkRule::Healed));
                    }
                }
                Event::Heal { .. } => t.links.push((r.t, 0, None, LinkRule::Healed)),
                _ => {}
            }
        }
        t
    }

    /// Whether `node` was dead (killed, not restarted) at `t`.
    pub(crate) fn dead_at(&self, node: NodeId, t: u64) -> bool {
        self.deaths
            .get(&node)
            .and_then(|v| v.iter().rev().find(|x| x.0 <= t))
            .is_some_and(|x| x.1)
    }

    fn stops_between(&self, node: NodeId, from: u64, to: u64) -> usize {
        self.stops
            .get(&node)
            .map_or(0, |v| v.iter().filter(|x| x.1 && x.0 >= from && x.0 <= to).count())
    }

    /// Whether `node` was stopped at some moment of [from, to].
    fn stopped_during(&self, node: NodeId, from: u64, to: u64) -> bool {
        let Some(v) = self.stops.get(&node) else {
            return false;
        };
        let at_from = v.iter().rev().find(|x| x.0 <= from).is_some_and(|x| x.1);
        at_from || v.iter().any(|x| x.1 && x.0 >= from && x.0 <= to)
    }

    /// Whether the link `a`-`b` was cut or lossy (on its own) at some moment of [from, to].
    fn link_bad_during(&self, a: NodeId, b: NodeId, from: u64, to: u64) -> bool {
        let mut bad = false;
        for &(t, x, y, rule) in &self.links {
            if t > to {
                break;
            }
            let touches = match y {
                Some(y) => (x == a && y == b) || (x == b && y == a),
                None => x == 0 || x == a || x == b,
            };
            if !touches {
                continue;
            }
            match rule {
                LinkRule::Healed => {
                    if t >= from && bad {
                        return true;
                    }
                    bad = false;
                }
                LinkRule::Lossy(0) => bad = false,
                LinkRule::Lossy(_) | LinkRule::Cut => {
                    if t >= from {
                        return true;
                    }
                    bad = true;
                }
            }
        }
        bad
    }

    /// The last stop of `node` that began at or before `t`: when it began, and when it was
    /// resumed (None: not before the end of the run; the resume may come after `t`).
    pub(crate) fn stop_around(&self, node: NodeId, t: u64) -> Option<(u64, Option<u64>)> {
        let v = self.stops.get(&node)?;
        let i = v.iter().rposition(|x| x.1 && x.0 <= t)?;
        Some((v[i].0, v[i + 1..].iter().find(|x| !x.1).map(|x| x.0)))
    }

    /// Why `by` suspecting `target` at `t` was a mistake (the target was not dead then).
    pub fn cause(&self, by: NodeId, target: NodeId, t: u64) -> Cause {
        let from = t.saturating_sub(LOOKBACK_US);
        if self.stops_between(target, from.saturating_sub(LOOKBACK_US), t) >= STARVED_STOPS {
            Cause::Starved
        } else if self.stopped_during(target, from, t) {
            Cause::Paused
        } else if self.link_bad_during(by, target, from, t) {
            Cause::CutOff
        } else {
            Cause::Running
        }
    }

    /// What happened to `node`, in time order.
    pub(crate) fn fates(&self, node: NodeId) -> Vec<Fate> {
        let mut out = Vec::new();
        if let Some(v) = self.stops.get(&node) {
            // Stops closer than the lookback to each other are one episode.
            let mut episodes: Vec<Vec<(u64, u64)>> = Vec::new();
            let mut open: Option<u64> = None;
            for &(t, stop) in v {
                match (stop, open) {
                    (true, None) => open = Some(t),
                    (false, Some(s)) => {
                        open = None;
                        match episodes.last_mut() {
                            Some(e) if s.saturating_sub(e.last().map_or(0, |x| x.1)) < LOOKBACK_US => e.push((s, t)),
                            _ => episodes.push(vec![(s, t)]),
                        }
                    }
                    _ => {}
                }
            }
            for e in episodes {
                let stopped_ms = e.iter().map(|(s, t)| t - s).sum::<u64>() / 1000;
                if e.len() >= STARVED_STOPS {
                    out.push(Fate::Starved {
                        from: e[0].0,
                        to: e[e.len() - 1].1,
                        stops: e.len(),
                        stopped_ms,
                    });
                } else {
                    out.push(Fate::Paused { at: e[0].0, stopped_ms });
                }
            }
        }
        for &(t, a, b, rule) in &self.links {
            let peer = match b {
                Some(b) if a == node => Some(b),
                Some(b) if b == node => Some(a),
                None if a == node => None,
                _ => continue,
            };
            let fate = match (rule, peer) {
                (LinkRule::Lossy(pct), Some(peer)) if pct > 0 => Fate::Lossy { at: t, peer, pct },
                (LinkRule::Cut, peer) => Fate::Cut { at: t, peer },
                _ => continue,
            };
            // A rule on a->b and b->a is one fate.
            if !out.contains(&fate) {
                out.push(fate);
            }
        }
        if let Some(&(at, _)) = self.deaths.get(&node).and_then(|v| v.last()).filter(|x| x.1) {
            out.push(Fate::Killed { at });
        }
        out
    }
}

/// The verdict on what the detectors concluded about one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Dead, and suspected by some live node (SWIM: and declared dead) before the end.
    Detected,
    /// Dead, and nobody concluded so.
    Missed,
    /// Alive, and nobody suspected it.
    Right,
    /// Alive, suspected, and every suspicion withdrawn, none turned into a death declaration:
    /// wrong for a while, right in the end.
    Corrected,
    /// Alive, and declared dead (SWIM) or still suspected at the end.
    Wrong,
}

impl Verdict {
    /// The verdict's word in the summary.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Detected => "right",
            Verdict::Missed => "MISSED",
            Verdict::Right => "right",
            Verdict::Corrected => "mistaken, then corrected",
            Verdict::Wrong => "WRONG",
        }
    }
}

/// What the detectors concluded about one node, against its fates.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeStory {
    /// The node.
    pub node: NodeId,
    /// What happened to it.
    pub fates: Vec<Fate>,
    /// The live nodes that suspected it, and when first (µs).
    pub suspected_by: BTreeMap<NodeId, u64>,
    /// The live nodes that declared it dead (SWIM), and when first.
    pub confirmed_by: BTreeMap<NodeId, u64>,
    /// Suspicions of it while it was alive: (by, from, to) µs, `to` the withdrawal, its death or the end.
    pub mistakes: Vec<(NodeId, u64, u64)>,
    /// Who still suspected it at the end (and was alive).
    pub held_at_end: BTreeSet<NodeId>,
    /// For a killed node: from the kill to the first suspicion, ms.
    pub detected_ms: Option<u64>,
    /// For a killed node: from the kill to the first death declaration (SWIM), ms.
    pub confirmed_ms: Option<u64>,
    /// The verdict.
    pub verdict: Verdict,
}

impl NodeStory {
    /// One line: the node, what happened, what was concluded, the verdict.
    pub fn line(&self, start_us: u64, swim: bool) -> String {
        let fate = match self.fates.is_empty() {
            true => "untouched".to_string(),
            false => self
                .fates
                .iter()
                .map(|f| f.words(start_us))
                .collect::<Vec<_>>()
                .join("; "),
        };
        let ids = |m: &BTreeMap<NodeId, u64>| m.keys().map(u64::to_string).collect::<Vec<_>>().join(",");
        let mut said = String::new();
        if self.suspected_by.is_empty() {
            said.push_str("suspected by nobody");
        } else {
            let _ = write!(said, "suspected by {}", ids(&self.suspected_by));
        }
        if let Some(ms) = self.detected_ms {
            let _ = write!(said, " (first {ms} ms after the kill)");
        }
        if swim {
            if self.confirmed_by.is_empty() {
                said.push_str(", declared dead by nobody");
            } else {
                let _ = write!(said, ", declared dead by {}", ids(&self.confirmed_by));
                if let Some(ms) = self.confirmed_ms {
                    let _ = write!(said, " (first {ms} ms after the kill)");
                }
            }
        }
        if !self.mistakes.is_empty() {
            let total: u64 = self.mistakes.iter().map(|m| (m.2 - m.1) / 1000).sum();
            let longest = self.mistakes.iter().map(|m| (m.2 - m.1) / 1000).max().unwrap_or(0);
            let _ = write!(
                said,
                "; {} wrong suspicion{} of it alive, held {total} ms in all (longest {longest} ms)",
                self.mistakes.len(),
                if self.mistakes.len() == 1 { "" } else { "s" }
            );
        }
        if !self.held_at_end.is_empty() {
            let held: Vec<String> = self.held_at_end.iter().map(u64::to_string).collect();
            let _ = write!(said, "; still suspected at the end by {}", held.join(","));
        }
        let why = match self.verdict {
            Verdict::Detected => "dead, and found dead",
            Verdict::Missed => "dead, and no node concluded it",
            Verdict::Right => "alive, and never suspected",
            Verdict::Corrected => "alive: slow or cut off was taken for dead for a while",
            Verdict::Wrong => match swim && !self.confirmed_by.is_empty() {
                true => "alive, and declared dead",
                false => "alive, and still suspected at the end",
            },
        };
        format!(
            "node {}: {fate}. {said}. verdict: {} ({why})",
            self.node,
            self.verdict.word()
        )
    }
}

/// Per node of `nodes`, what the detectors of `run` concluded against what happened, from
/// `run`'s traces and faults.jsonl; `end_us` is the end of the observed run. `swim`: a killed
/// node counts as detected only once declared dead.
pub fn stories(run: &RunDir, nodes: &[NodeId], end_us: u64, swim: bool) -> Vec<NodeStory> {
    let truth = Truth::of(run);
    nodes
        .iter()
        .map(|&node| {
            let fates = truth.fates(node);
            let killed = fates.iter().find_map(|f| match f {
                Fate::Killed { at } => Some(*at),
                _ => None,
            });
            let mut suspected_by = BTreeMap::new();
            let mut confirmed_by = BTreeMap::new();
            let mut open: BTreeMap<NodeId, u64> = BTreeMap::new();
            let mut mistakes = Vec::new();
            let mut detected: Option<u64> = None;
            let mut confirmed: Option<u64> = None;
            for r in &run.node_events {
                let Some(by) = r.node else { continue };
                if by == node || r.t > end_us || truth.dead_at(by, r.t) {
                    continue;
                }
                let dead = truth.dead_at(node, r.t);
                match r.event {
                    Event::Suspect { target, .. } if target == node => {
                        suspected_by.entry(by).or_insert(r.t);
                        if dead {
                            detected.get_or_insert(r.t);
                        } else {
                            open.entry(by).or_insert(r.t);
                        }
                    }
                    Event::Confirm { target, .. } if target == node => {
                        confirmed_by.entry(by).or_insert(r.t);
                        if dead {
                            confirmed.get_or_insert(r.t);
                        }
                    }
                    Event::Unsuspect { target } if target == node => {
                        if let Some(s) = open.remove(&by) {
                            mistakes.push((by, s, r.t));
                        }
                    }
                    _ => {}
                }
            }
            let mut held_at_end = BTreeSet::new();
            for (by, s) in open {
                let to = killed.filter(|&k| k >= s).unwrap_or(end_us).min(end_us);
                mistakes.push((by, s, to));
                if killed.is_none() && !truth.dead_at(by, end_us) {
                    held_at_end.insert(by);
                }
            }
            mistakes.sort_by_key(|m| m.1);
            let wrongly_confirmed = confirmed_by.iter().any(|(_, &t)| !truth.dead_at(node, t));
            let verdict = match killed {
                Some(_) if (if swim { confirmed } else { detected }).is_some() => Verdict::Detected,
                Some(_) => Verdict::Missed,
                None if wrongly_confirmed || !held_at_end.is_empty() => Verdict::Wrong,
                None if mistakes.is_empty() => Verdict::Right,
                None => Verdict::Corrected,
            };
            let since = |t: Option<u64>| killed.zip(t).map(|(k, t)| t.saturating_sub(k) / 1000);
            NodeStory {
                node,
                fates,
                suspected_by,
                confirmed_by,
                mistakes,
                held_at_end,
                detected_ms: since(detected),
                confirmed_ms: since(confirmed),
                verdict,
            }
        })
        .collect()
}

#[cfg(test)]
#[path = "detection_tests.rs"]
mod tests;
