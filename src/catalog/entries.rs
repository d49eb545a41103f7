//! The list: every family with its wrapper's keys, then every algorithm, one entry each, in the
//! order `coordlab algos` and the bench show them (by where they run).

use super::{Bench, Entry, Family, Fit, GroupRunner, Promise, Runner, ServesWith};
#[cfg(test)]
use super::{ElectionRunner, MutexRunner};
use crate::algo::clocksync::{berkeley::Berkeley, cristian::Cristian};
use crate::algo::election::anon_ring::AnonRing;
use crate::algo::election::bully::Bully;
use crate::algo::election::bully::BullyOptions;
use crate::algo::election::options::ElectionOptions;
use crate::algo::election::ring_list::{RingList, RingListOptions};
use crate::algo::election::{self, chang_roberts::ChangRoberts, echo, echo::Echo, franklin::Franklin, yoyo::YoYo};
use crate::algo::election::{neighbours::Neighbours, Leadership};
use crate::algo::mutex::{
    self, central::Central, lamport::Lamport, maekawa::Maekawa, quorum::Quorum, ricart_agrawala::RicartAgrawala,
    suzuki_kasami, token_ring::TokenRing, Mutex,
};
use crate::algo::mutex::{ballot::VoterOptions, central::CentralOptions, quorum::QuorumOptions};
use crate::algo::options::concat_keys;
use crate::algo::ring_probe::{ProbeOptions, RingProbe};
use crate::algo::snapshot::bank::{Bank, BankKeys};
use crate::algo::Setup;
use crate::bench::{cases, mutex_formulas};

/// The engine (the host around every algorithm): its keys are taken by every algorithm, and
/// its check runs on every setup. None yet: a key the engine reads (a clock option, say) is
/// declared here, with the check that reads it.
pub(crate) const ENGINE: Family = Family {
    name: "engine",
    summary: "the host around every algorithm",
    keys: crate::clock::EngineKeys::KEYS,
    check: Some(engine_clock),
};

/// The engine's clock options, in their own words.
fn engine_clock(setup: &Setup) -> Result<(), String> {
    crate::clock::ClockOptions::from_setup(setup).map(|_| ())
}

/// Clock synchronisation: the options Cristian and Berkeley share.
pub(crate) const CLOCK: Family = Family {
    name: "clock",
    summary: "clock synchronisation: reads the node's own physical clock, asks the engine to slew it",
    keys: crate::algo::clocksync::SyncKeys::KEYS,
    check: Some(sync_options),
};

/// The clock family's options, in their own words.
fn sync_options(setup: &Setup) -> Result<(), String> {
    crate::algo::clocksync::SyncOptions::from_setup(setup).map(|_| ())
}

/// Global snapshots of a bank.
pub(crate) const SNAPSHOT: Family = Family {
    name: "snapshot",
    summary: "a bank whose global states are recorded (Chandy-Lamport markers, or physical-clock time)",
    keys: &[],
    check: None,
};

/// The bank's options, in their own words.
fn bank_options(setup: &Setup) -> Result<(), String> {
    crate::algo::snapshot::bank::BankOptions::from_setup(setup).map(|_| ())
}

/// Leader election, inside the [`Leadership`] wrapper (terms, heartbeats, ring repair, majority).
pub const ELECTION: Family = Family {
    name: "election",
    summary: "leader election, inside the Leadership wrapper (terms, heartbeats, re-election)",
    keys: ElectionOptions::KEYS,
    check: Some(election::validate),
};

/// Mutual exclusion, inside the [`Mutex`] wrapper (the workload, the shared resource).
pub const MUTEX: Family = Family {
    name: "mutex",
    summary: "mutual exclusion, inside the Mutex wrapper (think, request, hold the shared resource, release)",
    keys: mutex::options::MutexOptions::KEYS,
    check: Some(mutex_workload),
};

/// The workload parses, and there are at least two participants.
fn mutex_workload(setup: &Setup) -> Result<(), String> {
    mutex::options::Workload::parse(setup)?;
    let peers = setup.members.iter().filter(|&&m| m != mutex::RESOURCE_ID).count();
    if peers < 2 {
        return Err(format!("mutual exclusion needs at least 2 participants, not {peers}"));
    }
    Ok(())
}

fn central_check(s: &Setup) -> Result<(), String> {
    <Central as mutex::Protocol>::check(s)
}

fn token_ring_check(s: &Setup) -> Result<(), String> {
    <TokenRing as mutex::Protocol>::check(s)
}

fn suzuki_kasami_check(s: &Setup) -> Result<(), String> {
    <suzuki_kasami::SuzukiKasami as mutex::Protocol>::check(s)
}

fn ricart_agrawala_check(s: &Setup) -> Result<(), String> {
    <RicartAgrawala as mutex::Protocol>::check(s)
}

fn lamport_check(s: &Setup) -> Result<(), String> {
    <Lamport as mutex::Protocol>::check(s)
}

fn quorum_check(s: &Setup) -> Result<(), String> {
    <Quorum as mutex::Protocol>::check(s)
}

fn maekawa_check(s: &Setup) -> Result<(), String> {
    <Maekawa as mutex::Protocol>::check(s)
}

/// The lesson of the token algorithms' overlaps.
const TOKEN_LOST: &str = "a token not seen within the lost-token timeout is regenerated, and the timeout cannot tell a paused, cut-off or slow holder from a dead one";

/// The lesson of the voting algorithms' overlaps.
const VOTER_FORGETS: &str = "a voter that restarts without --durable forgets whom it voted for (and with a detector, a slow holder is taken for dead and its votes taken back)";

/// Measurement tools that are not coordination algorithms.
pub(crate) const PROBE: Family = Family {
    name: "probe",
    summary: "measurement tools of the benchmark, not coordination algorithms",
    keys: &[],
    check: None,
};

/// Franklin talks to its two ring neighbours only.
fn at_most_two_neighbours(setup: &Setup) -> Result<(), String> {
    let n = Neighbours::new(setup).all().len();
    if n > 2 {
        return Err(format!(
            "franklin runs on a bidirectional ring, but node {} has {n} neighbours",
            setup.me
        ));
    }
    Ok(())
}

/// Echo's capabilities, in its own words.
fn echo_capabilities(setup: &Setup) -> Result<(), String> {
    echo::weights(setup).map(|_| ())
}

/// What an entry has unless it says otherwise (the macro fills its remaining fields from it).
const BASE: Entry = Entry {
    name: "",
    family: &PROBE,
    summary: "",
    runs_on: Fit::Complete,
    keys: &[],
    check: None,
    bench: Bench::None,
    promises: &[],
    draws_orientation: false,
    overlap_lesson: None,
    serves_with: ServesWith::Everyone,
    loss_stalls_rounds: false,
    demo: None,
    distalgo: None,
};

/// Builds the algorithm of an entry from its kind and type: an election inside [`Leadership`],
/// a mutex protocol inside [`Mutex`], or a plain [`Algorithm`](crate::algo::Algorithm).
macro_rules! build {
    (election, $t:ty) => {
        Leadership::<$t>::new
    };
    (mutex, $t:ty) => {
        Mutex::<$t>::new
    };
    (plain, $t:ty) => {
        <$t>::new
    };
}

/// Expands `$body` only when the entry's kind is the one asked for.
#[cfg(test)]
macro_rules! if_kind {
    (election, election, $($body:tt)*) => { $($body)* };
    (mutex, mutex, $($body:tt)*) => { $($body)* };
    ($want:ident, $kind:ident, $($body:tt)*) => {};
}

/// Declares every entry once and derives from them the list and the dispatch.
// An entry may add `promises [..]` after its braces: what its runs must show beyond its
// family's properties (none when absent). Its kind says how it is built (`election(T)`:
// `Leadership<T>`; `mutex(T)`: `Mutex<T>`; `plain(T)`: `T` itself), and lets generic code
// (the simulator's soaks) reach an election's or a protocol's own type by the entry alone.
macro_rules! registry {
    ($($(#[$doc:meta])* $id:ident = Entry { $($body:tt)* } $(promises [$($p:expr),*])? => $kind:ident($t:ty);)+) => {
        $($(#[$doc])* pub const $id: Entry = Entry { $($body)* promises: &[$($($p),*)?], ..BASE };)+

        /// Every algorithm, in the order `coordlab algos` and the bench show them.
        pub const ENTRIES: &[Entry] = &[$($id),+];

        /// Builds algorithm `name` for `setup` and hands it to `runner`; None when the name is
        /// unknown. Call [`check_setup`](super::check_setup) first: an algorithm cannot refuse
        /// its setup once built.
        pub(crate) fn dispatch<R: Runner>(name: &str, setup: &Setup, runner: R) -> Option<R::Output> {
            $(if name == $id.name {
                return Some(runner.run(setup, build!($kind, $t)(setup)));
            })+
            None
        }

        /// Builds algorithm `name` once for each of `setups` (each passed `check_setup`) and hands
        /// them to `runner`; None when the name is unknown.
        pub fn dispatch_group<R: GroupRunner>(name: &str, setups: &[Setup], runner: R) -> Option<R::Output> {
            $(if name == $id.name {
                return Some(runner.run(setups, setups.iter().map(|s| build!($kind, $t)(s)).collect()));
            })+
            None
        }

        #[cfg(test)]
        /// Hands the election type of entry `name` to `runner`; None when it is not an election.
        pub(crate) fn dispatch_election<R: ElectionRunner>(name: &str, runner: R) -> Option<R::Output> {
            $(if_kind!(election, $kind, if name == $id.name {
                return Some(runner.run::<$t>(&$id));
            });)+
            let _ = (name, runner);
            None
        }

        #[cfg(test)]
        /// Hands the mutual-exclusion protocol type of entry `name` to `runner`; None when it is
        /// not a mutual-exclusion algorithm.
        pub(crate) fn dispatch_mutex<R: MutexRunner>(name: &str, runner: R) -> Option<R::Output> {
            $(if_kind!(mutex, $kind, if name == $id.name {
                return Some(runner.run::<$t>(&$id));
            });)+
            let _ = (name, runner);
            None
        }
    };
}

registry! {
    /// Chang-Roberts.
    CHANG_ROBERTS = Entry {
        name: "chang-roberts",
        family: &ELECTION,
        summary: "Chang-Roberts election on a unidirectional ring",
        runs_on: Fit::RingOrder,
        keys: &[],
        check: None,
        bench: Bench::Elections(cases::chang_roberts),
    } => election(ChangRoberts);

    /// Ring election collecting ids.
    RING_LIST = Entry {
        name: "ring-list",
        family: &ELECTION,
        summary: "ring election collecting ids in the message, then a COORDINATOR round",
        runs_on: Fit::RingOrder,
        keys: RingListOptions::KEYS,
        check: None,
        bench: Bench::Elections(cases::ring_list),
    } => election(RingList);

    /// Election on an anonymous ring.
    ANON_RING = Entry {
        name: "anon-ring",
        family: &ELECTION,
        summary: "the course's Ring 1: election on an anonymous ring (two simultaneous candidates both lead)",
        runs_on: Fit::RingOrder,
        keys: &[],
        check: None,
        bench: Bench::Elections(cases::anon_ring),
    } => election(AnonRing);

    /// Franklin.
    FRANKLIN = Entry {
        name: "franklin",
        family: &ELECTION,
        summary: "Franklin election on a bidirectional ring: rounds against both nearest active nodes",
        runs_on: Fit::TwoWayRing,
        keys: &[],
        check: Some(at_most_two_neighbours),
        bench: Bench::Elections(cases::franklin),
        loss_stalls_rounds: true,
    } => election(Franklin);

    /// Bully.
    BULLY = Entry {
        name: "bully",
        family: &ELECTION,
        summary: "Garcia-Molina's bully election, direct messages",
        runs_on: Fit::Complete,
        keys: BullyOptions::KEYS,
        check: None,
        bench: Bench::Elections(cases::bully),
    } => election(Bully);

    /// Yo-Yo.
    YOYO = Entry {
        name: "yoyo",
        family: &ELECTION,
        summary: "Yo-Yo election on any connected graph: orientation, YO-/-YO with pruning; smallest id wins",
        runs_on: Fit::AnyGraph,
        keys: &[],
        check: None,
        bench: Bench::Elections(cases::yoyo),
        draws_orientation: true,
        loss_stalls_rounds: true,
    } => election(YoYo);

    /// Echo election.
    ECHO = Entry {
        name: "echo",
        family: &ELECTION,
        summary: "Echo election (Vasudevan et al.): a spanning-tree wave; best (capability, id) wins",
        runs_on: Fit::AnyGraph,
        keys: &[],
        check: Some(echo_capabilities),
        bench: Bench::Elections(cases::echo),
        loss_stalls_rounds: true,
        demo: Some("link-cut"),
    } => election(Echo);

    /// The central coordinator.
    CENTRAL = Entry {
        name: "central",
        family: &MUTEX,
        summary: "mutual exclusion: a central coordinator (the highest id) with a FIFO queue; 3 messages per entry; no failure detector unless --set detector is given",
        runs_on: Fit::Complete,
        // Its coordinator may judge the holder with the family's detector (docs/detectors.md).
        keys: &concat_keys::<18>(&[CentralOptions::KEYS, crate::algo::detector::config::DetectorOptions::KEYS]),
        check: Some(central_check),
        bench: Bench::Mutex(mutex_formulas::central),
        overlap_lesson: Some(
            "a coordinator that restarts forgets whom it granted (and with regrant_ms or a detector, a slow holder is taken for dead)",
        ),
        serves_with: ServesWith::CoordinatorAndHolder,
        demo: Some("partition"),
    } promises [Promise::FifoEntries] => mutex(Central);

    /// The token ring.
    TOKEN_RING = Entry {
        name: "token-ring",
        family: &MUTEX,
        summary: "mutual exclusion: a token round the ring, regenerated with a higher generation when lost; with --set detector, the token skips nodes taken for dead",
        runs_on: Fit::RingOrder,
        // The token may skip nodes the family's detector takes for dead (docs/detectors.md).
        keys: crate::algo::detector::config::DetectorOptions::KEYS,
        check: Some(token_ring_check),
        bench: Bench::Mutex(mutex_formulas::token_ring),
        overlap_lesson: Some(TOKEN_LOST),
    } => mutex(TokenRing);

    /// Ricart-Agrawala.
    RICART_AGRAWALA = Entry {
        name: "ricart-agrawala",
        family: &MUTEX,
        summary: "mutual exclusion: Lamport timestamps, replies deferred; 2(n-1) messages per entry; with --set detector, nodes taken for dead are not waited on",
        runs_on: Fit::Complete,
        // It may go on without nodes the family's detector takes for dead (docs/detectors.md).
        keys: crate::algo::detector::config::DetectorOptions::KEYS,
        check: Some(ricart_agrawala_check),
        bench: Bench::Mutex(mutex_formulas::ricart_agrawala),
        distalgo: Some("ramutex"),
    } => mutex(RicartAgrawala);

    /// Lamport's mutual exclusion.
    LAMPORT = Entry {
        name: "lamport",
        family: &MUTEX,
        summary: "mutual exclusion: Lamport's request queues, acknowledgements, releases; 3(n-1) per entry; with --set detector, nodes taken for dead are not waited on",
        runs_on: Fit::Complete,
        // It may go on without nodes the family's detector takes for dead (docs/detectors.md).
        keys: crate::algo::detector::config::DetectorOptions::KEYS,
        check: Some(lamport_check),
        bench: Bench::Mutex(mutex_formulas::lamport),
        distalgo: Some("lamutex"),
    } => mutex(Lamport);

    /// Suzuki-Kasami.
    SUZUKI_KASAMI = Entry {
        name: "suzuki-kasami",
        family: &MUTEX,
        summary: "mutual exclusion: a token with the last served request of each node, requests broadcast; N per entry, 0 holding it; with --set detector, the token skips nodes taken for dead",
        runs_on: Fit::Complete,
        // Its queue may skip nodes the family's detector takes for dead (docs/detectors.md).
        keys: crate::algo::detector::config::DetectorOptions::KEYS,
        check: Some(suzuki_kasami_check),
        bench: Bench::Mutex(|n| ("n (0 when holding the token)".into(), format!("{n}"))),
        overlap_lesson: Some(TOKEN_LOST),
    } => mutex(suzuki_kasami::SuzukiKasami);

    /// The majority quorum.
    QUORUM = Entry {
        name: "quorum",
        family: &MUTEX,
        summary: "mutual exclusion: grants from a majority m of n coordinators, request ids, releases to all; with --set detector, a vote held by a node taken for dead is taken back",
        runs_on: Fit::Complete,
        // Its voters may take back votes from nodes the family's detector takes for dead
        // (docs/detectors.md).
        keys: &concat_keys::<{ 2 + crate::algo::detector::config::DetectorOptions::KEYS.len() }>(&[
            QuorumOptions::KEYS,
            VoterOptions::KEYS,
            crate::algo::detector::config::DetectorOptions::KEYS,
        ]),
        check: Some(quorum_check),
        bench: Bench::Mutex(mutex_formulas::quorum),
        overlap_lesson: Some(VOTER_FORGETS),
    } => mutex(Quorum);

    /// Maekawa.
    MAEKAWA = Entry {
        name: "maekawa",
        family: &MUTEX,
        summary: "mutual exclusion: Maekawa's grid quorums with INQUIRE/RELINQUISH/FAILED; with --set detector, votes held by nodes taken for dead are taken back and requests move to a quorum without them",
        runs_on: Fit::Complete,
        // As quorum's, and a request moves to a grid quorum without the nodes the family's
        // detector takes for dead (docs/detectors.md).
        keys: &concat_keys::<{ 1 + crate::algo::detector::config::DetectorOptions::KEYS.len() }>(&[
            VoterOptions::KEYS,
            crate::algo::detector::config::DetectorOptions::KEYS,
        ]),
        check: Some(maekawa_check),
        bench: Bench::Mutex(mutex_formulas::maekawa),
        overlap_lesson: Some(VOTER_FORGETS),
    } => mutex(Maekawa);

    /// Cristian's clock synchronisation.
    CRISTIAN = Entry {
        name: "cristian",
        family: &CLOCK,
        summary: "Cristian's clock sync: clients ask a time server, keep the smallest-RTT sample, slew to T + RTT/2",
        runs_on: Fit::Complete,
        keys: &[],
        check: None,
        // The server keeps its own clock: a round adjusts the n-1 others.
        bench: Bench::Clock(|n| n - 1),
    } => plain(Cristian);

    /// Berkeley clock synchronisation.
    BERKELEY = Entry {
        name: "berkeley",
        family: &CLOCK,
        summary: "Berkeley clock sync: a master polls every clock, averages leaving out outliers, sends each a delta",
        runs_on: Fit::Complete,
        keys: &[],
        check: None,
        // The master sends every clock, its own included, a delta.
        bench: Bench::Clock(|n| n),
    } => plain(Berkeley);

    /// The bank and its snapshots.
    BANK = Entry {
        name: "bank",
        family: &SNAPSHOT,
        summary: "accounts sending money to neighbours over reliable FIFO channels; snapshots of the whole",
        runs_on: Fit::AnyGraph,
        keys: BankKeys::KEYS,
        check: Some(bank_options),
        bench: Bench::None,
        demo: Some("snapshot"),
    } => plain(Bank);

    /// The benchmark's ring probe.
    RING_PROBE = Entry {
        name: "ring-probe",
        family: &PROBE,
        summary: "a token round the ring for a number of laps: the benchmark's steady-state hop",
        runs_on: Fit::RingOrder,
        keys: ProbeOptions::KEYS,
        check: None,
        bench: Bench::None,
    } => plain(RingProbe);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::Algorithm;

    /// Runs nothing: names the type it was given.
    struct TypeName;

    impl Runner for TypeName {
        type Output = &'static str;
        fn run<A: Algorithm>(self, _setup: &Setup, _a: A) -> &'static str {
            std::any::type_name::<A>()
        }
    }

    #[test]
    fn every_entry_dispatches_to_its_own_type_and_names_are_unique() {
        let s = Setup::new(1, vec![1, 2, 3], vec![3, 2]);
        let mut seen: Vec<(&str, &str)> = Vec::new();
        for e in ENTRIES {
            let t = dispatch(e.name, &s, TypeName).unwrap_or_else(|| panic!("{} does not dispatch", e.name));
            assert!(!seen.iter().any(|&(n, ty)| n == e.name || ty == t), "{}", e.name);
            seen.push((e.name, t));
        }
        assert!(seen.contains(&("franklin", std::any::type_name::<Leadership<Franklin>>())));
        assert!(seen.contains(&("ring-probe", std::any::type_name::<RingProbe>())));
        assert_eq!(dispatch("paxos", &s, TypeName), None);
        assert_eq!(super::super::family("yoyo").map(|f| f.name), Some(ELECTION.name));
        assert_eq!(super::super::family("ring-probe").map(|f| f.name), Some(PROBE.name));
        assert!(super::super::family("paxos").is_none());
    }
}
