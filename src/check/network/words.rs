//! The network's doings in words: a blocked link, a group of nodes.

use super::*;

/// `the link 2-10 was cut`, `the link 3->4 was cut (one way)`, `a partition separated them
/// (1,2 | 3,4)`.
pub(super) fn link_blocked_words(rules: &NetRules, a: NodeId, b: NodeId) -> String {
    let cut: BTreeSet<(NodeId, NodeId)> = rules.cuts().collect();
    if cut.contains(&(a, b)) {
        if cut.contains(&(b, a)) {
            format!("the link {}-{} was cut", a.min(b), a.max(b))
        } else {
            format!("the link {a}->{b} was cut (one way)")
        }
    } else if rules.blocked(a, b) {
        let sides: Vec<String> = rules
            .sides()
            .iter()
            .map(|s| s.iter().map(u64::to_string).collect::<Vec<_>>().join(","))
            .collect();
        format!("a partition separated {a} and {b} ({})", sides.join(" | "))
    } else {
        format!("{}% loss on the link {a}->{b}", rules.loss(a, b))
    }
}

/// `nodes 1, 2 and 3` / `node 4`.
pub(crate) fn group_words(ns: &[NodeId]) -> String {
    let ids: Vec<String> = ns.iter().map(u64::to_string).collect();
    match ids.as_slice() {
        [one] => format!("node {one}"),
        [init @ .., last] => format!("nodes {} and {last}", init.join(", ")),
        [] => "no node".into(),
    }
}
