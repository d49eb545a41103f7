//! Whom a detector may send to.

use crate::trace::NodeId;
use std::collections::BTreeSet;
use std::sync::Arc;

/// The nodes a detector may send to.
#[derive(Debug, Clone)]
pub(super) enum Reach {
    /// Every other member: the one member table every node shares, never copied (a ring of
    /// 16,384 would otherwise hold 16,384 ids in every node).
    Members(Arc<[NodeId]>, NodeId),
    /// These nodes (a mesh's neighbours; phi and SWIM, which keep state per peer anyway).
    Listed(BTreeSet<NodeId>),
}

impl Reach {
    pub(super) fn contains(&self, n: NodeId) -> bool {
        match self {
            Reach::Members(members, me) => n != *me && members.contains(&n),
            Reach::Listed(set) => set.contains(&n),
        }
    }

    pub(super) fn all(&self) -> Vec<NodeId> {
        match self {
            Reach::Members(members, me) => members.iter().copied().filter(|n| n != me).collect(),
            Reach::Listed(set) => set.iter().copied().collect(),
        }
    }
}
