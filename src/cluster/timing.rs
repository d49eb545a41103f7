//! The heartbeat period and failure-detector timeout of a launch of `n` nodes, when the user
//! does not give them.
//!
//! The leader heartbeats every other member each period, so its traffic grows with `n`.
//! Measured on two cores: at 4,096 nodes and the old fixed 100 ms (41,000 heartbeats a
//! second) the leader needed ~230 ms to send one round, followers went without a heartbeat for
//! most of the 300 ms timeout, and under load they suspected a live leader and started new
//! terms (3-4 terms, or tens under heavy load). So the defaults are 100 ms and 300 ms times
//! `scale(n)`, which keeps the leader at most [`HEARTBEATS_PER_SEC`]; the timeout stays three
//! periods, and a failure is still detected, `scale(n)` times later. A value the user gives is
//! used exactly, never changed.

use crate::error::{usage, CliError};

/// The default heartbeat period up to [`PER_PERIOD`] + 1 nodes, ms.
pub(crate) const BASE_HEARTBEAT_MS: u64 = crate::algo::DEFAULT_HEARTBEAT_MS;
/// The default failure-detector timeout up to [`PER_PERIOD`] + 1 nodes, ms.
pub(crate) const BASE_TIMEOUT_MS: u64 = crate::algo::DEFAULT_TIMEOUT_MS;
/// Heartbeats a second the leader sends at most with the defaults.
pub(crate) const HEARTBEATS_PER_SEC: u64 = 2_000;
/// Heartbeats the leader sends in one base period at most with the defaults.
pub(crate) const PER_PERIOD: u64 = HEARTBEATS_PER_SEC * BASE_HEARTBEAT_MS / 1000;

/// A launch's timing, and how it was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// Heartbeat period, ms.
    pub heartbeat_ms: u64,
    /// Failure-detector timeout, ms.
    pub timeout_ms: u64,
    /// The factor the defaults were multiplied by (1: the base defaults).
    pub scale: u64,
    /// Whether any value was a default (false: both were given).
    pub defaulted: bool,
}

impl Timing {
    /// How the banner says the defaults were chosen, when they were scaled up.
    pub fn note(&self, n: usize) -> Option<String> {
        (self.defaulted && self.scale > 1).then(|| {
            format!(
                "defaults {BASE_HEARTBEAT_MS}/{BASE_TIMEOUT_MS} ms x{} for {n} nodes: the leader sends at most \
                 {HEARTBEATS_PER_SEC} heartbeats a second; --heartbeat-ms/--timeout-ms set them",
                self.scale
            )
        })
    }
}

/// The factor the default timing is multiplied by for `n` nodes: 1 up to `PER_PERIOD` + 1
/// nodes, then enough periods that `n - 1` heartbeats fit in the budget.
pub(crate) fn scale(n: usize) -> u64 {
    (n.saturating_sub(1) as u64).div_ceil(PER_PERIOD).max(1)
}

/// The timing of a launch of `n` nodes: `heartbeat_ms` and `timeout_ms` as given, each one not
/// given from the defaults scaled for `n`. Refuses a timeout not above the heartbeat period,
/// naming a value that was a scaled default.
pub fn resolve(n: usize, heartbeat_ms: Option<u64>, timeout_ms: Option<u64>) -> Result<Timing, CliError> {
    let s = scale(n);
    let t = Timing {
        heartbeat_ms: heartbeat_ms.unwrap_or(BASE_HEARTBEAT_MS * s),
        timeout_ms: timeout_ms.unwrap_or(BASE_TIMEOUT_MS * s),
        scale: s,
        defaulted: heartbeat_ms.is_none() || timeout_ms.is_none(),
    };
    if t.timeout_ms > t.heartbeat_ms {
        return Ok(t);
    }
    let (hb, to) = (t.heartbeat_ms, t.timeout_ms);
    // Only a scaled default is named: the base one reads as it always did.
    let default = |given: Option<u64>| match given.is_none() && s > 1 {
        true => format!(" (the default for {n} nodes)"),
        false => String::new(),
    };
    Err(usage(format!(
        "--timeout-ms {to}{} must be above --heartbeat-ms {hb}{}: nodes would suspect live peers between \
         their heartbeats",
        default(timeout_ms),
        default(heartbeat_ms)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_launches_keep_the_base_defaults() {
        for n in [2, 8, 64, 201] {
            let t = resolve(n, None, None).unwrap();
            assert_eq!((t.heartbeat_ms, t.timeout_ms, t.scale), (100, 300, 1), "n = {n}");
            assert_eq!(t.note(n), None);
        }
    }

    #[test]
    fn the_leaders_heartbeats_stay_within_the_budget_and_the_timeout_three_periods() {
        for n in [202, 256, 1024, 4096, 20_000] {
            let t = resolve(n, None, None).unwrap();
            let per_sec = (n as u64 - 1) * 1000 / t.heartbeat_ms;
            assert!(per_sec <= HEARTBEATS_PER_SEC, "n = {n}: {per_sec}/s");
            assert_eq!(t.timeout_ms, 3 * t.heartbeat_ms);
            assert!(t.scale > 1);
        }
        let t = resolve(4096, None, None).unwrap();
        assert_eq!((t.heartbeat_ms, t.timeout_ms), (2100, 6300));
        assert!(t.note(4096).unwrap().contains("x21 for 4096 nodes"));
        let t = resolve(1024, None, None).unwrap();
        assert_eq!((t.heartbeat_ms, t.timeout_ms), (600, 1800));
    }

    #[test]
    fn given_values_are_used_exactly() {
        let t = resolve(4096, Some(100), Some(300)).unwrap();
        assert_eq!((t.heartbeat_ms, t.timeout_ms, t.defaulted), (100, 300, false));
        assert_eq!(t.note(4096), None);
        // One given, the other scaled.
        let t = resolve(4096, Some(500), None).unwrap();
        assert_eq!((t.heartbeat_ms, t.timeout_ms), (500, 6300));
        let t = resolve(4096, None, Some(9000)).unwrap();
        assert_eq!((t.heartbeat_ms, t.timeout_ms), (2100, 9000));
    }

    #[test]
    fn a_timeout_not_above_the_heartbeat_names_the_defaulted_value() {
        let e = resolve(4096, None, Some(1000)).unwrap_err().to_string();
        assert!(
            e.contains("--timeout-ms 1000 must be above --heartbeat-ms 2100 (the default for 4096 nodes)"),
            "{e}"
        );
        let e = resolve(8, Some(400), None).unwrap_err().to_string();
        assert!(e.contains("--timeout-ms 300 must be above --heartbeat-ms 400:"), "{e}");
        let e = resolve(4, None, Some(1)).unwrap_err().to_string();
        assert!(e.contains("--timeout-ms 1 must be above --heartbeat-ms 100:"), "{e}");
        let e = resolve(1024, Some(2000), None).unwrap_err().to_string();
        assert!(
            e.contains("--timeout-ms 1800 (the default for 1024 nodes) must be above --heartbeat-ms 2000"),
            "{e}"
        );
        let e = resolve(8, Some(300), Some(300)).unwrap_err().to_string();
        assert!(e.contains("--timeout-ms 300 must be above --heartbeat-ms 300:"), "{e}");
    }

    /// With the timing chosen for 402 nodes (3x the base), a live leader is never suspected and
    /// a paused one still is, one scaled timeout after its last heartbeat, and a new leader follows.
    #[test]
    fn with_the_scaled_timing_a_paused_leader_is_still_suspected_and_replaced() {
        use crate::algo::election::chang_roberts::ChangRoberts;
        use crate::algo::election::Leadership;
        use crate::sim::{ring, NetConfig, Sim};
        use crate::trace::Event;
        use std::time::Duration;

        let n = 402;
        let t = resolve(n, None, None).unwrap();
        assert_eq!((t.heartbeat_ms, t.timeout_ms), (300, 900));
        let ids: Vec<u64> = (1..=n as u64).collect();
        let mut setups = ring(&ids, &ids);
        for s in &mut setups {
            s.heartbeat = Duration::from_millis(t.heartbeat_ms);
            s.timeout = Duration::from_millis(t.timeout_ms);
        }
        let mut s = Sim::new(NetConfig::default(), setups, Leadership::<ChangRoberts>::new);
        let leader = n as u64;
        let all_follow = |s: &Sim<Leadership<ChangRoberts>>, term: u64, l: u64, who: &[u64]| {
            who.iter().all(|&i| s.node(i).belief() == (term, Some(l)))
        };
        assert!(s.run_until(Duration::from_secs(30), |s| all_follow(s, 1, leader, &ids)));
        s.run_for(Duration::from_millis(10 * t.timeout_ms));
        assert!(s.events("suspect").is_empty(), "a live leader was suspected");
        assert!(all_follow(&s, 1, leader, &ids));

        let paused = s.now();
        s.pause(leader);
        let rest = &ids[..ids.len() - 1];
        let limit = paused + Duration::from_secs(30);
        assert!(s.run_until(limit, |s| {
            let (term, l) = s.node(1).belief();
            term > 1 && l.is_some_and(|l| l != leader) && all_follow(s, term, l.unwrap(), rest)
        }));
        let first = s
            .events("suspect")
            .into_iter()
            .filter(|r| matches!(r.event, Event::Suspect { target, .. } if target == leader))
            .map(|r| r.t)
            .min()
            .expect("the paused leader was suspected");
        let after_ms = (first - paused.as_micros() as u64) / 1000;
        // Its last heartbeat went out at most one period before the pause.
        assert!(
            after_ms + t.heartbeat_ms >= t.timeout_ms && after_ms <= t.timeout_ms + 10,
            "suspected {after_ms} ms after the pause"
        );
    }
}
