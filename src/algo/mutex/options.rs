//! The options of a mutual-exclusion run: the `MUTEX` family's `--set` keys, declared once
//! ([`MutexOptions`]), and the workload they make.

use crate::algo::options::{options, Kind};
use crate::algo::Setup;
use std::time::Duration;

options! {
    /// The keys every mutual-exclusion algorithm takes (its wrapper's workload).
    pub(crate) struct MutexOptions {
        think_ms: u64 = 50, Kind::Int { min: 0, max: 3_600_000 },
            "mean think time between requests, ms (exponential; 0: none); also --think-ms";
        hold_ms: u64 = 10, Kind::Int { min: 0, max: 3_600_000 },
            "how long a node holds the resource, ms; also --hold-ms";
        requests: u64 = 0, Kind::Int { min: 0, max: u64::MAX },
            "requests per node, 0: no end (--until done ends the run when all are served); also --requests";
        fencing: bool = false, Kind::Bool,
            "the resource rejects a begin whose token is below the highest accepted; also --fencing";
    }
}

/// The workload every node runs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Workload {
    /// Mean think time.
    pub think: Duration,
    /// Hold time.
    pub hold: Duration,
    /// Requests per node; None: for the whole run.
    pub requests: Option<u64>,
    /// Whether the resource checks fencing tokens.
    pub fencing: bool,
}

impl From<MutexOptions> for Workload {
    fn from(o: MutexOptions) -> Self {
        Workload {
            think: Duration::from_millis(o.think_ms),
            hold: Duration::from_millis(o.hold_ms),
            // 0 (the default): no end.
            requests: Some(o.requests).filter(|&k| k > 0),
            fencing: o.fencing,
        }
    }
}

impl Default for Workload {
    fn default() -> Self {
        MutexOptions::default().into()
    }
}

impl Workload {
    /// The workload of `setup`, checked.
    pub fn parse(setup: &Setup) -> Result<Self, String> {
        MutexOptions::from_setup(setup).map(Workload::from)
    }
}
