//! The analysis in words: what `summary.txt` says. Only wording lives here; every fact and
//! verdict comes from [`Analysis`].

use super::beliefs::{Belief, SpanEnd};
use super::election::{ElectionFacts, TermSummary, Violation, ABSURD_TERM};
use super::suspicion::Suspicion;
use super::timeline::{End, Proc};
use super::Analysis;
use crate::trace::NodeId;
use std::collections::BTreeMap;
use std::fmt::Write;

mod election;
mod sections;

pub(crate) use election::{election_details, election_properties, property_name};
use sections::{input, network, suspicions, traffic};

/// The whole summary: short (violations first, then one line per property, per node class,
/// suspicions, traffic and input), or with every detail when `verbose`.
pub fn render(a: &Analysis, verbose: bool) -> String {
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
    for m in &a.missing {
        let _ = writeln!(out, "{m} is missing: {}", missing_means(m));
    }
    for (file, why) in &a.incomplete {
        let _ = writeln!(
            out,
            "{file} is INCOMPLETE: {why}; evidence for that node is missing, and its state at the end is not judged"
        );
    }
    findings(&mut out, a);
    let sections = a.all_sections();
    if sections.is_empty() {
        out.push_str("Election: no election in this run; election properties not judged\n");
    }
    for s in &sections {
        let _ = writeln!(out, "{}", title(s.family()));
        for line in s.properties(a) {
            let _ = writeln!(out, "  {line}");
        }
    }
    node_classes(&mut out, a);
    network(&mut out, a, verbose);
    suspicions(&mut out, a, verbose);
    traffic(&mut out, a, verbose);
    input(&mut out, a, verbose);
    if verbose {
        for s in &sections {
            out.push('\n');
            s.details(a, &mut out);
        }
    }
    let _ = writeln!(out, "Verdict: {}", verdict(a));
    out
}

fn title(family: &str) -> String {
    let mut c = family.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

fn missing_means(file: &str) -> &'static str {
    if file == "faults.jsonl" {
        "no ground truth of what the launcher did: suspicions, termination and agreement at the end are not judged"
    } else {
        "no verdict about that node is given"
    }
}

fn findings(out: &mut String, a: &Analysis) {
    let all = a.findings();
    if all.is_empty() {
        out.push_str("Violations: none\n");
        return;
    }
    out.push_str("Violations and flags\n");
    for f in &all {
        let mark = match (&f.explanation, f.violation) {
            (_, false) => "FLAG",
            (Some(e), true) if e.inherent => "EXPLAINED",
            _ => "VIOLATED",
        };
        let _ = writeln!(out, "  {mark}: {}", f.what);
        if let Some(e) = &f.explanation {
            let _ = writeln!(out, "    cause: {}", e.words);
        }
    }
}

/// One line per class of node at the end: what it was and what it believed.
fn node_classes(out: &mut String, a: &Analysis) {
    let mut classes: BTreeMap<String, Vec<NodeId>> = BTreeMap::new();
    for n in a.timeline.nodes() {
        let (state, _) = a.timeline.state_at(n, a.timeline.end_us);
        let belief = a.election.as_ref().and_then(|e| e.at_end.get(&n).copied().flatten());
        let mut class = state_words(state, None);
        let file = format!("node-{n}.jsonl");
        if a.missing.contains(&file) {
            class = "trace missing".into();
        } else if a.incomplete.iter().any(|(f, _)| *f == file) {
            class = format!("{class}, trace incomplete");
        } else if let Some(b) = belief.filter(|_| state.alive()) {
            let _ = write!(class, ", believing {}", belief_words(&b));
        } else if a.election.is_some() && state.alive() {
            class.push_str(", believing no leader");
        }
        classes.entry(class).or_default().push(n);
    }
    out.push_str("Nodes at the end\n");
    for (class, ns) in classes {
        let _ = writeln!(out, "  {}: {class}", nodes_list(&ns));
    }
}

/// One suspicion in a sentence, e.g. `node 7 suspected node 8 at +412 ms after 300 ms of
/// silence; node 8 was paused, not dead: false suspicion`.
pub(crate) fn narrate(s: &Suspicion, start_us: u64) -> String {
    let target = s.target;
    let since = s.since.map(|t| at(start_us, t)).unwrap_or_default();
    let truth = match (s.target_state, &s.cut_off) {
        (Proc::Running, Some(why)) => format!("node {target} was alive, but {why}: cut off, not dead"),
        (Proc::Running, None) if s.running_within_silence() => {
            format!("node {target} was running, but resumed from a pause only at {since}, within the silence: false suspicion")
        }
        (state, _) => plain_truth(state, target, &since),
    };
    format!(
        "node {} suspected node {target} at {} after {} ms of silence; {truth}",
        s.by,
        at(start_us, s.t),
        s.silence_ms
    )
}

/// What a suspicion of `target` in `state` was, the network aside.
fn plain_truth(state: Proc, target: NodeId, since: &str) -> String {
    match state {
        Proc::Running => format!("node {target} was running: false suspicion"),
        Proc::Paused => format!("node {target} was paused, not dead: false suspicion"),
        Proc::Killed => format!("node {target} was dead (killed at {since}): true suspicion"),
        Proc::Exited => format!("node {target} was dead (its process exited at {since}): true suspicion"),
        Proc::Stopped => format!("node {target} had stopped at {since}: true suspicion"),
        Proc::NotStarted => format!("node {target} had not been started: true suspicion"),
    }
}

/// A true time as an offset from the start of the run: `+412 ms`.
pub fn at(start_us: u64, t: u64) -> String {
    let ms = ((t as f64 - start_us as f64) / 1000.0).round() as i64;
    format!("{ms:+} ms")
}

/// A stretch of true time: `+412 ms to +980 ms`.
pub(crate) fn from_to(start_us: u64, from: u64, to: u64) -> String {
    format!("{} to {}", at(start_us, from), at(start_us, to))
}

/// A duration: whole milliseconds, with one decimal below 10 ms.
pub(crate) fn dur(us: u64) -> String {
    if us < 10_000 && !us.is_multiple_of(1000) {
        format!("{:.1} ms", us as f64 / 1000.0)
    } else {
        format!("{} ms", (us + 500) / 1000)
    }
}

/// One violation in words, without times (the findings list).
pub(crate) fn violation_line(v: &Violation, start_us: Option<u64>) -> String {
    match v {
        Violation::Uniqueness { term, claims } => {
            let nodes: Vec<NodeId> = claims.iter().map(|c| c.node).collect();
            let mut line = format!(
                "uniqueness: VIOLATED in term {term}: {} each declared themselves leader",
                nodes_list(&nodes)
            );
            if let Some(s) = start_us {
                let who: Vec<String> = claims
                    .iter()
                    .map(|c| format!("node {} at {}", c.node, at(s, c.t)))
                    .collect();
                let _ = write!(line, " ({})", who.join(", "));
            }
            line
        }
        Violation::TermAgreement { term, groups } => {
            let parts: Vec<String> = groups
                .iter()
                .map(|(l, ns)| format!("{} {} node {l} leads it", nodes_list(ns), believe(ns)))
                .collect();
            format!("agreement within a term: VIOLATED in term {term}: {}", parts.join("; "))
        }
        Violation::AbsurdTerm { term, node, .. } => format!(
            "absurd term: node {node} recorded term {term} (no run reaches {ABSURD_TERM} elections: forged or wrapped)"
        ),
        Violation::Agreement { groups } => {
            let parts: Vec<String> = groups
                .iter()
                .map(|(b, ns)| format!("{} {} {}", nodes_list(ns), believe(ns), belief_words(b)))
                .collect();
            format!("agreement: VIOLATED: {}", parts.join("; "))
        }
        Violation::Termination { without } => format!(
            "termination: VIOLATED: {} running at the end but had learned no leader",
            were(without)
        ),
    }
}

/// The verdict line: which promised properties were violated, if any.
pub fn verdict(a: &Analysis) -> String {
    let all = a.findings();
    if a.all_sections().is_empty() {
        return "no election in this run: nothing to judge".into();
    }
    let failing: Vec<String> = all.iter().filter(|f| f.fails()).map(|f| f.property.clone()).collect();
    let explained = all.iter().filter(|f| f.violation && !f.fails()).count();
    let flags = all.iter().filter(|f| !f.violation).count();
    let mut tail = String::new();
    if explained > 0 {
        let _ = write!(tail, "; {} explained by the faults", count(explained, "violation"));
    }
    if flags > 0 {
        let _ = write!(tail, "; {}", count(flags, "flag"));
    }
    if failing.is_empty() {
        let families: Vec<&str> = a.all_sections().iter().map(|s| s.family()).collect();
        let props = match &a.election {
            Some(_) => "termination, uniqueness within a term, agreement".to_string(),
            None => format!("the {} goal", families.join(", ")),
        };
        format!("no property violated ({props}){tail}")
    } else {
        format!("VIOLATED: {}{tail}", with_repeats(failing).join(", "))
    }
}

/// Eight overlaps are one property broken eight times: `mutual exclusion (nodes) x8`, in the
/// order of first appearance.
fn with_repeats(names: Vec<String>) -> Vec<String> {
    let mut counted: Vec<(String, usize)> = Vec::new();
    for p in names {
        match counted.iter_mut().find(|(q, _)| *q == p) {
            Some((_, k)) => *k += 1,
            None => counted.push((p, 1)),
        }
    }
    counted
        .into_iter()
        .map(|(p, k)| if k == 1 { p } else { format!("{p} x{k}") })
        .collect()
}

#[cfg(test)]
#[test]
fn a_property_broken_many_times_is_named_once_with_its_count() {
    let names = [
        "mutual exclusion (resource)",
        "mutual exclusion (resource)",
        "fencing",
        "mutual exclusion (resource)",
    ];
    assert_eq!(
        with_repeats(names.iter().map(|s| s.to_string()).collect()),
        vec!["mutual exclusion (resource) x3", "fencing"]
    );
}

fn state_words(p: Proc, since: Option<String>) -> String {
    let since = since.map(|s| format!(" at {s}")).unwrap_or_default();
    match p {
        Proc::NotStarted => "never started".into(),
        Proc::Running if since.is_empty() => "running".into(),
        Proc::Running => format!("running since{since}"),
        Proc::Paused => format!("paused{since}"),
        Proc::Killed => format!("killed{since}"),
        Proc::Exited => format!("its process exited{since}"),
        Proc::Stopped => format!("stopped{since}"),
    }
}

fn belief_words(b: &Belief) -> String {
    format!("node {} leads term {}", b.leader, b.term)
}

/// "1 violation", "3 violations".
pub(super) fn count(n: usize, what: &str) -> String {
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
