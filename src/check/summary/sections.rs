//! The summary's closing sections in words: the network, suspicions, traffic and the input.

use super::*;

/// What the network did (nothing when no rule was ever set), and each side's longest stretch
/// without a leader while the network split the nodes.
pub(super) fn network(out: &mut String, a: &Analysis, verbose: bool) {
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
        let side = super::super::network::group_words(&g.side);
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

pub(super) fn suspicions(out: &mut String, a: &Analysis, verbose: bool) {
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
    let just_back = a
        .suspicions
        .iter()
        .filter(|s| s.cut_off.is_none() && s.running_within_silence())
        .count();
    let just_back = match just_back {
        0 => String::new(),
        n => format!(", {n} of which had been resumed from a pause within its silence"),
    };
    let _ = writeln!(
        out,
        "Suspicions (judged from faults.jsonl): {} in all, {right} true, {wrong} false ({paused} of a paused node, {} of a running one{just_back}{by_net})",
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
                "  not healed: node {} suspected node {} from {} while it ran ({}; {})",
                s.by,
                s.target,
                from_to(a.start_us, s.from, s.to),
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

pub(super) fn traffic(out: &mut String, a: &Analysis, verbose: bool) {
    let tr = &a.traffic;
    if tr.stops == 0 {
        out.push_str("Traffic: no stop events (no process stopped cleanly): no counter totals\n");
    } else {
        // The datagrams only when some message shared one: otherwise they are the messages.
        let packed = match tr.datagrams {
            d if d > 0 && d != tr.sent => format!(" (in {d} datagrams)"),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "Traffic: from {}: sent {}{packed}, received {}, dropped {}, ignored {}",
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

pub(super) fn input(out: &mut String, a: &Analysis, verbose: bool) {
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
