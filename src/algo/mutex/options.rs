//! The options of a mutual-exclusion run (`--set` keys), parsed once with errors that name the
//! problem; a key no mutual-exclusion algorithm reads is refused.

use crate::algo::Setup;
use std::time::Duration;

/// Keys every mutual-exclusion node accepts, with what they mean.
pub const COMMON_KEYS: &[(&str, &str)] = &[
    ("think_ms", "mean think time between requests (exponential; 0: none)"),
    ("hold_ms", "how long a node holds the resource"),
    ("requests", "requests per node (absent: for the whole run)"),
    (
        "fencing",
        "the resource rejects a begin whose token is lower than the highest accepted",
    ),
    ("mesh", "set by coordlab mesh"),
];

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
        let requests = match setup.opts.get("requests") {
            None => None,
            Some(_) => Some(number(setup, "requests", 0)?),
        };
        Ok(Workload {
            think: Duration::from_millis(number(setup, "think_ms", d.think.as_millis() as u64)?),
            hold: Duration::from_millis(number(setup, "hold_ms", d.hold.as_millis() as u64)?),
            requests,
            fencing: boolean(setup, "fencing", false)?,
        })
    }
}

/// Checks that every `--set` key is one `algo_keys` or the common keys name, and that the
/// common values parse.
pub fn check_keys(setup: &Setup, algo: &str, algo_keys: &[&str]) -> Result<(), String> {
    for key in setup.opts.keys() {
        if !COMMON_KEYS.iter().any(|(k, _)| k == key) && !algo_keys.contains(&key.as_str()) {
            let mut known: Vec<&str> = COMMON_KEYS.iter().map(|(k, _)| *k).filter(|k| *k != "mesh").collect();
            known.extend(algo_keys);
            return Err(format!(
                "--set {key}: {algo} has no such option (known: {})",
                known.join(", ")
            ));
        }
    }
    Workload::parse(setup).map(|_| ())
}
