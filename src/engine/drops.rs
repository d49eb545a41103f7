//! Refused datagrams, tallied per class and written as one `drop` record per class per
//! interval (with a `count`), so a flood costs a few trace lines a second, not one per datagram.

use super::wire::WireError;
use std::collections::BTreeMap;
use std::time::Duration;

/// How long drops are tallied before their records are written.
pub(crate) const INTERVAL: Duration = Duration::from_secs(1);

/// One class's tally in the current interval.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tally {
    /// The class (`forged`, `replay`, ...).
    pub class: &'static str,
    /// Datagrams refused.
    pub count: u64,
    /// The first one's reason in words.
    pub reason: String,
    /// The first one's source address.
    pub addr: String,
}

/// The tallies of the current interval.
#[derive(Debug, Default)]
pub struct Drops {
    since: Option<Duration>,
    open: BTreeMap<&'static str, Tally>,
}

impl Drops {
    /// Counts one refused datagram at monotonic time `now`.
    pub(crate) fn add(&mut self, now: Duration, e: &WireError, addr: &str) {
        self.since.get_or_insert(now);
        let class = e.class();
        match self.open.get_mut(class) {
            Some(t) => t.count += 1,
            None => {
                // The reason is formatted once per class per interval, not per datagram.
                let t = Tally {
                    class,
                    count: 1,
                    reason: e.to_string(),
                    addr: addr.to_string(),
                };
                self.open.insert(class, t);
            }
        }
    }

    /// When the open tallies are due to be written.
    pub fn deadline(&self) -> Option<Duration> {
        self.since.map(|s| s + INTERVAL)
    }

    /// The tallies, if due at `now` (or at once with `force`), leaving none open.
    pub(crate) fn take_due(&mut self, now: Duration, force: bool) -> Vec<Tally> {
        match self.deadline() {
            Some(d) if force || now >= d => {
                self.since = None;
                std::mem::take(&mut self.open).into_values().collect()
            }
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_tally_per_class_per_interval() {
        let mut d = Drops::default();
        let t0 = Duration::from_secs(5);
        for i in 0..1000 {
            d.add(t0, &WireError::Forged, &format!("a:{i}"));
        }
        d.add(t0, &WireError::Short(3), "b:1");
        assert!(d.take_due(t0 + Duration::from_millis(999), false).is_empty());
        let due = d.take_due(t0 + INTERVAL, false);
        assert_eq!(due.len(), 2);
        let forged = due.iter().find(|t| t.class == "forged").unwrap();
        assert_eq!((forged.count, forged.addr.as_str()), (1000, "a:0"));
        assert_eq!(d.deadline(), None);
        d.add(t0, &WireError::Forged, "c:1");
        assert_eq!(d.take_due(t0, true).len(), 1);
    }
}
