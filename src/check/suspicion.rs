//! Every `suspect` event judged against ground truth: was the target really dead at that moment?
//!
//! The verdict comes from the launcher's record of what it did to processes (the [`Timeline`]),
//! never from what the nodes thought: a paused node is slow, not dead, so suspecting it is false.
//! A running node the network cut off from the suspecter (a cut, a partition, heavy loss: see
//! [`Network`]) is named as such: alive, but unheard, and its suspicion heals only once the
//! network lets it be heard again.

use super::network::Network;
use super::timeline::{Proc, Timeline};
use crate::trace::{Event, NodeId, RunDir};

/// One suspicion and the truth about its target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suspicion {
    /// When, microseconds.
    pub t: u64,
    /// The node that suspected.
    pub by: NodeId,
    /// The node it suspected.
    pub target: NodeId,
    /// How long it had heard nothing, as it said.
    pub silence_ms: u64,
    /// The target's process at that moment.
    pub target_state: Proc,
    /// Since when the target had been in that state, microseconds.
    pub since: Option<u64>,
    /// Why the target, alive, could not be heard: the network cut it off from the suspecter
    /// during the silence (`the link 2-10 was cut`); None when the network was not why.
    pub cut_off: Option<String>,
    /// When the target, running, had been resumed from a pause, if that was within the
    /// silence: the pause, not the network, explains it.
    pub resumed_within: Option<u64>,
}

impl Suspicion {
    /// True when the target was not alive (killed, exited, stopped, or never started).
    pub(crate) fn is_true(&self) -> bool {
        !self.target_state.alive()
    }

    /// A false suspicion of a node running, but resumed from a pause inside the silence it
    /// rests on: the pause explains the silence, not the network.
    pub(crate) fn running_within_silence(&self) -> bool {
        self.resumed_within.is_some()
    }
}

/// Every suspicion in `run`, in time order, judged by `timeline`.
pub(crate) fn judge(run: &RunDir, timeline: &Timeline) -> Vec<Suspicion> {
    judge_with(run, timeline, &Network::of(run))
}

/// [`judge`], with the run's network already built.
pub(crate) fn judge_with(run: &RunDir, timeline: &Timeline, net: &Network) -> Vec<Suspicion> {
    run.node_events
        .iter()
        .filter_map(|r| match (r.node, &r.event) {
            (Some(by), &Event::Suspect { target, silence_ms, .. }) => {
                let (target_state, since) = timeline.state_at(target, r.t);
                let cut_off = target_state
                    .alive()
                    .then(|| net.cut_off_during(target, by, r.t.saturating_sub(silence_ms * 1000), r.t))
                    .flatten()
                    .map(|c| c.words);
                let resumed_within = timeline
                    .resumed_before(target, r.t)
                    .filter(|&at| at > r.t.saturating_sub(silence_ms * 1000));
                Some(Suspicion {
                    t: r.t,
                    by,
                    target,
                    silence_ms,
                    target_state,
                    since,
                    cut_off,
                    resumed_within,
                })
            }
            _ => None,
        })
        .collect()
}

/// A suspicion of a running node that outlived its excuse: held for longer than twice the
/// timeout while its target ran (and its holder ran, able to hear it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stale {
    /// Who held it.
    pub by: NodeId,
    /// Whom.
    pub target: NodeId,
    /// From when the target was running (again) while suspected, microseconds.
    pub from: u64,
    /// Until the suspicion was withdrawn, the target stopped running, or the run ended.
    pub to: u64,
    /// Whether it was ever withdrawn (else it lasted to the end of the holder or the run).
    pub withdrawn: bool,
}

impl Stale {
    /// How long it was held while the target ran, microseconds.
    pub fn us(&self) -> u64 {
        self.to - self.from
    }
}

/// Every suspicion that was held for longer than `2 * timeout_us` while its target was
/// running and its holder running too, and the network let the holder hear it: suspicions that
/// never heal.
pub fn stale(run: &RunDir, timeline: &Timeline, timeout_us: u64) -> Vec<Stale> {
    stale_with(run, timeline, timeout_us, &Network::of(run))
}

/// [`stale`], with the run's network already built.
pub(crate) fn stale_with(run: &RunDir, timeline: &Timeline, timeout_us: u64, net: &Network) -> Vec<Stale> {
    use std::collections::BTreeMap;
    let end = timeline.end_us;
    // Each suspicion held: (by, target) -> since.
    let mut open: BTreeMap<(NodeId, NodeId), u64> = BTreeMap::new();
    let mut held: Vec<(NodeId, NodeId, u64, u64, bool)> = Vec::new();
    let mut deaths_sorted: Vec<(u64, NodeId)> = timeline.deaths().map(|(t, n, _)| (t, n)).collect();
    deaths_sorted.sort();
    let mut di = 0;
    let close_all = |open: &mut BTreeMap<(NodeId, NodeId), u64>, held: &mut Vec<_>, by: NodeId, t: u64| {
        let keys: Vec<_> = open.keys().filter(|k| k.0 == by).copied().collect();
        for k in keys {
            let s = open.remove(&k).unwrap_or(t);
            held.push((k.0, k.1, s, t, false));
        }
    };
    for r in run.node_events.iter().filter(|r| r.t <= end) {
        while di < deaths_sorted.len() && deaths_sorted[di].0 < r.t {
            close_all(&mut open, &mut held, deaths_sorted[di].1, deaths_sorted[di].0);
            di += 1;
        }
        let Some(by) = r.node else { continue };
        match r.event {
            Event::Suspect { target, .. } => {
                open.entry((by, target)).or_insert(r.t);
            }
            Event::Unsuspect { target } => {
                if let Some(s) = open.remove(&(by, target)) {
                    held.push((by, target, s, r.t, true));
                }
            }
            Event::Start { .. } | Event::Stop { .. } => close_all(&mut open, &mut held, by, r.t),
            _ => {}
        }
    }
    for &(t, n) in deaths_sorted[di..].iter().filter(|d| d.0 <= end) {
        close_all(&mut open, &mut held, n, t);
    }
    for ((by, target), s) in open {
        held.push((by, target, s, end, false));
    }
    // Each node's `start` records: a new process runs its algorithm from its own start, not
    // from the launcher's spawn or restart, and a restart the machine slowed (a soak's took
    // 1.3 s, its disk busy) is no node yet that anyone could hear.
    let mut starts: BTreeMap<NodeId, Vec<u64>> = BTreeMap::new();
    for r in &run.node_events {
        if let (Some(n), Event::Start { .. }) = (r.node, &r.event) {
            starts.entry(n).or_default().push(r.t);
        }
    }
    let mut out = Vec::new();
    for (by, target, s, e, withdrawn) in held {
        let Some(changes) = timeline.changes.get(&target) else {
            continue;
        };
        for (i, c) in changes.iter().enumerate().filter(|(_, c)| c.state == Proc::Running) {
            let next = changes.get(i + 1).map_or(end, |n| n.t);
            let resumed = i > 0 && changes[i - 1].state == Proc::Paused;
            let after = if i > 0 { changes[i - 1].t } else { 0 };
            let began = match starts.get(&target) {
                Some(list) if !resumed => list
                    .iter()
                    .find(|&&t| t > after && t < next)
                    .map_or(c.t, |&t| t.max(c.t)),
                _ => c.t,
            };
            let (mut from, to) = (s.max(began), e.min(next));
            // Cut off (or its datagrams lost or held) by the network, the holder had no way to
            // hear it reliably: the clock starts when the network leaves the link alone again.
            match net.undisturbed_again(target, by, from, to) {
                Some(u64::MAX) => continue,
                Some(back) => from = from.max(back),
                None => {}
            }
            if to > from + 2 * timeout_us && timeline.state_at(by, from + 2 * timeout_us).0 == Proc::Running {
                out.push(Stale {
                    by,
                    target,
                    from,
                    to,
                    withdrawn: withdrawn && to == e,
                });
            }
        }
    }
    out.sort_by_key(|s| (s.from, s.by, s.target));
    out
}
