//! Chang-Roberts rings of real processes measured from their traces: cost per hop cold and
//! warm, the runtime's steady-state hop (ring probe), election time and counts, memory.

use super::launch::{launch, Shape};
use super::readings::{election_ms, sent};
use crate::error::{failed, CliError};
use crate::trace::{Event, RunDir};
use std::path::PathBuf;

/// What one ring size measured.
#[derive(Debug, Clone)]
pub(crate) struct RingFigures {
    /// Ring size.
    pub n: usize,
    /// One hop, microseconds, on the ELECTION lap (each process's first message: cold).
    pub hop_cold_us: f64,
    /// The median hop of that lap, microseconds: its first hops wait for nodes still starting
    /// after the go (the lap starts with the initiator's own start), which the median leaves out.
    pub hop_cold_median_us: f64,
    /// One hop, microseconds, on the ELECTED lap that follows (warm).
    pub hop_warm_us: f64,
    /// One hop of the runtime in steady state (ring-probe token, median lap / n), microseconds.
    pub hop_runtime_us: f64,
    /// One hop of a plain UDP relay ring of the same size (no coordlab), warm, microseconds.
    pub relay_floor_us: f64,
    /// Election time with every node initiating, milliseconds.
    pub election_ms: f64,
    /// ELECTION messages, ids increasing along the ring, all initiating.
    pub best_election_msgs: u64,
    /// ELECTION messages, ids decreasing along the ring, all initiating.
    pub worst_election_msgs: u64,
    /// ELECTED messages of the best-case run.
    pub elected_msgs: u64,
    /// The largest node resident set seen, KiB.
    pub memory: Option<super::memory::Memory>,
}

fn ids(n: usize, reverse: bool) -> String {
    let mut v: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
    if reverse {
        v.reverse();
    }
    v.join(",")
}

/// From the initiator's first `name` message to the first `name` that came back to it.
fn round_trip_us(run: &RunDir, initiator: u64, name: &str) -> Option<u64> {
    let mine = run.node_events.iter().filter(|r| r.node == Some(initiator));
    let mut sent_at = None;
    for r in mine {
        match &r.event {
            Event::Send { msg, .. } if msg == name && sent_at.is_none() => sent_at = Some(r.t),
            Event::Recv { msg, .. } if msg == name && sent_at.is_some() => return Some(r.t - sent_at?),
            _ => {}
        }
    }
    None
}

/// The median lap of the probe token at its initiator, after ten warm-up laps, per hop.
fn probe_hop_us(run: &RunDir, initiator: u64) -> Option<f64> {
    let sends: Vec<u64> = run
        .node_events
        .iter()
        .filter(|r| r.node == Some(initiator) && matches!(&r.event, Event::Send { msg, .. } if msg == "TOKEN"))
        .map(|r| r.t)
        .collect();
    let mut laps: Vec<u64> = sends.windows(2).skip(10).map(|w| w[1] - w[0]).collect();
    laps.sort_unstable();
    laps.get(laps.len() / 2)
        .map(|&us| us as f64 / run.info.nodes.len() as f64)
}

/// Measures each ring size.
pub(crate) fn run_rings(sizes: &[usize]) -> Result<Vec<RingFigures>, CliError> {
    let root: PathBuf = std::env::temp_dir().join(format!("coordlab-bench-{}", std::process::id()));
    let mut out = Vec::new();
    for &n in sizes {
        let mut mem = None;
        let dir = root.join(format!("hop-{n}"));
        let top = n.to_string();
        let hop = launch(
            &dir,
            Shape::Ring,
            n,
            &["--until", "elected", "--initiators", &top, "--ids", &ids(n, false)],
            &mut mem,
        )?;
        let lap = |name: &str| {
            round_trip_us(&hop, n as u64, name)
                .map(|us| us as f64 / n as f64)
                .ok_or_else(|| failed(format!("ring {n}: no {name} round trip in the trace")))
        };
        let (hop_cold_us, hop_warm_us) = (lap("ELECTION")?, lap("ELECTED")?);
        let hop_cold_median_us = super::startup::median_hop_us(&hop.node_events, n as u64)
            .ok_or_else(|| failed(format!("ring {n}: no ELECTION lap in the trace")))?;
        let probe = launch(
            &root.join(format!("probe-{n}")),
            Shape::Ring,
            n,
            &[
                "--algo",
                crate::catalog::RING_PROBE.name,
                "--until",
                "done",
                "--initiators",
                &top,
                "--set",
                "laps=200",
            ],
            &mut mem,
        )?;
        let hop_runtime_us = probe_hop_us(&probe, n as u64)
            .ok_or_else(|| failed(format!("ring {n}: the probe token did not go round")))?;
        let best = launch(
            &root.join(format!("best-{n}")),
            Shape::Ring,
            n,
            &["--until", "elected", "--initiators", "all", "--ids", &ids(n, false)],
            &mut mem,
        )?;
        let worst = launch(
            &root.join(format!("worst-{n}")),
            Shape::Ring,
            n,
            &["--until", "elected", "--initiators", "all", "--ids", &ids(n, true)],
            &mut mem,
        )?;
        out.push(RingFigures {
            n,
            hop_cold_us,
            hop_cold_median_us,
            hop_warm_us,
            hop_runtime_us,
            relay_floor_us: super::floor::ring_floor(n, 200, false)?,
            election_ms: election_ms(&best).unwrap_or(f64::NAN),
            best_election_msgs: sent(&best, "ELECTION"),
            worst_election_msgs: sent(&worst, "ELECTION"),
            elected_msgs: sent(&best, "ELECTED"),
            memory: mem,
        });
    }
    let _ = std::fs::remove_dir_all(&root);
    Ok(out)
}
