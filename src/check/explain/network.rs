//! The explanations that come from the network: split-brain by partition, and a node
//! fooled by a link that dropped datagrams, lossy or cut (see [`explain`](super)).

use super::*;

/// The network left the parties in groups that could not talk (running nodes only: a dead
/// node splits nothing here) while the term was decided, or shortly before: split-brain by
/// partition. A split that ended within two timeouts of the term's first moment still divides
/// it, as a node back from a fall does (see `fell`): until a heartbeat crosses again, each
/// side still suspects the other (a soak's bully term began 3 ms after a heal, and the node
/// that had been cut off from the highest id took the term at once). Not when a party heard
/// from another side after the network joined them and before the term began: it could know.
pub(super) fn split_by_network(
    run: &RunDir,
    net: &Network,
    timeline: &Timeline,
    term: u64,
    parties: &[NodeId],
    moments: &BTreeSet<u64>,
    g: &Ground,
) -> Option<Explanation> {
    let at = |t: u64| crate::check::summary::at(g.start_us, t);
    let (&first, &last) = (moments.first()?, moments.last()?);
    let from = first.saturating_sub(2 * g.timeout_us.unwrap_or(0));
    let touched = |groups: &[Vec<NodeId>]| {
        groups
            .iter()
            .filter(|gr| parties.iter().any(|p| gr.contains(p)))
            .count()
    };
    // The nodes that relayed nothing at `t`: dead, or paused (a paused node forwards nothing
    // either, and on a graph a pause and a cut link together can split what neither splits
    // alone: a two-way ring cut at one link and paused at one node is in two pieces).
    let down_at = |t: u64| -> Vec<NodeId> {
        timeline
            .nodes()
            .filter(|&n| timeline.state_at(n, t).0 != Proc::Running)
            .collect()
    };
    let dead_at = |t: u64| -> Vec<NodeId> {
        timeline
            .nodes()
            .filter(|&n| !timeline.state_at(n, t).0.alive())
            .collect()
    };
    // The groups at `t` when the network, not the down nodes alone (a cut vertex, explained
    // elsewhere), kept the parties apart: with the dead nodes left out, else with the paused
    // ones too.
    let split_without = |t: u64, down: &[NodeId]| {
        let groups = net.groups_at(t, down);
        (touched(&groups) > 1 && touched(&net.groups_without_faults(down)) < 2).then_some(groups)
    };
    let split = |t: u64| split_without(t, &dead_at(t)).or_else(|| split_without(t, &down_at(t)));
    // The term's own moments first; else the last of the network's states in force from
    // `from` until the term began (the one at `from`, each change after it) that split them.
    let changes = || net.steps().iter().map(|s| s.t);
    let (t, groups) = moments.iter().find_map(|&t| Some((t, split(t)?))).or_else(|| {
        let before: Vec<(u64, Option<Vec<Vec<NodeId>>>)> = std::iter::once(from)
            .chain(changes().filter(|&t| t > from))
            .filter(|&t| t < first)
            .map(|t| (t, split(t)))
            .collect();
        // Named from the start of that split's stretch.
        let last = before.iter().rposition(|(_, g)| g.is_some())?;
        let start = before[..=last]
            .iter()
            .rposition(|(_, g)| g.is_none())
            .map_or(0, |i| i + 1);
        Some((before[start].0, before[last].1.clone()?))
    })?;
    let sides: Vec<&Vec<NodeId>> = groups
        .iter()
        .filter(|gr| parties.iter().any(|p| gr.contains(p)))
        .collect();
    let rules = net.rules_at(t);
    let mut what = match (rules.sides().len() > 1, rules.cuts().next().is_some()) {
        (true, false) => "a partition".to_string(),
        (false, true) => format!("the cut of {}", cut_words(rules)),
        (true, true) => format!("a partition and the cut of {}", cut_words(rules)),
        (false, false) => "the network".to_string(),
    };
    // The paused nodes, when the split needed them.
    let dead = dead_at(t);
    if split_without(t, &dead).is_none() {
        let paused: Vec<String> = down_at(t)
            .into_iter()
            .filter(|n| !dead.contains(n))
            .map(|n| {
                let since = timeline.state_at(n, t).1.map(at).unwrap_or_default();
                format!("node {n} (since {since})")
            })
            .collect();
        what = format!("{what} and the pause of {}", paused.join(" and "));
    }
    let each: Vec<String> = sides
        .iter()
        .map(|side| {
            let led: Vec<NodeId> = parties.iter().copied().filter(|p| side.contains(p)).collect();
            format!("{} (with {})", group_words(side), group_words(&led))
        })
        .collect();
    // Split only before the term: say when the network let them talk again.
    let rejoined = changes().find(|&c| c > t && c <= first && split(c).is_none());
    let side_of = |n: NodeId| sides.iter().position(|s| s.contains(&n));
    let heard_across = |since: u64| {
        run.node_events.iter().any(|r| {
            let Event::Recv { from, .. } = r.event else {
                return false;
            };
            r.t >= since
                && r.t < first
                && r.node
                    .is_some_and(|n| parties.contains(&n) && side_of(n) != side_of(from))
                && side_of(from).is_some()
        })
    };
    if rejoined.is_some_and(heard_across) {
        return None;
    }
    let before = rejoined
        .map(|c| {
            format!(
                "; the network joined them again at {}, within two timeouts of term {term} (decided from {} to {}), \
                 too soon for either side to hear from the other",
                at(c),
                at(first),
                at(last)
            )
        })
        .unwrap_or_default();
    Some(Explanation::inherent(
        term,
        format!(
            "split-brain by partition: at {} {what} left {} unable to reach each other{before}, and each side \
             elected its own (inherent without majority mode)",
            at(t),
            each.join(" and ")
        ),
    ))
}

/// `the link 2-10`, `the links 2-10 and 3->4`.
fn cut_words(rules: &crate::net::NetRules) -> String {
    let cuts: BTreeSet<(NodeId, NodeId)> = rules.cuts().collect();
    let mut words = Vec::new();
    for &(a, b) in &cuts {
        if cuts.contains(&(b, a)) {
            if a < b {
                words.push(format!("{a}-{b}"));
            }
        } else {
            words.push(format!("{a}->{b}"));
        }
    }
    match words.as_slice() {
        [one] => format!("the link {one}"),
        _ => format!("the links {}", words.join(", ")),
    }
}

/// A running node was suspected, over a link dropping datagrams then (lossy, or cut: see
/// [`Network::dropping`]), by or of one of the leaders (see the module's rules): the
/// suspecting side could not tell it from dead.
pub(super) fn fooled_by_a_link(
    run: &RunDir,
    timeline: &Timeline,
    term: u64,
    parties: &[NodeId],
    moments: &BTreeSet<u64>,
    net: &Network,
    g: &Ground,
) -> Option<Explanation> {
    let at = |t: u64| crate::check::summary::at(g.start_us, t);
    let (&first, &last) = (moments.first()?, moments.last()?);
    // The suspicion that started the term comes at its first moment; one timeout before
    // covers a suspicion that preceded the election start by a step.
    let from = first.saturating_sub(g.timeout_us.unwrap_or(300_000));
    // An earlier suspicion counts while it still stood when the term began: the suspecter
    // neither withdrew it nor restarted (a ring repaired around a node it could not hear from
    // goes on skipping it, term after term), and its target still ran. When each node last
    // withdrew a suspicion of each target, and last started, before the term: one pass.
    let mut withdrawn: BTreeMap<(NodeId, NodeId), u64> = BTreeMap::new();
    let mut started: BTreeMap<NodeId, u64> = BTreeMap::new();
    for e in run.node_events.iter().filter(|e| e.t < first) {
        match (e.node, &e.event) {
            (Some(by), Event::Unsuspect { target }) => {
                let last = withdrawn.entry((by, *target)).or_insert(e.t);
                *last = (*last).max(e.t);
            }
            (Some(by), Event::Start { .. }) => {
                let last = started.entry(by).or_insert(e.t);
                *last = (*last).max(e.t);
            }
            _ => {}
        }
    }
    let standing = |by: NodeId, target: NodeId, since: u64| {
        timeline.state_at(target, first).0 == Proc::Running
            && withdrawn.get(&(by, target)).is_none_or(|&t| t <= since)
            && started.get(&by).is_none_or(|&t| t <= since)
    };
    let suspicions = run
        .node_events
        .iter()
        .filter(|r| r.t <= last)
        .filter(|r| match (r.node, &r.event) {
            (Some(by), Event::Suspect { target, .. }) => {
                let involved = parties.contains(target) || parties.contains(&by);
                involved && (r.t >= from || standing(by, *target, r.t))
            }
            _ => false,
        });
    for r in suspicions {
        let Event::Suspect {
            target,
            silence_ms,
            ref cause,
            ..
        } = r.event
        else {
            continue;
        };
        let Some(by) = r.node else { continue };
        // The suspected leader itself, or a leader that suspected a running node it would
        // otherwise have deferred to (bully: the higher id whose OK was lost).
        let involved = parties.contains(&target) || parties.contains(&by);
        if !involved || timeline.state_at(target, r.t).0 != Proc::Running {
            continue;
        }
        // A heartbeat goes from the suspected node to the suspecter; a forward and its ACK
        // both ways.
        let drop = net
            .dropping(target, by, r.t)
            .or_else(|| (cause != "heartbeat").then(|| net.dropping(by, target, r.t))?);
        let Some(drop) = drop else {
            continue;
        };
        let what = if cause.is_empty() {
            "an answer".to_string()
        } else {
            format!("its {cause}")
        };
        let kind = drop.kind;
        let still = match r.t < from {
            true => format!(", a suspicion still standing when term {term} began at {}", at(first)),
            false => String::new(),
        };
        return Some(Explanation::inherent(
            term,
            format!(
                "fooled by {kind}: at {} node {by} suspected node {target} after {silence_ms} ms without {what}, \
                 but node {target} was running: {}{still}; a timeout cannot tell {kind} from a dead node, so \
                 the two sides of the suspicion each elected (inherent without majority mode)",
                at(r.t),
                drop.words,
            ),
        ));
    }
    lost_between_parties(run, timeline, term, parties, (from, last), net, g)
}

/// A message from one party to another, sent over a link losing datagrams while the term was
/// decided, never arrived, and no message of its kind from that sender arrived after it: the
/// receiver went on without it (bully: a higher node's OK lost, so the lower one claimed after
/// its timeout) and could not tell the silence from a dead sender.
fn lost_between_parties(
    run: &RunDir,
    timeline: &Timeline,
    term: u64,
    parties: &[NodeId],
    (from, last): (u64, u64),
    net: &Network,
    g: &Ground,
) -> Option<Explanation> {
    let at = |t: u64| crate::check::summary::at(g.start_us, t);
    let window = || run.node_events.iter().filter(|r| r.t >= from && r.t <= last);
    // When each party last received a message of each kind from another: (receiver, sender,
    // name) -> time. A send arrived, or was made good, if that is at or after it.
    let mut heard: BTreeMap<(NodeId, NodeId, &str), u64> = BTreeMap::new();
    for r in window() {
        if let (Some(to), Event::Recv { from: by, msg, .. }) = (r.node, &r.event) {
            if parties.contains(&to) && parties.contains(by) {
                let last = heard.entry((to, *by, msg.as_str())).or_insert(r.t);
                *last = (*last).max(r.t);
            }
        }
    }
    for r in window() {
        let (Some(by), Event::Send { to, msg, .. }) = (r.node, &r.event) else {
            continue;
        };
        if by == *to || !parties.contains(&by) || !parties.contains(to) {
            continue;
        }
        if timeline.state_at(*to, r.t).0 != Proc::Running {
            continue;
        }
        if heard.get(&(*to, by, msg.as_str())).is_some_and(|&t| t >= r.t) {
            continue;
        }
        let Some(drop) = net.dropping(by, *to, r.t) else {
            continue;
        };
        return Some(Explanation::inherent(
            term,
            format!(
                "fooled by {}: at {} node {by}'s {msg} to node {to} was lost ({}), and nothing of its kind from \
                 node {by} reached node {to} while the term was decided; a timeout cannot tell a lost message from \
                 a dead sender, so each claimed the term (inherent without majority mode)",
                drop.kind,
                at(r.t),
                drop.words,
            ),
        ));
    }
    None
}
