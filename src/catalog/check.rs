//! Validation of a node's setup against its algorithm's entry: every `--set` key must be one the
//! algorithm or its family takes, every value must have the key's type, and the family's and the
//! algorithm's own checks must pass.

use super::keys::nearest;
use super::{lookup, Entry, ENGINE, ENTRIES};
use crate::algo::Setup;

/// Checks what algorithm `name` needs of a node's setup (its `--set` values, its neighbours),
/// before the node is built: the error names the problem in one line.
pub(crate) fn check_setup(name: &str, setup: &Setup) -> Result<(), String> {
    let entry = lookup(name)?;
    for key in setup.opts.keys() {
        if entry.key(key).is_none() {
            return Err(unknown_key(entry, key));
        }
    }
    // The family's and the algorithm's own checks speak of what the value means to them; they
    // come first so that their words win, and the key types catch what they do not read.
    for check in [ENGINE.check, entry.family.check, entry.check].into_iter().flatten() {
        check(setup)?;
    }
    for (key, value) in &setup.opts {
        if let Some(k) = entry.key(key) {
            k.kind.check(key, value, setup)?;
        }
    }
    Ok(())
}

/// The one line refusing `key` on `entry`: what it takes, and the near miss or who takes it.
fn unknown_key(entry: &Entry, key: &str) -> String {
    let takes: Vec<&str> = entry.user_keys().map(|k| k.name).collect();
    let takes = if takes.is_empty() {
        "it takes no --set keys".to_string()
    } else {
        format!("it takes: {}", takes.join(", "))
    };
    let name = entry.name;
    let mut owners: Vec<String> = Vec::new();
    for e in ENTRIES {
        let owner = if ENGINE.keys.iter().any(|k| k.name == key) {
            "every algorithm".to_string()
        } else if e.family.keys.iter().any(|k| k.name == key)
            || (super::hosts_liveness(e.family) && super::DETECTOR_KEYS.iter().any(|k| k.name == key))
        {
            format!("every {} algorithm", e.family.name)
        } else if e.keys.iter().any(|k| k.name == key) {
            e.name.to_string()
        } else {
            continue;
        };
        if !owners.contains(&owner) {
            owners.push(owner);
        }
    }
    if !owners.is_empty() {
        return format!(
            "--set {key} does not apply to {name} (it is a key of {}); {takes}",
            owners.join(", ")
        );
    }
    match nearest(key, entry.user_keys().map(|k| k.name)) {
        Some(near) => format!("unknown key {key} for {name} (did you mean {near}?); {takes}"),
        None => format!("unknown key {key} for {name}; {takes}"),
    }
}

#[cfg(test)]
mod tests {
    use super::check_setup;
    use crate::algo::Setup;

    fn with(k: &str, v: &str) -> Setup {
        let mut s = Setup::new(1, vec![1, 2, 3], vec![3, 2]);
        s.opts.insert(k.into(), v.into());
        s
    }

    #[test]
    fn option_values_are_checked_per_algorithm() {
        assert!(check_setup("ring-list", &with("pick", "min")).is_ok());
        assert!(check_setup("ring-list", &Setup::new(1, vec![1, 2], vec![2])).is_ok());
        assert_eq!(
            check_setup("ring-list", &with("pick", "median")),
            Err("--set pick=median: expected max or min".into())
        );
        assert!(check_setup("bully", &with("stable", "true")).is_ok());
        assert_eq!(
            check_setup("bully", &with("stable", "ture")),
            Err("--set stable=ture: expected true or false".into())
        );
        assert_eq!(
            check_setup("ring-probe", &with("laps", "0")),
            Err("--set laps=0: expected a whole number >= 1".into())
        );
        assert!(check_setup("ring-probe", &with("laps", "7")).is_ok());
    }

    #[test]
    fn a_key_the_algorithm_does_not_take_is_refused_naming_the_keys_it_takes() {
        assert_eq!(
            check_setup("chang-roberts", &with("majorty", "true")),
            Err("unknown key majorty for chang-roberts (did you mean majority?); it takes: max_slew_ppm, step, vc, fsync, majority, weights, detector, detector_watch, phi_threshold, phi_window, phi_min_std_ms, phi_pause_ms, phi_beat_ms, phi_relay, swim_period_ms, swim_probes, swim_window, swim_probe_timeout_ms, swim_retry_ms, swim_k, swim_suspicion_mult, swim_suspicion_max_mult, swim_hold".into())
        );
        assert_eq!(
            check_setup("chang-roberts", &with("pick", "min")),
            Err(
                "--set pick does not apply to chang-roberts (it is a key of ring-list); it takes: max_slew_ppm, step, vc, fsync, majority, weights, detector, detector_watch, phi_threshold, phi_window, phi_min_std_ms, phi_pause_ms, phi_beat_ms, phi_relay, swim_period_ms, swim_probes, swim_window, swim_probe_timeout_ms, swim_retry_ms, swim_k, swim_suspicion_mult, swim_suspicion_max_mult, swim_hold"
                    .into()
            )
        );
        assert_eq!(
            check_setup("chang-roberts", &with("loss", "0.2")),
            Err("unknown key loss for chang-roberts; it takes: max_slew_ppm, step, vc, fsync, majority, weights, detector, detector_watch, phi_threshold, phi_window, phi_min_std_ms, phi_pause_ms, phi_beat_ms, phi_relay, swim_period_ms, swim_probes, swim_window, swim_probe_timeout_ms, swim_retry_ms, swim_k, swim_suspicion_mult, swim_suspicion_max_mult, swim_hold".into())
        );
        assert_eq!(
            check_setup("ring-probe", &with("majority", "true")),
            Err(
                "--set majority does not apply to ring-probe (it is a key of every election algorithm); it \
                 takes: max_slew_ppm, step, vc, fsync, laps"
                    .into()
            )
        );
        assert_eq!(
            check_setup("paxos", &Setup::new(1, vec![1, 2], vec![2])).unwrap_err(),
            format!("unknown algorithm 'paxos' (known: {})", super::super::names())
        );
    }

    #[test]
    fn every_default_is_a_value_its_key_accepts() {
        for e in super::super::ENTRIES {
            let s = Setup::new(1, vec![1, 2, 3], vec![3, 2]);
            for k in e
                .all_keys()
                .filter(|k| !matches!(k.kind, super::super::Kind::IdWeights { .. }))
            {
                assert_eq!(k.kind.check(k.name, k.default, &s), Ok(()), "{}: {}", e.name, k.name);
            }
        }
    }

    #[test]
    fn a_value_no_check_of_the_family_reads_is_still_typed() {
        // weights are read by the wrapper only under majority=true: without it, still checked.
        assert_eq!(
            check_setup("chang-roberts", &with("weights", "1=5")),
            Err("--set weights: '1=5' is not ID:N (e.g. weights=1:5,2:3)".into())
        );
        assert!(check_setup("chang-roberts", &with("weights", "1:5,2:1")).is_ok());
        assert_eq!(
            check_setup("chang-roberts", &with("majority", "2")),
            Err("majority=2: expected true or false".into())
        );
    }
}
