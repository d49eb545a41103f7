//! The mutual-exclusion section in words: entries, overlaps with their lessons and faults, FIFO.

use super::*;

/// The section in words.
pub fn summary(f: &MutexFacts, start_us: u64) -> String {
    let ms = |t: u64| format!("{:+} ms", (t as i64 - start_us as i64) / 1000);
    let mut out = String::from("Mutual exclusion\n");
    let _ = writeln!(
        out,
        "  {} requests, {} entries by the nodes' traces; the resource accepted {} accesses{}",
        f.requests,
        f.entries.len(),
        f.accesses,
        if f.fencing {
            format!(" and rejected {} stale (fencing on)", f.rejected)
        } else {
            String::new()
        }
    );
    if f.pending > 0 {
        let _ = writeln!(out, "  {} requests still waiting when the run ended", f.pending);
    }
    // The first few of each kind say the story; the rest are counted.
    const SHOWN: usize = 3;
    let fenced = match (f.fencing, f.breaches.is_empty()) {
        (true, true) => " (the resource fenced the stale holder off)",
        (true, false) => " (the resource did NOT fence it off: it accepted a lower token after a higher one)",
        _ => "",
    };
    type Headline<'a> = &'a dyn Fn(&Overlap) -> String;
    let kinds: [(&[Overlap], Headline, &str); 2] = [
        (
            &f.resource_violations,
            &|o| {
                format!(
                    "VIOLATION at the resource at {}: nodes {:?} held it at once",
                    ms(o.t),
                    o.nodes
                )
            },
            "violations at the resource",
        ),
        (
            &f.node_overlaps,
            &|o| {
                format!(
                    "two holders by the nodes' own traces at {}: nodes {:?}{fenced}",
                    ms(o.t),
                    o.nodes
                )
            },
            "times two nodes held by their own traces",
        ),
    ];
    for (list, headline, what) in kinds {
        for o in list.iter().take(SHOWN) {
            let _ = writeln!(out, "  {}", headline(o));
            let _ = writeln!(out, "    faults before it: {}", faults(o));
            lesson_line(&mut out, o);
        }
        more(&mut out, list.len(), SHOWN, what);
    }
    if f.resource_violations.is_empty() && f.node_overlaps.is_empty() {
        out.push_str("  never two holders at once, by the nodes' traces and by the resource\n");
    }
    for d in f.dead_holders.iter().take(SHOWN) {
        let dead: Vec<String> = d
            .dead
            .iter()
            .map(|(n, t)| format!("node {n} had died at {}", ms(*t)))
            .collect();
        let _ = writeln!(
            out,
            "  not a violation: the resource counted nodes {:?} as holders at {}, but {}: a killed holder is not a holder",
            d.nodes,
            ms(d.t),
            dead.join(", ")
        );
    }
    more(
        &mut out,
        f.dead_holders.len(),
        SHOWN,
        "resource violations left out because a holder had died",
    );
    for b in f.breaches.iter().take(SHOWN) {
        let _ = writeln!(
            out,
            "  VIOLATION: {}",
            super::super::mutex_progress::breach_line(b, start_us)
        );
    }
    more(&mut out, f.breaches.len(), SHOWN, "lower tokens accepted");
    let _ = writeln!(
        out,
        "  progress: {} longer than {} ms with requests waiting and no entry",
        match f.stalls.len() {
            0 => "no stall".to_string(),
            1 => "1 stall".to_string(),
            k => format!("{k} stalls"),
        },
        f.bound_us / 1000
    );
    for s in &f.stalls {
        let _ = writeln!(
            out,
            "    {}: {}",
            if s.explained { "EXPLAINED" } else { "VIOLATED" },
            super::super::mutex_progress::stall_line(s, start_us)
        );
        let _ = writeln!(out, "      cause: {}", s.cause);
    }
    if f.fault_free {
        match f.starved.is_empty() {
            true => out.push_str("  the run was fault-free and no request starved\n"),
            false => {
                let _ = writeln!(out, "  STARVED (fault-free, waited over 10 s): {:?}", f.starved);
            }
        }
    }
    match &f.fifo {
        Some(Ok(n)) => {
            let _ = writeln!(
                out,
                "  FIFO: the coordinator served all {n} requests in the order they reached it"
            );
        }
        Some(Err(e)) => {
            let _ = writeln!(out, "  FIFO VIOLATED: {e}");
        }
        None => {}
    }
    let _ = writeln!(
        out,
        "  verdict of the mutex section: {}",
        if f.violated() { "VIOLATED" } else { "held" }
    );
    out
}

pub(super) fn lesson_line(out: &mut String, o: &Overlap) {
    match &o.explained {
        Some(w) => {
            let _ = writeln!(out, "    EXPLAINED (the faults' lesson, still a violation): {w}");
        }
        None => out.push_str("    NOT explained by the faults\n"),
    }
}

/// The explanation of `o` for a finding: a lesson the algorithm teaches (it still fails the
/// check, as the election's by-design overlaps do), None when nothing explains it.
pub(super) fn lesson(o: &Overlap) -> Option<super::super::explain::Explanation> {
    o.explained.as_ref().map(|w| super::super::explain::Explanation {
        term: 0,
        inherent: false,
        by_design: true,
        words: w.clone(),
    })
}

pub(super) fn more(out: &mut String, total: usize, shown: usize, what: &str) {
    if total > shown {
        let _ = writeln!(out, "  ... {total} {what} in all");
    }
}

/// `; the network then: ...`, or nothing when the network was clear.
pub(super) fn network_then(o: &Overlap) -> String {
    o.network
        .as_ref()
        .map_or(String::new(), |n| format!("; the network then: {n}"))
}

pub(super) fn faults(o: &Overlap) -> String {
    if o.faults.is_empty() {
        "none".into()
    } else {
        o.faults.join(", ")
    }
}
