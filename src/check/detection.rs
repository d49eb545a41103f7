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

mod stories;
pub use stories::{stories, NodeStory, Verdict};

#[cfg(test)]
#[path = "detection_tests.rs"]
mod tests;
