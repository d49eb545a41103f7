//! The election cases of the bench, one function per algorithm, named by its registry entry
//! (`bench: Some(cases::franklin)`): what to launch at size n, and what to read from the run
//! beside which formula.
//!
//! Counts exclude the wrapper's traffic (HEARTBEAT, ACK, NEWER, PROBE, ALIVE): only the message
//! types a formula speaks of are read. Where the setup fixes the count (an id arrangement, one
//! initiator, a known graph) the claim is exact; a bound is a bound; an average is compared by
//! its ratio.

use super::claims::{count, Claim, Count};
use super::formulas::{chang_roberts_messages, franklin_halving, franklin_rounds, harmonic, log2_floor};
use super::launch::Shape;
use super::readings::sent;
use crate::rng::Rng;
use crate::trace::{NodeId, RunDir};
use std::path::Path;

/// Reads a finished run's counts beside their formulas.
pub(super) type Reader = Box<dyn Fn(&RunDir) -> Vec<Count>>;

/// What a scripted case measured: election time (ms), counts, notes.
pub(super) type Scripted = Result<(Option<f64>, Vec<Count>, Vec<String>), String>;

/// How a case is run.
pub(super) enum How {
    /// One launch with these ids (in ring order) and `--initiators`, until elected.
    Launch {
        /// `--ids`.
        ids: Vec<NodeId>,
        /// `--initiators`.
        initiators: String,
        /// What to read from the run.
        counts: Reader,
    },
    /// A story of its own for `--algo algo` in run directory `dir` at size `n` (faults at
    /// chosen moments).
    Script(fn(dir: &Path, algo: &str, n: usize) -> Scripted),
}

/// One case of an algorithm's row group in the elections table.
pub struct Case {
    pub(super) shape: Shape<'static>,
    pub(super) case: String,
    pub(super) how: How,
}

fn launch(shape: Shape<'static>, case: &str, ids: Vec<NodeId>, initiators: &str, counts: Reader) -> Case {
    Case {
        shape,
        case: case.into(),
        how: How::Launch {
            ids,
            initiators: initiators.into(),
            counts,
        },
    }
}

/// The sum of the `stop` counters of several message types.
fn sent_all(run: &RunDir, names: &[&str]) -> u64 {
    names.iter().map(|m| sent(run, m)).sum()
}

/// Edges of the run's graph, from the peers in `run.json` (every mesh here is undirected).
fn edges(run: &RunDir) -> u64 {
    run.info.nodes.iter().map(|n| n.peers.len() as u64).sum::<u64>() / 2
}

/// Ids 1..=n in a seeded random order (the same for every algorithm at this size and seed).
fn shuffled(n: usize, seed: u64) -> Vec<NodeId> {
    let nn = n as u64;
    let mut ids: Vec<NodeId> = (1..=nn).collect();
    Rng::new(seed ^ nn).shuffle(&mut ids);
    ids
}

fn increasing(n: usize) -> Vec<NodeId> {
    (1..=n as u64).collect()
}

/// Chang-Roberts, every node starting: ids increasing (best), decreasing (worst), shuffled.
pub fn chang_roberts(n: usize, seed: u64) -> Vec<Case> {
    let nn = n as u64;
    let cr = |case: &str, ring: Vec<NodeId>, claims: Vec<(&'static str, Claim)>| {
        let predicted = chang_roberts_messages(&ring);
        let counts: Reader = Box::new(move |run| {
            let e = sent(run, "ELECTION");
            let mut v: Vec<Count> = claims.iter().map(|(f, c)| count("ELECTION", e, *f, *c)).collect();
            if claims.is_empty() {
                v.push(count("ELECTION", e, "this arrangement", Claim::Exact(predicted)));
                v.push(count(
                    "ELECTION",
                    e,
                    "n*H_n (average)",
                    Claim::Average(nn as f64 * harmonic(n)),
                ));
            }
            v.push(count("ELECTED", sent(run, "ELECTED"), "n", Claim::Exact(nn)));
            v
        });
        launch(Shape::Ring, case, ring, "all", counts)
    };
    vec![
        cr(
            "ids increasing, all start",
            increasing(n),
            vec![("2n-1 (best)", Claim::Exact(2 * nn - 1))],
        ),
        cr(
            "ids decreasing, all start",
            (1..=nn).rev().collect(),
            vec![("n(n+1)/2 (worst)", Claim::Exact(nn * (nn + 1) / 2))],
        ),
        cr("ids shuffled, all start", shuffled(n, seed), vec![]),
    ]
}

/// Ring-list with one initiator: one ELECTION lap, one COORDINATOR lap.
pub(crate) fn ring_list(n: usize, _seed: u64) -> Vec<Case> {
    let nn = n as u64;
    let counts: Reader = Box::new(move |run| {
        let both = sent_all(run, &["ELECTION", "COORDINATOR"]);
        vec![count("ELECTION+COORDINATOR", both, "2n", Claim::Exact(2 * nn))]
    });
    vec![launch(Shape::Ring, "node 1 starts", increasing(n), "1", counts)]
}

/// The anonymous ring with one candidate: one TOKEN lap, one ELECTED lap.
pub(crate) fn anon_ring(n: usize, _seed: u64) -> Vec<Case> {
    let nn = n as u64;
    let counts: Reader = Box::new(move |run| {
        vec![
            count("TOKEN", sent(run, "TOKEN"), "n", Claim::Exact(nn)),
            count("ELECTED", sent(run, "ELECTED"), "n", Claim::Exact(nn)),
        ]
    });
    vec![launch(Shape::Ring, "one candidate", increasing(n), "1", counts)]
}

/// Franklin, every node starting: the halving arrangement (the bound) and a shuffled one.
pub fn franklin(n: usize, seed: u64) -> Vec<Case> {
    let nn = n as u64;
    let case = |case: &str, ring: Vec<NodeId>| {
        let rounds = franklin_rounds(&ring);
        let counts: Reader = Box::new(move |run| {
            let e = sent(run, "ELECTION");
            vec![
                count(
                    "ELECTION",
                    e,
                    format!("2n*rounds ({rounds})"),
                    Claim::Exact(2 * nn * rounds),
                ),
                count(
                    "ELECTION",
                    e,
                    "2n(floor(log2 n)+1)",
                    Claim::Bound(2 * nn * (log2_floor(n) + 1)),
                ),
                count("LEADER", sent(run, "LEADER"), "n+1", Claim::Exact(nn + 1)),
            ]
        });
        launch(Shape::Mesh("bidirectional-ring"), case, ring, "all", counts)
    };
    vec![
        case("ids halving each round", franklin_halving(n)),
        case("ids shuffled, all start", shuffled(n, seed)),
    ]
}

/// Bully: the lowest id starts (the worst case), then the scripted best case.
pub fn bully(n: usize, _seed: u64) -> Vec<Case> {
    let nn = n as u64;
    let counts: Reader = Box::new(move |run| {
        let half = nn * (nn - 1) / 2;
        vec![
            count(
                "ELECTION",
                sent(run, "ELECTION"),
                "n(n-1)/2 (worst)",
                Claim::Exact(half),
            ),
            count("OK", sent(run, "OK"), "n(n-1)/2", Claim::Exact(half)),
            count("COORDINATOR", sent(run, "COORDINATOR"), "n-1", Claim::Exact(nn - 1)),
        ]
    });
    vec![
        launch(Shape::Mesh("complete"), "lowest id starts", increasing(n), "1", counts),
        Case {
            shape: Shape::Mesh("complete"),
            case: "n killed, only n-1 awake".into(),
            how: How::Script(super::bully_best::run),
        },
    ]
}

/// One launch on a seeded random graph and one on a complete graph, every node or node 1
/// starting: `wave` counts the protocol's messages given m edges, then the LEADER flood, which
/// crosses every edge both ways but the n-1 it came in by: 2m-(n-1).
fn on_two_graphs(
    n: usize,
    case: &'static str,
    initiators: &'static str,
    wave: fn(&RunDir, u64, u64) -> Vec<Count>,
) -> Vec<Case> {
    let nn = n as u64;
    let on = |topology: &'static str| {
        let counts: Reader = Box::new(move |run| {
            let m = edges(run);
            let mut v = wave(run, nn, m);
            v.push(count(
                "LEADER",
                sent(run, "LEADER"),
                "2m-(n-1)",
                Claim::Exact(2 * m - (nn - 1)),
            ));
            v
        });
        launch(Shape::Mesh(topology), case, increasing(n), initiators, counts)
    };
    vec![on("random:4"), on("complete")]
}

/// Yo-Yo, every node starting: one ID each way on every edge, one vote per YO.
pub fn yoyo(n: usize, _seed: u64) -> Vec<Case> {
    on_two_graphs(n, "all start", "all", |run, _, m| {
        let votes = sent_all(run, &["YES", "NO"]);
        vec![
            count("ID", sent(run, "ID"), format!("2m (m={m})"), Claim::Exact(2 * m)),
            count("YO", sent(run, "YO"), format!("YES+NO ({votes})"), Claim::Exact(votes)),
        ]
    })
}

/// Echo with one initiator: ELECTION or ECHO twice on every edge, ECHO on the tree's n-1.
pub fn echo(n: usize, _seed: u64) -> Vec<Case> {
    on_two_graphs(n, "node 1 starts", "1", |run, nn, m| {
        vec![
            count(
                "ELECTION+ECHO",
                sent_all(run, &["ELECTION", "ECHO"]),
                format!("2m (m={m})"),
                Claim::Exact(2 * m),
            ),
            count("ECHO", sent(run, "ECHO"), "n-1 (tree edges)", Claim::Exact(nn - 1)),
        ]
    })
}
