//! Every election algorithm launched as real processes: election time and the protocol's own
//! message counts (from the nodes' `stop` counters), beside the textbook formulas.
//!
//! Counts exclude the wrapper's traffic (HEARTBEAT, ACK, NEWER, PROBE, ALIVE): only the message
//! types a formula speaks of are read. Where the setup fixes the count (an id arrangement, one
//! initiator, a known graph) the formula's value is "exact" or "DIFFERS"; a bound is "within"
//! or "OVER"; an average is given as the ratio measured / formula.

use super::rings::{election_ms, launch, sent, Launch, Shape};
use crate::cluster::control;
use crate::error::{failed, CliError};
use crate::rng::Rng;
use crate::trace::{read_jsonl, Event, NodeId, RunDir};
use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

/// What a formula claims about a count.
#[derive(Debug, Clone, Copy)]
pub enum Claim {
    /// The count this setup must produce.
    Exact(u64),
    /// An upper bound.
    Bound(u64),
    /// An average over random arrangements; one run is compared by its ratio.
    Average(f64),
}

impl Claim {
    fn expected(&self) -> String {
        match *self {
            Claim::Exact(v) | Claim::Bound(v) => v.to_string(),
            Claim::Average(v) => format!("{v:.1}"),
        }
    }

    fn verdict(&self, measured: u64) -> String {
        match *self {
            Claim::Exact(v) if v == measured => "exact".into(),
            Claim::Exact(v) => format!("DIFFERS ({:+})", measured as i64 - v as i64),
            Claim::Bound(v) if measured == v => "within (= bound)".into(),
            Claim::Bound(v) if measured < v => "within".into(),
            Claim::Bound(_) => "OVER".into(),
            Claim::Average(v) => format!("ratio {:.2}", measured as f64 / v),
        }
    }
}

/// One measured count beside its formula.
#[derive(Debug, Clone)]
pub struct Count {
    /// The message types summed, e.g. `ELECTION+ECHO`.
    pub messages: String,
    /// What the runs sent.
    pub measured: u64,
    /// The formula, as the course writes it.
    pub formula: String,
    /// Its value here, and how it binds.
    pub claim: Claim,
}

/// One launch: an algorithm on a graph in some setup, at one size.
#[derive(Debug, Clone)]
pub struct ElectionRow {
    /// The `--algo`.
    pub algo: &'static str,
    /// `ring`, or the mesh topology.
    pub graph: String,
    /// The setup (id arrangement, initiators).
    pub case: String,
    /// How many nodes.
    pub n: usize,
    /// First `election_start` to the last node's `leader` event, milliseconds.
    pub election_ms: Option<f64>,
    /// The counts, or why the launch gave none.
    pub counts: Result<Vec<Count>, String>,
    /// Anything that makes the counts not the plain election's (a second term, lost counters).
    pub notes: Vec<String>,
}

fn count(messages: &str, measured: u64, formula: impl Into<String>, claim: Claim) -> Count {
    Count {
        messages: messages.into(),
        measured,
        formula: formula.into(),
        claim,
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

/// The ELECTION messages of Chang-Roberts on this arrangement with every node initiating: each
/// id travels until the first larger id along the ring swallows it; the largest goes all round.
pub fn chang_roberts_messages(ring: &[NodeId]) -> u64 {
    let n = ring.len();
    (0..n)
        .map(|i| (1..=n).find(|d| d == &n || ring[(i + d) % n] > ring[i]).unwrap_or(n) as u64)
        .sum()
}

/// Franklin's rounds on this arrangement: in each, an active node stays active only if its id
/// is larger than the nearest active id on both sides; the last round sends the winner's id all
/// round.
pub fn franklin_rounds(ring: &[NodeId]) -> u64 {
    let mut active = ring.to_vec();
    let mut rounds = 1;
    while active.len() > 1 {
        let k = active.len();
        active = (0..k)
            .filter(|&i| active[i] > active[(i + k - 1) % k] && active[i] > active[(i + 1) % k])
            .map(|i| active[i])
            .collect();
        rounds += 1;
    }
    rounds
}

/// An arrangement where each Franklin round knocks out exactly every other active node: the node
/// at ring position p survives as many rounds as p has trailing zero bits, so ids grow with that.
/// With n a power of two this takes log2(n) + 1 rounds, the bound.
pub fn franklin_halving(n: usize) -> Vec<NodeId> {
    let mut by_rounds: Vec<usize> = (0..n).collect();
    by_rounds.sort_by_key(|&p| (if p == 0 { u32::MAX } else { p.trailing_zeros() }, p));
    let mut ring = vec![0; n];
    for (rank, &p) in by_rounds.iter().enumerate() {
        ring[p] = rank as NodeId + 1;
    }
    ring
}

fn harmonic(n: usize) -> f64 {
    (1..=n).map(|k| 1.0 / k as f64).sum()
}

fn log2_floor(n: usize) -> u64 {
    (usize::BITS - 1 - n.leading_zeros()) as u64
}

fn join(ids: &[NodeId]) -> String {
    ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",")
}

/// Reads a finished run's counts beside their formulas.
type Reader = Box<dyn Fn(&RunDir) -> Vec<Count>>;

/// One launch to make and what to read from it.
struct Case {
    algo: &'static str,
    shape: Shape<'static>,
    case: String,
    ids: Vec<NodeId>,
    initiators: String,
    counts: Reader,
}

/// Every case at size `n`, in the order of the table.
fn cases(n: usize, seed: u64) -> Vec<Case> {
    let nn = n as u64;
    let mut shuffled: Vec<NodeId> = (1..=nn).collect();
    Rng::new(seed ^ nn).shuffle(&mut shuffled);
    let mut out = Vec::new();
    let cr = |case: &str, ring: Vec<NodeId>, claims: Vec<(&'static str, Claim)>| {
        let predicted = chang_roberts_messages(&ring);
        Case {
            algo: "chang-roberts",
            shape: Shape::Ring,
            case: case.into(),
            ids: ring,
            initiators: "all".into(),
            counts: Box::new(move |run| {
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
            }),
        }
    };
    let inc: Vec<NodeId> = (1..=nn).collect();
    let dec: Vec<NodeId> = (1..=nn).rev().collect();
    out.push(cr(
        "ids increasing, all start",
        inc,
        vec![("2n-1 (best)", Claim::Exact(2 * nn - 1))],
    ));
    out.push(cr(
        "ids decreasing, all start",
        dec,
        vec![("n(n+1)/2 (worst)", Claim::Exact(nn * (nn + 1) / 2))],
    ));
    out.push(cr("ids shuffled, all start", shuffled.clone(), vec![]));
    out.push(Case {
        algo: "ring-list",
        shape: Shape::Ring,
        case: "node 1 starts".into(),
        ids: (1..=nn).collect(),
        initiators: "1".into(),
        counts: Box::new(move |run| {
            let both = sent_all(run, &["ELECTION", "COORDINATOR"]);
            vec![count("ELECTION+COORDINATOR", both, "2n", Claim::Exact(2 * nn))]
        }),
    });
    out.push(Case {
        algo: "anon-ring",
        shape: Shape::Ring,
        case: "one candidate".into(),
        ids: (1..=nn).collect(),
        initiators: "1".into(),
        counts: Box::new(move |run| {
            vec![
                count("TOKEN", sent(run, "TOKEN"), "n", Claim::Exact(nn)),
                count("ELECTED", sent(run, "ELECTED"), "n", Claim::Exact(nn)),
            ]
        }),
    });
    let franklin = |case: &str, ring: Vec<NodeId>| {
        let rounds = franklin_rounds(&ring);
        Case {
            algo: "franklin",
            shape: Shape::Mesh("bidirectional-ring"),
            case: case.into(),
            ids: ring,
            initiators: "all".into(),
            counts: Box::new(move |run| {
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
            }),
        }
    };
    out.push(franklin("ids halving each round", franklin_halving(n)));
    out.push(franklin("ids shuffled, all start", shuffled));
    out.push(Case {
        algo: "bully",
        shape: Shape::Mesh("complete"),
        case: "lowest id starts".into(),
        ids: (1..=nn).collect(),
        initiators: "1".into(),
        counts: Box::new(move |run| {
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
        }),
    });
    for topology in ["random:4", "complete"] {
        out.push(Case {
            algo: "yoyo",
            shape: Shape::Mesh(topology),
            case: "all start".into(),
            ids: (1..=nn).collect(),
            initiators: "all".into(),
            counts: Box::new(move |run| {
                let m = edges(run);
                let votes = sent_all(run, &["YES", "NO"]);
                vec![
                    count("ID", sent(run, "ID"), format!("2m (m={m})"), Claim::Exact(2 * m)),
                    count("YO", sent(run, "YO"), format!("YES+NO ({votes})"), Claim::Exact(votes)),
                    count(
                        "LEADER",
                        sent(run, "LEADER"),
                        "2m-(n-1)",
                        Claim::Exact(2 * m - (nn - 1)),
                    ),
                ]
            }),
        });
    }
    for topology in ["random:4", "complete"] {
        out.push(Case {
            algo: "echo",
            shape: Shape::Mesh(topology),
            case: "node 1 starts".into(),
            ids: (1..=nn).collect(),
            initiators: "1".into(),
            counts: Box::new(move |run| {
                let m = edges(run);
                vec![
                    count(
                        "ELECTION+ECHO",
                        sent_all(run, &["ELECTION", "ECHO"]),
                        format!("2m (m={m})"),
                        Claim::Exact(2 * m),
                    ),
                    count("ECHO", sent(run, "ECHO"), "n-1 (tree edges)", Claim::Exact(nn - 1)),
                    count(
                        "LEADER",
                        sent(run, "LEADER"),
                        "2m-(n-1)",
                        Claim::Exact(2 * m - (nn - 1)),
                    ),
                ]
            }),
        });
    }
    out
}

/// What in a run makes its counts more than one plain election: more terms than expected, fewer
/// nodes with their `stop` counters than expected.
fn notes(run: &RunDir, stopping: usize, terms_expected: usize) -> Vec<String> {
    let mut out = Vec::new();
    let terms: BTreeSet<u64> = run
        .node_events
        .iter()
        .filter_map(|r| match r.event {
            Event::ElectionStart { term } => Some(term),
            _ => None,
        })
        .collect();
    if terms.len() > terms_expected {
        out.push(format!(
            "{} terms ({:?}): the counts include a re-election",
            terms.len(),
            terms
        ));
    }
    let stopped = run
        .node_events
        .iter()
        .filter(|r| matches!(r.event, Event::Stop { .. }))
        .count();
    if stopped < stopping {
        out.push(format!("only {stopped} of {stopping} nodes wrote their stop counters"));
    }
    out
}

/// Launches one case and reads its row.
fn measure(root: &Path, n: usize, index: usize, seed: u64, c: &Case) -> ElectionRow {
    let graph = match c.shape {
        Shape::Ring => "ring".to_string(),
        Shape::Mesh(spec) => spec.to_string(),
    };
    // Short: the control socket's path inside it must fit in a sockaddr_un.
    let dir = root.join(format!("{n}-{index}"));
    let ids = join(&c.ids);
    let seed = seed.to_string();
    let args = [
        "--seed",
        &seed,
        "--algo",
        c.algo,
        "--until",
        "elected",
        "--ids",
        &ids,
        "--initiators",
        &c.initiators,
    ];
    let mut rss = None;
    let (election, counts, notes) = match launch(&dir, c.shape, n, &args, &mut rss) {
        Ok(run) => (election_ms(&run), Ok((c.counts)(&run)), notes(&run, n, 1)),
        Err(e) => (None, Err(e.to_string()), Vec::new()),
    };
    let _ = std::fs::remove_dir_all(&dir);
    ElectionRow {
        algo: c.algo,
        graph,
        case: c.case.clone(),
        n,
        election_ms: election,
        counts,
        notes,
    }
}

/// Waits until `done` holds, polling every 100 ms.
fn wait_for(what: &str, deadline: Duration, mut done: impl FnMut() -> bool) -> Result<(), CliError> {
    let end = Instant::now() + deadline;
    while !done() {
        if Instant::now() > end {
            return Err(failed(format!("bully best case: {what} did not happen in time")));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

fn leaders(path: &Path, leader: NodeId, term: u64) -> bool {
    read_jsonl(path).is_ok_and(|(recs, _)| {
        recs.iter()
            .any(|r| matches!(r.event, Event::Leader { leader: l, term: t } if l == leader && t == term))
    })
}

fn command(run: &Path, cmd: &str) -> Result<(), CliError> {
    let answer = control(run, cmd)?;
    if answer.starts_with(crate::cluster::control::ERROR_PREFIX) {
        return Err(failed(format!("bully best case: `{cmd}`: {answer}")));
    }
    Ok(())
}

/// The course's best case of the bully algorithm, scripted: once n leads, every node but n-1 is
/// paused and n is killed, so that n-1 alone notices; it has nobody higher to ask and sends
/// COORDINATOR to the n-2 others, who read it when resumed. Returns the run and the time of the
/// kill; the counts are the sends after it.
fn bully_best_run(dir: &Path, n: usize) -> Result<(RunDir, u64), CliError> {
    let nn = n as u64;
    let args = ["--algo", "bully", "--initiators", "all", "--duration", "600"];
    let l = Launch::spawn(dir, Shape::Mesh("complete"), n, &args)?;
    let run = l.run_dir();
    let node = |i: NodeId| run.join(format!("node-{i}.jsonl"));
    let patience = Duration::from_secs(60);
    wait_for("the first election", patience, || {
        (1..=nn).all(|i| leaders(&node(i), nn, 1))
    })?;
    for i in 1..=nn - 2 {
        command(&run, &format!("pause {i}"))?;
    }
    command(&run, &format!("kill {nn}"))?;
    wait_for("node n-1's claim", patience, || leaders(&node(nn - 1), nn - 1, 2))?;
    for i in 1..=nn - 2 {
        command(&run, &format!("resume {i}"))?;
    }
    wait_for("the others following n-1", patience, || {
        (1..nn).all(|i| leaders(&node(i), nn - 1, 2))
    })?;
    command(&run, "quit")?;
    let mut rss = None;
    let done = l.wait(&mut rss)?;
    let killed = done
        .faults
        .iter()
        .find(|r| matches!(r.event, Event::Kill { .. }))
        .map(|r| r.t)
        .ok_or_else(|| failed("bully best case: no kill in faults.jsonl"))?;
    Ok((done, killed))
}

/// Sends of `name` after `t`, from the `send` events.
fn sent_after(run: &RunDir, name: &str, t: u64) -> u64 {
    run.node_events
        .iter()
        .filter(|r| r.t > t && matches!(&r.event, Event::Send { msg, .. } if msg == name))
        .count() as u64
}

fn bully_best(root: &Path, n: usize) -> ElectionRow {
    let dir = root.join(format!("{n}-bully-best"));
    let nn = n as u64;
    let mut row = ElectionRow {
        algo: "bully",
        graph: "complete".into(),
        case: "n killed, only n-1 awake".into(),
        n,
        election_ms: None,
        counts: Err(String::new()),
        notes: Vec::new(),
    };
    if n < 3 {
        row.counts = Err("needs at least 3 nodes".into());
        return row;
    }
    match bully_best_run(&dir, n) {
        Ok((run, killed)) => {
            let claim = run
                .node_events
                .iter()
                .find(|r| matches!(r.event, Event::Leader { leader, term: 2 } if leader == nn - 1))
                .map(|r| r.t);
            row.election_ms = claim.map(|c| c.saturating_sub(killed) as f64 / 1000.0);
            row.counts = Ok(vec![
                count("ELECTION", sent_after(&run, "ELECTION", killed), "0", Claim::Exact(0)),
                count("OK", sent_after(&run, "OK", killed), "0", Claim::Exact(0)),
                count(
                    "COORDINATOR",
                    sent_after(&run, "COORDINATOR", killed),
                    "n-2 (best)",
                    Claim::Exact(nn - 2),
                ),
            ]);
            // n was killed: no counters from it.
            row.notes = notes(&run, n - 1, 2);
        }
        Err(e) => row.counts = Err(e.to_string()),
    }
    let _ = std::fs::remove_dir_all(&dir);
    row
}

/// Measures every election case at each size, printing each row as it comes (the whole takes
/// minutes).
pub fn run_elections(sizes: &[usize], seed: u64) -> Result<Vec<ElectionRow>, CliError> {
    let root = std::env::temp_dir().join(format!("coordlab-el-{}", std::process::id()));
    print_header();
    let mut out = Vec::new();
    for &n in sizes {
        let mut rows = Vec::new();
        for (index, c) in cases(n, seed).into_iter().enumerate() {
            let bully = c.algo == "bully";
            rows.push(measure(&root, n, index, seed, &c));
            print_row(rows.last().expect("just pushed"));
            if bully {
                rows.push(bully_best(&root, n));
                print_row(rows.last().expect("just pushed"));
            }
        }
        out.extend(rows);
    }
    let _ = std::fs::remove_dir_all(&root);
    Ok(out)
}

const WIDTHS: [usize; 10] = [13, 18, 25, 4, 9, 20, 9, 22, 9, 10];

fn line(cells: [&str; 10]) {
    let mut s = String::new();
    for (i, (c, w)) in cells.iter().zip(WIDTHS).enumerate() {
        // Numbers right-aligned, words left.
        if matches!(i, 3 | 4 | 6 | 8) {
            s.push_str(&format!("{c:>w$}  "));
        } else {
            s.push_str(&format!("{c:<w$}  "));
        }
    }
    println!("{}", s.trim_end());
}

fn print_header() {
    line([
        "algorithm",
        "graph",
        "case",
        "n",
        "elect ms",
        "messages",
        "measured",
        "formula",
        "expected",
        "verdict",
    ]);
}

/// Prints one row: its first count beside the launch, the rest below it.
fn print_row(r: &ElectionRow) {
    let n = r.n.to_string();
    let ms = r.election_ms.map(|m| format!("{m:.1}")).unwrap_or_else(|| "-".into());
    match &r.counts {
        Err(e) => {
            line([r.algo, &r.graph, &r.case, &n, "-", "", "", "", "", ""]);
            println!("    not measured: {e}");
        }
        Ok(counts) => {
            for (i, c) in counts.iter().enumerate() {
                let head: [&str; 5] = if i == 0 {
                    [r.algo, &r.graph, &r.case, &n, &ms]
                } else {
                    ["", "", "", "", ""]
                };
                line([
                    head[0],
                    head[1],
                    head[2],
                    head[3],
                    head[4],
                    &c.messages,
                    &c.measured.to_string(),
                    &c.formula,
                    &c.claim.expected(),
                    &c.claim.verdict(c.measured),
                ]);
            }
        }
    }
    for note in &r.notes {
        println!("    note: {note}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chang_roberts_best_worst_and_a_mixed_ring() {
        for n in [2u64, 3, 8, 64] {
            let inc: Vec<NodeId> = (1..=n).collect();
            let dec: Vec<NodeId> = (1..=n).rev().collect();
            assert_eq!(chang_roberts_messages(&inc), 2 * n - 1);
            assert_eq!(chang_roberts_messages(&dec), n * (n + 1) / 2);
        }
        // 3 -> 1 -> 2 -> back to 3: 3 goes round (3), 1 stops at 2 (1), 2 stops at 3 (1).
        assert_eq!(chang_roberts_messages(&[3, 1, 2]), 5);
    }

    #[test]
    fn franklin_rounds_match_the_worked_examples() {
        assert_eq!(franklin_rounds(&[1, 2, 3]), 2);
        assert_eq!(franklin_rounds(&[1, 3, 2, 4]), 3);
        assert_eq!(franklin_rounds(&[1, 8, 2, 7, 3, 6, 4, 5]), 3);
        assert_eq!(franklin_rounds(&[8, 1, 5, 2, 7, 3, 6, 4]), 4);
    }

    #[test]
    fn the_halving_arrangement_reaches_the_bound_at_powers_of_two() {
        for k in 1..=8 {
            let n = 1usize << k;
            let ring = franklin_halving(n);
            let mut sorted = ring.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (1..=n as u64).collect::<Vec<_>>());
            assert_eq!(franklin_rounds(&ring), log2_floor(n) + 1, "n={n}");
        }
    }

    #[test]
    fn verdicts() {
        assert_eq!(Claim::Exact(5).verdict(5), "exact");
        assert_eq!(Claim::Exact(5).verdict(7), "DIFFERS (+2)");
        assert_eq!(Claim::Bound(64).verdict(64), "within (= bound)");
        assert_eq!(Claim::Bound(64).verdict(65), "OVER");
        assert_eq!(Claim::Average(10.0).verdict(12), "ratio 1.20");
    }
}
