//! What the mutual-exclusion checker learns from the ground truth (faults.jsonl) beyond the
//! overlaps: progress (stretches in which requests waited and nobody entered), the resource's
//! violations that only a killed holder caused, and fencing the resource lost (a lower token
//! accepted after a higher one, e.g. after the resource restarted).
//!
//! Progress is a property: a stall longer than [`bound_us`] while every participant was
//! running is a liveness violation, named with what the traces show of its cause (the last
//! holder that never left, the messages ignored). A stall during which some participant was
//! dead or paused is explained by that fault (no mutex algorithm here serves without every
//! participant, save `central` with `regrant_ms`): it is reported loudly as EXPLAINED and does
//! not fail the check (exit status 0), since it is the fault's lesson, not a bug of the code.

use super::timeline::{Proc, Timeline};
use crate::algo::mutex::options::MutexOptions;
use crate::catalog::ServesWith;
use crate::trace::{Event, NodeId, RunDir};
use std::collections::{BTreeMap, BTreeSet};

mod resource;

pub(crate) use resource::{breach_line, fencing_breaches, judge_resource_violations, DeadHolder, FencingBreach};

/// Progress bound in failure-detector timeouts (`timeout_ms` of run.json).
pub(crate) const BOUND_TIMEOUTS: u64 = 10;
/// Progress bound in critical-section holds (`hold_ms`): a long hold is not a stall.
pub(crate) const BOUND_HOLDS: u64 = 4;
/// The failure-detector timeout assumed when run.json does not name one (a hold it does not
/// name is the family's default, [`MutexOptions`]).
const DEFAULT_TIMEOUT_MS: u64 = crate::algo::DEFAULT_TIMEOUT_MS;

/// How long requests may wait with no entry at all before it counts as a stall: the larger of
/// [`BOUND_TIMEOUTS`] timeouts and [`BOUND_HOLDS`] holds (3 s at the default 300 ms timeout).
pub fn bound_us(run: &RunDir) -> u64 {
    let o = &run.info.options;
    let timeout_ms = o["timeout_ms"].as_u64().unwrap_or(DEFAULT_TIMEOUT_MS).max(1);
    let hold_ms = o["set"]["hold_ms"]
        .as_str()
        .and_then(|v| v.parse::<u64>().ok())
        .or_else(|| o["set"]["hold_ms"].as_u64())
        .unwrap_or(MutexOptions::default().hold_ms);
    (BOUND_TIMEOUTS * timeout_ms).max(BOUND_HOLDS * hold_ms) * 1000
}

/// A stretch in which some request waited and no node entered the section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stall {
    /// From (trace time, µs).
    pub from: u64,
    /// To: the next entry, the last waiter gone, or the end of the run.
    pub to: u64,
    /// Whether it lasted to the end of the run.
    pub to_end: bool,
    /// Nodes that waited during it.
    pub waiting: Vec<NodeId>,
    /// The longest part of it during which every participant was running: (from, to).
    pub all_running: (u64, u64),
    /// Whether a fault explains it (some participant dead or paused for long enough).
    pub explained: bool,
    /// Its cause in words, as far as the traces show it.
    pub cause: String,
}

impl Stall {
    /// How long it lasted.
    pub fn us(&self) -> u64 {
        self.to - self.from
    }

    /// How long every participant was running during it (in one piece).
    pub(crate) fn all_running_us(&self) -> u64 {
        self.all_running.1 - self.all_running.0
    }
}

/// The participants of a mutex run: every node but the resource.
pub(crate) fn participants(run: &RunDir) -> Vec<NodeId> {
    run.info
        .nodes
        .iter()
        .map(|n| n.id)
        .filter(|&id| id != crate::algo::mutex::RESOURCE_ID)
        .collect()
}

fn ms(start: u64, t: u64) -> String {
    super::summary::at(start, t)
}

fn secs(us: u64) -> String {
    format!("{:.1} s", us as f64 / 1e6)
}

/// The stalls of `run` longer than `bound` (each with its cause); `entries` are the entry
/// times by node.
pub(crate) fn stalls(run: &RunDir, timeline: &Timeline, bound: u64) -> Vec<Stall> {
    let who = participants(run);
    // Rank: an entry first (it ends a stall), then a waiter leaving, then one arriving.
    let mut steps: Vec<(u64, u8, NodeId)> = Vec::new();
    for r in &run.node_events {
        let Some(n) = r.node else { continue };
        match r.event {
            Event::CsEnter { .. } => {
                steps.push((r.t, 0, n));
                steps.push((r.t, 1, n));
            }
            Event::Start { .. } => steps.push((r.t, 1, n)),
            Event::CsRequest { .. } => steps.push((r.t, 2, n)),
            _ => {}
        }
    }
    for (t, n, _) in timeline.deaths() {
        steps.push((t, 1, n));
    }
    for (&n, list) in &timeline.changes {
        for c in list.iter().filter(|c| c.state == Proc::Stopped) {
            steps.push((c.t, 1, n));
        }
    }
    steps.sort();
    let end = timeline.end_us;
    let mut out = Vec::new();
    let mut waiters: BTreeSet<NodeId> = BTreeSet::new();
    let mut seen: BTreeSet<NodeId> = BTreeSet::new();
    let mut open: Option<u64> = None;
    let close =
        |from: u64, to: u64, to_end: bool, seen: &BTreeSet<NodeId>, out: &mut Vec<(u64, u64, bool, Vec<NodeId>)>| {
            if to.saturating_sub(from) > bound {
                out.push((from, to, to_end, seen.iter().copied().collect()));
            }
        };
    let mut raw = Vec::new();
    for (t, rank, n) in steps {
        if t > end {
            break;
        }
        match rank {
            0 => {
                if let Some(from) = open.take() {
                    close(from, t, false, &seen, &mut raw);
                }
                seen.clear();
            }
            1 => {
                waiters.remove(&n);
                if waiters.is_empty() {
                    if let Some(from) = open.take() {
                        close(from, t, false, &seen, &mut raw);
                    }
                    seen.clear();
                }
            }
            _ => {
                waiters.insert(n);
            }
        }
        if open.is_none() && !waiters.is_empty() {
            open = Some(t);
        }
        seen.extend(waiters.iter().copied());
    }
    if let Some(from) = open {
        close(from, end, true, &seen, &mut raw);
    }
    let needs = needs(run, &who);
    for (from, to, to_end, waiting) in raw {
        let needed: Vec<Need> = needs.iter().filter(|n| n.from < to && n.to > from).copied().collect();
        let all_running = longest_all_running(run, timeline, &needed, from, to);
        let explained = all_running.1 - all_running.0 <= bound;
        let cause = if explained {
            fault_cause(run, timeline, &needed, from, to)
        } else {
            bug_cause(run, timeline, &waiting, from, all_running)
        };
        out.push(Stall {
            from,
            to,
            to_end,
            waiting,
            all_running,
            explained,
            cause,
        });
    }
    out
}

/// Whom a request of `algo` needs running, by its registry entry.
fn serves_with(algo: &str) -> ServesWith {
    crate::catalog::find(algo).map_or(ServesWith::Everyone, |e| e.serves_with)
}

/// A stretch `[from, to)` during which serving a request needs `node` running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Need {
    node: NodeId,
    from: u64,
    to: u64,
}

/// Whom serving needs running, and when: every participant throughout, save for `central`,
/// which serves with its coordinator (the highest id) throughout, the node its grant is out
/// to (from the GRANT until the coordinator hears the RELEASE, sends the grant to another or
/// starts again, or the grantee comes back as a new boot, whose old grant the coordinator then
/// frees), and a holder inside the section (until it leaves, comes back as a new boot, or the
/// grant goes to another). A
/// dead or paused participant that holds nothing blocks no one there; one the grant went to
/// while it was dead, or that was paused inside, does (a chaos soak's stall was once judged
/// on the holder at its start alone, and the grants to two dead nodes after it passed for a
/// bug).
fn needs(run: &RunDir, who: &[NodeId]) -> Vec<Need> {
    let whole = |node| Need {
        node,
        from: 0,
        to: u64::MAX,
    };
    if serves_with(&run.info.algo) != ServesWith::CoordinatorAndHolder {
        return who.iter().map(|&n| whole(n)).collect();
    }
    let Some(&coordinator) = who.iter().max() else {
        return Vec::new();
    };
    let mut out = vec![whole(coordinator)];
    let mut grant: Option<(NodeId, u64)> = None;
    let mut inside: BTreeMap<NodeId, (u64, u64)> = BTreeMap::new();
    let end_grant = |grant: &mut Option<(NodeId, u64)>, t: u64, out: &mut Vec<Need>| {
        if let Some((node, from)) = grant.take() {
            out.push(Need { node, from, to: t });
        }
    };
    for r in &run.node_events {
        let Some(n) = r.node else { continue };
        match &r.event {
            Event::Start { .. } => {
                if n == coordinator || grant.is_some_and(|(x, _)| x == n) {
                    end_grant(&mut grant, r.t, &mut out);
                }
                if let Some((_, from)) = inside.remove(&n) {
                    out.push(Need { node: n, from, to: r.t });
                }
            }
            // A GRANT again to the same node is a lost one sent again: the same grant.
            Event::Send { to, msg, .. }
                if n == coordinator && msg == "GRANT" && grant.is_none_or(|(x, _)| x != *to) =>
            {
                end_grant(&mut grant, r.t, &mut out);
                grant = Some((*to, r.t));
                // Granted to another (regrant_ms, a detector): a holder still inside is
                // waited for no longer.
                inside.retain(|&x, &mut (_, from)| {
                    if x != *to {
                        out.push(Need { node: x, from, to: r.t });
                    }
                    x == *to
                });
            }
            Event::Recv { from, msg, .. }
                if n == coordinator && msg == "RELEASE" && grant.is_some_and(|(x, _)| x == *from) =>
            {
                end_grant(&mut grant, r.t, &mut out);
            }
            Event::CsEnter { req, .. } => {
                inside.insert(n, (*req, r.t));
            }
            Event::CsExit { req } if inside.get(&n).is_some_and(|&(q, _)| q == *req) => {
                let (_, from) = inside.remove(&n).unwrap_or_default();
                out.push(Need { node: n, from, to: r.t });
            }
            _ => {}
        }
    }
    end_grant(&mut grant, u64::MAX, &mut out);
    out.extend(inside.into_iter().map(|(node, (_, from))| Need {
        node,
        from,
        to: u64::MAX,
    }));
    out
}

/// Whether the launcher had cut links (a partition not healed yet) at `t`.
pub(crate) fn partitioned_at(run: &RunDir, t: u64) -> bool {
    let mut cut = false;
    for r in run.faults.iter().take_while(|r| r.t <= t) {
        match r.event {
            Event::Partition { .. } => cut = true,
            Event::Heal { .. } => cut = false,
            _ => {}
        }
    }
    cut
}

/// The longest piece of `[from, to]` in which every participant then needed was running and
/// no link was cut by a partition.
fn longest_all_running(run: &RunDir, timeline: &Timeline, needed: &[Need], from: u64, to: u64) -> (u64, u64) {
    let mut cuts: Vec<u64> = vec![from, to];
    let inside = |t: u64| t > from && t < to;
    for need in needed {
        cuts.extend([need.from, need.to].into_iter().filter(|&t| inside(t)));
        if let Some(list) = timeline.changes.get(&need.node) {
            cuts.extend(list.iter().map(|c| c.t).filter(|&t| inside(t)));
        }
    }
    cuts.extend(run.faults.iter().map(|r| r.t).filter(|&t| inside(t)));
    cuts.sort();
    cuts.dedup();
    let mut best = (from, from);
    let mut run_from: Option<u64> = None;
    for w in cuts.windows(2) {
        let (a, b) = (w[0], w[1]);
        let ok = !partitioned_at(run, a)
            && needed
                .iter()
                .filter(|n| n.from <= a && a < n.to)
                .all(|n| timeline.state_at(n.node, a).0 == Proc::Running);
        match (ok, run_from) {
            (true, None) => run_from = Some(a),
            (false, Some(s)) => {
                if a - s > best.1 - best.0 {
                    best = (s, a);
                }
                run_from = None;
            }
            _ => {}
        }
        if ok && b == to {
            let s = run_from.unwrap_or(a);
            if b - s > best.1 - best.0 {
                best = (s, b);
            }
        }
    }
    best
}

/// The participants not running while needed during `[from, to]`, in words.
fn fault_cause(run: &RunDir, timeline: &Timeline, needed: &[Need], from: u64, to: u64) -> String {
    let start = run.info.start_us;
    let mut parts = Vec::new();
    let mut nodes: Vec<NodeId> = needed.iter().map(|x| x.node).collect();
    let mut seen = BTreeSet::new();
    nodes.retain(|&n| seen.insert(n));
    for n in nodes {
        // A state counts when it overlaps a stretch in which the node was needed.
        let when: Vec<(u64, u64)> = needed
            .iter()
            .filter(|x| x.node == n)
            .map(|x| (x.from.max(from), x.to.min(to)))
            .collect();
        let bad: Vec<String> = timeline
            .changes
            .get(&n)
            .into_iter()
            .flatten()
            .enumerate()
            .filter(|(_, c)| c.state != Proc::Running)
            .filter(|(i, c)| {
                let until = timeline.changes[&n].get(i + 1).map_or(u64::MAX, |x| x.t);
                when.iter().any(|&(f, t)| c.t < t && until > f)
            })
            .map(|(_, c)| {
                let what = match c.state {
                    Proc::Paused => "paused",
                    Proc::Killed => "killed",
                    Proc::Exited => "its process exited",
                    Proc::Stopped => "stopped",
                    Proc::NotStarted => "not started",
                    Proc::Running => "running",
                };
                format!("{what} at {}", ms(start, c.t))
            })
            .collect();
        if !bad.is_empty() {
            parts.push(format!("node {n} {}", bad.join(", ")));
        }
    }
    if partitioned_at(run, from)
        || run
            .faults
            .iter()
            .any(|r| r.t > from && r.t < to && matches!(r.event, Event::Partition { .. }))
    {
        parts.push("links cut by a partition".into());
    }
    let mut words = format!(
        "{}: {} cannot serve a request while {} dead or unreachable",
        parts.join("; "),
        run.info.algo,
        if serves_with(&run.info.algo) == ServesWith::CoordinatorAndHolder {
            "its coordinator or the holder is"
        } else {
            "a participant is"
        }
    );
    if let Some(h) = last_holder_gone(run, timeline, from) {
        words = format!("{h}; {words}");
    }
    for g in grants_unreleased(run, timeline, to) {
        words = format!("{g}; {words}");
    }
    let regrant = crate::catalog::find(&run.info.algo).and_then(|e| e.key("regrant_ms"));
    if regrant.is_some() && !set_in(run, "regrant_ms") {
        words.push_str(" (set regrant_ms for the coordinator to take a dead holder's grant back)");
    }
    words
}

/// Whether `--set key=...` was given for the run.
fn set_in(run: &RunDir, key: &str) -> bool {
    !run.info.options["set"][key].is_null()
}

/// Grants a node sent (`GRANT` to X) and never saw released (`RELEASE` from X) by `to`, whose
/// grantee died after the grant: in words (`node 4 granted node 1 the section at +2453 ms and
/// waits for its RELEASE; node 1 was killed at +2498 ms, back as a new boot at +3497 ms`).
fn grants_unreleased(run: &RunDir, timeline: &Timeline, to: u64) -> Vec<String> {
    let start = run.info.start_us;
    let mut open: BTreeMap<NodeId, BTreeMap<NodeId, u64>> = BTreeMap::new();
    for r in run.node_events.iter().take_while(|r| r.t <= to) {
        let Some(c) = r.node else { continue };
        match &r.event {
            Event::Start { .. } => {
                open.remove(&c);
            }
            Event::Send { to: x, msg, .. } if msg == "GRANT" => {
                open.entry(c).or_default().entry(*x).or_insert(r.t);
            }
            Event::Recv { from: x, msg, .. } if msg == "RELEASE" => {
                if let Some(m) = open.get_mut(&c) {
                    m.remove(x);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (c, grants) in open {
        for (x, tg) in grants {
            // The grantee may have died before the grant was sent (its request was queued).
            let (before, since) = timeline.state_at(x, tg);
            let changes: Vec<_> = timeline
                .changes
                .get(&x)
                .into_iter()
                .flatten()
                .filter(|ch| (ch.t >= tg || (before.ended() && Some(ch.t) == since)) && ch.t <= to)
                .collect();
            let fate: Vec<String> = changes
                .iter()
                .map(|ch| {
                    let what = match ch.state {
                        Proc::Running => "back as a new boot",
                        Proc::Paused => "paused",
                        Proc::Killed => "killed",
                        Proc::Exited => "its process exited",
                        Proc::Stopped => "stopped",
                        Proc::NotStarted => "not started",
                    };
                    format!("{what} at {}", ms(start, ch.t))
                })
                .collect();
            if changes.iter().any(|ch| ch.state.ended()) {
                out.push(format!(
                    "node {c} granted node {x} the section at {} and waits for its RELEASE; node {x}: {}",
                    ms(start, tg),
                    fate.join(", ")
                ));
            }
        }
    }
    out
}

/// The last holder before `t`, if it never left the section in its own trace: in words.
fn last_holder_gone(run: &RunDir, timeline: &Timeline, t: u64) -> Option<String> {
    let start = run.info.start_us;
    let (enter_t, holder, req) = run
        .node_events
        .iter()
        .rev()
        .filter(|r| r.t <= t)
        .filter_map(|r| match r.event {
            Event::CsEnter { req, .. } => r.node.map(|n| (r.t, n, req)),
            _ => None,
        })
        .next()?;
    let left = run
        .node_events
        .iter()
        .any(|r| r.node == Some(holder) && r.t >= enter_t && matches!(r.event, Event::CsExit { req: q } if q == req));
    if left {
        return None;
    }
    let fate: Vec<String> = timeline
        .changes
        .get(&holder)
        .into_iter()
        .flatten()
        .filter(|c| c.t >= enter_t)
        .map(|c| match c.state {
            Proc::Running => format!("back as a new boot at {}", ms(start, c.t)),
            Proc::Paused => format!("paused at {}", ms(start, c.t)),
            _ => format!("dead since {}", ms(start, c.t)),
        })
        .collect();
    Some(format!(
        "the last holder, node {holder} (entered at {}), never left the section by its own trace{}: the others wait for its release",
        ms(start, enter_t),
        if fate.is_empty() {
            String::new()
        } else {
            format!(" ({})", fate.join(", "))
        }
    ))
}

/// What the traces say of a stall with every participant running.
fn bug_cause(run: &RunDir, timeline: &Timeline, waiting: &[NodeId], from: u64, all: (u64, u64)) -> String {
    let start = run.info.start_us;
    let mut parts = vec![format!(
        "{} waited with every participant running from {} to {}",
        list(waiting),
        ms(start, all.0),
        ms(start, all.1)
    )];
    if let Some(h) = last_holder_gone(run, timeline, from) {
        parts.push(h);
    }
    parts.extend(grants_unreleased(run, timeline, all.1));
    // Messages from a waiting node that a peer ignored, and why (the `ignore` events).
    let mut ignored: BTreeMap<(NodeId, NodeId, String), (usize, u64)> = BTreeMap::new();
    for r in run.node_events.iter().filter(|r| r.t >= from && r.t <= all.1) {
        if let (Some(by), Event::Ignore { from: f, reason }) = (r.node, &r.event) {
            if waiting.contains(f) {
                let e = ignored.entry((by, *f, reason.clone())).or_insert((0, r.t));
                e.0 += 1;
            }
        }
    }
    let mut ignored: Vec<_> = ignored.into_iter().collect();
    ignored.sort_by_key(|(_, (_, t))| *t);
    for ((by, f, reason), (k, t)) in ignored.into_iter().take(3) {
        parts.push(format!(
            "node {by} ignored node {f}'s message at {} ({reason}){}",
            ms(start, t),
            if k > 1 { format!(", {k} times") } else { String::new() }
        ));
    }
    parts.join("; ")
}

fn list(ns: &[NodeId]) -> String {
    let ids: Vec<String> = ns.iter().map(u64::to_string).collect();
    match ids.len() {
        1 => format!("node {}", ids[0]),
        _ => format!("nodes {}", ids.join(", ")),
    }
}

/// A stall in one line, for the findings.
pub(crate) fn stall_line(s: &Stall, start: u64) -> String {
    format!(
        "mutex: no entry for {} ({} to {}{}) while {} waited; every participant running for {} of it",
        secs(s.us()),
        ms(start, s.from),
        ms(start, s.to),
        if s.to_end { ", the end of the run" } else { "" },
        list(&s.waiting),
        secs(s.all_running_us())
    )
}
