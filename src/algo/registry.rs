//! The algorithms a node can run, by their textbook names (`--algo NAME`).

use super::election::anon_ring::AnonRing;
use super::election::bully::Bully;
use super::election::ring_list::{Pick, RingList};
use super::election::{chang_roberts::ChangRoberts, Leadership};
use super::{Algorithm, Setup};
use std::collections::BTreeMap;

/// Every algorithm name `--algo` accepts, with a one-line description.
pub const ALGORITHMS: &[(&str, &str)] = &[
    ("chang-roberts", "Chang-Roberts election on a unidirectional ring"),
    (
        "bully",
        "Garcia-Molina's bully election, direct messages (--set stable=true: uptime-weighted, no deposing)",
    ),
    (
        "anon-ring",
        "the course's Ring 1: election on an anonymous ring (two simultaneous candidates both lead)",
    ),
    (
        "ring-list",
        "ring election collecting ids in the message, then a COORDINATOR round (--set pick=max|min)",
    ),
];

/// Whether `name` is a known algorithm.
pub fn is_known(name: &str) -> bool {
    ALGORITHMS.iter().any(|(n, _)| *n == name)
}

/// Checks the `--set` values that algorithm `name` reads; the error names the bad option.
/// Keys an algorithm does not read are left alone (the wrapper or the launcher may read them).
pub fn validate_opts(name: &str, opts: &BTreeMap<String, String>) -> Result<(), String> {
    let get = |k: &str| opts.get(k).map(String::as_str);
    match (name, get("stable"), get("pick")) {
        ("bully", Some(v), _) if !matches!(v, "true" | "false" | "1" | "0" | "yes" | "no") => {
            Err(format!("--set stable={v}: expected true or false"))
        }
        ("ring-list", _, Some(v)) if Pick::parse(v).is_none() => Err(format!("--set pick={v}: expected max or min")),
        _ => Ok(()),
    }
}

/// Something that can run any algorithm given its concrete type (the runtime, the simulator).
pub trait Runner {
    /// What running produces.
    type Output;
    /// Runs algorithm `a`.
    fn run<A: Algorithm>(self, setup: &Setup, a: A) -> Self::Output;
}

/// Builds algorithm `name` for `setup` and hands it to `runner`; None when the name is unknown.
/// Call [`validate_opts`] first: an algorithm cannot refuse its options once built.
pub fn dispatch<R: Runner>(name: &str, setup: &Setup, runner: R) -> Option<R::Output> {
    Some(match name {
        "chang-roberts" => runner.run(setup, Leadership::<ChangRoberts>::new(setup)),
        "bully" => runner.run(setup, Leadership::<Bully>::new(setup)),
        "anon-ring" => runner.run(setup, Leadership::<AnonRing>::new(setup)),
        "ring-list" => runner.run(setup, Leadership::<RingList>::new(setup)),
        _ => return None,
    })
}

/// The list of names, for error messages.
pub fn names() -> String {
    ALGORITHMS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::validate_opts;
    use std::collections::BTreeMap;

    fn opts(k: &str, v: &str) -> BTreeMap<String, String> {
        [(k.to_string(), v.to_string())].into()
    }

    #[test]
    fn option_values_are_checked_per_algorithm() {
        assert!(validate_opts("ring-list", &opts("pick", "min")).is_ok());
        assert!(validate_opts("ring-list", &BTreeMap::new()).is_ok());
        assert_eq!(
            validate_opts("ring-list", &opts("pick", "median")),
            Err("--set pick=median: expected max or min".into())
        );
        assert!(validate_opts("bully", &opts("stable", "true")).is_ok());
        assert_eq!(
            validate_opts("bully", &opts("stable", "ture")),
            Err("--set stable=ture: expected true or false".into())
        );
        assert!(validate_opts("chang-roberts", &opts("pick", "median")).is_ok());
    }
}
