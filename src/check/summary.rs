//! The analysis in words: what `summary.txt` says. Only wording lives here; every fact and
//! verdict comes from [`Analysis`].

use super::beliefs::{Belief, SpanEnd};
use super::election::{ElectionFacts, TermSummary, Violation};
use super::suspicion::Suspicion;
use super::timeline::{End, Proc};
use super::Analysis;
use crate::trace::NodeId;
use std::fmt::Write;

/// The whole summary.
pub fn render(a: &Analysis) -> String {
    let mut out = String::new();
    let nodes: Vec<NodeId> = a.timeline.nodes().collect();
    let end = match a.timeline.end {
        End::Shutdown => "the launcher's shutdown",
        End::FirstStop => "just before the first clean stop; no shutdown was recorded",
        End::LastEvent => "the last event; no shutdown was recorded",
    };
    let _ = writeln!(out, "coordlab check: {}", a.dir.display());
    let _ = writeln!(
        out,
        "{} on {}, {}; observed from +0 ms to {} ({end})",
        a.algo,
        a.topology,
        count(nodes.len(), "node"),
        at(a.start_us, a.timeline.end_us)
    );
    out.push('\n');
    match &a.election {
        None => out.push_str("Election: no election in this run; election properties not judged\n"),
        Some(e) => election(&mut out, a, e),
    }
    out.push('\n');
    suspicions(&mut out, a);
    out.push('\n');
    traffic(&mut out, a);
    out.push('\n');
    let _ = writeln!(out, "Verdict: {}", verdict(a));
    out
}

/// One suspicion in a sentence, e.g. `node 7 suspected node 8 at +412 ms after 300 ms of
/// silence; node 8 was paused, not dead: false suspicion`.
pub fn narrate(s: &Suspicion, start_us: u64) -> String {
    let target = s.target;
    let since = s.since.map(|t| at(start_us, t)).unwrap_or_default();
    let truth = match s.target_state {
        Proc::Running => format!("node {target} was running: false suspicion"),
        Proc::Paused => format!("node {target} was paused, not dead: false suspicion"),
        Proc::Killed => format!("node {target} was dead (killed at {since}): true suspicion"),
        Proc::Exited => format!("node {target} was dead (its process exited at {since}): true suspicion"),
        Proc::Stopped => format!("node {target} had stopped at {since}: true suspicion"),
        Proc::NotStarted => format!("node {target} had not been started: true suspicion"),
    };
    format!(
        "node {} suspected node {target} at {} after {} ms of silence; {truth}",
        s.by,
        at(start_us, s.t),
        s.silence_ms
    )
}

/// A true time as an offset from the start of the run: `+412 ms`.
pub fn at(start_us: u64, t: u64) -> String {
    let ms = ((t as f64 - start_us as f64) / 1000.0).round() as i64;
    format!("{ms:+} ms")
}

/// A duration: whole milliseconds, with one decimal below 10 ms.
pub fn dur(us: u64) -> String {
    if us < 10_000 && !us.is_multiple_of(1000) {
        format!("{:.1} ms", us as f64 / 1000.0)
    } else {
        format!("{} ms", (us + 500) / 1000)
    }
}

/// The verdict line: which promised properties were violated, if any.
pub fn verdict(a: &Analysis) -> String {
    if a.election.is_none() {
        return "no election in this run: nothing to judge".into();
    }
    let broken: Vec<String> = a
        .violations()
        .iter()
        .map(|v| match v {
            Violation::Uniqueness { term, .. } => format!("uniqueness (term {term})"),
            Violation::Agreement { .. } => "agreement".into(),
            Violation::Termination { .. } => "termination".into(),
        })
        .collect();
    if broken.is_empty() {
        "no property violated (termination, uniqueness within a term, agreement)".into()
    } else {
        format!("VIOLATED: {}", broken.join(", "))
    }
}

fn election(out: &mut String, a: &Analysis, e: &ElectionFacts) {
    out.push_str("Election properties (at the end, over the nodes running then)\n");
    for line in properties(a, e) {
        let _ = writeln!(out, "  {line}");
    }
    let gone: Vec<String> = a
        .timeline
        .nodes()
        .filter(|n| !e.live_at_end.contains(n))
        .map(|n| {
            let (state, since) = a.timeline.state_at(n, a.timeline.end_us);
            format!("node {n} ({})", state_words(state, since.map(|t| at(a.start_us, t))))
        })
        .collect();
    if !gone.is_empty() {
        let _ = writeln!(out, "  not running at the end: {}", gone.join(", "));
    }
    if let Some(b) = e.agreed().filter(|b| !e.live_at_end.contains(&b.leader)) {
        let _ = writeln!(
            out,
            "  note: the agreed leader, node {}, was not running at the end",
            b.leader
        );
    }
    out.push('\n');
    out.push_str("Elections by term\n");
    for ts in &e.terms {
        let _ = writeln!(out, "  {}", term_line(ts, a.start_us));
    }
    out.push('\n');
    overlap(out, a, e);
}

/// One line per property, in a fixed order: termination, uniqueness, agreement.
fn properties(a: &Analysis, e: &ElectionFacts) -> Vec<String> {
    let live = e.live_at_end.len();
    let mut termination = Vec::new();
    let mut uniqueness = Vec::new();
    let mut agreement = Vec::new();
    for v in &e.violations {
        match v {
            Violation::Termination { without } => termination.push(format!(
                "termination: VIOLATED: {} running at the end but had learned no leader",
                were(without)
            )),
            Violation::Uniqueness { term, claims } => {
                let who: Vec<String> = claims
                    .iter()
                    .map(|c| format!("node {} at {}", c.node, at(a.start_us, c.t)))
                    .collect();
                let nodes: Vec<NodeId> = claims.iter().map(|c| c.node).collect();
                uniqueness.push(format!(
                    "uniqueness: VIOLATED in term {term}: {} each declared themselves leader ({})",
                    nodes_list(&nodes),
                    who.join(", ")
                ));
            }
            Violation::Agreement { groups } => {
                let parts: Vec<String> = groups
                    .iter()
                    .map(|(b, ns)| format!("{} {} {}", nodes_list(ns), believe(ns), belief(b)))
                    .collect();
                agreement.push(format!("agreement: VIOLATED: {}", parts.join("; ")));
            }
        }
    }
    if termination.is_empty() {
        termination.push(match live {
            0 => "termination: holds vacuously, no node was running at the end".into(),
            n => format!("termination: ok, {} learned a leader", all_live(n)),
        });
    }
    if uniqueness.is_empty() {
        let terms: Vec<String> = e.claims.keys().map(u64::to_string).collect();
        uniqueness.push(if terms.is_empty() {
            "uniqueness: ok, no node declared itself leader".into()
        } else {
            format!(
                "uniqueness: ok, at most one self-declared leader in each term (terms {})",
                terms.join(", ")
            )
        });
    }
    if agreement.is_empty() {
        agreement.push(match e.agreed() {
            Some(b) => format!(
                "agreement: ok, {} {} {}",
                all_live(live),
                believe(&e.live_at_end),
                belief(&b)
            ),
            None if live == 0 => "agreement: holds vacuously, no node was running at the end".into(),
            None => "agreement: ok, no two running nodes believed different leaders".into(),
        });
    }
    termination.into_iter().chain(uniqueness).chain(agreement).collect()
}

fn term_line(ts: &TermSummary, start_us: u64) -> String {
    let mut s = format!("term {}: ", ts.term);
    match ts.first_start {
        Some((n, t)) => {
            let _ = write!(
                s,
                "first started by node {n} at {} ({} took part); ",
                at(start_us, t),
                count(ts.took_part.len(), "node")
            );
        }
        None => s.push_str("no election_start recorded; "),
    }
    let Some(decided) = ts.decided_at else {
        s.push_str("no leader");
        return s;
    };
    if ts.winners.is_empty() {
        let _ = write!(
            s,
            "no node declared itself leader; first heard of at {}",
            at(start_us, decided)
        );
    } else {
        let who: Vec<String> = ts
            .winners
            .iter()
            .map(|c| format!("node {} declared itself leader at {}", c.node, at(start_us, c.t)))
            .collect();
        s.push_str(&who.join(", "));
    }
    let missing = ts.missing();
    match (ts.last_learned(), ts.election_us()) {
        (Some(last), Some(took)) => {
            let _ = write!(
                s,
                "; all {} running then knew by {}: election took {}",
                count(ts.expected.len(), "node"),
                at(start_us, last),
                dur(took)
            );
        }
        (Some(last), None) if !missing.is_empty() => {
            let _ = write!(
                s,
                "; by {} every node running then knew it but {}, which never learned it",
                at(start_us, last),
                nodes_list(&missing)
            );
        }
        _ => {}
    }
    for (n, t) in ts.late() {
        let _ = write!(
            s,
            "; node {n} (not running when it was decided) learned it at {}",
            at(start_us, t)
        );
    }
    s
}

fn overlap(out: &mut String, a: &Analysis, e: &ElectionFacts) {
    out.push_str("Leadership (intervals in true time during which a node believed it led)\n");
    for sp in &e.spans {
        let end = match sp.ended {
            SpanEnd::StepDown => "stepped down".to_string(),
            SpanEnd::Follows(l) => format!("learned that node {l} leads"),
            SpanEnd::NewElection => "began a newer election".into(),
            SpanEnd::NewTerm => "claimed another term".into(),
            SpanEnd::ProcessEnded(p) => state_words(p, None),
            SpanEnd::Restarted => "its process restarted".into(),
            SpanEnd::RunEnd => "still leading at the end".into(),
        };
        let _ = writeln!(
            out,
            "  node {}, term {}: {} to {} ({}; {end})",
            sp.node,
            sp.term,
            at(a.start_us, sp.from),
            at(a.start_us, sp.to),
            dur(sp.to - sp.from)
        );
    }
    if e.overlaps.is_empty() {
        out.push_str("  overlap: at no moment did two nodes each believe they led\n");
        return;
    }
    let _ = writeln!(
        out,
        "  overlap: two or more nodes each believed they led for {} in all:",
        dur(e.overlap_us)
    );
    for o in &e.overlaps {
        let who: Vec<String> = o.holders.iter().map(|(n, t)| format!("node {n} (term {t})")).collect();
        let _ = writeln!(
            out,
            "    {} to {} ({}): {}",
            at(a.start_us, o.from),
            at(a.start_us, o.to),
            dur(o.us()),
            who.join(", ")
        );
    }
    if e.same_term_overlap_us == 0 {
        out.push_str("  within one term: none (0 ms)\n");
    } else {
        let mut terms: Vec<u64> = e
            .overlaps
            .iter()
            .filter(|o| o.within_one_term())
            .flat_map(|o| o.holders.iter().map(|h| h.1))
            .collect();
        terms.sort();
        terms.dedup();
        let terms: Vec<String> = terms.iter().map(u64::to_string).collect();
        let _ = writeln!(
            out,
            "  within one term: {} (terms involved: {})",
            dur(e.same_term_overlap_us),
            terms.join(", ")
        );
    }
}

fn suspicions(out: &mut String, a: &Analysis) {
    if a.suspicions.is_empty() {
        out.push_str("Suspicions: none\n");
        return;
    }
    let (right, wrong) = a.suspicion_counts();
    let paused = a.suspicions.iter().filter(|s| s.target_state == Proc::Paused).count();
    let _ = writeln!(
        out,
        "Suspicions (judged from faults.jsonl): {} in all, {right} true, {wrong} false ({paused} of a paused node, {} of a running one)",
        a.suspicions.len(),
        wrong - paused
    );
    for s in &a.suspicions {
        let _ = writeln!(out, "  {}", narrate(s, a.start_us));
    }
}

fn traffic(out: &mut String, a: &Analysis) {
    let tr = &a.traffic;
    out.push_str("Traffic\n");
    if tr.stops == 0 {
        out.push_str("  no stop events (no process stopped cleanly): no counter totals\n");
    } else {
        let _ = writeln!(
            out,
            "  from {}: sent {}, received {}, dropped {}",
            count(tr.stops, "stop event"),
            tr.sent,
            tr.received,
            tr.dropped
        );
        if !tr.by_type.is_empty() {
            let kinds: Vec<String> = tr.by_type.iter().map(|(k, v)| format!("{k} {v}")).collect();
            let _ = writeln!(out, "  sent by type: {}", kinds.join(", "));
        }
    }
    if tr.drops.is_empty() {
        out.push_str("  drop events: none\n");
    } else {
        let _ = writeln!(out, "  drop events by reason ({} in all):", tr.drop_events());
        let mut groups: Vec<_> = tr.drops.values().collect();
        groups.sort_by_key(|g| std::cmp::Reverse(g.count));
        for g in groups {
            let _ = writeln!(out, "    {} x {}", g.count, g.example);
        }
    }
    let _ = writeln!(out, "  trace lines that did not parse: {}", a.bad_lines);
    for (n, k) in &a.after_death {
        let _ = writeln!(
            out,
            "  node {n}: {} written after its process had ended, left out",
            count(*k, "event")
        );
    }
}

fn state_words(p: Proc, since: Option<String>) -> String {
    let since = since.map(|s| format!(" at {s}")).unwrap_or_default();
    match p {
        Proc::NotStarted => "never started".into(),
        Proc::Running => format!("running since{since}"),
        Proc::Paused => format!("paused{since}"),
        Proc::Killed => format!("killed{since}"),
        Proc::Exited => format!("its process exited{since}"),
        Proc::Stopped => format!("stopped{since}"),
    }
}

fn belief(b: &Belief) -> String {
    format!("node {} leads term {}", b.leader, b.term)
}

fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

fn all_live(n: usize) -> String {
    if n == 1 {
        "the one running node".into()
    } else {
        format!("all {n} running nodes")
    }
}

fn believe(ns: &[NodeId]) -> &'static str {
    if ns.len() == 1 {
        "believes"
    } else {
        "believe"
    }
}

fn were(ns: &[NodeId]) -> String {
    format!("{} {}", nodes_list(ns), if ns.len() == 1 { "was" } else { "were" })
}

/// `node 3`, `nodes 3 and 5`, `nodes 1, 2 and 4`.
fn nodes_list(ns: &[NodeId]) -> String {
    let ids: Vec<String> = ns.iter().map(u64::to_string).collect();
    match ids.as_slice() {
        [] => "no node".into(),
        [one] => format!("node {one}"),
        [init @ .., last] => format!("nodes {} and {last}", init.join(", ")),
    }
}
