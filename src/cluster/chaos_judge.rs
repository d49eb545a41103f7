//! The chaos soak's criteria for the families that are not elections, each judged by its own
//! goal and safety from the checker's analysis and the run's traces:
//! - mutual exclusion: no two holders at once (with fencing: none that reached the resource),
//!   every request served unless its node died waiting or it was made in the settling time,
//!   and entries resuming within the settling time after each fault was undone;
//! - clock synchronisation: no clock ran backwards unannounced, every claimed bound held, and
//!   the clocks back within the checker's spread by the end;
//! - snapshots (the bank): at least one Chandy-Lamport global state, every one conserves
//!   the money, and they go on after every restart;
//! - anything else (the ring probe): the checker's findings of its section.
//!
//! The election criteria stay in [`super::chaos`].

use super::chaos::Criterion;
use crate::check::clock::{ClockFacts, WITHIN_US};
use crate::check::summary::dur;
use crate::check::Analysis;
use crate::trace::{Event, NodeId, RunDir};
use std::collections::BTreeMap;

/// The criteria of a soak of family `family` (not `election`), `settle_us` being how long
/// faults stop before the end.
pub fn criteria(family: &str, a: &Analysis, settle_us: u64) -> Vec<Criterion> {
    let run = RunDir::load(&a.dir);
    match (family, run) {
        (_, Err(e)) => vec![Criterion {
            ok: false,
            words: format!("cannot read the run's traces again: {e}"),
        }],
        ("mutex", Ok(run)) => mutex(a, &run, settle_us),
        ("clock", Ok(run)) => clocks(&crate::check::clock::analyse(&run), &run),
        ("snapshot", Ok(run)) => snapshots(&crate::check::snapshot::analyse(&run)),
        (family, Ok(_)) => {
            let fails: Vec<String> = a
                .findings()
                .iter()
                .filter(|f| f.fails())
                .map(|f| f.what.clone())
                .collect();
            vec![Criterion {
                ok: fails.is_empty(),
                words: match fails.first() {
                    None => format!("{family}: the checker found nothing wrong"),
                    Some(w) => format!("{family}: {} finding(s), first: {w}", fails.len()),
                },
            }]
        }
    }
}

fn mutex(a: &Analysis, run: &RunDir, settle_us: u64) -> Vec<Criterion> {
    let Some(f) = a
        .all_sections()
        .into_iter()
        .find(|s| s.family() == "mutex")
        .and_then(|s| s.as_any().downcast_ref::<crate::check::mutex::Section>())
        .map(|s| &s.facts)
    else {
        return vec![Criterion {
            ok: false,
            words: "no mutual-exclusion activity in this run: no request was made".into(),
        }];
    };
    let mut out = Vec::new();
    let overlaps = f.node_overlaps.len();
    // Two holders that a fault's lesson explains stay violations of the check, but are the
    // faults' doing, not the code's (as explained split-brains are for elections).
    let unexplained = |v: &[crate::check::mutex::Overlap]| v.iter().filter(|o| o.explained.is_none()).count();
    let (res_bad, node_bad) = (unexplained(&f.resource_violations), unexplained(&f.node_overlaps));
    let explained = f.resource_violations.len() - res_bad + if f.fencing { 0 } else { overlaps - node_bad };
    out.push(if f.fencing {
        Criterion {
            ok: res_bad == 0 && f.breaches.is_empty(),
            words: format!(
                "mutual exclusion at the resource (fencing): {} violation(s) reached it ({res_bad} not explained by the faults), \
                 {} lower token(s) accepted; {overlaps} overlap(s) by the nodes' own traces, {} stale access(es) refused",
                f.resource_violations.len(),
                f.breaches.len(),
                f.rejected
            ),
        }
    } else {
        Criterion {
            ok: res_bad == 0 && node_bad == 0,
            words: format!(
                "mutual exclusion: {} at the resource, {overlaps} by the nodes' own traces ({} entries); \
                 {explained} explained by the faults' lesson, {} NOT explained",
                f.resource_violations.len(),
                f.entries.len(),
                res_bad + node_bad
            ),
        }
    });
    let end = run
        .faults
        .iter()
        .find(|r| matches!(r.event, Event::Shutdown {}))
        .map_or_else(|| run.node_events.last().map_or(0, |r| r.t), |r| r.t);
    // Requests, per node and boot: a request a node was killed waiting on died with it.
    let mut waiting: BTreeMap<NodeId, BTreeMap<u64, u64>> = BTreeMap::new();
    let mut died_waiting = 0usize;
    let mut unserved: Vec<(NodeId, u64)> = Vec::new();
    let mut served = 0usize;
    let kills: Vec<(u64, NodeId)> = run
        .faults
        .iter()
        .filter(|r| matches!(r.event, Event::Kill { .. }))
        .filter_map(|r| r.node.map(|n| (r.t, n)))
        .collect();
    // A wait inside a stall the checker explained (the coordinator or the holder dead, the
    // course's lesson) is that fault's doing: named, not failed.
    let lesson: Vec<(u64, u64)> = f
        .stalls
        .iter()
        .filter(|s| s.explained)
        .map(|s| (s.from, s.to))
        .collect();
    let in_lesson = |t: u64| lesson.iter().any(|&(a, b)| t >= a && t <= b);
    let mut explained_waits = 0usize;
    let mut entries: Vec<u64> = Vec::new();
    for r in &run.node_events {
        let Some(n) = r.node else { continue };
        match &r.event {
            Event::Start { .. } => {
                died_waiting += waiting.remove(&n).map_or(0, |w| w.len());
            }
            Event::CsRequest { req } => {
                waiting.entry(n).or_default().insert(*req, r.t);
            }
            Event::CsEnter { req, .. } => {
                if waiting.entry(n).or_default().remove(req).is_some() {
                    served += 1;
                }
                entries.push(r.t);
            }
            _ => {}
        }
    }
    for (n, reqs) in waiting {
        for t in reqs.into_values() {
            let killed_after = kills.iter().any(|&(kt, k)| k == n && kt >= t);
            if killed_after {
                died_waiting += 1;
            } else if end.saturating_sub(t) > settle_us && in_lesson(t) {
                explained_waits += 1;
            } else if end.saturating_sub(t) > settle_us {
                unserved.push((n, t));
            }
        }
    }
    out.push(Criterion {
        ok: unserved.is_empty() && served > 0,
        words: match unserved.first() {
            None if served == 0 => "every request served: NO request was served at all".into(),
            None => format!(
                "every request served: {served} served; {died_waiting} died with their node (killed waiting); \
                 {explained_waits} never served in a stall the faults explain"
            ),
            Some(&(n, t)) => format!(
                "every request served: {} request(s) made more than {} before the end were never served \
                 (first: node {n}'s at {})",
                unserved.len(),
                dur(settle_us),
                rel(run, t)
            ),
        },
    });
    // Each fault undone (resume, restart): some node entered within the settling time.
    let undos: Vec<u64> = run
        .faults
        .iter()
        .filter(|r| matches!(r.event, Event::Resume { .. } | Event::Restart { .. }))
        .map(|r| r.t)
        .collect();
    let mut longest = 0u64;
    let mut stuck = Vec::new();
    let mut excused = 0usize;
    for &u in &undos {
        let late = match entries.iter().find(|&&e| e > u) {
            Some(&e) => {
                longest = longest.max(e - u);
                e - u > settle_us
            }
            None => end.saturating_sub(u) > settle_us,
        };
        // Other faults kept what the algorithm needs down after this one was undone.
        let lessoned = lesson.iter().any(|&(a, b)| a <= u + settle_us && b > u);
        match (late, lessoned) {
            (true, true) => excused += 1,
            (true, false) => stuck.push(u),
            _ => {}
        }
    }
    out.push(Criterion {
        ok: stuck.is_empty(),
        words: match stuck.first() {
            None => format!(
                "progress after each fault: an entry followed each of the {} undone faults within {} \
                 (longest wait {}){}",
                undos.len(),
                dur(settle_us),
                dur(longest),
                match excused {
                    0 => String::new(),
                    k => format!(", save {k} in stalls that other faults explain"),
                }
            ),
            Some(&u) => format!(
                "progress after each fault: NO entry within {} after {} of the {} undone faults (first at {})",
                dur(settle_us),
                stuck.len(),
                undos.len(),
                rel(run, u)
            ),
        },
    });
    out
}

/// The soak's figures in one line (`figures: ...`), for a table of soaks: faults injected,
/// entries per second before the first fault and after the last was undone, the longest
/// stretch with requests waiting and no entry, violations and stale tokens rejected. None for
/// families other than mutual exclusion.
pub fn figures(a: &Analysis) -> Option<String> {
    let f = &a
        .all_sections()
        .into_iter()
        .find(|s| s.family() == "mutex")?
        .as_any()
        .downcast_ref::<crate::check::mutex::Section>()?
        .facts;
    let run = RunDir::load(&a.dir).ok()?;
    let start = run.info.start_us;
    let end = a.timeline.end_us.max(start);
    let injected = |r: &&crate::trace::Record| {
        matches!(r.event, Event::Pause { .. } | Event::Kill { .. })
            || (crate::net::NetAction::from_event(&r.event).is_some() && !matches!(r.event, Event::Heal { .. }))
    };
    let process = run
        .faults
        .iter()
        .filter(|r| matches!(r.event, Event::Pause { .. } | Event::Kill { .. }))
        .count();
    let all = run.faults.iter().filter(injected).count();
    let first = run.faults.iter().filter(injected).map(|r| r.t).min().unwrap_or(end);
    // The last fault ends when it is undone: a resume, a restart, the network healed.
    let last = run
        .faults
        .iter()
        .filter(|r| {
            injected(r)
                || matches!(
                    r.event,
                    Event::Resume { .. } | Event::Restart { .. } | Event::Heal { .. }
                )
        })
        .map(|r| r.t)
        .max()
        .unwrap_or(start);
    // From the first entry: the nodes' start-up is not the algorithm's rate.
    let served_from = f.entries.first().map_or(start, |e| e.enter).min(first);
    let rate = |from: u64, to: u64| {
        let n = f.entries.iter().filter(|e| e.enter >= from && e.enter < to).count();
        if to > from {
            format!("{:.1}", n as f64 / ((to - from) as f64 / 1e6))
        } else {
            "-".into()
        }
    };
    let longest = crate::check::mutex_progress::stalls(&run, &a.timeline, 0)
        .iter()
        .map(|s| s.us())
        .max()
        .unwrap_or(0);
    let overlaps = f.resource_violations.len() + f.node_overlaps.len();
    let unexplained = f
        .resource_violations
        .iter()
        .chain(&f.node_overlaps)
        .filter(|o| o.explained.is_none())
        .count();
    Some(format!(
        "figures: faults {all} ({process} process, {} network); entries/s {} before the first fault ({} from the first entry), {} after the last was undone ({} to the end); \
         longest stall {}; violations {} at the resource, {} by the nodes' traces ({} explained, {unexplained} not); stale tokens rejected {}",
        all - process,
        rate(served_from, first),
        dur(first.saturating_sub(served_from)),
        rate(last, end),
        dur(end.saturating_sub(last)),
        dur(longest),
        f.resource_violations.len(),
        f.node_overlaps.len(),
        overlaps - unexplained,
        f.rejected
    ))
}

fn clocks(f: &ClockFacts, run: &RunDir) -> Vec<Criterion> {
    let back: Vec<_> = f.backwards.iter().filter(|b| !b.stepped).collect();
    let broken = f.claims.iter().filter(|c| !c.holds()).count();
    let last_fault = run
        .faults
        .iter()
        .filter(|r| matches!(r.event, Event::Resume { .. } | Event::Restart { .. }))
        .map(|r| r.t)
        .max();
    vec![
        Criterion {
            ok: back.is_empty(),
            words: match back.first() {
                None => "no clock ran backwards (an announced step aside)".into(),
                Some(b) => format!(
                    "clocks backwards: {} time(s) unannounced (first: node {} by {} us at {})",
                    back.len(),
                    b.node,
                    b.by_us,
                    rel(run, b.t)
                ),
            },
        },
        Criterion {
            ok: broken == 0 && !f.claims.is_empty(),
            words: if f.claims.is_empty() {
                "claims held: NO correction was made at all".into()
            } else {
                format!(
                    "claims held: {} of {} corrections within their claimed bounds ({} unverifiable)",
                    f.claims.len() - broken,
                    f.claims.len(),
                    f.unverifiable
                )
            },
        },
        Criterion {
            ok: f.within_from.is_some(),
            words: match (f.within_from, last_fault) {
                (Some(t), Some(l)) if t > l => format!(
                    "back within bound after the faults: the clocks' spread stayed within {} from {} \
                     ({} after the last fault was undone) to the end",
                    dur(WITHIN_US as u64),
                    rel(run, t),
                    dur(t - l)
                ),
                (Some(t), _) => format!(
                    "back within bound after the faults: the clocks' spread stayed within {} from {} to the end",
                    dur(WITHIN_US as u64),
                    rel(run, t)
                ),
                (None, _) => format!(
                    "back within bound after the faults: NO, the spread was over {} at the end ({} us)",
                    dur(WITHIN_US as u64),
                    f.spread_after_us()
                ),
            },
        },
    ]
}

fn snapshots(f: &crate::check::snapshot::SnapshotFacts) -> Vec<Criterion> {
    let cl = f.complete.iter().filter(|g| g.method == "chandy-lamport").count();
    let broken = f.broken();
    let mut out = vec![Criterion {
        ok: cl > 0 && broken.is_empty(),
        words: match broken.first() {
            None if cl == 0 => format!(
                "every snapshot conserves money: NO Chandy-Lamport snapshot completed ({} incomplete)",
                f.incomplete
            ),
            None => format!(
                "every snapshot conserves money: all {cl} Chandy-Lamport snapshots sum to {} ({} incomplete \
                 when the run ended)",
                f.initial, f.incomplete
            ),
            Some(g) => format!(
                "every snapshot conserves money: {} of {cl} do NOT (first: snapshot {} sums to {}, not {})",
                broken.len(),
                g.snap,
                g.total(),
                f.initial
            ),
        },
    }];
    if !f.restored.is_empty() || !f.restarts.is_empty() {
        out.push(Criterion {
            ok: f.stopped.is_none(),
            words: match f.stopped {
                None => format!(
                    "snapshots go on after a restart: {} restart(s) with the stored state taken back, {} without",
                    f.restored.len(),
                    f.restarts.len()
                ),
                Some((_, after)) => format!(
                    "snapshots go on after a restart: NONE completed in the {:.1} s after the last one",
                    after as f64 / 1e6
                ),
            },
        });
    }
    out
}

fn rel(run: &RunDir, t: u64) -> String {
    format!("{:+} ms", (t as i64 - run.info.start_us as i64) / 1000)
}
