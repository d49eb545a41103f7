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
//! The replay is incremental ([`Beliefs::feed`]): the checker feeds a finished run, the
//! launcher feeds its live view as the traces grow, the tests feed the simulator's records.
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
    nodes: BTreeMap<NodeId, NodeState>,
}

/// One node's replay state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct NodeState {
    belief: Option<Belief>,
    /// When it came to hold `belief` (or to hold none), microseconds.
    since: u64,
    /// The newest term it started or joined, if newer than its belief's.
    electing: Option<u64>,
    /// Index into `spans` of the leadership still open.
    open: Option<usize>,
    /// When its process ended without saying so (killed, exited): later lines are not its.
    ended_at: Option<u64>,
}

/// Every live node follows one leader in one term, and that leader is among them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Agreed {
    /// What they all believe.
    pub belief: Belief,
    /// When the last of them came to believe it, microseconds.
    pub at_us: u64,
    /// When the leader itself came to believe it, microseconds.
    pub leader_since_us: u64,
}

impl Beliefs {
    /// Replays `run` up to `timeline.end_us`.
    pub fn replay(run: &RunDir, timeline: &Timeline) -> Self {
        let end = timeline.end_us;
        let mut b = Beliefs::default();
        for n in timeline.nodes() {
            b.nodes.entry(n).or_default();
        }
        // A node's own events come before its death at the same microsecond: it wrote them alive.
        // The records are in time order as the reader merges them; a run made otherwise (a
        // test's) is put in order here, ties in list order.
        let events = &run.node_events;
        let order: Option<Vec<usize>> = (!events.is_sorted_by_key(|r| r.t)).then(|| {
            let mut o: Vec<usize> = (0..events.len()).collect();
            o.sort_by_key(|&i| events[i].t);
            o
        });
        let mut deaths: Vec<_> = timeline.deaths().collect();
        deaths.sort_by_key(|d| d.0);
        let mut deaths = deaths.into_iter().take_while(|d| d.0 <= end).peekable();
        let at = |i: usize| &events[order.as_ref().map_or(i, |o| o[i])];
        for i in 0..events.len() {
            let r = at(i);
            if r.t > end {
                break;
            }
            while let Some((t, node, how)) = deaths.next_if(|d| d.0 < r.t) {
                b.process_ended(node, t, how);
            }
            if let Some(node) = r.node {
                b.feed(node, r.t, &r.event);
            }
        }
        for (t, node, how) in deaths {
            b.process_ended(node, t, how);
        }
        b.finish(end);
        b
    }

    /// The process of `node` ended at `t` without its own `stop` (killed, exited).
    pub(crate) fn process_ended(&mut self, node: NodeId, t: u64, how: Proc) {
        let mut st = self.nodes.remove(&node).unwrap_or_default();
        self.close(&mut st, t, SpanEnd::ProcessEnded(how));
        st.belief = None;
        st.electing = None;
        st.since = t;
        st.ended_at = Some(t);
        self.nodes.insert(node, st);
    }

    /// One event `node` recorded at `t` (in each node's own order; nodes may interleave freely).
    pub(crate) fn feed(&mut self, node: NodeId, t: u64, ev: &Event) {
        // Most events (messages, entries) change no belief: the state is written back only
        // when one did, so a mutual-exclusion run's replay is one lookup a record.
        let before = *self.nodes.entry(node).or_default();
        let mut st = before;
        // After its process ended only a fresh `start` counts. A line written before the end but
        // read after it (the launcher tails files) changes nothing: the process is gone.
        if let (Some(d), false) = (st.ended_at, matches!(ev, Event::Start { .. })) {
            if t > d {
                *self.after_death.entry(node).or_default() += 1;
            }
        } else {
            self.apply(node, &mut st, t, ev);
        }
        if st != before {
            self.nodes.insert(node, st);
        }
    }

    /// Closes what is still open at `end` and notes what every node believed then.
    pub(crate) fn finish(&mut self, end: u64) {
        let mut nodes = std::mem::take(&mut self.nodes);
        for (&n, st) in nodes.iter_mut() {
            self.close(st, end, SpanEnd::RunEnd);
            self.at_end.insert(n, st.belief);
        }
        self.nodes = nodes;
    }

    /// What `node` believes now.
    pub fn current(&self, node: NodeId) -> Option<Belief> {
        self.nodes.get(&node).and_then(|s| s.belief)
    }

    /// The newer term `node` is electing in, when it has no leader for it yet.
    pub fn electing(&self, node: NodeId) -> Option<u64> {
        self.nodes.get(&node).and_then(|s| s.electing)
    }

    /// Since when `node` has held its current belief (or none), microseconds.
    pub fn since(&self, node: NodeId) -> u64 {
        self.nodes.get(&node).map_or(0, |s| s.since)
    }

    /// The agreement of the nodes `live`: at least one, each believing the same leader in the
    /// same term, that leader one of them.
    pub fn agreement(&self, live: &[NodeId]) -> Option<Agreed> {
        let belief = self.current(*live.first()?)?;
        if !live.contains(&belief.leader) || live.iter().any(|&n| self.current(n) != Some(belief)) {
            return None;
        }
        Some(Agreed {
            belief,
            at_us: live.iter().map(|&n| self.since(n)).max().unwrap_or(0),
            leader_since_us: self.since(belief.leader),
        })
    }

    fn apply(&mut self, node: NodeId, st: &mut NodeState, t: u64, ev: &Event) {
        let before = st.belief;
        match *ev {
            Event::Start { .. } => {
                self.close(st, t, SpanEnd::Restarted);
                *st = NodeState {
                    since: t,
                    ..NodeState::default()
                };
                return;
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
                st.electing = None;
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
                    st.electing = Some(term);
                }
            }
            Event::Stop { .. } => {
                self.close(st, t, SpanEnd::ProcessEnded(Proc::Stopped));
                st.belief = None;
                st.electing = None;
            }
            _ => return,
        }
        if st.belief != before {
            st.since = t;
        }
    }

    fn close(&mut self, st: &mut NodeState, t: u64, why: SpanEnd) {
        if let Some(i) = st.open.take() {
            self.spans[i].to = t;
            self.spans[i].ended = why;
        }
    }
}
