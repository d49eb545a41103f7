//! A run as the pictures draw it: node lines, messages paired send-to-receive, marks on the
//! lines (suspicions judged against ground truth, leaders, critical sections, clock
//! adjustments) and the launcher's faults, within a window of time.

use crate::check::{suspicion, Proc, Timeline};
use crate::error::{usage, CliError};
use crate::trace::messages::{MsgName, Sends};
use crate::trace::{Event, NodeId, Record, RunDir};
use std::collections::HashMap;

mod brief;

pub(crate) use brief::clean_brief;

/// Message types that are liveness chatter, hidden unless `--show heartbeats`.
pub(crate) const HEARTBEATS: &[&str] = &["HEARTBEAT", "HB_ACK"];

/// Which part of a run to draw.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Window {
    /// Start, milliseconds since the run's start (None: from the beginning).
    pub from_ms: Option<u64>,
    /// End, milliseconds since the run's start (None: to the end).
    pub to_ms: Option<u64>,
    /// Draw heartbeats too.
    pub heartbeats: bool,
}

impl Window {
    /// Parses `--show` values (only `heartbeats` is known) into a window.
    pub fn new(from_ms: Option<u64>, to_ms: Option<u64>, show: &[String]) -> Result<Self, CliError> {
        let mut w = Window {
            from_ms,
            to_ms,
            heartbeats: false,
        };
        for s in show.iter().flat_map(|s| s.split(',')) {
            match s.trim() {
                "heartbeats" => w.heartbeats = true,
                other => return Err(usage(format!("--show: unknown '{other}' (known: heartbeats)"))),
            }
        }
        if let (Some(a), Some(b)) = (from_ms, to_ms) {
            if a >= b {
                return Err(usage(format!("--from {a} must be before --to {b}")));
            }
        }
        Ok(w)
    }
}

/// One message: its send, and its receive if it arrived.
#[derive(Debug, Clone, PartialEq)]
pub struct Arrow {
    /// Sender.
    pub from: NodeId,
    /// Destination.
    pub to: NodeId,
    /// Send time, microseconds (true time).
    pub sent: u64,
    /// Receive time; None: never accepted (lost, or the receiver was paused or dead).
    pub recv: Option<u64>,
    /// The sender's per-boot sequence number.
    pub seq: u64,
    /// Type name (`ELECTION`).
    pub name: String,
    /// Content in brief (`ELECTION(3, term=2)`), the type name in older traces.
    pub brief: String,
}

/// What a mark on a node's line says.
#[derive(Debug, Clone, PartialEq)]
pub enum MarkKind {
    /// This node suspected `target`; `right` when the target was really dead.
    Suspect {
        /// The suspected node.
        target: NodeId,
        /// Ground truth: the target was not alive.
        right: bool,
    },
    /// A suspicion withdrawn.
    Unsuspect,
    /// An election starts here.
    ElectionStart,
    /// This node believes `leader` leads `term`.
    Leader {
        /// Who leads.
        leader: NodeId,
        /// The term.
        term: u64,
    },
    /// This node stops believing it leads.
    StepDown,
    /// The physical clock was corrected.
    ClockAdjust,
    /// A protocol's state change or decision (`note`), or a message ignored.
    Note,
    /// The shared resource saw two holders at once (resource.jsonl's `violation`).
    Violation,
    /// The shared resource refused a begin with a stale fencing token (`reject_stale`).
    Stale,
}

impl MarkKind {
    /// The kind's name in the pictures' filters and legends (`suspect`, `leader`, ...).
    pub fn class(&self) -> &'static str {
        match self {
            MarkKind::Suspect { right: true, .. } => "suspect-true",
            MarkKind::Suspect { right: false, .. } => "suspect-false",
            MarkKind::Unsuspect => "unsuspect",
            MarkKind::ElectionStart => "election",
            MarkKind::Leader { .. } => "leader",
            MarkKind::StepDown => "stepdown",
            MarkKind::ClockAdjust => "clock",
            MarkKind::Note => "note",
            MarkKind::Violation => "violation",
            MarkKind::Stale => "stale",
        }
    }
}

/// A mark on a node's line at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// The node.
    pub node: NodeId,
    /// When, microseconds.
    pub t: u64,
    /// What.
    pub kind: MarkKind,
    /// In words, for hover details and notes.
    pub text: String,
}

/// What a stretch of a node's line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    /// SIGSTOP'd by the launcher.
    Paused,
    /// Killed or exited.
    Dead,
    /// In the critical section.
    Critical,
}

impl SpanKind {
    /// The kind's name in the pictures' filters and legends.
    pub fn class(&self) -> &'static str {
        match self {
            SpanKind::Paused => "paused",
            SpanKind::Dead => "dead",
            SpanKind::Critical => "critical",
        }
    }
}

/// A stretch of a node's line.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// The node.
    pub node: NodeId,
    /// From, microseconds.
    pub from: u64,
    /// To, microseconds.
    pub to: u64,
    /// What.
    pub kind: SpanKind,
    /// In words.
    pub text: String,
}

/// A run, ready to draw.
#[derive(Debug, Clone)]
pub struct Story {
    /// The algorithm.
    pub algo: String,
    /// The run's name (its directory's, as `20261125-141840-ring4-chang-roberts`), for titles.
    pub run_name: Option<String>,
    /// The shared resource's id, in a mutual-exclusion run (its lane is named so).
    pub resource: Option<NodeId>,
    /// The nodes, in run.json's order (ring order for rings).
    pub nodes: Vec<NodeId>,
    /// The run's start (the zero of every `+ms`), microseconds.
    pub start_us: u64,
    /// The window drawn, microseconds.
    pub t0: u64,
    /// The end of the window drawn, microseconds.
    pub t1: u64,
    /// Messages sent within the window, by send time.
    pub arrows: Vec<Arrow>,
    /// Messages left out as heartbeats.
    pub hidden: usize,
    /// Marks within the window, by time.
    pub marks: Vec<Mark>,
    /// Faults and critical sections overlapping the window.
    pub spans: Vec<Span>,
}

impl Story {
    /// The story of `run` within `w`.
    pub fn build(run: &RunDir, w: &Window) -> Story {
        let timeline = Timeline::build(run);
        let start_us = run.info.start_us;
        let last = run.node_events.iter().chain(&run.faults).map(|r| r.t).max();
        let end = timeline.end_us.max(last.unwrap_or(start_us));
        let t0 = w.from_ms.map_or(start_us, |ms| start_us + ms * 1000);
        let t1 = w.to_ms.map_or(end, |ms| start_us + ms * 1000).max(t0 + 1);
        let inside = |t: u64| t >= t0 && t <= t1;

        let mut arrows: Vec<Arrow> = Vec::new();
        let mut hidden = 0;
        // Every send, with its arrow when drawn; receives are paired with them at the end.
        let mut sends: Sends<Option<usize>> = Sends::default();
        let mut receives: Vec<(MsgName, u64)> = Vec::new();
        let mut marks = Vec::new();
        let mut cs_open: HashMap<NodeId, (u64, u64)> = HashMap::new();
        let mut spans = Vec::new();
        let judged = suspicion::judge(run, &timeline);
        let mut judged = judged.iter();
        for r in merged(&run.node_events, &run.resource) {
            let Some(node) = r.node else { continue };
            match &r.event {
                Event::Send {
                    to, msg, seq, brief, ..
                } => {
                    if !inside(r.t) {
                        sends.insert((node, *to, *seq), r.t, None);
                        continue;
                    }
                    if !w.heartbeats && HEARTBEATS.contains(&msg.as_str()) {
                        sends.insert((node, *to, *seq), r.t, None);
                        hidden += 1;
                        continue;
                    }
                    sends.insert((node, *to, *seq), r.t, Some(arrows.len()));
                    arrows.push(Arrow {
                        from: node,
                        to: *to,
                        sent: r.t,
                        recv: None,
                        seq: *seq,
                        name: msg.clone(),
                        brief: if brief.is_empty() {
                            msg.clone()
                        } else {
                            clean_brief(brief)
                        },
                    });
                }
                Event::Recv { from, seq, .. } => receives.push(((*from, node, *seq), r.t)),
                Event::Violation { nodes } => {
                    if inside(r.t) {
                        let text = format!("the resource saw nodes {nodes:?} hold it at once: VIOLATION");
                        marks.push(Mark {
                            node,
                            t: r.t,
                            kind: MarkKind::Violation,
                            text,
                        });
                    }
                }
                Event::RejectStale { by, token, highest } => {
                    if inside(r.t) {
                        let text = format!(
                            "the resource refused node {by}'s begin: fencing token {token} is below {highest}, the highest accepted"
                        );
                        marks.push(Mark {
                            node,
                            t: r.t,
                            kind: MarkKind::Stale,
                            text,
                        });
                    }
                }
                Event::Suspect { target, .. } => {
                    // judge() yields the suspicions in the same order as node_events.
                    let right = judged.next().is_some_and(|s| s.is_true());
                    if inside(r.t) {
                        let verdict = if right {
                            "true: it was dead"
                        } else {
                            "FALSE: it was alive"
                        };
                        let text = format!("{} ({verdict})", r.event.describe(node));
                        let kind = MarkKind::Suspect { target: *target, right };
                        marks.push(Mark {
                            node,
                            t: r.t,
                            kind,
                            text,
                        });
                    }
                }
                Event::CsEnter { req, .. } => {
                    cs_open.insert(node, (r.t, *req));
                }
                Event::CsExit { .. } => {
                    if let Some((from, req)) = cs_open.remove(&node) {
                        let text = format!("node {node} in the critical section (req {req})");
                        spans.push(Span {
                            node,
                            from,
                            to: r.t,
                            kind: SpanKind::Critical,
                            text,
                        });
                    }
                }
                ev => {
                    let kind = match ev {
                        Event::Unsuspect { .. } => MarkKind::Unsuspect,
                        Event::ElectionStart { .. } => MarkKind::ElectionStart,
                        &Event::Leader { leader, term } => MarkKind::Leader { leader, term },
                        Event::StepDown { .. } => MarkKind::StepDown,
                        Event::ClockAdjust { .. } => MarkKind::ClockAdjust,
                        Event::Note { .. } | Event::Ignore { .. } => MarkKind::Note,
                        _ => continue,
                    };
                    if inside(r.t) {
                        let text = ev.describe(node);
                        marks.push(Mark {
                            node,
                            t: r.t,
                            kind,
                            text,
                        });
                    }
                }
            }
        }
        // A duplicated datagram is received twice: the arrow ends at the first.
        for (name, t) in receives {
            if let Some(&Some(i)) = sends.send_of(name, t) {
                arrows[i].recv.get_or_insert(t);
            }
        }
        for (node, (from, req)) in cs_open {
            let text = format!("node {node} in the critical section (req {req}), still at the end");
            spans.push(Span {
                node,
                from,
                to: t1,
                kind: SpanKind::Critical,
                text,
            });
        }
        spans.extend(fault_spans(&timeline, t1));
        spans.retain(|s| s.to >= t0 && s.from <= t1);
        spans.sort_by_key(|s| (s.node, s.from));
        let real = std::fs::canonicalize(&run.path).unwrap_or_else(|_| run.path.clone());
        Story {
            algo: run.info.algo.clone(),
            resource: (!run.resource.is_empty()).then_some(crate::algo::mutex::RESOURCE_ID),
            run_name: real.file_name().map(|n| n.to_string_lossy().into_owned()),
            nodes: run.info.nodes.iter().map(|n| n.id).collect(),
            start_us,
            t0,
            t1,
            arrows,
            hidden,
            marks,
            spans,
        }
    }

    /// The name of node `n`'s lane: `node 3`, or `resource` for the shared resource.
    pub(crate) fn lane_name(&self, n: NodeId) -> String {
        if self.resource == Some(n) {
            "resource".to_string()
        } else {
            format!("node {n}")
        }
    }

    /// `+N ms` since the run's start.
    pub fn ms(&self, t: u64) -> f64 {
        (t as f64 - self.start_us as f64) / 1000.0
    }
}

/// The nodes' events and the resource's (resource.jsonl: node 0 of a mutual-exclusion run),
/// merged by time; at equal times the nodes' come first, as a send precedes its receive.
fn merged<'a>(nodes: &'a [Record], resource: &'a [Record]) -> impl Iterator<Item = &'a Record> {
    let (mut a, mut b) = (nodes.iter().peekable(), resource.iter().peekable());
    std::iter::from_fn(move || match (a.peek(), b.peek()) {
        (Some(x), Some(y)) if y.t < x.t => b.next(),
        (Some(_), _) => a.next(),
        (None, _) => b.next(),
    })
}

/// Paused and dead stretches of every node, from the launcher's ground truth.
fn fault_spans(timeline: &Timeline, end: u64) -> Vec<Span> {
    let mut out = Vec::new();
    for (&node, changes) in &timeline.changes {
        for (i, c) in changes.iter().enumerate() {
            let kind = match c.state {
                Proc::Paused => SpanKind::Paused,
                Proc::Killed | Proc::Exited => SpanKind::Dead,
                _ => continue,
            };
            let to = changes.get(i + 1).map_or(end, |n| n.t);
            let text = match kind {
                SpanKind::Paused => format!("node {node} paused (SIGSTOP): slow, not dead"),
                _ => format!("node {node} dead ({:?})", c.state).to_lowercase(),
            };
            out.push(Span {
                node,
                from: c.t,
                to,
                kind,
                text,
            });
        }
    }
    out
}
