//! The checker's mutual-exclusion section, self-contained: from the nodes' `cs_request` /
//! `cs_enter` / `cs_exit` and from the resource's `access` / `violation` / `reject_stale`, was
//! the section ever held by two at once; was every request served while the run was
//! fault-free; did an algorithm that promises FIFO entries (`central`, by its registry entry)
//! serve in FIFO order; and which faults preceded each violation.
//! [`analyse`] finds the facts, [`summary`] says them.

use super::mutex_progress::{DeadHolder, FencingBreach, Stall};
use super::timeline::Timeline;
use crate::algo::mutex::RESOURCE_ID;
use crate::catalog::is_mutex;
use crate::trace::{Event, NodeId, Record, RunDir};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

mod words;

pub use words::summary;
use words::{lesson, network_then};

/// How long a request may wait, fault-free, before it counts as never served.
const STARVED_US: u64 = 10_000_000;

/// One stay in the critical section, by a node's own trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The node.
    pub node: NodeId,
    /// Its request id.
    pub req: u64,
    /// The fencing token it entered with.
    pub token: Option<u64>,
    /// When it entered (trace time).
    pub enter: u64,
    /// When it left: its `cs_exit`, its death, or the end of the run.
    pub exit: u64,
}

/// The run's entries by holder, request and token, each list in order of entry: which entry a
/// BEGIN the resource read was. A resource that was paused or busy reads a BEGIN well after the
/// holder sent it, so the time it was read does not tell; request numbers start again at each
/// boot, so the token tells the boots apart.
pub(crate) struct Begins<'a>(HashMap<(NodeId, u64, Option<u64>), Vec<&'a Entry>>);

impl<'a> Begins<'a> {
    /// The index of `entries` (in order of entry, as [`analyse`] keeps them).
    pub(crate) fn new(entries: &'a [Entry]) -> Self {
        let mut by = HashMap::<_, Vec<&Entry>>::new();
        for e in entries {
            by.entry((e.node, e.req, e.token)).or_default().push(e);
        }
        Begins(by)
    }

    /// The entry whose BEGIN (by `by`, of request `req`, with `token`) the resource read at
    /// `read_at`: the holder's latest such entry up to then, by its own trace.
    pub(crate) fn read_at(&self, by: NodeId, req: u64, token: Option<u64>, read_at: u64) -> Option<&'a Entry> {
        let list = self.0.get(&(by, req, token))?;
        let i = list.partition_point(|e| e.enter <= read_at);
        i.checked_sub(1).map(|i| list[i])
    }
}

/// Two nodes in the section at once, with the faults before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlap {
    /// When the second entered (trace time).
    pub t: u64,
    /// The holders.
    pub nodes: Vec<NodeId>,
    /// Seen by the resource (else only by the nodes' own traces).
    pub at_resource: bool,
    /// The launcher's faults before it, latest last (at most five), in words.
    pub faults: Vec<String>,
    /// What the network was doing then, in words (None: nothing).
    pub network: Option<String>,
    /// The fault's lesson it shows, in words ([`super::mutex_lesson`]); None: nothing explains it.
    pub explained: Option<String>,
}

/// Everything the mutex section found.
#[derive(Debug, Clone, Default)]
pub struct MutexFacts {
    /// Entries by the nodes' traces, by time.
    pub entries: Vec<Entry>,
    /// Requests made.
    pub requests: usize,
    /// Requests that waited longer than 10 s without entering, in a fault-free run.
    pub starved: Vec<(NodeId, u64)>,
    /// Requests still waiting at the end of the run (not a violation by themselves).
    pub pending: usize,
    /// Overlaps by the nodes' own traces.
    pub node_overlaps: Vec<Overlap>,
    /// Violations the resource saw.
    pub resource_violations: Vec<Overlap>,
    /// Accesses the resource accepted.
    pub accesses: usize,
    /// Stale begins or ends the resource refused (fencing).
    pub rejected: usize,
    /// Whether the resource checked fencing tokens.
    pub fencing: bool,
    /// Whether the launcher caused no fault.
    pub fault_free: bool,
    /// central: entries in FIFO order of arrival at the coordinator (None: not judged).
    pub fifo: Option<Result<usize, String>>,
    /// The progress bound (µs): a stall longer than this is judged.
    pub bound_us: u64,
    /// Stretches longer than the bound in which requests waited and nobody entered.
    pub stalls: Vec<Stall>,
    /// Violations the resource recorded that only a holder killed since its begin caused.
    pub dead_holders: Vec<DeadHolder>,
    /// Lower fencing tokens the resource accepted after higher ones.
    pub breaches: Vec<FencingBreach>,
}

impl MutexFacts {
    /// Whether mutual exclusion, liveness (fault-free) or FIFO was violated. With fencing, an
    /// overlap the nodes saw but the resource fenced off is not one: the data stayed safe.
    pub fn violated(&self) -> bool {
        !self.resource_violations.is_empty()
            || (!self.fenced_off() && !self.node_overlaps.is_empty())
            || !self.starved.is_empty()
            || matches!(self.fifo, Some(Err(_)))
            || !self.breaches.is_empty()
            || self.stalls.iter().any(|s| !s.explained)
    }

    /// Whether two holders were in the section at once (at the resource, or by the nodes'
    /// traces where the resource did not fence the stale one off).
    pub(crate) fn exclusion_violated(&self) -> bool {
        !self.resource_violations.is_empty()
            || (!self.fenced_off() && !self.node_overlaps.is_empty())
            || !self.breaches.is_empty()
    }

    /// Whether the resource kept every stale holder off: fencing on, and never a lower token
    /// accepted after a higher one.
    pub(crate) fn fenced_off(&self) -> bool {
        self.fencing && self.breaches.is_empty()
    }
}

fn fault_words(r: &Record) -> Option<String> {
    let node = r.node.map_or(String::new(), |n| format!("node {n}"));
    let what = match &r.event {
        Event::Pause { .. } => format!("paused {node}"),
        Event::Resume { .. } => format!("resumed {node}"),
        Event::Kill { signal, .. } => format!("killed {node} ({signal})"),
        Event::Restart { .. } => format!("restarted {node}"),
        // Every network action in the rules model's words (`cut the link 2-10 (both ways)`).
        ev => match crate::net::NetAction::from_event(ev) {
            Some(a) => a.describe(),
            None if matches!(ev, Event::Partition { .. } | Event::Heal { .. } | Event::Cut { .. }) => ev.kind().into(),
            None => return None,
        },
    };
    Some(what)
}

/// Works out the mutex facts of `run`; None when it is not a mutual-exclusion run.
pub fn analyse(run: &RunDir) -> Option<MutexFacts> {
    analyse_with(run, &Timeline::build(run))
}

/// [`analyse`] with the run's timeline already built.
pub(crate) fn analyse_with(run: &RunDir, timeline: &Timeline) -> Option<MutexFacts> {
    if !is_mutex(&run.info.algo) {
        return None;
    }
    let start = run.info.start_us;
    let net = super::network::Network::of(run);
    let faults: Vec<(u64, String)> = run
        .faults
        .iter()
        .filter_map(|r| fault_words(r).map(|w| (r.t, w)))
        .collect();
    let before = |t: u64| -> Vec<String> {
        let f: Vec<String> = faults
            .iter()
            .filter(|(ft, _)| *ft <= t)
            .map(|(ft, w)| format!("{w} at {:+} ms", (*ft as i64 - start as i64) / 1000))
            .collect();
        f[f.len().saturating_sub(5)..].to_vec()
    };
    let end = run.end_us().unwrap_or(start);
    // A killed (or exited) process holds nothing: its access ends with it.
    let mut deaths: Vec<(u64, NodeId)> = timeline.deaths().map(|(t, n, _)| (t, n)).collect();
    deaths.sort();
    let set = run.info.options.get("set");
    let fencing = set
        .and_then(|s| s.get("fencing"))
        .and_then(|v| v.as_str())
        .is_some_and(|v| crate::algo::options::boolean(v) == Some(true));
    let mut f = MutexFacts {
        fencing,
        fault_free: faults.is_empty(),
        ..MutexFacts::default()
    };

    // Entries and requests from the nodes' own traces.
    let mut open: BTreeMap<NodeId, Entry> = BTreeMap::new();
    let mut waiting: BTreeMap<NodeId, (u64, u64)> = BTreeMap::new();
    let close = |e: Entry, at: u64, out: &mut Vec<Entry>| out.push(Entry { exit: at, ..e });
    for r in &run.node_events {
        let Some(node) = r.node else { continue };
        // A death ends whatever the dead node held.
        for &(dt, dn) in deaths.iter().filter(|(dt, _)| *dt <= r.t) {
            if let Some(e) = open.get(&dn).filter(|e| e.enter <= dt).cloned() {
                open.remove(&dn);
                close(e, dt, &mut f.entries);
            }
        }
        match r.event {
            Event::Start { .. } => {
                waiting.remove(&node);
                if let Some(e) = open.remove(&node) {
                    close(e, r.t, &mut f.entries);
                }
            }
            Event::CsRequest { req } => {
                f.requests += 1;
                waiting.insert(node, (req, r.t));
            }
            Event::CsEnter { req, token } => {
                if let Some((_, since)) = waiting.remove(&node) {
                    if f.fault_free && r.t - since > STARVED_US {
                        f.starved.push((node, req));
                    }
                }
                open.insert(
                    node,
                    Entry {
                        node,
                        req,
                        token,
                        enter: r.t,
                        exit: end,
                    },
                );
            }
            Event::CsExit { .. } => {
                if let Some(e) = open.remove(&node) {
                    close(e, r.t, &mut f.entries);
                }
            }
            _ => {}
        }
    }
    f.entries.extend(open.into_values());
    f.entries.sort_by_key(|e| e.enter);
    for (node, (req, since)) in waiting {
        if f.fault_free && end.saturating_sub(since) > STARVED_US {
            f.starved.push((node, req));
        } else {
            f.pending += 1;
        }
    }

    // Overlaps by the nodes: an entry before the previous holders left.
    for (i, e) in f.entries.iter().enumerate() {
        let mut inside: Vec<NodeId> = f.entries[..i]
            .iter()
            .filter(|o| o.exit > e.enter && o.node != e.node)
            .map(|o| o.node)
            .collect();
        if !inside.is_empty() {
            inside.push(e.node);
            f.node_overlaps.push(Overlap {
                t: e.enter,
                nodes: inside,
                at_resource: false,
                faults: before(e.enter),
                network: net.during(e.enter, e.enter),
                explained: None,
            });
        }
    }

    let begins = Begins::new(&f.entries);
    for r in &run.resource {
        match &r.event {
            Event::Access { phase, .. } if phase == "begin" => f.accesses += 1,
            Event::RejectStale { .. } => f.rejected += 1,
            _ => {}
        }
    }
    let (real, dead_holders) = super::mutex_progress::judge_resource_violations(run, timeline, &begins);
    f.resource_violations = real
        .into_iter()
        .map(|(t, nodes)| Overlap {
            t,
            nodes,
            at_resource: true,
            faults: before(t),
            network: net.during(t, t),
            explained: None,
        })
        .collect();
    f.dead_holders = dead_holders;
    if f.fencing {
        f.breaches = super::mutex_progress::fencing_breaches(run);
    }
    f.bound_us = super::mutex_progress::bound_us(run);
    let window = 2 * f.bound_us;
    for o in f.node_overlaps.iter_mut().chain(f.resource_violations.iter_mut()) {
        o.explained = super::mutex_lesson::explain(run, &net, &f.entries, &begins, o, window);
    }
    f.stalls = super::mutex_progress::stalls(run, timeline, f.bound_us);

    let promises_fifo = crate::catalog::find(&run.info.algo)
        .is_some_and(|e| e.promises.contains(&crate::catalog::Promise::FifoEntries));
    if promises_fifo && f.fault_free {
        f.fifo = Some(fifo(run, &f.entries));
    }
    Some(f)
}

/// The order requests reached the coordinator (the highest participant id) against the order
/// of the entries.
fn fifo(run: &RunDir, entries: &[Entry]) -> Result<usize, String> {
    let coordinator = run
        .info
        .nodes
        .iter()
        .map(|n| n.id)
        .filter(|&i| i != RESOURCE_ID)
        .max()
        .unwrap_or(0);
    let arrivals: Vec<NodeId> = run
        .node_events
        .iter()
        .filter(|r| r.node == Some(coordinator))
        .filter_map(|r| match &r.event {
            Event::Recv { from, msg, .. } if msg == "REQUEST" => Some(*from),
            Event::CsRequest { .. } => Some(coordinator),
            _ => None,
        })
        .collect();
    let order: Vec<NodeId> = entries.iter().map(|e| e.node).collect();
    for (i, (a, b)) in arrivals.iter().zip(order.iter()).enumerate() {
        if a != b {
            return Err(format!(
                "entry {} went to node {b}, but node {a}'s request had reached the coordinator first",
                i + 1
            ));
        }
    }
    Ok(arrivals.len().min(order.len()))
}

/// The mutex section of a mutual-exclusion run, for the checker's family table.
pub fn section(
    run: &RunDir,
    timeline: &super::timeline::Timeline,
) -> Option<std::sync::Arc<dyn super::section::Section>> {
    analyse_with(run, timeline).map(|f| {
        std::sync::Arc::new(Section {
            facts: f,
            start_us: run.info.start_us,
        }) as _
    })
}

/// [`MutexFacts`] as a checker section.
#[derive(Debug, Clone)]
pub struct Section {
    /// The facts.
    pub facts: MutexFacts,
    /// The run's start, the zero of every `+ms`.
    pub start_us: u64,
}

impl super::section::Section for Section {
    fn family(&self) -> &'static str {
        "mutex"
    }

    fn findings(&self) -> Vec<super::section::Finding> {
        use super::section::Finding;
        let f = &self.facts;
        let ms = |t: u64| format!("{:+} ms", (t as i64 - self.start_us as i64) / 1000);
        let mut out: Vec<Finding> = f
            .resource_violations
            .iter()
            .map(|o| Finding {
                explanation: lesson(o),
                ..Finding::violation(
                    "mutual exclusion (resource)",
                    format!(
                        "mutex: nodes {:?} held the resource at once at {}{}",
                        o.nodes,
                        ms(o.t),
                        network_then(o)
                    ),
                )
            })
            .collect();
        out.extend(f.node_overlaps.iter().map(|o| Finding {
            property: "mutual exclusion (nodes)".into(),
            what: format!(
                "mutex: nodes {:?} were in the section at once at {} (their own traces){}",
                o.nodes,
                ms(o.t),
                network_then(o)
            ),
            violation: !f.fenced_off(),
            explanation: lesson(o),
        }));
        out.extend(f.breaches.iter().map(|b| {
            Finding::violation(
                "fencing",
                format!("mutex: {}", super::mutex_progress::breach_line(b, self.start_us)),
            )
        }));
        out.extend(f.stalls.iter().map(|s| Finding {
            property: "progress".into(),
            what: super::mutex_progress::stall_line(s, self.start_us),
            violation: true,
            explanation: Some(super::explain::Explanation {
                term: 0,
                inherent: s.explained,
                by_design: false,
                words: s.cause.clone(),
            }),
        }));
        out.extend(f.starved.iter().map(|(n, r)| {
            Finding::violation(
                "every request served",
                format!("mutex: node {n}'s request {r} waited over 10 s, fault-free"),
            )
        }));
        if let Some(Err(e)) = &f.fifo {
            out.push(Finding::violation("FIFO order", format!("mutex: FIFO: {e}")));
        }
        out
    }

    fn properties(&self, _a: &super::Analysis) -> Vec<String> {
        let f = &self.facts;
        let mut v = vec![format!(
            "mutual exclusion: {} ({} entries; the resource: {} accesses, {}{})",
            if f.exclusion_violated() { "VIOLATED" } else { "held" },
            f.entries.len(),
            f.accesses,
            super::summary::count(f.resource_violations.len(), "violation"),
            if f.fencing {
                format!(", {} stale rejected", f.rejected)
            } else {
                String::new()
            }
        )];
        if f.fault_free {
            v.push(format!(
                "every request served (fault-free): {}",
                if f.starved.is_empty() { "yes" } else { "NO" }
            ));
        }
        let unexplained = f.stalls.iter().filter(|s| !s.explained).count();
        v.push(format!(
            "progress (no stall over {} ms with every participant running): {}",
            f.bound_us / 1000,
            match (unexplained, f.stalls.len()) {
                (0, 0) => "held".to_string(),
                (0, k) => format!("held; {k} stalls explained by faults"),
                (u, k) => format!("VIOLATED ({u} of {k} stalls with every participant running)"),
            }
        ));
        if f.fencing {
            v.push(format!(
                "fencing: {}",
                if f.breaches.is_empty() {
                    "held (no lower token accepted after a higher one)".to_string()
                } else {
                    format!("VIOLATED ({} lower tokens accepted)", f.breaches.len())
                }
            ));
        }
        if !f.dead_holders.is_empty() {
            v.push(format!(
                "{} resource violations left out: a holder had been killed (a killed holder is not a holder)",
                f.dead_holders.len()
            ));
        }
        if let Some(fifo) = &f.fifo {
            v.push(format!(
                "FIFO (central): {}",
                if fifo.is_ok() { "held" } else { "VIOLATED" }
            ));
        }
        v
    }

    fn details(&self, _a: &super::Analysis, out: &mut String) {
        out.push_str(&summary(&self.facts, self.start_us));
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
