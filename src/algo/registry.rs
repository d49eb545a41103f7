//! The algorithms a node can run, by their textbook names (`--algo NAME`).

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
pub fn dispatch<R: Runner>(name: &str, setup: &Setup, runner: R) -> Option<R::Output> {
    Some(match name {
        "chang-roberts" => runner.run(setup, Leadership::<ChangRoberts>::new(setup)),
        "franklin" => runner.run(setup, Leadership::<Franklin>::new(setup)),
        "yoyo" => runner.run(setup, Leadership::<YoYo>::new(setup)),
        "echo" => runner.run(setup, Leadership::<Echo>::new(setup)),
        "ring-probe" => runner.run(setup, super::probe::RingProbe::new(setup)),
        _ => return None,
    })
}

/// Checks what algorithm `name` needs of a node's setup (its options, its neighbours), before
/// the node is built: the error names the problem in one line.
pub fn check_setup(name: &str, setup: &Setup) -> Result<(), String> {
    match name {
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
