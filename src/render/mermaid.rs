//! A Mermaid `sequenceDiagram` of a run (or a window of it), as the course draws them: one
//! participant per node, one arrow per message at its receive (a cross for one never
//! received), notes for state changes, suspicions and the launcher's faults.

use super::story::{MarkKind, SpanKind, Story};
use std::fmt::Write;

/// Mermaid refuses diagrams above 50 000 characters (its `maxTextSize`); past this many
/// steps the rest is summed up in a note naming `--from`/`--to`.
pub(crate) const MAX_STEPS: usize = 400;

/// Text Mermaid shows verbatim: its entity codes for the characters its parser reads.
fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '#' => out.push_str("#35;"),
            ';' => out.push_str("#59;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// The diagram of `story`.
pub(crate) fn sequence(story: &Story) -> String {
    // (time, order among equals, line)
    let mut steps: Vec<(u64, u8, String)> = Vec::new();
    for a in &story.arrows {
        match a.recv {
            Some(r) => steps.push((r, 1, format!("n{}->>n{}: {}", a.from, a.to, text(&a.brief)))),
            None => steps.push((
                a.sent,
                1,
                format!("n{}-xn{}: {} (never received)", a.from, a.to, text(&a.brief)),
            )),
        }
    }
    for m in &story.marks {
        if m.kind == MarkKind::Unsuspect {
            continue;
        }
        steps.push((m.t, 2, format!("Note over n{}: {}", m.node, text(&m.text))));
    }
    for sp in &story.spans {
        let (start, end) = match sp.kind {
            SpanKind::Paused => ("paused (SIGSTOP)", "resumed (SIGCONT)"),
            SpanKind::Dead => ("dead", "restarted"),
            SpanKind::Critical => ("enters the critical section", "leaves the critical section"),
        };
        if sp.from >= story.t0 {
            steps.push((sp.from, 0, format!("Note over n{}: node {} {start}", sp.node, sp.node)));
        }
        if sp.to < story.t1 {
            steps.push((sp.to, 0, format!("Note over n{}: node {} {end}", sp.node, sp.node)));
        }
    }
    steps.sort_by_key(|(t, order, _)| (*t, *order));
    let mut s = String::from("sequenceDiagram\n");
    for n in &story.nodes {
        let _ = writeln!(s, "    participant n{n} as node {n}");
    }
    let shown = steps.len().min(MAX_STEPS);
    for (_, _, line) in &steps[..shown] {
        let _ = writeln!(s, "    {line}");
    }
    if steps.len() > shown {
        let (first, last) = (story.nodes.first(), story.nodes.last());
        if let (Some(a), Some(b)) = (first, last) {
            let _ = writeln!(
                s,
                "    Note over n{a},n{b}: {} more steps from +{:.0} ms not drawn: draw a window with --from/--to",
                steps.len() - shown,
                story.ms(steps[shown].0)
            );
        }
    }
    s
}
