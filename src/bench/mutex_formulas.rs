//! The formulas of the mutual-exclusion table, one function per algorithm, named by its
//! registry entry (`bench: Bench::Mutex(mutex_formulas::central)`): protocol messages per entry
//! at size n, in words and in value.

/// Central: request, grant, release, but none for the coordinator's own entries.
pub fn central(n: usize) -> (String, String) {
    let n_f = n as f64;
    ("3(n-1)/n (own: 0)".into(), format!("{:.2}", 3.0 * (n_f - 1.0) / n_f))
}

/// Token ring under full contention: one pass per entry.
pub(crate) fn token_ring(_n: usize) -> (String, String) {
    ("1 pass per entry".into(), "1".into())
}

/// Ricart-Agrawala: a request to and a reply from every other node.
pub(crate) fn ricart_agrawala(n: usize) -> (String, String) {
    ("2(n-1)".into(), format!("{}", 2 * (n - 1)))
}

/// Lamport: request, acknowledgement and release with every other node.
pub fn lamport(n: usize) -> (String, String) {
    ("3(n-1)".into(), format!("{}", 3 * (n - 1)))
}

/// Majority quorum: request, grant, release with every coordinator, plus FAILED under
/// contention.
pub fn quorum(n: usize) -> (String, String) {
    ("3n uncontended, + FAILED".into(), format!("{}", 3 * n))
}

/// Maekawa: 3K to 5K for a grid quorum of K.
pub(crate) fn maekawa(n: usize) -> (String, String) {
    let n_f = n as f64;
    let k = crate::algo::mutex::maekawa::grid_quorum(&(1..=n as u64).collect::<Vec<_>>(), 1).len();
    (
        format!("3K..5K (K={k}); 3..5 sqrt(n)"),
        format!("{}..{}; {:.0}..{:.0}", 3 * k, 5 * k, 3.0 * n_f.sqrt(), 5.0 * n_f.sqrt()),
    )
}

#[cfg(test)]
mod tests {
    use crate::catalog::{find, Bench, ENTRIES, MUTEX};

    #[test]
    fn every_mutex_entry_names_its_formula() {
        for e in ENTRIES.iter().filter(|e| e.family.name == MUTEX.name) {
            assert!(
                matches!(e.bench, Bench::Mutex(_)),
                "{} has no row in the mutex table",
                e.name
            );
        }
        let at = |name: &str, n: usize| match find(name).map(|e| e.bench) {
            Some(Bench::Mutex(f)) => f(n).1,
            _ => panic!("{name}"),
        };
        assert_eq!(at("ricart-agrawala", 5), "8");
        assert_eq!(at("lamport", 5), "12");
        assert_eq!(at("central", 4), "2.25");
        assert_eq!(at("maekawa", 4), "9..15; 6..10");
    }
}
