//! The clock section of `coordlab check`: every node's true offset before and after, the
//! spread achieved, whether each correction stayed within the bound it claimed, and whether
//! any clock ran backwards. Self-contained: [`analyse`] gives the facts, [`summary`] the words.
//!
//! True offset = `pt - t` (the node's clock minus true time). A claim (`clock_adjust` with
//! `ref` and `ref_seq`) says: my clock moved by `offset_us` reads the reference's clock plus
//! `ref_offset_us`, within `bound_us`. The reference's clock at the correction's true time is
//! taken from its `send` event of that message, `pt_s + (t - t_s)`: the tolerance
//! [`TOLERANCE_US`] plus 1000 ppm of `t - t_s` covers rounding and the reference's drift.

use super::section::{Finding, Section};
use super::timeline::Timeline;
use super::Analysis;
use crate::trace::messages::Sends;
use crate::trace::{Event, NodeId, Record, RunDir};
use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// The fixed part of the tolerance of a claim, microseconds (rounding to whole microseconds).
pub(crate) const TOLERANCE_US: i64 = 3;
/// The spread under which clocks count as synchronised, microseconds.
pub(crate) const WITHIN_US: i64 = 1_000;

/// One node's clock over the run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeClock {
    /// True offset at its first event, microseconds.
    pub first_us: i64,
    /// True offset at its last event, microseconds.
    pub last_us: i64,
    /// Corrections it made.
    pub adjustments: usize,
}

/// One correction's claim, checked against true time.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// The node corrected.
    pub node: NodeId,
    /// True time of the correction.
    pub t: u64,
    /// The claimed bound, microseconds.
    pub bound_us: u64,
    /// The true error of the corrected clock against the reference, microseconds.
    pub error_us: i64,
    /// The tolerance allowed on top of the bound.
    pub tolerance_us: i64,
}

impl Claim {
    /// Whether the error is within the bound (plus the tolerance).
    pub fn holds(&self) -> bool {
        self.error_us.abs() <= self.bound_us as i64 + self.tolerance_us
    }
}

/// A clock reading lower than the one before it at the same node.
#[derive(Debug, Clone, PartialEq)]
pub struct Backwards {
    /// The node.
    pub node: NodeId,
    /// True time of the lower reading.
    pub t: u64,
    /// By how much it went back, microseconds.
    pub by_us: u64,
    /// Whether a step the node announced (`step=true`) explains it.
    pub stepped: bool,
}

/// The clock facts of a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClockFacts {
    /// Per node.
    pub nodes: BTreeMap<NodeId, NodeClock>,
    /// Every checkable claim.
    pub claims: Vec<Claim>,
    /// Claims whose reference message is not in the traces.
    pub unverifiable: usize,
    /// Every backwards reading.
    pub backwards: Vec<Backwards>,
    /// True time of the first event.
    pub start_t: u64,
    /// True time from which the spread stayed within [`WITHIN_US`] to the end (None: never).
    pub within_from: Option<u64>,
    /// What the network was doing at the first broken claim or backwards reading (None: nothing).
    pub network: Option<String>,
    /// Each restart of a clock-sync node: (node, true time, whether it restored a kept correction).
    pub restarts: Vec<(NodeId, u64, bool)>,
}

impl ClockFacts {
    /// Whether there is anything about clocks to say (corrections, or clocks that disagree).
    pub(crate) fn relevant(&self) -> bool {
        self.nodes
            .values()
            .any(|n| n.adjustments > 0 || n.first_us != 0 || n.last_us != 0)
    }

    /// Max minus min of the first offsets.
    pub fn spread_before_us(&self) -> i64 {
        spread(self.nodes.values().map(|n| n.first_us))
    }

    /// Max minus min of the last offsets.
    pub fn spread_after_us(&self) -> i64 {
        spread(self.nodes.values().map(|n| n.last_us))
    }

    /// Claims broken and unannounced backwards steps: what the checker calls violations.
    pub fn violations(&self) -> usize {
        self.claims.iter().filter(|c| !c.holds()).count() + self.backwards.iter().filter(|b| !b.stepped).count()
    }
}

fn spread(v: impl Iterator<Item = i64>) -> i64 {
    let v: Vec<i64> = v.collect();
    match (v.iter().max(), v.iter().min()) {
        (Some(a), Some(b)) => a - b,
        _ => 0,
    }
}

/// Max minus min of a multiset of offsets (value -> count).
fn offsets_spread(offsets: &BTreeMap<i64, usize>) -> i64 {
    match (offsets.last_key_value(), offsets.first_key_value()) {
        (Some((a, _)), Some((b, _))) => a - b,
        _ => 0,
    }
}

/// The facts of a loaded run.
pub fn analyse(run: &RunDir) -> ClockFacts {
    let mut f = analyse_records(&run.node_events);
    let first_bad = f
        .claims
        .iter()
        .filter(|c| !c.holds())
        .map(|c| c.t)
        .chain(f.backwards.iter().filter(|b| !b.stepped).map(|b| b.t))
        .min();
    f.network = first_bad.and_then(|t| super::network::Network::of(run).during(t, t));
    f
}

/// The facts of node records in true-time order (a run's, or the simulator's trace).
pub(crate) fn analyse_records(records: &[Record]) -> ClockFacts {
    let mut f = ClockFacts {
        start_t: records.first().map_or(0, |r| r.t),
        ..ClockFacts::default()
    };
    // Every send first: a claim's reference need not come before it in the merged order when
    // two processes stamp the same microsecond.
    let sends = Sends::of(records.iter().filter(|r| r.pt.is_some()));
    let mut last_pt: HashMap<NodeId, u64> = HashMap::new();
    let mut stepped: HashMap<NodeId, bool> = HashMap::new();
    let mut current: BTreeMap<NodeId, i64> = BTreeMap::new();
    // The same offsets counted by value, so that their spread is read in O(log n) per record
    // (recomputing it over every node made the check quadratic: seconds at 4,096 nodes).
    let mut offsets: BTreeMap<i64, usize> = BTreeMap::new();
    let mut last_wide: Option<u64> = None;
    for r in records {
        let (Some(node), Some(pt)) = (r.node, r.pt) else {
            continue;
        };
        let offset = pt as i64 - r.t as i64;
        let n = f.nodes.entry(node).or_insert(NodeClock {
            first_us: offset,
            ..NodeClock::default()
        });
        n.last_us = offset;
        if matches!(r.event, Event::Start { .. }) {
            // A restarted process starts its clock afresh.
            last_pt.remove(&node);
        }
        if let Event::Note { text, .. } = &r.event {
            if text.starts_with(crate::algo::clocksync::CORRECTION_RESTORED) {
                f.restarts.push((node, r.t, true));
            } else if text.starts_with(crate::algo::clocksync::CORRECTIONS_LOST) {
                f.restarts.push((node, r.t, false));
            }
        }
        let after_step = stepped.get(&node).copied().unwrap_or(false);
        if let Some(&prev) = last_pt.get(&node) {
            // A decrease right after an announced step was counted at the step itself.
            if pt < prev && !after_step {
                f.backwards.push(Backwards {
                    node,
                    t: r.t,
                    by_us: prev - pt,
                    stepped: false,
                });
            }
        }
        last_pt.insert(node, pt);
        stepped.insert(node, false);
        if let Event::ClockAdjust {
            offset_us,
            bound_us,
            reference,
            ref_seq,
            ref_offset_us,
            step,
            ..
        } = &r.event
        {
            n.adjustments += 1;
            stepped.insert(node, *step);
            if *step && *offset_us < 0 {
                f.backwards.push(Backwards {
                    node,
                    t: r.t,
                    by_us: offset_us.unsigned_abs(),
                    stepped: true,
                });
            }
            if let (Some(rf), Some(seq)) = (reference, ref_seq) {
                // The claim names the message from its reference that it answers.
                let found = sends.send_of((*rf, node, *seq), r.t).and_then(|s| Some((s.t, s.pt?)));
                match found {
                    Some((ts, pts)) => {
                        let gap = r.t.saturating_sub(ts) as i64;
                        let truth = pts as i64 + gap + ref_offset_us;
                        f.claims.push(Claim {
                            node,
                            t: r.t,
                            bound_us: *bound_us,
                            error_us: pt as i64 + offset_us - truth,
                            tolerance_us: TOLERANCE_US + gap / 1000,
                        });
                    }
                    None => f.unverifiable += 1,
                }
            }
        }
        if let Some(old) = current.insert(node, offset) {
            if let Some(k) = offsets.get_mut(&old) {
                *k -= 1;
                if *k == 0 {
                    offsets.remove(&old);
                }
            }
        }
        *offsets.entry(offset).or_default() += 1;
        if offsets_spread(&offsets) > WITHIN_US {
            last_wide = Some(r.t);
        }
    }
    f.within_from = match (last_wide, records.last()) {
        (None, Some(_)) => Some(f.start_t),
        (Some(w), _) => records.iter().map(|r| r.t).find(|&t| t > w),
        _ => None,
    };
    f
}

fn ms(us: i64) -> String {
    format!("{:+.3}", us as f64 / 1000.0)
}

/// The clock section in words (empty when the run has nothing to say about clocks).
pub fn summary(f: &ClockFacts) -> String {
    if !f.relevant() {
        return String::new();
    }
    let mut s = String::from(
        "\nclocks: true offset of each node's clock (its pt minus true time), first event -> last event:\n",
    );
    s += "  node   before (ms)    after (ms)  corrections\n";
    for (id, n) in &f.nodes {
        s += &format!(
            "  {id:>4}  {:>12}  {:>12}  {:>11}\n",
            ms(n.first_us),
            ms(n.last_us),
            n.adjustments
        );
    }
    s += &format!(
        "spread (max - min offset): before {:.3} ms, after {:.3} ms\n",
        f.spread_before_us() as f64 / 1000.0,
        f.spread_after_us() as f64 / 1000.0
    );
    match f.within_from {
        Some(t) => {
            s += &format!(
                "within {} ms of each other from +{:.3} s to the end (seen at the nodes' events)\n",
                WITHIN_US / 1000,
                t.saturating_sub(f.start_t) as f64 / 1e6
            )
        }
        None => s += &format!("never within {} ms of each other\n", WITHIN_US / 1000),
    }
    let broken: Vec<&Claim> = f.claims.iter().filter(|c| !c.holds()).collect();
    if !f.claims.is_empty() {
        let worst = f
            .claims
            .iter()
            .max_by_key(|c| c.error_us.abs() * 1000 / (c.bound_us as i64 + c.tolerance_us).max(1))
            .expect("claims is not empty");
        if broken.is_empty() {
            s += &format!(
                "claims: all {} corrections stayed within the error bound they claimed (closest: {:.3} ms of {:.3} ms, node {})\n",
                f.claims.len(),
                worst.error_us.abs() as f64 / 1000.0,
                worst.bound_us as f64 / 1000.0,
                worst.node
            );
        } else {
            s += &format!(
                "VIOLATION: {} of {} corrections broke their claimed bound:\n",
                broken.len(),
                f.claims.len()
            );
            for c in broken.iter().take(10) {
                s += &format!(
                    "  node {} at +{:.3} s: error {:.3} ms, bound {:.3} ms\n",
                    c.node,
                    c.t.saturating_sub(f.start_t) as f64 / 1e6,
                    c.error_us as f64 / 1000.0,
                    c.bound_us as f64 / 1000.0
                );
            }
        }
    }
    if !f.restarts.is_empty() {
        let restored = f.restarts.iter().filter(|r| r.2).count();
        let lost: Vec<String> = f.restarts.iter().filter(|r| !r.2).map(|r| r.0.to_string()).collect();
        s += &format!(
            "restarts: {} of {} restarted clocks restored the correction they kept{}\n",
            restored,
            f.restarts.len(),
            if lost.is_empty() {
                String::new()
            } else {
                format!(
                    "; back at their original offset until resynchronised: node(s) {}",
                    lost.join(", ")
                )
            }
        );
    }
    if f.unverifiable > 0 {
        s += &format!(
            "{} corrections could not be checked: their reference message is not in the traces\n",
            f.unverifiable
        );
    }
    let back: Vec<&Backwards> = f.backwards.iter().filter(|b| !b.stepped).collect();
    let steps = f.backwards.len() - back.len();
    if back.is_empty() {
        s += "no clock ever ran backwards";
        s += &if steps > 0 {
            format!(" except by the {steps} steps asked for (step=true)\n")
        } else {
            "\n".to_string()
        };
    } else {
        s += &format!("VIOLATION: a clock ran backwards {} times:\n", back.len());
        for b in back.iter().take(10) {
            s += &format!(
                "  node {} at +{:.3} s, by {:.3} ms\n",
                b.node,
                b.t.saturating_sub(f.start_t) as f64 / 1e6,
                b.by_us as f64 / 1000.0
            );
        }
    }
    s
}

/// The clock family's section of `coordlab check`: None when the run says nothing of clocks.
pub fn section(run: &RunDir, _timeline: &Timeline) -> Option<Arc<dyn Section>> {
    let f = analyse(run);
    f.relevant().then(|| Arc::new(f) as Arc<dyn Section>)
}

/// `; the network then: ...` at the first failure, or nothing when the network was clear.
fn network_then(n: &Option<String>) -> String {
    n.as_ref().map_or(String::new(), |n| format!("; the network then: {n}"))
}

impl Section for ClockFacts {
    fn family(&self) -> &'static str {
        "clock"
    }

    fn findings(&self) -> Vec<Finding> {
        let mut out = Vec::new();
        let broken = self.claims.iter().filter(|c| !c.holds()).count();
        if broken > 0 {
            out.push(Finding::violation(
                "claimed bounds",
                format!(
                    "clock: {broken} of {} corrections broke the error bound they claimed{}",
                    self.claims.len(),
                    network_then(&self.network)
                ),
            ));
        }
        let back = self.backwards.iter().filter(|b| !b.stepped).count();
        if back > 0 {
            out.push(Finding::violation(
                "monotonic clocks",
                format!(
                    "clock: a clock ran backwards {back} times{}",
                    network_then(&self.network)
                ),
            ));
        }
        out
    }

    fn properties(&self, _a: &Analysis) -> Vec<String> {
        summary(self)
            .trim()
            .lines()
            .filter(|l| !l.starts_with(' '))
            .map(str::to_string)
            .collect()
    }

    fn details(&self, _a: &Analysis, out: &mut String) {
        out.push_str(summary(self).trim_start());
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod spread_tests {
    use super::*;

    fn at(t: u64, node: NodeId, offset: i64) -> Record {
        Record {
            t,
            node: Some(node),
            lamport: None,
            pt: Some((t as i64 + offset) as u64),
            vc: None,
            hlc: None,
            event: Event::Note {
                text: String::new(),
                level: String::new(),
            },
        }
    }

    #[test]
    fn the_clocks_are_within_once_the_last_wide_offset_is_replaced() {
        // Node 2 starts 5 ms off, then twice comes within; node 1 stays at 0.
        let recs = [
            at(1_000, 1, 0),
            at(2_000, 2, 5_000),
            at(3_000, 2, 5_000),
            at(4_000, 2, 400),
            at(5_000, 2, -300),
            at(6_000, 1, 0),
        ];
        let f = analyse_records(&recs);
        assert_eq!(f.within_from, Some(4_000));
        assert_eq!(f.spread_before_us(), 5_000);
        assert_eq!(f.spread_after_us(), 300);
    }
}
