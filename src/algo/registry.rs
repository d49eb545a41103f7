//! The algorithms a node can run, by their textbook names (`--algo NAME`).

use super::election::anon_ring::AnonRing;
use super::election::bully::Bully;
use super::election::ring_list::{Pick, RingList};
use super::election::{chang_roberts::ChangRoberts, echo, echo::Echo, franklin::Franklin, yoyo::YoYo, Leadership};
use super::{Algorithm, Setup};

/// Every algorithm name `--algo` accepts, with a one-line description.
pub const ALGORITHMS: &[(&str, &str)] = &[
    ("chang-roberts", "Chang-Roberts election on a unidirectional ring"),
    (
        "franklin",
        "Franklin election on a bidirectional ring: rounds against both nearest active nodes",
    ),
    (
        "yoyo",
        "Yo-Yo election on any connected graph: orientation, YO-/-YO with pruning; smallest id wins",
    ),
    (
        "echo",
        "Echo election (Vasudevan et al.): a spanning-tree wave; best (capability, id) wins",
    ),
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
    (
        "cristian",
        "Cristian's clock sync: clients ask a time server (node 1), keep the smallest-RTT sample, slew to T + RTT/2",
    ),
    (
        "berkeley",
        "Berkeley clock sync: a master polls every clock, averages leaving out outliers, sends each a delta",
    ),
    (
        "bank",
        "accounts sending money to neighbours; --set snapshot=chandy-lamport|clock|both records global states",
    ),
    (
        "ring-probe",
        "a token round the ring for --set laps=N laps: the benchmark's steady-state hop",
    ),
];

/// Whether `name` is a known algorithm.
pub fn is_known(name: &str) -> bool {
    ALGORITHMS.iter().any(|(n, _)| *n == name)
}

/// Something that can run any algorithm given its concrete type (the runtime, the simulator).
pub trait Runner {
    /// What running produces.
    type Output;
    /// Runs algorithm `a`.
    fn run<A: Algorithm>(self, setup: &Setup, a: A) -> Self::Output;
}

/// Builds algorithm `name` for `setup` and hands it to `runner`; None when the name is unknown.
/// Call [`check_setup`] first: an algorithm cannot refuse its setup once built.
pub fn dispatch<R: Runner>(name: &str, setup: &Setup, runner: R) -> Option<R::Output> {
    Some(match name {
        "chang-roberts" => runner.run(setup, Leadership::<ChangRoberts>::new(setup)),
        "franklin" => runner.run(setup, Leadership::<Franklin>::new(setup)),
        "yoyo" => runner.run(setup, Leadership::<YoYo>::new(setup)),
        "echo" => runner.run(setup, Leadership::<Echo>::new(setup)),
        "bully" => runner.run(setup, Leadership::<Bully>::new(setup)),
        "anon-ring" => runner.run(setup, Leadership::<AnonRing>::new(setup)),
        "ring-list" => runner.run(setup, Leadership::<RingList>::new(setup)),
        "ring-probe" => runner.run(setup, super::probe::RingProbe::new(setup)),
        "cristian" => runner.run(setup, super::clocksync::cristian::Cristian::new(setup)),
        "berkeley" => runner.run(setup, super::clocksync::berkeley::Berkeley::new(setup)),
        "bank" => runner.run(setup, super::snapshot::bank::Bank::new(setup)),
        _ => return None,
    })
}

/// Checks what algorithm `name` needs of a node's setup (its `--set` values, its neighbours),
/// before the node is built: the error names the problem in one line. Keys an algorithm does not
/// read are left alone (the wrapper or the launcher may read them).
pub fn check_setup(name: &str, setup: &Setup) -> Result<(), String> {
    let get = |k: &str| setup.opts.get(k).map(String::as_str);
    crate::clock::ClockOptions::from_setup(setup)?;
    if matches!(name, "cristian" | "berkeley") {
        super::clocksync::SyncOptions::from_setup(setup)?;
    }
    if name == "bank" {
        super::snapshot::bank::BankOptions::from_setup(setup)?;
    }
    if name != "ring-probe" {
        super::election::validate(setup)?;
    }
    match name {
        "bully" => {
            if let Some(v) = get("stable").filter(|v| !matches!(*v, "true" | "false" | "1" | "0" | "yes" | "no")) {
                return Err(format!("--set stable={v}: expected true or false"));
            }
        }
        "ring-list" => {
            if let Some(v) = get("pick").filter(|v| Pick::parse(v).is_none()) {
                return Err(format!("--set pick={v}: expected max or min"));
            }
        }
        "franklin" => {
            let n = super::election::neighbours::Neighbours::new(setup).all().len();
            if n > 2 {
                return Err(format!(
                    "franklin runs on a bidirectional ring, but node {} has {n} neighbours",
                    setup.me
                ));
            }
        }
        "echo" => {
            echo::weights(setup)?;
        }
        _ => {}
    }
    Ok(())
}

/// The list of names, for error messages.
pub fn names() -> String {
    ALGORITHMS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
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
        assert!(check_setup("chang-roberts", &with("pick", "median")).is_ok());
    }
}
