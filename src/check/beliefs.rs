//! Replays every node's election events to learn what it believed, when: whom it took for
//! leader, and the intervals during which it believed it led.
//!
//! Rules, in the words of the trace:
//! - `start`: a fresh process; it believes nothing.
//! - `leader(L, T)`: it now believes L leads T. When L is itself, a leadership begins (a new one
//!   when T differs from the one it held); when L is another, any leadership of its own ends.
//! - `step_down`: it no longer believes it leads, nor anything else until told.
//! - `election_start(T)` with T newer than its belief: it has forgotten the old leader.
//! - `stop`, or the launcher killing it, or the process exiting: beliefs end with the process.
//! - the end of the run closes what is still open.
//!
//! Events of a process after it ended (a line flushed after SIGKILL was recorded) cannot be
//! beliefs of a live process: they are counted and left out.

use super::timeline::{Proc, Timeline};
use crate::trace::{Event, NodeId, RunDir};
use std::collections::BTreeMap;

/// What a node believes about leadership.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Belief {
    /// The node it believes leads.
    pub leader: NodeId,
    /// The term it believes that node leads.
    pub term: u64,
}

/// How a leadership interval ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanEnd {
    /// The node recorded `step_down`.
    StepDown,
    /// The node learned that another node leads.
    Follows(NodeId),
    /// The node started or joined an election of a newer term.
    NewElection,
    /// The node declared itself leader of another term.
    NewTerm,
    /// The process ended: killed, exited or stopped.
    ProcessEnded(Proc),
    /// A fresh process of the node started (the old one ended unrecorded).
    Restarted,
    /// The run ended while the node still believed it led.
    RunEnd,
}

/// An interval of true time during which `node` believed it led `term`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeadSpan {
    /// The self-declared leader.
    pub node: NodeId,
    /// The term it believed it led.
    pub term: u64,
    /// From (its `leader` event naming itself), microseconds.
    pub from: u64,
    /// To, microseconds.
    pub to: u64,
    /// What ended it.
    pub ended: SpanEnd,
}

/// One `leader` event: `node` learned at `t` that `belief` holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Learned {
    /// The node that learned.
    pub node: NodeId,
    /// What it learned.
    pub belief: Belief,
    /// When, microseconds.
    pub t: u64,
}

/// One `election_start` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Started {
    /// The node that started or joined.
    pub node: NodeId,
    /// The term.
    pub term: u64,
    /// When, microseconds.
    pub t: u64,
}

/// Everything the replay found, up to the end of the run.
#[derive(Debug, Clone, Default)]
pub struct Beliefs {
    /// Whether any election event (`election_start`, `leader`, `step_down`) was recorded.
    pub any_election: bool,
    /// What each node believed at the end (None: nothing, or its process had ended).
    pub at_end: BTreeMap<NodeId, Option<Belief>>,
    /// Every leadership interval, in the order they began.
    pub spans: Vec<LeadSpan>,
    /// Every `leader` event, in time order.
    pub learned: Vec<Learned>,
    /// Every `election_start` event, in time order.
    pub started: Vec<Started>,
    /// Per node, how many of its events came after its process had ended (left out).
    pub after_death: BTreeMap<NodeId, usize>,
}

#[derive(Default)]
struct NodeState {
    belief: Option<Belief>,
    /// Index into `spans` of the leadership still open.
    open: Option<usize>,
}

impl Beliefs {
    /// Replays `run` up to `timeline.end_us`.
    pub fn replay(run: &RunDir, timeline: &Timeline) -> Self {
        let end = timeline.end_us;
        let mut b = Beliefs::default();
        let mut nodes: BTreeMap<NodeId, NodeState> = timeline.nodes().map(|n| (n, NodeState::default())).collect();
        // A node's own events come before its death at the same microsecond: it wrote them alive.
        let mut steps: Vec<(u64, u8, usize)> = Vec::new();
        for (i, r) in run.node_events.iter().enumerate() {
            steps.push((r.t, 0, i));
        }
        let deaths: Vec<_> = timeline.deaths().collect();
        for (i, d) in deaths.iter().enumerate() {
            steps.push((d.0, 1, i));
        }
        steps.sort_by_key(|&(t, rank, i)| (t, rank, i));
        for (t, rank, i) in steps.into_iter().take_while(|s| s.0 <= end) {
            if rank == 1 {
                let (_, node, how) = deaths[i];
                let st = nodes.entry(node).or_default();
                b.close(st, t, SpanEnd::ProcessEnded(how));
                st.belief = None;
                continue;
            }
            let r = &run.node_events[i];
            let Some(node) = r.node else { continue };
            if !matches!(r.event, Event::Start { .. }) && timeline.state_before(node, t).ended() {
                *b.after_death.entry(node).or_default() += 1;
                continue;
            }
            let st = nodes.entry(node).or_default();
            b.apply(node, st, t, &r.event);
        }
        for (&n, st) in nodes.iter_mut() {
            b.close(st, end, SpanEnd::RunEnd);
            b.at_end.insert(n, st.belief);
        }
        b
    }

    fn apply(&mut self, node: NodeId, st: &mut NodeState, t: u64, ev: &Event) {
        match *ev {
            Event::Start { .. } => {
                self.close(st, t, SpanEnd::Restarted);
                st.belief = None;
            }
            Event::Leader { leader, term } => {
                self.any_election = true;
                let belief = Belief { leader, term };
                self.learned.push(Learned { node, belief, t });
                if leader != node {
                    self.close(st, t, SpanEnd::Follows(leader));
                } else if st.open.is_none_or(|i| self.spans[i].term != term) {
                    self.close(st, t, SpanEnd::NewTerm);
                    st.open = Some(self.spans.len());
                    self.spans.push(LeadSpan {
                        node,
                        term,
                        from: t,
                        to: t,
                        ended: SpanEnd::RunEnd,
                    });
                }
                st.belief = Some(belief);
            }
            Event::StepDown { .. } => {
                self.any_election = true;
                self.close(st, t, SpanEnd::StepDown);
                st.belief = None;
            }
            Event::ElectionStart { term } => {
                self.any_election = true;
                self.started.push(Started { node, term, t });
                if st.belief.is_none_or(|b| b.term < term) {
                    self.close(st, t, SpanEnd::NewElection);
                    st.belief = None;
                }
            }
            Event::Stop { .. } => {
                self.close(st, t, SpanEnd::ProcessEnded(Proc::Stopped));
                st.belief = None;
            }
            _ => {}
        }
    }

    fn close(&mut self, st: &mut NodeState, t: u64, why: SpanEnd) {
        if let Some(i) = st.open.take() {
            self.spans[i].to = t;
            self.spans[i].ended = why;
        }
    }
}
