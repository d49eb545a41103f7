//! The summary's election section in words: properties, terms and overlaps of leaders.

use super::*;

/// The property a violation breaks, in a word or two: `uniqueness (term 11)`.
pub(crate) fn property_name(v: &Violation) -> String {
    match v {
        Violation::Uniqueness { term, .. } => format!("uniqueness (term {term})"),
        Violation::TermAgreement { term, .. } => format!("agreement within a term (term {term})"),
        Violation::AbsurdTerm { term, .. } => format!("absurd term ({term})"),
        Violation::Agreement { .. } => "agreement".into(),
        Violation::Termination { .. } => "termination".into(),
    }
}

/// The election section's property lines: one each.
pub(crate) fn election_properties(a: &Analysis, e: &ElectionFacts) -> Vec<String> {
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
            let owed = match e.owed_only_without_loss {
                true => "with a majority running and no loss",
                false => "with a majority running",
            };
            let judged = match e.majority_leaderless {
                Some((m, bound)) => format!(
                    "; {owed}: longest {} ({}, bound {})",
                    dur(m.to - m.from),
                    if m.to - m.from > bound { "VIOLATED" } else { "ok" },
                    dur(bound)
                ),
                None => format!("; never {owed}"),
            };
            format!(
                "leaderless: longest stretch {} ({}); {} in all{judged}",
                from_to(a.start_us, l.from, l.to),
                dur(l.to - l.from),
                dur(total)
            )
        }
    });
    out
}

/// The election section's details: every term, every leadership interval.
pub(crate) fn election_details(out: &mut String, a: &Analysis, e: &ElectionFacts) {
    election(out, a, e);
}

pub(super) fn election(out: &mut String, a: &Analysis, e: &ElectionFacts) {
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
pub(super) fn properties(a: &Analysis, e: &ElectionFacts) -> Vec<String> {
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

pub(super) fn term_line(ts: &TermSummary, start_us: u64) -> String {
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

pub(super) fn overlap(out: &mut String, a: &Analysis, e: &ElectionFacts) {
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
        let (when, long) = (from_to(a.start_us, sp.from, sp.to), dur(sp.to - sp.from));
        let _ = writeln!(out, "  node {}, term {}: {when} ({long}; {end})", sp.node, sp.term);
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
            "    {} ({}): {}",
            from_to(a.start_us, o.from, o.to),
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
