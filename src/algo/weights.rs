//! Weighted majority votes: the quorum arithmetic that majority-mode elections use, and that a
//! majority-quorum mutex or Maekawa's votes can reuse.
//!
//! Every member has a weight (1 unless `--set weights=ID:W,...` says otherwise); a set of nodes
//! is a majority when its weight is more than half of the total, so two majorities always share
//! a node: two disjoint sides of a partition can never both have one.

use crate::algo::options::{id_list, IdListError};
use crate::algo::{NodeId, Setup};
use std::collections::BTreeMap;

/// The largest weight accepted, so that sums cannot overflow.
pub(crate) const MAX_WEIGHT: u64 = 1_000_000;

/// Every member's weight, and their total.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Weights {
    of: BTreeMap<NodeId, u64>,
    total: u64,
}

impl Weights {
    /// Weight 1 for every member.
    pub(crate) fn equal(members: &[NodeId]) -> Self {
        Self::from_map(members.iter().map(|&m| (m, 1)).collect())
    }

    fn from_map(of: BTreeMap<NodeId, u64>) -> Self {
        Weights {
            total: of.values().sum(),
            of,
        }
    }

    /// The weights of `setup`'s members: 1 each, unless `weights=ID:W,...` (W from 1 to
    /// [`MAX_WEIGHT`]) says otherwise; the error names the bad item.
    pub fn parse(setup: &Setup) -> Result<Self, String> {
        let mut w: BTreeMap<NodeId, u64> = setup.members.iter().map(|&m| (m, 1)).collect();
        let Some(spec) = setup.opts.get("weights") else {
            return Ok(Self::from_map(w));
        };
        let given = id_list::<u64>(spec, &setup.members).map_err(|e| match e {
            IdListError::NotPair(part) => format!("weights: '{part}' is not ID:WEIGHT (e.g. weights=1:5,2:3)"),
            IdListError::BadId { id, .. } => format!("weights: '{id}' is not a node id"),
            IdListError::BadValue { value, .. } => format!("weights: '{value}' is not a whole number"),
            IdListError::NotMember(id) => format!("weights: node {id} is not a member"),
            IdListError::Twice(id) => format!("weights: node {id} appears twice"),
        })?;
        for (id, wt) in given {
            if !(1..=MAX_WEIGHT).contains(&wt) {
                return Err(format!(
                    "weights: node {id} has weight {wt}; a weight is 1 to {MAX_WEIGHT}"
                ));
            }
            w.insert(id, wt);
        }
        Ok(Self::from_map(w))
    }

    #[cfg(test)]
    /// Each member's weight.
    pub fn of(&self) -> &BTreeMap<NodeId, u64> {
        &self.of
    }

    /// The weight of `nodes` together (0 for a non-member).
    pub(crate) fn weight<'a>(&self, nodes: impl IntoIterator<Item = &'a NodeId>) -> u64 {
        nodes.into_iter().map(|n| self.of.get(n).copied().unwrap_or(0)).sum()
    }

    /// Whether weight `w` is more than half of the total.
    pub(crate) fn is_majority(&self, w: u64) -> bool {
        2 * w > self.total
    }

    /// Whether `nodes` together hold a majority.
    pub(crate) fn has_majority<'a>(&self, nodes: impl IntoIterator<Item = &'a NodeId>) -> bool {
        self.is_majority(self.weight(nodes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_majorities_always_share_weight() {
        let mut s = Setup::new(1, vec![1, 2, 3, 4, 5], vec![]);
        s.opts.insert("weights".into(), "1:3,2:3".into());
        let w = Weights::parse(&s).unwrap();
        assert_eq!(w.weight(&[1, 2]), 6);
        assert!(w.has_majority(&[1, 2]), "6 of 9");
        assert!(!w.has_majority(&[3, 4, 5]), "3 of 9");
        assert!(!w.has_majority(&[1, 3]), "4 of 9");
        assert!(Weights::equal(&[1, 2, 3, 4]).has_majority(&[1, 2, 3]));
        assert!(
            !Weights::equal(&[1, 2, 3, 4]).has_majority(&[1, 2]),
            "a tie is no majority"
        );
    }
}
