//! The course's best case of the bully algorithm, scripted: once n leads, every node but n-1 is
//! paused and n is killed, so that n-1 alone notices; it has nobody higher to ask and sends
//! COORDINATOR to the n-2 others, who read it when resumed. The counts are the sends after the
//! kill; the time is from the kill to n-1's claim.

use super::cases::Scripted;
use super::claims::{count, Claim};
use super::elections::notes;
use super::launch::{Launch, Shape};
use super::readings::replay;
use crate::check::Belief;
use crate::cluster::control;
use crate::error::{failed, CliError};
use crate::trace::{Event, NodeId, RunDir};
use std::path::Path;
use std::time::{Duration, Instant};

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

/// Whether each of `nodes` has learned that `leader` leads `term`, in the run so far.
fn learned(run: &Path, nodes: impl IntoIterator<Item = NodeId>, leader: NodeId, term: u64) -> bool {
    let Ok(run) = RunDir::load(run) else {
        return false;
    };
    let b = replay(&run);
    let belief = Belief { leader, term };
    nodes
        .into_iter()
        .all(|n| b.learned.iter().any(|l| l.node == n && l.belief == belief))
}

fn command(run: &Path, cmd: &str) -> Result<(), CliError> {
    let answer = control(run, cmd)?;
    if answer.starts_with(crate::cluster::control::ERROR_PREFIX) {
        return Err(failed(format!("bully best case: `{cmd}`: {answer}")));
    }
    Ok(())
}

/// Runs the story; returns the run and the time of the kill.
fn story(dir: &Path, algo: &str, n: usize) -> Result<(RunDir, u64), CliError> {
    let nn = n as u64;
    let args = ["--algo", algo, "--initiators", "all", "--duration", "600"];
    let l = Launch::spawn(dir, Shape::Mesh("complete"), n, &args)?;
    let run = l.run_dir();
    let patience = Duration::from_secs(60);
    wait_for("the first election", patience, || learned(&run, 1..=nn, nn, 1))?;
    for i in 1..=nn - 2 {
        command(&run, &format!("pause {i}"))?;
    }
    command(&run, &format!("kill {nn}"))?;
    wait_for("node n-1's claim", patience, || learned(&run, [nn - 1], nn - 1, 2))?;
    for i in 1..=nn - 2 {
        command(&run, &format!("resume {i}"))?;
    }
    wait_for("the others following n-1", patience, || learned(&run, 1..nn, nn - 1, 2))?;
    command(&run, "quit")?;
    let mut mem = None;
    let done = l.wait(&mut mem)?;
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

/// The scripted case (see the module header), at size `n` (at least 3).
pub(super) fn run(dir: &Path, algo: &str, n: usize) -> Scripted {
    let nn = n as u64;
    if n < 3 {
        return Err("needs at least 3 nodes".into());
    }
    let (run, killed) = story(dir, algo, n).map_err(|e| e.to_string())?;
    let claim = replay(&run)
        .learned
        .iter()
        .find(|l| {
            l.node == nn - 1
                && l.belief
                    == Belief {
                        leader: nn - 1,
                        term: 2,
                    }
        })
        .map(|l| l.t);
    let election_ms = claim.map(|c| c.saturating_sub(killed) as f64 / 1000.0);
    let counts = vec![
        count("ELECTION", sent_after(&run, "ELECTION", killed), "0", Claim::Exact(0)),
        count("OK", sent_after(&run, "OK", killed), "0", Claim::Exact(0)),
        count(
            "COORDINATOR",
            sent_after(&run, "COORDINATOR", killed),
            "n-2 (best)",
            Claim::Exact(nn - 2),
        ),
    ];
    // n was killed: no counters from it.
    Ok((election_ms, counts, notes(&run, n - 1, 2)))
}
