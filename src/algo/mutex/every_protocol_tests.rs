//! The simulator's soak of every mutual-exclusion algorithm of the registry, reached by its
//! entry alone (so a new protocol is soaked by being listed): safety under loss, duplication,
//! pauses and crashes; every participant served again after one restarts; every participant
//! served on a lossy, reordering network. An algorithm that takes `durable` is soaked with it,
//! since without it a restarted voter may forget its vote (its entry's overlap lesson).

use super::testkit::serves_after_restart_with;
use super::tests::safe_under_faults;
use super::Protocol;
use crate::algo::NodeId;
use crate::catalog::{self as registry, Entry, MutexRunner};
use crate::sim::NetConfig;
use std::time::Duration;

/// [`serves_after_restart_with`] on 4 participants, with `durable` when `entry` takes it.
fn serves_after_restart<P: Protocol + 'static>(entry: &Entry, net: NetConfig, victim: Option<NodeId>) {
    let mut opts = vec![("think_ms", "1"), ("hold_ms", "1")];
    if entry.key("durable").is_some() {
        opts.push(("durable", "true"));
    }
    serves_after_restart_with::<P>(4, net, victim, &opts);
}

/// The soak of the protocol it is handed.
struct Soak;

impl MutexRunner for Soak {
    type Output = ();
    fn run<P: Protocol + 'static>(self, entry: &'static Entry) {
        assert!(
            safe_under_faults::<P>(10, |_| true) > 0,
            "{}: no entry at all",
            entry.name
        );
        for seed in 0..4 {
            let net = NetConfig {
                seed,
                ..NetConfig::default()
            };
            serves_after_restart::<P>(entry, net, Some(2));
            let lossy = NetConfig {
                seed,
                min_delay: Duration::from_micros(200),
                max_delay: Duration::from_millis(8),
                drop: 0.2,
                duplicate: 0.05,
            };
            serves_after_restart::<P>(entry, lossy, None);
        }
    }
}

#[test]
fn every_mutex_algorithm_of_the_registry_is_safe_and_serves_everyone_through_faults_and_restarts() {
    let mutexes: Vec<&Entry> = registry::ENTRIES
        .iter()
        .filter(|e| e.family.name == registry::MUTEX.name)
        .collect();
    assert!(mutexes.len() >= 6);
    for e in mutexes {
        registry::dispatch_mutex(e.name, Soak).unwrap_or_else(|| panic!("{} has no protocol type", e.name));
    }
}
