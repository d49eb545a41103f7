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
//! - **The resource hears late**: the holder left by its own trace, but its `END` was lost or
//!   delayed by the network, so the resource still counted it when the next holder began.
//!
//! Each needs a fault near it: one of the holders entered with a token lower than the other's
//! (the stale one), and between shortly before the stale one's entry and the overlap a node
//! was paused, killed or restarted, or the network cut, lost or delayed messages. Lamport's and
//! Ricart-Agrawala's algorithms have no timeout and keep what they promised on stable storage:
//! nothing explains two holders there, unless the run gives them the family's failure detector
//! (`--set detector`), which takes a slow node for dead as any timeout does.

use super::mutex::{Entry, Overlap};
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
/// `entries` are the run's entries by the nodes' traces; `window_us` how long before the
/// stale holder's entry a fault may have set it up.
pub fn explain(run: &RunDir, net: &Network, entries: &[Entry], o: &Overlap, window_us: u64) -> Option<String> {
    let start = run.info.start_us;
    let at = |t: u64| super::summary::at(start, t);
    // The entry of each holder that covers the overlap (its latest entry up to it).
    let held: Vec<&Entry> = o
        .nodes
        .iter()
        .filter_map(|&n| {
            entries
                .iter()
                .filter(|e| e.node == n && e.enter <= o.t)
                .max_by_key(|e| e.enter)
        })
        .collect();
    if o.at_resource {
        // By its own trace a holder had left: its END reached the resource late or never.
        if let Some(gone) = held.iter().find(|e| e.exit < o.t) {
            if let Some(n) = net.during(gone.exit, o.t) {
                return Some(format!(
                    "node {} left the section at {} by its own trace, but its END had not reached the resource when node {} began (the network then: {n})",
                    gone.node,
                    at(gone.exit),
                    other(&o.nodes, gone.node)
                ));
            }
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
