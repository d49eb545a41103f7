//! The list: every family with its wrapper's keys, then every algorithm, one entry each, in the
//! order `coordlab algos` and the bench show them (by where they run).

use super::keys::{Key, Kind, SetBy};
use super::{Entry, Family, Fit, Runner};
use crate::algo::clocksync::{berkeley::Berkeley, cristian::Cristian};
use crate::algo::election::anon_ring::AnonRing;
use crate::algo::election::bully::Bully;
use crate::algo::election::ring_list::RingList;
use crate::algo::election::{self, chang_roberts::ChangRoberts, echo, echo::Echo, franklin::Franklin, yoyo::YoYo};
use crate::algo::election::{neighbours::Neighbours, Leadership};
use crate::algo::probe::RingProbe;
use crate::algo::snapshot::bank::Bank;
use crate::algo::Setup;
use crate::bench::cases;

/// The engine (the host around every algorithm): its keys are taken by every algorithm, and
/// its check runs on every setup. None yet: a key the engine reads (a clock option, say) is
/// declared here, with the check that reads it.
pub const ENGINE: Family = Family {
    name: "engine",
    summary: "the host around every algorithm",
    keys: &[
        Key {
            name: "max_slew_ppm",
            kind: Kind::Float {
                min: 1.0,
                max: 999_999.0,
            },
            default: "100000",
            help: "the fastest a clock correction is slewed in, ppm of the clock's rate (NTP: 500)",
            set_by: SetBy::User,
        },
        Key {
            name: "step",
            kind: Kind::Bool,
            default: "false",
            help: "apply clock corrections at once instead of slewing (a clock may then run backwards)",
            set_by: SetBy::User,
        },
        Key {
            name: "vc",
            kind: Kind::Bool,
            default: "true",
            help: "stamp vector clocks on every datagram and event (default: true up to 64 nodes, false above)",
            set_by: SetBy::User,
        },
    ],
    check: Some(engine_clock),
};

/// The engine's clock options, in their own words.
fn engine_clock(setup: &Setup) -> Result<(), String> {
    crate::clock::ClockOptions::from_setup(setup).map(|_| ())
}

/// Clock synchronisation: the options Cristian and Berkeley share.
pub const CLOCK: Family = Family {
    name: "clock",
    summary: "clock synchronisation: reads the node's own physical clock, asks the engine to slew it",
    keys: &[
        Key {
            name: "server",
            kind: Kind::Int { min: 0, max: u64::MAX },
            default: "1",
            help: "Cristian's time server, Berkeley's master (default: the smallest id, 1 unless --ids says otherwise)",
            set_by: SetBy::User,
        },
        Key {
            name: "period_ms",
            kind: Kind::Int {
                min: 10,
                max: 1_000_000_000,
            },
            default: "1000",
            help: "how often a round starts",
            set_by: SetBy::User,
        },
        Key {
            name: "samples",
            kind: Kind::Int { min: 1, max: 1000 },
            default: "4",
            help: "samples per round (per node); the smallest round trip is kept",
            set_by: SetBy::User,
        },
        Key {
            name: "min_delay_us",
            kind: Kind::Int {
                min: 0,
                max: 1_000_000_000,
            },
            default: "0",
            help: "the smallest one-way delay: the bound claimed is RTT/2 minus it",
            set_by: SetBy::User,
        },
        Key {
            name: "outlier_ms",
            kind: Kind::Int {
                min: 1,
                max: 1_000_000_000,
            },
            default: "500",
            help: "Berkeley: clocks farther than this from the median are left out of the average",
            set_by: SetBy::User,
        },
    ],
    check: Some(sync_options),
};

/// The clock family's options, in their own words.
fn sync_options(setup: &Setup) -> Result<(), String> {
    crate::algo::clocksync::SyncOptions::from_setup(setup).map(|_| ())
}

/// Global snapshots of a bank.
pub const SNAPSHOT: Family = Family {
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
    keys: &[
        Key {
            name: "majority",
            kind: Kind::Bool,
            default: "false",
            help: "split-brain contained: votes of a weighted majority, check-quorum, pre-vote",
            set_by: SetBy::User,
        },
        Key {
            name: "weights",
            kind: Kind::IdWeights { max: 1_000_000 },
            default: "1 each",
            help: "node weights: votes under majority=true; echo's capabilities (unlisted: seeded 1..100)",
            set_by: SetBy::User,
        },
        Key {
            name: "mesh",
            kind: Kind::Bool,
            default: "false",
            help: "leader heartbeats flood over the neighbours (coordlab mesh sets it)",
            set_by: SetBy::Launcher,
        },
    ],
    check: Some(election::validate),
};

/// Measurement tools that are not coordination algorithms.
pub const PROBE: Family = Family {
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

/// Declares every entry once and derives from them the list and the dispatch.
macro_rules! registry {
    ($($(#[$doc:meta])* $id:ident = $entry:expr => $build:expr;)+) => {
        $($(#[$doc])* pub const $id: Entry = $entry;)+

        /// Every algorithm, in the order `coordlab algos` and the bench show them.
        pub const ENTRIES: &[Entry] = &[$($id),+];

        /// Builds algorithm `name` for `setup` and hands it to `runner`; None when the name is
        /// unknown. Call [`check_setup`](super::check_setup) first: an algorithm cannot refuse
        /// its setup once built.
        pub fn dispatch<R: Runner>(name: &str, setup: &Setup, runner: R) -> Option<R::Output> {
            $(if name == $id.name {
                return Some(runner.run(setup, $build(setup)));
            })+
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
        bench: Some(cases::chang_roberts),
    } => Leadership::<ChangRoberts>::new;

    /// Ring election collecting ids.
    RING_LIST = Entry {
        name: "ring-list",
        family: &ELECTION,
        summary: "ring election collecting ids in the message, then a COORDINATOR round",
        runs_on: Fit::RingOrder,
        keys: &[Key {
            name: "pick",
            kind: Kind::Choice(&["max", "min"]),
            default: "max",
            help: "the winner is the largest or the smallest id of the collected list",
            set_by: SetBy::User,
        }],
        check: None,
        bench: Some(cases::ring_list),
    } => Leadership::<RingList>::new;

    /// Election on an anonymous ring.
    ANON_RING = Entry {
        name: "anon-ring",
        family: &ELECTION,
        summary: "the course's Ring 1: election on an anonymous ring (two simultaneous candidates both lead)",
        runs_on: Fit::RingOrder,
        keys: &[],
        check: None,
        bench: Some(cases::anon_ring),
    } => Leadership::<AnonRing>::new;

    /// Franklin.
    FRANKLIN = Entry {
        name: "franklin",
        family: &ELECTION,
        summary: "Franklin election on a bidirectional ring: rounds against both nearest active nodes",
        runs_on: Fit::TwoWayRing,
        keys: &[],
        check: Some(at_most_two_neighbours),
        bench: Some(cases::franklin),
    } => Leadership::<Franklin>::new;

    /// Bully.
    BULLY = Entry {
        name: "bully",
        family: &ELECTION,
        summary: "Garcia-Molina's bully election, direct messages",
        runs_on: Fit::Complete,
        keys: &[Key {
            name: "stable",
            kind: Kind::Bool,
            default: "false",
            help: "uptime-weighted: a recovered node follows a live leader instead of deposing it",
            set_by: SetBy::User,
        }],
        check: None,
        bench: Some(cases::bully),
    } => Leadership::<Bully>::new;

    /// Yo-Yo.
    YOYO = Entry {
        name: "yoyo",
        family: &ELECTION,
        summary: "Yo-Yo election on any connected graph: orientation, YO-/-YO with pruning; smallest id wins",
        runs_on: Fit::AnyGraph,
        keys: &[],
        check: None,
        bench: Some(cases::yoyo),
    } => Leadership::<YoYo>::new;

    /// Echo election.
    ECHO = Entry {
        name: "echo",
        family: &ELECTION,
        summary: "Echo election (Vasudevan et al.): a spanning-tree wave; best (capability, id) wins",
        runs_on: Fit::AnyGraph,
        keys: &[],
        check: Some(echo_capabilities),
        bench: Some(cases::echo),
    } => Leadership::<Echo>::new;

    /// Cristian's clock synchronisation.
    CRISTIAN = Entry {
        name: "cristian",
        family: &CLOCK,
        summary: "Cristian's clock sync: clients ask a time server, keep the smallest-RTT sample, slew to T + RTT/2",
        runs_on: Fit::Complete,
        keys: &[],
        check: None,
        bench: None,
    } => Cristian::new;

    /// Berkeley clock synchronisation.
    BERKELEY = Entry {
        name: "berkeley",
        family: &CLOCK,
        summary: "Berkeley clock sync: a master polls every clock, averages leaving out outliers, sends each a delta",
        runs_on: Fit::Complete,
        keys: &[],
        check: None,
        bench: None,
    } => Berkeley::new;

    /// The bank and its snapshots.
    BANK = Entry {
        name: "bank",
        family: &SNAPSHOT,
        summary: "accounts sending money to neighbours over reliable FIFO channels; snapshots of the whole",
        runs_on: Fit::AnyGraph,
        keys: &[
            Key {
                name: "snapshot",
                kind: Kind::Choice(&["none", "chandy-lamport", "clock", "both"]),
                default: "none",
                help: "how global states are recorded: Chandy-Lamport markers, each node at a clock time, or both",
                set_by: SetBy::User,
            },
            Key {
                name: "snapshot_ms",
                kind: Kind::Int { min: 10, max: 1_000_000_000 },
                default: "1000",
                help: "how often a snapshot is taken",
                set_by: SetBy::User,
            },
            Key {
                name: "balance",
                kind: Kind::Int { min: 0, max: 1_000_000_000 },
                default: "1000",
                help: "every account's starting balance",
                set_by: SetBy::User,
            },
            Key {
                name: "transfer_ms",
                kind: Kind::Int { min: 1, max: 1_000_000_000 },
                default: "20",
                help: "mean time between one node's transfers",
                set_by: SetBy::User,
            },
            Key {
                name: "retransmit_ms",
                kind: Kind::Int { min: 1, max: 1_000_000_000 },
                default: "100",
                help: "how often unacknowledged channel items are sent again",
                set_by: SetBy::User,
            },
            Key {
                name: "settle_ms",
                kind: Kind::Int { min: 1, max: 1_000_000_000 },
                default: "500",
                help: "how long a clock snapshot counts transfers sent before it",
                set_by: SetBy::User,
            },
        ],
        check: Some(bank_options),
        bench: None,
    } => Bank::new;

    /// The benchmark's ring probe.
    RING_PROBE = Entry {
        name: "ring-probe",
        family: &PROBE,
        summary: "a token round the ring for a number of laps: the benchmark's steady-state hop",
        runs_on: Fit::RingOrder,
        keys: &[Key {
            name: "laps",
            kind: Kind::Int { min: 1, max: u64::MAX },
            default: "100",
            help: "laps of the token before the initiator announces the end",
            set_by: SetBy::User,
        }],
        check: None,
        bench: None,
    } => RingProbe::new;
}
