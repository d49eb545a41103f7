//! One section of the analysis per family of algorithms. A family adds its file (a type that
//! implements [`Section`] and a builder) and one line in [`FAMILIES`]; the summary, the
//! verdict and `--until done` then read it like the others.

use super::explain::Explanation;
use super::timeline::Timeline;
use super::Analysis;
use crate::trace::{NodeId, Record, RunDir};
use std::any::Any;
use std::fmt::Debug;
use std::sync::Arc;

/// Something the checker found that a user must see first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The property or flag, in a word or two (`uniqueness (term 11)`, `storm (term 4)`).
    pub property: String,
    /// What, in one line.
    pub what: String,
    /// A broken property (else a flag: a storm, say, which breaks no promise).
    pub violation: bool,
    /// What the ground truth says caused it, when the checker looked.
    pub explanation: Option<Explanation>,
}

impl Finding {
    /// A violation of `property` with no explanation.
    pub fn violation(property: impl Into<String>, what: impl Into<String>) -> Self {
        Finding {
            property: property.into(),
            what: what.into(),
            violation: true,
            explanation: None,
        }
    }

    /// Whether it fails the check: a violation not explained as inherent.
    pub fn fails(&self) -> bool {
        self.violation && !self.explanation.as_ref().is_some_and(|e| e.inherent)
    }
}

/// The checker's account of one family's properties in a run.
pub trait Section: Debug + Send + Sync {
    /// The family (`election`, `probe`, `mutex`, `clock`).
    fn family(&self) -> &'static str;
    /// Violations and flags, most important first.
    fn findings(&self) -> Vec<Finding>;
    /// One line per property, for the short summary.
    fn properties(&self, a: &Analysis) -> Vec<String>;
    /// Every detail, for `--verbose` and `summary.txt`.
    fn details(&self, a: &Analysis, out: &mut String);
    /// For a caller that knows the concrete type.
    fn as_any(&self) -> &dyn Any;
}

/// Builds a family's section from a run; None when the run has nothing of that family.
pub(crate) type Build = fn(&RunDir, &Timeline) -> Option<Arc<dyn Section>>;

/// The families other than elections (whose section the analysis keeps typed, as
/// [`Analysis::election`]): one line each, the family's name and its builder. A run gets the
/// section of its algorithm's family only.
pub(crate) const FAMILIES: &[(&str, Build)] = &[
    ("probe", super::ring_probe::section),
    ("mutex", super::mutex::section),
    ("clock", super::clock::section),
    ("snapshot", super::snapshot::section),
];

/// Follows one family's goal live, fed each trace record as the launcher reads it.
pub trait Progress: Debug + Send {
    /// One record of node `node`'s trace.
    fn feed(&mut self, node: NodeId, rec: &Record);
    /// Whether the goal holds for the live nodes `live`, in words.
    fn done(&self, live: &[NodeId]) -> Option<String>;
}

/// The family of algorithm `algo`, as its registry entry says (`election` for an unknown name:
/// a run directory may name an algorithm this build does not know).
pub fn family(algo: &str) -> &'static str {
    crate::catalog::find(algo).map_or("election", |e| e.family.name)
}

/// The live progress of `family` toward its goal, for `--until done`; None for the election
/// family, whose goal (one agreed live leader) the launcher reads from the beliefs it keeps.
pub fn progress(family: &str) -> Option<Box<dyn Progress>> {
    match family {
        "probe" => Some(Box::new(super::ring_probe::Laps::default())),
        _ => None,
    }
}
