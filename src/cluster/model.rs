//! What the launcher knows of one node: its process state, and the suspicions, step-downs and
//! elections it recorded. Whom it believes leads is the checker's replay
//! ([`crate::check::beliefs::Beliefs`]), fed by the fleet: there is one reading of a run.

use super::plan::NodePlan;
use super::watch::Tail;
use crate::check::beliefs::Beliefs;
use crate::trace::{Event, Record};
use nix::unistd::Pid;

/// A node process's state as the launcher made it or saw it end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum State {
    /// Running (live).
    Running,
    /// Stopped with SIGSTOP.
    Paused,
    /// SIGKILL sent, not yet reaped.
    Killed,
    /// Reaped; how it ended (`exit 0`, `signal SIGKILL`).
    Exited(String),
}

/// A suspicion a node recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Suspicion {
    /// When (trace time).
    pub t: u64,
    /// Who suspected.
    pub by: u64,
    /// Whom.
    pub target: u64,
    /// How long it had heard nothing, ms.
    pub silence_ms: u64,
}

/// A step-down a node recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StepDown {
    /// When (trace time).
    pub t: u64,
    /// The term it had led.
    pub term: u64,
    /// Why, in its words.
    pub reason: String,
}

/// One node of the launch.
#[derive(Debug)]
pub struct Node {
    /// How it was planned.
    pub plan: NodePlan,
    /// Its current (or last) process.
    pub pid: Option<Pid>,
    /// Its process state.
    pub state: State,
    /// Whether its current process wrote `start` yet.
    pub started: bool,
    /// Its last event: kind and trace time.
    pub last: Option<(&'static str, u64)>,
    /// Every suspicion it recorded.
    pub suspicions: Vec<Suspicion>,
    /// Every step-down it recorded.
    pub step_downs: Vec<StepDown>,
    /// Every `election_start` it recorded: (trace time, term).
    pub elections: Vec<(u64, u64)>,
    /// Its trace, followed.
    pub tail: Tail,
    /// Its critical sections (mutual exclusion).
    pub cs: CsView,
    /// When the launcher last saw its process end: killed, or an exit it did not cause.
    pub died_at: Option<u64>,
    /// When the launcher last restarted it.
    pub restarted_at: Option<u64>,
}

impl Node {
    /// When its pending request was made (trace time of the last `cs_request`; 0 if unknown).
    pub(crate) fn waiting_since(&self) -> u64 {
        self.cs.requested_at
    }
}

/// Where a node is in its mutual-exclusion loop, from `cs_request` / `cs_enter` / `cs_exit`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CsView {
    /// The request it waits on.
    pub waiting: Option<u64>,
    /// The request it holds the section for, and since when (trace time).
    pub holding: Option<(u64, u64)>,
    /// Entries completed (over all its processes).
    pub exits: u64,
    /// When it made its last request (trace time).
    pub requested_at: u64,
    /// Who sent it a GRANT since its last request (quorum, Maekawa).
    pub grants: Vec<u64>,
    /// When it last entered (trace time; kept across its restarts).
    pub entered_at: u64,
}

impl Node {
    /// A node as planned, not started yet, whose trace is read from `trace`.
    pub fn new(plan: NodePlan, state: State, trace: std::path::PathBuf) -> Self {
        Node {
            plan,
            pid: None,
            state,
            started: false,
            last: None,
            suspicions: Vec::new(),
            step_downs: Vec::new(),
            elections: Vec::new(),
            tail: Tail::new(trace),
            cs: CsView::default(),
            died_at: None,
            restarted_at: None,
        }
    }

    /// Whether it is running and has started: it has a view that counts.
    pub fn live(&self) -> bool {
        self.state == State::Running && self.started
    }

    /// Updates the view with one record of its trace.
    pub fn apply(&mut self, rec: &Record) {
        self.last = Some((rec.event.kind(), rec.t));
        match &rec.event {
            Event::Start { .. } => {
                self.started = true;
                self.cs.waiting = None;
                self.cs.holding = None;
            }
            Event::ElectionStart { term } => self.elections.push((rec.t, *term)),
            Event::CsRequest { req } => {
                self.cs.waiting = Some(*req);
                self.cs.requested_at = rec.t;
                self.cs.grants.clear();
            }
            Event::CsEnter { req, .. } => {
                self.cs.waiting = None;
                self.cs.holding = Some((*req, rec.t));
                self.cs.entered_at = rec.t;
            }
            Event::Recv { from, msg, .. } if msg == "GRANT" => self.cs.grants.push(*from),
            // A vote given back (yielded, or a late one returned) is no longer held.
            Event::Send { to, msg, .. } if msg == "RELINQUISH" || msg == "RELEASE" => {
                self.cs.grants.retain(|g| g != to)
            }
            Event::CsExit { .. } => {
                self.cs.holding = None;
                self.cs.exits += 1;
            }
            Event::StepDown { term, reason } => {
                self.step_downs.push(StepDown {
                    t: rec.t,
                    term: *term,
                    reason: reason.clone(),
                });
            }
            Event::Suspect { target, silence_ms, .. } => self.suspicions.push(Suspicion {
                t: rec.t,
                by: self.plan.id,
                target: *target,
                silence_ms: *silence_ms,
            }),
            _ => {}
        }
    }
}

/// The state in a word or two: `running`, `dead: signal SIGKILL`.
pub(crate) fn describe_state(n: &Node) -> String {
    match &n.state {
        State::Running => "running".into(),
        State::Paused => "paused".into(),
        State::Killed => "just killed".into(),
        State::Exited(s) => format!("dead: {s}"),
    }
}

/// Whom it believes leads (or, in a mutual-exclusion run, where it is in its loop), in words,
/// from the replay `beliefs`.
pub(crate) fn describe_belief(n: &Node, beliefs: &Beliefs) -> String {
    if n.started && n.cs != CsView::default() {
        return match (&n.cs.holding, &n.cs.waiting) {
            (Some((req, _)), _) => format!("HOLDS the section (req {req}); {} done", n.cs.exits),
            (None, Some(req)) => format!("waits (req {req}); {} done", n.cs.exits),
            (None, None) => format!("thinking; {} done", n.cs.exits),
        };
    }
    let id = n.plan.id;
    match (beliefs.current(id), beliefs.electing(id)) {
        _ if !n.started => "not started yet".into(),
        (Some(b), _) if b.leader == id => format!("itself leads term {}", b.term),
        (Some(b), _) => format!("node {} leads term {}", b.leader, b.term),
        (None, Some(term)) => format!("no leader yet (electing, term {term})"),
        (None, None) => "no leader yet".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    fn rec(t: u64, event: Event) -> Record {
        Record {
            t,
            node: Some(5),
            lamport: Some(t),
            pt: None,
            vc: None,
            hlc: None,
            event,
        }
    }

    #[test]
    fn a_view_follows_the_nodes_own_trace_and_the_belief_is_the_checkers() {
        let plan = NodePlan {
            id: 5,
            addr: "127.0.0.1:9005".parse::<SocketAddr>().unwrap(),
            neighbours: vec![4, 1],
            initiator: true,
        };
        let mut n = Node::new(plan, State::Running, "/nonexistent".into());
        let mut beliefs = Beliefs::default();
        let mut apply = |n: &mut Node, r: Record| {
            n.apply(&r);
            beliefs.feed(5, r.t, &r.event);
            describe_belief(n, &beliefs)
        };
        let start = Event::Start {
            addr: "127.0.0.1:9005".into(),
            algo: "chang-roberts".into(),
            pid: 1,
            peers: vec![4, 1],
        };
        assert_eq!(apply(&mut n, rec(1, start)), "no leader yet");
        assert!(n.live());
        assert_eq!(
            apply(&mut n, rec(2, Event::ElectionStart { term: 1 })),
            "no leader yet (electing, term 1)"
        );
        assert_eq!(
            apply(&mut n, rec(3, Event::Leader { leader: 5, term: 1 })),
            "itself leads term 1"
        );
        let reason = "heard of term 2 from node 1".to_string();
        assert_eq!(
            apply(&mut n, rec(4, Event::StepDown { term: 1, reason })),
            "no leader yet"
        );
        apply(&mut n, rec(5, Event::ElectionStart { term: 2 }));
        assert_eq!(
            apply(&mut n, rec(6, Event::Leader { leader: 4, term: 2 })),
            "node 4 leads term 2"
        );
        assert_eq!(n.step_downs.len(), 1);
        assert_eq!(n.elections, vec![(2, 1), (5, 2)]);
        assert_eq!(n.last, Some(("leader", 6)));
    }
}
