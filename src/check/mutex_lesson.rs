//! Which two-holders-at-once the faults explain: the lessons the course teaches with them, told
//! apart from bugs. They stay violations (the data was written by two at once unless the
//! resource fenced the stale one off), but a chaos soak judges them as the faults' doing.
//!
//! - **The timeout cannot tell slow from dead** (Kleppmann): `token-ring` regenerates a token it
//!   has not seen for a while, `central` with `regrant_ms` grants again to the next; a holder
//!   that was only paused, or cut off or delayed by the network, is still inside (or receives
//!   its old token or grant late and enters with it).
//! - **Amnesia**: a `central` coordinator, or a `quorum`/`maekawa` voter without `--durable`,
//!   that restarts forgets whom it let in.
//! - **The resource hears late**: the holder left by its own trace before the next one entered,
//!   but the resource read the next one's `BEGIN` before its `END`: the holder was paused
//!   between leaving and sending its `END`, or its `END` reached the resource stopped with a
//!   full socket buffer and was dropped. (The network's rules never touch the resource, so
//!   they cannot explain it.)
//!
//! Each needs a fault near it: one of the holders entered with a token lower than the other's
//! (the stale one), and between shortly before the stale one's entry and the overlap a node
//! was paused, killed or restarted, or the network cut, lost or delayed messages. Lamport's and
//! Ricart-Agrawala's algorithms have no timeout and keep what they promised on stable storage:
//! nothing explains two holders there, unless the run gives them the family's failure detector
//! (`--set detector`), which takes a slow node for dead as any timeout does.

use super::mutex::{Begins, Entry, Overlap};
use super::network::Network;
use crate::trace::{Event, NodeId, RunDir};

/// What in the run's algorithm lets a fault put two nodes in the section (None: nothing may):
/// its own lesson, or -- when it hosts the family's failure detector (`--set detector`) -- that
/// the detector cannot tell slow from dead.
fn lesson(run: &RunDir) -> Option<&'static str> {
    let entry = crate::catalog::find(&run.info.algo)?;
    let detector = !run.info.options["set"]["detector"].is_null() && entry.key("detector").is_some();
    entry.overlap_lesson.or(detector.then_some(DETECTOR_LESSON))
}

/// The lesson of an algorithm that goes on without the nodes its detector takes for dead.
const DETECTOR_LESSON: &str =
    "the failure detector cannot tell slow from dead: a node only paused, cut off or slow is taken for dead, and the others go on without it";

/// Why the two holders of `o` are a fault's lesson, in words; None when nothing explains them.
/// `entries` are the run's entries by the nodes' traces (indexed by `begins`); `window_us` how
/// long before the stale holder's entry a fault may have set it up.
pub(crate) fn explain(
    run: &RunDir,
    net: &Network,
    entries: &[Entry],
    begins: &Begins,
    o: &Overlap,
    window_us: u64,
) -> Option<String> {
    let start = run.info.start_us;
    let at = |t: u64| super::summary::at(start, t);
    // The entry of each holder that covers the overlap: at the resource, the one whose BEGIN it
    // read last from that holder (a paused resource reads late, so not simply the latest);
    // by the nodes' traces, the holder's latest entry up to it.
    let held: Vec<&Entry> = o
        .nodes
        .iter()
        .filter_map(|&n| {
            let read = o.at_resource.then(|| last_begin_read(run, n, o.t)).flatten();
            read.and_then(|(req, token, t)| begins.read_at(n, req, token, t))
                .or_else(|| {
                    entries
                        .iter()
                        .filter(|e| e.node == n && e.enter <= o.t)
                        .max_by_key(|e| e.enter)
                })
        })
        .collect();
    if o.at_resource {
        // By their own traces one holder had left before the last one entered: they were never
        // inside at once, the resource only heard of it in another order.
        let last_in = held.iter().map(|e| e.enter).max().unwrap_or(o.t);
        if let Some(gone) = held.iter().find(|e| e.exit <= last_in) {
            return heard_late(run, gone, &other(&o.nodes, gone.node), o.t);
        }
    }
    let lesson = lesson(run)?;
    let mut tokens: Vec<(u64, &Entry)> = held.iter().filter_map(|e| e.token.map(|t| (t, *e))).collect();
    tokens.sort_by_key(|x| x.0);
    let (&(low, stale), &(high, fresh)) = (tokens.first()?, tokens.last()?);
    if low == high {
        return None;
    }
    let from = stale.enter.saturating_sub(window_us);
    let faults: Vec<String> = run
        .faults
        .iter()
        .filter(|r| r.t >= from && r.t <= o.t)
        .filter_map(|r| {
            let n = r.node.map_or(String::new(), |n| format!(" node {n}"));
            let what = match &r.event {
                Event::Pause { .. } => format!("paused{n}"),
                Event::Kill { .. } => format!("killed{n}"),
                Event::Restart { .. } => format!("restarted{n}"),
                _ => return None,
            };
            Some(format!("{what} at {}", at(r.t)))
        })
        .collect();
    let network = net.during(from, o.t);
    if faults.is_empty() && network.is_none() {
        return None;
    }
    let mut why = faults[faults.len().saturating_sub(4)..].join(", ");
    if let Some(n) = network {
        if !why.is_empty() {
            why.push_str("; ");
        }
        why.push_str(&format!("the network: {n}"));
    }
    Some(format!(
        "node {} held token {low} (entered at {}) when node {} entered with the higher token {high}: {lesson} ({why}); with --fencing the resource rejects the lower token",
        stale.node,
        at(stale.enter),
        fresh.node
    ))
}

fn other(nodes: &[NodeId], not: NodeId) -> String {
    let o: Vec<String> = nodes.iter().filter(|&&n| n != not).map(u64::to_string).collect();
    o.join(", ")
}

/// The request and token of the last BEGIN the resource read from `n` up to `t`, and when.
fn last_begin_read(run: &RunDir, n: NodeId, t: u64) -> Option<(u64, Option<u64>, u64)> {
    run.resource
        .iter()
        .rev()
        .filter(|r| r.t <= t)
        .find_map(|r| match &r.event {
            Event::Access { by, req, token, phase } if *by == n && phase == "begin" => Some((*req, *token, r.t)),
            _ => None,
        })
}

/// Why the resource still counted `gone` (who had left by its own trace) when the violation at
/// `t` was recorded: a pause of the holder after it left (its END went out only when it ran
/// again), or a pause of the resource with the END never read (a stopped process's socket
/// buffer fills, and the kernel drops what comes after). None when neither happened.
fn heard_late(run: &RunDir, gone: &Entry, others: &str, t: u64) -> Option<String> {
    let start = run.info.start_us;
    let at = |t: u64| super::summary::at(start, t);
    let end_read = run
        .resource
        .iter()
        .find(|r| {
            r.t >= gone.enter
                && matches!(&r.event, Event::Access { by, req, phase, .. } if *by == gone.node && *req == gone.req && phase == "end")
        })
        .map(|r| r.t);
    // When `n` was paused (SIGSTOP) and still stopped at some moment from `gone`'s exit to `t`.
    let paused = |n: NodeId| {
        let mut since = None;
        for r in run.faults.iter().filter(|r| r.node == Some(n) && r.t <= t) {
            match r.event {
                Event::Pause { .. } => since = since.or(Some(r.t)),
                Event::Resume { .. } | Event::Kill { .. } if r.t < gone.exit => since = None,
                _ => {}
            }
        }
        since
    };
    let read = match end_read {
        Some(e) => format!("read at {}", at(e)),
        None => "never read".to_string(),
    };
    let why = match (paused(gone.node), paused(crate::algo::mutex::RESOURCE_ID)) {
        (Some(p), _) => format!("node {} was paused at {} before its END went out", gone.node, at(p)),
        (None, Some(p)) if end_read.is_none() => format!(
            "the resource was paused at {}: a stopped process's socket buffer fills, and what reaches it full is dropped",
            at(p)
        ),
        _ => return None,
    };
    Some(format!(
        "node {} left the section at {} by its own trace, before node {others} entered, but the resource read node {others}'s BEGIN before its END ({read}): {why}",
        gone.node,
        at(gone.exit),
    ))
}
