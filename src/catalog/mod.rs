//! The one registry of algorithms: each is one entry ([`Entry`], listed in `entries.rs`) with
//! its name, family, summary, where it runs, its `--set` keys and benchmark cases, and how to
//! build it. Dispatch, option validation, the topology fit, `coordlab algos` and the bench all
//! read it; nothing else in the tree keys on an algorithm's name.

mod check;
mod entries;
mod fit;
mod keys;
mod listing;

pub(crate) use check::check_setup;
pub use entries::*;
pub use fit::Fit;
pub use keys::{id_weights, Key, Kind, SetBy};
pub use listing::listing;

use crate::algo::{Algorithm, Setup};

/// A check of a node's setup beyond each key's type; the error is one line naming the problem.
pub(crate) type SetupCheck = fn(&Setup) -> Result<(), String>;

/// A family of algorithms and the wrapper they run in: its keys are taken by every member.
#[derive(Debug, Clone, Copy)]
pub struct Family {
    /// Its name (`election`, `mutex`, `clock`, `probe`).
    pub name: &'static str,
    /// One line on what the family does.
    pub summary: &'static str,
    /// The keys of the family's wrapper, taken by every algorithm of the family.
    pub keys: &'static [Key],
    /// Checks of the wrapper beyond each key's type (e.g. a majority needs direct links).
    pub check: Option<SetupCheck>,
}

/// What an entry gives `coordlab bench`: the table it appears in, and what that table needs.
#[derive(Debug, Clone, Copy)]
pub enum Bench {
    /// Nothing: not measured.
    None,
    /// Rows of the elections table: its launches at size `n` with seed `seed`, and the formulas
    /// their message counts are read against.
    Elections(fn(n: usize, seed: u64) -> Vec<crate::bench::Case>),
    /// A row of the mutual-exclusion table: the formula of protocol messages per entry at size
    /// `n`, in words and in value.
    Mutex(fn(n: usize) -> (String, String)),
    /// A row of the clock-synchronisation table per size: how many of `n` clocks a round
    /// adjusts (Cristian's server keeps its own).
    Clock(fn(n: usize) -> usize),
}

/// One algorithm.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// Its textbook name, as `--algo` takes it.
    pub name: &'static str,
    /// Its family (and so the wrapper's keys).
    pub family: &'static Family,
    /// One line on what it is.
    pub summary: &'static str,
    /// The graphs it runs on.
    pub runs_on: Fit,
    /// Its own keys (besides its family's).
    pub keys: &'static [Key],
    /// Checks of its setup beyond each key's type (e.g. at most two neighbours).
    pub check: Option<SetupCheck>,
    /// What it gives `coordlab bench`.
    pub bench: Bench,
    /// What its runs must show beyond its family's properties (`coordlab check` judges them).
    pub promises: &'static [Promise],
    /// Its pictures draw the Yo-Yo orientation: edges pointing from smaller to larger id, and
    /// the iterations that pruned them.
    pub draws_orientation: bool,
    /// Mutual exclusion: what in it lets a fault put two nodes in the section, in words (the
    /// checker's explanation of an overlap); None: nothing may.
    pub overlap_lesson: Option<&'static str>,
    /// Mutual exclusion: who must be running for a request to be served (the checker's stall
    /// judgement).
    pub serves_with: ServesWith,
    /// Elections: a lost message stalls its round until the election timeout (the graph
    /// waves and Franklin's rounds send each message once, where ring repair tries a hop again
    /// within a timeout), so the checker owes no progress while loss is in force.
    pub loss_stalls_rounds: bool,
    /// The `--demo` story it runs when no `--algo` is named, if any.
    pub demo: Option<&'static str>,
    /// The DistAlgo example of the same algorithm, which `coordlab bench` runs side by side.
    pub distalgo: Option<&'static str>,
}

/// Mutual exclusion: whom a request needs running to be served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServesWith {
    /// Every participant (a dead or unreachable one blocks the rest).
    Everyone,
    /// The coordinator (the highest id) and the holder that has not left.
    CoordinatorAndHolder,
}

/// A property an algorithm promises beyond its family's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Promise {
    /// Mutual exclusion: entries in the order the requests reached the coordinator (FIFO).
    FifoEntries,
}

impl Entry {
    /// Every key it takes: the engine's, its family's, then its own.
    pub fn all_keys(&self) -> impl Iterator<Item = &'static Key> {
        let detector: &'static [Key] = match hosts_liveness(self.family) {
            true => DETECTOR_KEYS,
            false => &[],
        };
        ENGINE
            .keys
            .iter()
            .chain(self.family.keys)
            .chain(detector)
            .chain(self.keys)
    }

    /// The keys a user may give it (not those the launcher sets).
    pub(crate) fn user_keys(&self) -> impl Iterator<Item = &'static Key> {
        self.all_keys().filter(|k| k.set_by == SetBy::User)
    }

    /// The key `name`, if it takes it.
    pub fn key(&self, name: &str) -> Option<&'static Key> {
        self.all_keys().find(|k| k.name == name)
    }
}

/// Something that can run any algorithm given its concrete type (the runtime, the simulator).
pub(crate) trait Runner {
    /// What running produces.
    type Output;
    /// Runs algorithm `a`.
    fn run<A: Algorithm>(self, setup: &Setup, a: A) -> Self::Output;
}

/// Something that runs several instances of one algorithm together (a node's rehearsal).
pub trait GroupRunner {
    /// What running produces.
    type Output;
    /// Runs `algos`, the one built for each of `setups`, in the same order.
    fn run<A: Algorithm>(self, setups: &[Setup], algos: Vec<A>) -> Self::Output;
}

/// The keys of the failure detector, taken by every algorithm whose family hosts liveness.
pub(crate) const DETECTOR_KEYS: &[Key] = crate::algo::detector::config::DetectorOptions::KEYS;

/// The families whose wrapper hosts the [`Liveness`](crate::algo::detector::Liveness)
/// detector, and so takes its keys (`detector`, `phi_*`, `swim_*`), declared once.
pub(crate) const LIVENESS_HOSTS: &[&Family] = &[&ELECTION];

/// Whether `family` hosts the liveness detector.
pub(crate) fn hosts_liveness(family: &Family) -> bool {
    LIVENESS_HOSTS.iter().any(|f| f.name == family.name)
}

#[cfg(test)]
/// Something that runs an election given its type (the simulator's election soaks): reached
/// through [`dispatch_election`], so that a generic test needs no list of its own.
pub(crate) trait ElectionRunner {
    /// What running produces.
    type Output;
    /// Runs election `E`, the one of `entry`.
    fn run<E: crate::algo::election::Election + 'static>(self, entry: &'static Entry) -> Self::Output;
}

#[cfg(test)]
/// Something that runs a mutual-exclusion protocol given its type (the simulator's mutex
/// soaks), reached through [`dispatch_mutex`].
pub(crate) trait MutexRunner {
    /// What running produces.
    type Output;
    /// Runs protocol `P`, the one of `entry`.
    fn run<P: crate::algo::mutex::Protocol + 'static>(self, entry: &'static Entry) -> Self::Output;
}

/// The entry `--demo story` runs when no `--algo` is named.
pub fn demo_default(story: &str) -> Option<&'static Entry> {
    ENTRIES.iter().find(|e| e.demo == Some(story))
}

/// The entry named `name`.
pub fn find(name: &str) -> Option<&'static Entry> {
    ENTRIES.iter().find(|e| e.name == name)
}

/// The entry named `name`, or an error listing the known names.
pub(crate) fn lookup(name: &str) -> Result<&'static Entry, String> {
    find(name).ok_or_else(|| format!("unknown algorithm '{name}' (known: {})", names()))
}

/// The family of algorithm `name` (for code that acts per family: the launcher's goal, the
/// checker's sections), None when the name is unknown.
pub fn family(name: &str) -> Option<&'static Family> {
    find(name).map(|e| e.family)
}

/// Whether `algo` is a mutual-exclusion algorithm (its launch gets a shared resource).
pub(crate) fn is_mutex(algo: &str) -> bool {
    find(algo).is_some_and(|e| e.family.name == MUTEX.name)
}

/// The list of names, for error messages.
pub fn names() -> String {
    ENTRIES.iter().map(|e| e.name).collect::<Vec<_>>().join(", ")
}

/// The algorithm `--algo` runs when none is named.
pub const DEFAULT_ALGO: &str = CHANG_ROBERTS.name;
