//! The algorithms a node can run, by their textbook names (`--algo NAME`).

use super::election::{chang_roberts::ChangRoberts, Leadership};
use super::{Algorithm, Setup};

/// Every algorithm name `--algo` accepts, with a one-line description.
pub const ALGORITHMS: &[(&str, &str)] = &[("chang-roberts", "Chang-Roberts election on a unidirectional ring")];

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
        _ => return None,
    })
}

/// The list of names, for error messages.
pub fn names() -> String {
    ALGORITHMS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
}
