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
pub fn narrate(s: &Suspicion, start_us: u64) -> String {
    let target = s.target;
    let since = s.since.map(|t| at(start_us, t)).unwrap_or_default();
    let truth = match (s.target_state, &s.cut_off) {
        (Proc::Running, Some(why)) => format!("node {target} was alive, but {why}: cut off, not dead"),
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

/// A duration: whole milliseconds, with one decimal below 10 ms.
pub fn dur(us: u64) -> String {
    if us < 10_000 && !us.is_multiple_of(1000) {
        format!("{:.1} ms", us as f64 / 1000.0)
    } else {
        format!("{} ms", (us + 500) / 1000)
    }
}

/// One violation in words, without times (the findings list).
pub fn violation_line(v: &Violation, start_us: Option<u64>) -> String {
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

/// The property a violation breaks, in a word or two: `uniqueness (term 11)`.
pub fn property_name(v: &Violation) -> String {
    match v {
        Violation::Uniqueness { term, .. } => format!("uniqueness (term {term})"),
        Violation::TermAgreement { term, .. } => format!("agreement within a term (term {term})"),
        Violation::AbsurdTerm { term, .. } => format!("absurd term ({term})"),
        Violation::Agreement { .. } => "agreement".into(),
        Violation::Termination { .. } => "termination".into(),
    }
}

/// The election section's property lines: one each.
pub fn election_properties(a: &Analysis, e: &ElectionFacts) -> Vec<String> {
    let mut out = properties(a, e);
    let top = e.terms.iter().map(|t| t.term).max();
    let absurd = e.violations.iter().any(|v| matches!(v, Violation::AbsurdTerm { .. }));
    out.push(match top {
        Some(t) => format!(
            "terms: {} (highest {t}){}",
            e.terms.len(),
            if absurd { ", ABSURD" } else { "" }
        ),
        None => "terms: none".into(),
    });
    out.push(match e.storms.busiest() {
        None => "storms: no term had protocol messages".into(),
        Some(b) => format!(
            "storms: {}; busiest term {}: {} protocol messages in {} ({:.0}/s); bound per term {}",
            if e.storms.over.is_empty() {
                "none".to_string()
            } else {
                format!("{} over the bound", count(e.storms.over.len(), "term"))
            },
            b.term,
            b.messages,
            dur(b.to.saturating_sub(b.from)),
            b.rate(),
            e.storms.bound
        ),
    });
    out.push(match e.longest_leaderless() {
        None => "leaderless: never (a running node believed it led throughout)".into(),
        Some(l) => {
            let total: u64 = e.leaderless.iter().map(|l| l.to - l.from).sum();
            let judged = match e.majority_leaderless {
                Some((m, bound)) => format!(
                    "; with a majority running: longest {} ({}, bound {})",
                    dur(m.to - m.from),
                    if m.to - m.from > bound { "VIOLATED" } else { "ok" },
                    dur(bound)
                ),
                None => "; never with a majority running".into(),
            };
            format!(
                "leaderless: longest stretch {} to {} ({}); {} in all{judged}",
                at(a.start_us, l.from),
                at(a.start_us, l.to),
                dur(l.to - l.from),
                dur(total)
            )
        }
    });
    out
}

/// The election section's details: every term, every leadership interval.
pub fn election_details(out: &mut String, a: &Analysis, e: &ElectionFacts) {
    election(out, a, e);
}

fn election(out: &mut String, a: &Analysis, e: &ElectionFacts) {
    out.push_str("Election details\n");
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
    let mut within = Vec::new();
    for v in &e.violations {
        let line = violation_line(v, Some(a.start_us));
        let line = match e.explanation_of(v) {
            Some(x) if x.inherent => format!("{line} [explained: {}]", x.words),
            _ => line,
        };
        match v {
            Violation::Termination { .. } => termination.push(line),
            Violation::Uniqueness { .. } | Violation::AbsurdTerm { .. } => uniqueness.push(line),
            Violation::Agreement { .. } => agreement.push(line),
            Violation::TermAgreement { .. } => within.push(line),
        }
    }
    if !e.judged_end {
        termination.push("termination: not judged (faults.jsonl is missing)".into());
        agreement.push("agreement: not judged (faults.jsonl is missing)".into());
    }
    if within.is_empty() {
        within.push("agreement within a term: ok, no two nodes believed different leaders of one term".into());
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
                belief_words(&b)
            ),
            None if live == 0 => "agreement: holds vacuously, no node was running at the end".into(),
            None => "agreement: ok, no two running nodes believed different leaders".into(),
        });
    }
    let mut out: Vec<String> = termination
        .into_iter()
        .chain(uniqueness)
        .chain(within)
        .chain(agreement)
        .collect();
    if !e.unjudged.is_empty() {
        out.push(format!(
            "not judged: {} (trace missing or incomplete)",
            nodes_list(&e.unjudged)
        ));
    }
    out
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

/// What the network did (nothing when no rule was ever set), and each side's longest stretch
/// without a leader while the network split the nodes.
fn network(out: &mut String, a: &Analysis, verbose: bool) {
    let steps = a.network.steps();
    if steps.is_empty() {
        return;
    }
    let errors = steps.iter().filter(|s| s.error).count();
    let _ = writeln!(
        out,
        "Network (from faults.jsonl): {}{}",
        count(steps.len() - errors, "change"),
        if errors > 0 {
            format!(", {} that could not be applied", count(errors, "rule"))
        } else {
            String::new()
        }
    );
    let shown = if verbose { steps.len() } else { 8 };
    for s in steps.iter().take(shown) {
        let _ = writeln!(
            out,
            "  {}: {}{}",
            at(a.start_us, s.t),
            if s.error { "FAILED: " } else { "" },
            s.words
        );
    }
    if steps.len() > shown {
        let _ = writeln!(out, "  ... {} more (see --verbose)", steps.len() - shown);
    }
    let mut last: Option<(u64, u64)> = None;
    for g in &a.side_gaps {
        if last != Some((g.split_from, g.split_to)) {
            last = Some((g.split_from, g.split_to));
            let sides: Vec<String> = a
                .side_gaps
                .iter()
                .filter(|x| (x.split_from, x.split_to) == (g.split_from, g.split_to))
                .map(|x| x.side.iter().map(u64::to_string).collect::<Vec<_>>().join(","))
                .collect();
            let _ = writeln!(
                out,
                "  split from {} to {} ({}): {}",
                at(a.start_us, g.split_from),
                at(a.start_us, g.split_to),
                dur(g.split_to - g.split_from),
                sides.join(" | ")
            );
        }
        let side = super::network::group_words(&g.side);
        let leaders = if g.leaders.is_empty() {
            "no leader on this side".to_string()
        } else {
            format!(
                "leaders on this side: {}",
                g.leaders.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
            )
        };
        let _ = match g.longest {
            None => writeln!(out, "    {side}: a leader throughout ({leaders})"),
            Some((f, t)) if (f, t) == (g.split_from, g.split_to) => {
                writeln!(out, "    {side}: no leader for the whole split ({})", dur(t - f))
            }
            Some((f, t)) => writeln!(
                out,
                "    {side}: longest stretch without a leader {} ({} to {}); {leaders}",
                dur(t - f),
                at(a.start_us, f),
                at(a.start_us, t)
            ),
        };
    }
}

fn suspicions(out: &mut String, a: &Analysis, verbose: bool) {
    if !a.faults_known() {
        out.push_str("Suspicions: not judged (faults.jsonl is missing)\n");
        return;
    }
    if a.suspicions.is_empty() {
        out.push_str("Suspicions: none\n");
        return;
    }
    let (right, wrong) = a.suspicion_counts();
    let paused = a.suspicions.iter().filter(|s| s.target_state == Proc::Paused).count();
    let cut: Vec<&Suspicion> = a
        .suspicions
        .iter()
        .filter(|s| s.target_state == Proc::Running && s.cut_off.is_some())
        .collect();
    let by_net = if cut.is_empty() {
        String::new()
    } else {
        format!(", {} of a running node the network cut off", cut.len())
    };
    let _ = writeln!(
        out,
        "Suspicions (judged from faults.jsonl): {} in all, {right} true, {wrong} false ({paused} of a paused node, {} of a running one{by_net})",
        a.suspicions.len(),
        wrong - paused - cut.len()
    );
    if let (Some(first), false) = (cut.first(), verbose) {
        let _ = writeln!(out, "  for example: {}", narrate(first, a.start_us));
    }
    if verbose {
        for s in &a.suspicions {
            let _ = writeln!(out, "  {}", narrate(s, a.start_us));
        }
        for s in &a.stale {
            let _ = writeln!(
                out,
                "  not healed: node {} suspected node {} from {} to {} while it ran ({}; {})",
                s.by,
                s.target,
                at(a.start_us, s.from),
                at(a.start_us, s.to),
                dur(s.us()),
                if s.withdrawn {
                    "then withdrawn"
                } else {
                    "never withdrawn"
                }
            );
        }
    }
}

fn traffic(out: &mut String, a: &Analysis, verbose: bool) {
    let tr = &a.traffic;
    if tr.stops == 0 {
        out.push_str("Traffic: no stop events (no process stopped cleanly): no counter totals\n");
    } else {
        let _ = writeln!(
            out,
            "Traffic: from {}: sent {}, received {}, dropped {}, ignored {}",
            count(tr.stops, "stop event"),
            tr.sent,
            tr.received,
            tr.dropped,
            tr.ignored
        );
    }
    if verbose && !tr.by_type.is_empty() {
        let kinds: Vec<String> = tr.by_type.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = writeln!(out, "  sent by type: {}", kinds.join(", "));
    }
    let mut groups: Vec<_> = tr.drops.values().collect();
    groups.sort_by_key(|g| std::cmp::Reverse(g.count));
    if groups.is_empty() {
        out.push_str("  drop events: none\n");
    } else {
        let _ = writeln!(out, "  drop events by reason ({} in all):", tr.drop_events());
        let shown = if verbose { groups.len() } else { 3 };
        for g in groups.iter().take(shown) {
            let _ = writeln!(out, "    {} x {}", g.count, g.example);
        }
        if groups.len() > shown {
            let _ = writeln!(out, "    ... {} more reasons (--verbose)", groups.len() - shown);
        }
    }
    for (n, k) in &a.after_death {
        let _ = writeln!(
            out,
            "  node {n}: {} written after its process had ended, left out",
            count(*k, "event")
        );
    }
}

fn input(out: &mut String, a: &Analysis, verbose: bool) {
    let _ = writeln!(out, "Input: trace lines that did not parse: {}", a.bad_lines);
    let shown = if verbose { a.bad.len() } else { 3 };
    for b in a.bad.iter().take(shown) {
        let _ = writeln!(out, "  {}:{}: {}", b.file, b.line, b.why);
    }
    if a.bad.len() > shown {
        let _ = writeln!(out, "  ... {} more (--verbose)", a.bad.len() - shown);
    }
    if !a.unknown.is_empty() {
        let kinds: Vec<String> = a.unknown.iter().map(|(k, v)| format!("{k} x {v}")).collect();
        let _ = writeln!(out, "  unknown event kinds (counted, not judged): {}", kinds.join(", "));
    }
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
