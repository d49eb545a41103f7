//! The options of a mutual-exclusion run (`--set` keys, declared in the registry's `MUTEX`
//! family), parsed with errors that name the problem.

use crate::algo::Setup;
use std::time::Duration;

/// The workload every node runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// Mean think time.
    pub think: Duration,
    /// Hold time.
    pub hold: Duration,
    /// Requests per node; None: for the whole run.
    pub requests: Option<u64>,
    /// Whether the resource checks fencing tokens.
    pub fencing: bool,
}

impl Default for Workload {
    fn default() -> Self {
        Workload {
            think: Duration::from_millis(50),
            hold: Duration::from_millis(10),
            requests: None,
            fencing: false,
        }
    }
}

/// A whole number option, `default` when absent.
pub fn number(setup: &Setup, key: &str, default: u64) -> Result<u64, String> {
    match setup.opts.get(key) {
        None => Ok(default),
        Some(v) => v
            .parse::<u64>()
            .map_err(|_| format!("--set {key}={v}: expected a whole number")),
    }
}

/// A boolean option, `default` when absent.
pub fn boolean(setup: &Setup, key: &str, default: bool) -> Result<bool, String> {
    match setup.opts.get(key).map(String::as_str) {
        None => Ok(default),
        Some("true" | "1" | "yes") => Ok(true),
        Some("false" | "0" | "no") => Ok(false),
        Some(v) => Err(format!("--set {key}={v}: expected true or false")),
    }
}

impl Workload {
    /// The workload of `setup`, checked.
    pub fn parse(setup: &Setup) -> Result<Self, String> {
        let d = Workload::default();
        // 0 (the default): no end.
        let requests = Some(number(setup, "requests", 0)?).filter(|&k| k > 0);
        Ok(Workload {
            think: Duration::from_millis(number(setup, "think_ms", d.think.as_millis() as u64)?),
            hold: Duration::from_millis(number(setup, "hold_ms", d.hold.as_millis() as u64)?),
            requests,
            fencing: boolean(setup, "fencing", false)?,
        })
    }
}
