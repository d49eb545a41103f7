//! Each side of a network split and its longest stretch without a leader of its own.

use super::*;

/// One side of a network split and its longest stretch without a leader of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SideGap {
    /// The split's stretch: from, microseconds.
    pub split_from: u64,
    /// To, microseconds.
    pub split_to: u64,
    /// The nodes of the side.
    pub side: Vec<NodeId>,
    /// The longest stretch within the split during which no running node of the side believed
    /// it led: (from, to), microseconds; None when one always did.
    pub longest: Option<(u64, u64)>,
    /// The nodes of the side that believed they led at some moment of the split.
    pub leaders: Vec<NodeId>,
}

/// For every stretch the network split the nodes, every side's longest stretch without a
/// leader on its side (a node of the side, running, believing it led).
pub(crate) fn side_gaps(
    net: &Network,
    spans: &[super::super::beliefs::LeadSpan],
    timeline: &super::super::timeline::Timeline,
) -> Vec<SideGap> {
    use super::super::timeline::Proc;
    let mut out = Vec::new();
    for (from, to, groups) in net.splits(timeline.end_us) {
        for side in groups {
            let mine: Vec<&super::super::beliefs::LeadSpan> = spans
                .iter()
                .filter(|s| side.contains(&s.node) && s.from < to && s.to > from)
                .collect();
            let mut points: BTreeSet<u64> = BTreeSet::from([from, to]);
            for s in &mine {
                points.insert(s.from.clamp(from, to));
                points.insert(s.to.clamp(from, to));
            }
            for n in &side {
                for c in timeline.changes.get(n).into_iter().flatten() {
                    points.insert(c.t.clamp(from, to));
                }
            }
            let points: Vec<u64> = points.into_iter().collect();
            let mut gaps: Vec<(u64, u64)> = Vec::new();
            for w in points.windows(2) {
                let (a, b) = (w[0], w[1]);
                let led = mine
                    .iter()
                    .any(|s| s.from <= a && s.to >= b && timeline.state_at(s.node, a).0 == Proc::Running);
                if led {
                    continue;
                }
                match gaps.last_mut() {
                    Some(g) if g.1 == a => g.1 = b,
                    _ => gaps.push((a, b)),
                }
            }
            let mut leaders: Vec<NodeId> = mine.iter().map(|s| s.node).collect();
            leaders.sort_unstable();
            leaders.dedup();
            out.push(SideGap {
                split_from: from,
                split_to: to,
                side,
                longest: gaps.into_iter().max_by_key(|g| g.1 - g.0),
                leaders,
            });
        }
    }
    out
}
