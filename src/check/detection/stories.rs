//! Each node's story: what the detectors concluded about it, judged against its fate.

use super::*;

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
