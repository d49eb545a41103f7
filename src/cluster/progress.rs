//! `--until done` for the families whose goal the checker's [`Progress`] list does not follow:
//! clock synchronisation (every live clock within its claimed bound of the reference's, give
//! or take the checker's drift tolerance of 1000 ppm since the correction) and
//! the bank's snapshots (every requested kind of global state recorded by every live node).
//! Elections keep their own goal (one agreed live leader, from the beliefs the fleet keeps).

use crate::check::clock::TOLERANCE_US;
use crate::check::section::{self, Progress};
use crate::trace::{Event, NodeId, Record};
use std::collections::{BTreeMap, BTreeSet};

/// `max_slew_ppm`'s default (the engine's key in the registry).
const DEFAULT_SLEW_PPM: u64 = 100_000;

/// The live progress of algorithm `algo`'s family toward its goal, with the run's `--set`
/// options; None for elections (see `Fleet::done`).
pub fn progress(algo: &str, set: &BTreeMap<String, String>) -> Option<Box<dyn Progress>> {
    match section::family(algo) {
        "clock" => Some(Box::new(ClockGoal::new(set))),
        "snapshot" => Some(Box::new(SnapshotGoal::new(&snapshot_methods(set)))),
        family => section::progress(family),
    }
}

/// The kinds of global state a bank run records (`--set snapshot=...`), as its trace names them.
pub(crate) fn snapshot_methods(set: &BTreeMap<String, String>) -> Vec<&'static str> {
    match set.get("snapshot").map(String::as_str) {
        Some("chandy-lamport") => vec!["chandy-lamport"],
        Some("clock") => vec!["clock"],
        Some("both") => vec!["chandy-lamport", "clock"],
        _ => Vec::new(),
    }
}

/// Each node's clock as its latest record shows it, and its latest claim.
#[derive(Debug, Default)]
pub(crate) struct ClockGoal {
    /// How fast a correction moves the clock, ppm (`max_slew_ppm`; `step=true`: at once).
    slew_ppm: u64,
    /// The latest true time seen in any record.
    now: u64,
    /// True time now (the host's clock, as in the records; a test's own clock).
    clock: Option<fn() -> u64>,
    /// Per node whose correction is being slewed in: its time, the amount to move by, and
    /// when the slew is over (readings before then are not taken: the correction's own
    /// reading plus what the slew has applied is the clock).
    moving: BTreeMap<NodeId, (u64, i64, u64)>,
    /// Per node: true time and true offset (`pt - t`) of its latest record with a clock.
    offsets: BTreeMap<NodeId, (u64, i64)>,
    /// Per node: its latest correction's reference, claimed bound, and true time.
    claims: BTreeMap<NodeId, (NodeId, u64, u64)>,
}

impl ClockGoal {
    /// Following the clocks of a run with options `set` (how corrections are applied).
    pub fn new(set: &BTreeMap<String, String>) -> Self {
        let step = set.get("step").is_some_and(|v| v == "true");
        let slew_ppm = set
            .get("max_slew_ppm")
            .and_then(|v| v.parse::<f64>().ok())
            .map_or(DEFAULT_SLEW_PPM, |ppm| ppm.max(1.0) as u64);
        ClockGoal {
            slew_ppm: if step { u64::MAX } else { slew_ppm },
            clock: Some(crate::trace::wall_us),
            ..ClockGoal::default()
        }
    }

    /// Node `n`'s latest reading (true time, offset), and a correction's own reading plus what
    /// its slew has applied by now (all of it for a step): the reading before it moves.
    fn reading(&self, n: NodeId) -> Option<(u64, i64)> {
        let &(t, mut off) = self.offsets.get(&n)?;
        if let Some(&(t_moving, by, _)) = self.moving.get(&n) {
            let now = self.now.max(self.clock.map_or(0, |c| c()));
            let applied = (now.saturating_sub(t_moving) as u128 * self.slew_ppm as u128 / 1_000_000) as u64;
            off += by.signum() * by.unsigned_abs().min(applied) as i64;
        }
        Some((t, off))
    }

    /// How far node `n`'s clock is from its reference's now (the reference corrects itself too
    /// under Berkeley), against the bound it claimed.
    fn within(&self, n: NodeId) -> Option<(i64, u64)> {
        let &(reference, bound, t_adj) = self.claims.get(&n)?;
        let (t, off) = self.reading(n)?;
        let (t_ref, off_ref) = self.reading(reference)?;
        // The checker's tolerance for a claim: 1000 ppm of the time between the two readings,
        // and of the time since the correction (the clocks drift apart again until the next).
        let slack = TOLERANCE_US + ((t.abs_diff(t_ref) + t.saturating_sub(t_adj)) / 1000) as i64;
        let error = off - off_ref;
        (error.abs() <= bound as i64 + slack).then_some((error, bound))
    }
}

impl Progress for ClockGoal {
    fn feed(&mut self, node: NodeId, rec: &Record) {
        self.now = self.now.max(rec.t);
        let slewing = self.moving.get(&node).is_some_and(|m| rec.t < m.2);
        let correction = matches!(rec.event, Event::ClockAdjust { .. });
        if let (Some(pt), false) = (rec.pt, slewing && !correction) {
            self.offsets.insert(node, (rec.t, pt as i64 - rec.t as i64));
            self.moving.remove(&node);
        }
        if let (Event::ClockAdjust { offset_us, .. }, Some(_)) = (&rec.event, rec.pt) {
            let takes = (offset_us.unsigned_abs() as u128 * 1_000_000 / self.slew_ppm.max(1) as u128) as u64;
            self.moving
                .insert(node, (rec.t, *offset_us, rec.t.saturating_add(takes)));
        }
        if let Event::ClockAdjust {
            bound_us,
            reference: Some(r),
            ..
        } = &rec.event
        {
            if *r != node {
                self.claims.insert(node, (*r, *bound_us, rec.t));
            }
        }
        if let Event::Start { .. } = &rec.event {
            // A restarted node's earlier corrections say nothing of its new clock.
            self.claims.remove(&node);
        }
    }

    fn done(&self, live: &[NodeId]) -> Option<String> {
        let references: BTreeSet<NodeId> = self.claims.values().map(|c| c.0).collect();
        let synced: Vec<NodeId> = live.iter().copied().filter(|n| !references.contains(n)).collect();
        if synced.is_empty() || references.iter().any(|r| !live.contains(r)) {
            return None;
        }
        let mut worst = (0i64, 0u64);
        for &n in &synced {
            let (e, b) = self.within(n)?;
            if e.abs() >= worst.0.abs() {
                worst = (e, b);
            }
        }
        Some(format!(
            "synchronised: all {} live clocks are within their claimed bounds of the reference \
             (largest error {} us, claimed bound {} us)",
            synced.len(),
            worst.0,
            worst.1
        ))
    }
}

/// Which nodes recorded their part of each global state.
#[derive(Debug)]
pub(crate) struct SnapshotGoal {
    /// The kinds asked for.
    methods: Vec<&'static str>,
    /// Per (kind, snapshot number): the nodes that recorded their part.
    parts: BTreeMap<(String, u64), BTreeSet<NodeId>>,
}

impl SnapshotGoal {
    /// Waiting for one global state of each of `methods`.
    pub fn new(methods: &[&'static str]) -> Self {
        SnapshotGoal {
            methods: methods.to_vec(),
            parts: BTreeMap::new(),
        }
    }
}

impl Progress for SnapshotGoal {
    fn feed(&mut self, node: NodeId, rec: &Record) {
        if let Event::Snapshot { snap, method, .. } = &rec.event {
            if method != "initial" {
                self.parts.entry((method.clone(), *snap)).or_default().insert(node);
            }
        }
    }

    fn done(&self, live: &[NodeId]) -> Option<String> {
        if self.methods.is_empty() || live.is_empty() {
            return None;
        }
        let mut got = Vec::new();
        for &m in &self.methods {
            let whole = self
                .parts
                .iter()
                .find(|((method, _), nodes)| method == m && live.iter().all(|n| nodes.contains(n)))?;
            got.push(format!("{m} snapshot {}", whole.0 .1));
        }
        Some(format!(
            "done: {} recorded by all {} live nodes (judged by the check below)",
            got.join(" and "),
            live.len()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(t: u64, pt: Option<u64>, event: Event) -> Record {
        Record {
            t,
            node: None,
            lamport: None,
            pt,
            vc: None,
            hlc: None,
            event,
        }
    }

    /// A clock goal whose "now" is the latest record, not the host's clock.
    fn test_goal() -> ClockGoal {
        ClockGoal {
            clock: None,
            ..ClockGoal::new(&BTreeMap::new())
        }
    }

    fn adjust(reference: NodeId, bound_us: u64) -> Event {
        Event::ClockAdjust {
            offset_us: 0,
            rtt_us: 2 * bound_us,
            bound_us,
            reference: Some(reference),
            ref_seq: Some(1),
            ref_offset_us: 0,
            step: false,
        }
    }

    #[test]
    fn clocks_are_done_when_every_live_clock_is_within_its_bound_of_the_reference() {
        let mut g = test_goal();
        g.feed(1, &rec(1_000_000, Some(1_000_000), Event::Other));
        g.feed(2, &rec(1_000_000, Some(1_000_500), adjust(1, 100)));
        g.feed(3, &rec(1_000_000, Some(1_000_050), adjust(1, 100)));
        assert_eq!(g.done(&[1, 2, 3]), None, "node 2 is 500 us off with a 100 us bound");
        // Slewing in, 80 us off 10 ms after the correction: within 100 us + 3 us + 10 us.
        g.feed(2, &rec(1_010_000, Some(1_010_080), Event::Other));
        let done = g.done(&[1, 2, 3]).expect("both within their bounds");
        assert!(done.contains("all 2 live clocks"), "{done}");
        assert_eq!(g.done(&[2, 3]), None, "the reference is dead");
        // A correction's record reads the clock before it moves by `offset_us`.
        let mut g = test_goal();
        g.feed(1, &rec(1_000_000, Some(1_000_000), Event::Other));
        let mut moving = adjust(1, 10);
        if let Event::ClockAdjust { offset_us, .. } = &mut moving {
            *offset_us = -105;
        }
        g.feed(2, &rec(1_000_000, Some(1_000_105), moving));
        assert_eq!(g.done(&[1, 2]), None, "105 us off, the correction not slewed in yet");
        // A reading 0.5 ms later, mid-slew, is not taken: the correction's reading plus the slew is.
        g.feed(2, &rec(1_000_500, Some(1_000_605), Event::Other));
        // 10 ms later at 10%: the 105 us are in.
        g.feed(1, &rec(1_010_000, Some(1_010_000), Event::Other));
        assert!(g.done(&[1, 2]).is_some(), "105 us off, moved by -105 us since");
        let mut fresh = test_goal();
        fresh.feed(1, &rec(1, Some(1), Event::Other));
        assert_eq!(fresh.done(&[1, 2]), None, "no node corrected yet");
    }

    #[test]
    fn snapshots_are_done_when_every_requested_kind_is_recorded_by_every_live_node() {
        let snap = |snap, method: &str| Event::Snapshot {
            snap,
            method: method.into(),
            balance: 10,
            in_flight: 0,
        };
        let mut g = SnapshotGoal::new(&["chandy-lamport", "clock"]);
        for n in [1, 2] {
            g.feed(n, &rec(1, None, snap(0, "initial")));
            g.feed(n, &rec(2, None, snap(1, "chandy-lamport")));
        }
        assert_eq!(g.done(&[1, 2]), None, "no clock snapshot yet");
        g.feed(1, &rec(3, None, snap(500, "clock")));
        assert_eq!(g.done(&[1, 2]), None, "node 2's part is missing");
        g.feed(2, &rec(3, None, snap(500, "clock")));
        assert!(g
            .done(&[1, 2])
            .unwrap()
            .contains("chandy-lamport snapshot 1 and clock snapshot 500"));
        let none = BTreeMap::new();
        assert!(snapshot_methods(&none).is_empty());
    }
}
