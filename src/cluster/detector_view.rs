//! What each node's failure detector thinks, for `status` (the console's and `coordlab
//! status`'s): with `detector=phi` the current phi of every peer it hears BEATs from, with
//! `detector=swim` its own incarnation and whom it suspects or has declared dead.
//!
//! The launcher has no channel into a node but its trace, so the view is rebuilt from it: phi
//! from the BEATs the node recorded receiving, with the node's own window, floor and pause
//! ([`crate::algo::detector::phi::Phi`], the same code), evaluated at the moment `status` is
//! asked (for a paused node, at its last record: it has no opinion while stopped); SWIM's state
//! from its `suspect`, `unsuspect`, `confirm` and `refute` records. A node's own stall (which
//! restarts its silence clocks) is not visible in the trace, so right after one the view may
//! show a higher phi than the node itself uses.

use crate::algo::detector::beat_of_brief;
use crate::algo::detector::phi::Phi;
use crate::algo::detector::Choice;
use crate::trace::{Event, NodeId, Record};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

/// One node's detector as its trace shows it.
#[derive(Debug, Clone)]
enum View {
    /// Phi of each peer it watches.
    Phi(Phi),
    /// SWIM: its incarnation, and per member (suspected at incarnation, declared dead).
    Swim {
        incarnation: u64,
        members: BTreeMap<NodeId, (Option<u64>, bool)>,
    },
}

/// The detector views of every node of a run (empty for `detector=fixed`).
#[derive(Debug, Clone)]
pub(crate) struct Views {
    choice: Choice,
    /// Per node, the peers its phi watches.
    watched: BTreeMap<NodeId, Vec<NodeId>>,
    views: BTreeMap<NodeId, View>,
    /// Per node, the time of its last record (µs).
    last: BTreeMap<NodeId, u64>,
    /// A node that runs no detector (a mutual-exclusion run's shared resource).
    bystander: Option<NodeId>,
}

fn at(t_us: u64) -> Duration {
    Duration::from_micros(t_us)
}

impl Views {
    /// Views for a run whose nodes watch the peers `watched` (per node), with the `--set`
    /// options `set` and heartbeat period.
    pub fn new(watched: BTreeMap<NodeId, Vec<NodeId>>, set: &BTreeMap<String, String>, heartbeat: Duration) -> Self {
        Views {
            choice: Choice::from_opts(set, heartbeat),
            watched,
            views: BTreeMap::new(),
            last: BTreeMap::new(),
            bystander: None,
        }
    }

    /// The same views, for a run in which node `id` runs no detector (it gets no view).
    pub fn without(mut self, id: NodeId) -> Self {
        self.bystander = Some(id);
        self
    }

    fn fresh(&self, me: NodeId, t: u64) -> Option<View> {
        let peers = self.watched.get(&me).cloned().unwrap_or_default();
        match self.choice {
            Choice::Fixed => None,
            Choice::Phi(params) => Some(View::Phi(Phi::new(params, peers, at(t), 0))),
            Choice::Swim(_) => Some(View::Swim {
                incarnation: 0,
                members: BTreeMap::new(),
            }),
        }
    }

    /// Whether a view reads the messages a node received (phi hears its peers in them).
    pub(crate) fn watches_messages(&self) -> bool {
        matches!(self.choice, Choice::Phi(_))
    }

    /// Node `me` wrote a record at `t` that is not fed (a message line left unparsed).
    pub(crate) fn touch(&mut self, me: NodeId, t: u64) {
        let last = self.last.entry(me).or_insert(t);
        *last = (*last).max(t);
    }

    /// Takes in one record of node `me`'s trace.
    pub(crate) fn feed(&mut self, me: NodeId, r: &Record) {
        self.last.insert(me, r.t);
        if self.bystander == Some(me) {
            return;
        }
        if matches!(r.event, Event::Start { .. }) || !self.views.contains_key(&me) {
            // A (re)started node starts its detector afresh.
            match self.fresh(me, r.t) {
                Some(v) => self.views.insert(me, v),
                None => return,
            };
        }
        let Some(view) = self.views.get_mut(&me) else { return };
        match (view, &r.event) {
            (View::Phi(phi), Event::Recv { from, msg, brief, .. }) => {
                phi.heard(*from, at(r.t));
                if let Some((stamp, relayed)) = (msg == "BEAT").then(|| beat_of_brief(brief)).flatten() {
                    phi.beat(*from, stamp, &relayed, at(r.t));
                }
            }
            (View::Swim { incarnation, .. }, Event::Refute { refuted_by, .. }) => *incarnation = *refuted_by,
            (
                View::Swim { members, .. },
                Event::Suspect {
                    target, incarnation, ..
                },
            ) => {
                members.entry(*target).or_default().0 = Some(incarnation.unwrap_or(0));
            }
            (View::Swim { members, .. }, Event::Confirm { target, .. }) => {
                members.entry(*target).or_default().1 = true;
            }
            (View::Swim { members, .. }, Event::Unsuspect { target }) => {
                members.remove(target);
            }
            _ => {}
        }
    }

    /// The lines `status` adds for node `id`, at `now_us`, or nothing (`detector=fixed`, or
    /// nothing recorded yet); `paused`: evaluate at its last record.
    pub fn line(&self, id: NodeId, now_us: u64, paused: bool) -> Option<String> {
        let view = self.views.get(&id)?;
        let now = match paused {
            true => self.last.get(&id).copied().unwrap_or(now_us),
            false => now_us,
        };
        let mut out = String::new();
        match view {
            View::Phi(phi) => {
                let threshold = phi.params.threshold;
                let _ = write!(out, "phi (suspect at {threshold}):");
                for p in phi.peers() {
                    let v = phi.phi(p, at(now));
                    let mark = if v >= threshold { "!" } else { "" };
                    let _ = write!(out, " {p}={}{mark}", shown((v + 0.0).max(0.0)));
                }
                if paused {
                    out.push_str(" (as of its last record: it is paused)");
                }
            }
            View::Swim { incarnation, members } => {
                let _ = write!(out, "swim: own incarnation {incarnation}");
                let dead: Vec<String> = members
                    .iter()
                    .filter(|m| m.1 .1)
                    .map(|(p, (i, _))| format!("{p}@{}", i.unwrap_or(0)))
                    .collect();
                let suspects: Vec<String> = members
                    .iter()
                    .filter(|m| !m.1 .1)
                    .map(|(p, (i, _))| format!("{p}@{}", i.unwrap_or(0)))
                    .collect();
                let _ = write!(
                    out,
                    "; suspects {}; declared dead {}",
                    if suspects.is_empty() {
                        "none".into()
                    } else {
                        suspects.join(" ")
                    },
                    if dead.is_empty() { "none".into() } else { dead.join(" ") }
                );
            }
        }
        Some(out)
    }
}

/// Phi to two decimals, and `inf` past what an f64 tells apart.
fn shown(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.2}")
    } else {
        "inf".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recv(t: u64, from: NodeId, msg: &str) -> Record {
        Record::unstamped(
            t,
            Some(1),
            Event::Recv {
                from,
                msg: msg.into(),
                bytes: 10,
                seq: 0,
                // A BEAT's brief carries its stamp (here its time: newer each time).
                brief: match msg {
                    "BEAT" => format!("BEAT(stamp={t};)"),
                    _ => String::new(),
                },
            },
        )
    }

    #[test]
    fn phi_grows_with_the_silence_of_a_peer_that_beat_regularly() {
        let set = BTreeMap::from([("detector".to_string(), "phi".to_string())]);
        let mut v = Views::new(BTreeMap::from([(1, vec![2, 3])]), &set, Duration::from_millis(100));
        for k in 0..20 {
            v.feed(1, &recv(k * 100_000, 2, "BEAT"));
            v.feed(1, &recv(k * 100_000 + 50_000, 3, "BEAT"));
        }
        // 2 last beat at 1.9 s, 3 at 1.95 s; asked at 2.0 s: both well below the threshold.
        let now = v.line(1, 2_000_000, false).expect("a phi view");
        assert!(now.starts_with("phi (suspect at 40):"), "{now}");
        assert!(now.contains(" 2=0.") && now.contains(" 3=0."), "{now}");
        // A second later, node 2 silent since 1.9 s is far past the threshold.
        let later = v.line(1, 2_900_000, false).expect("a phi view");
        assert!(later.contains(" 2=") && later.contains('!'), "{later}");
        // Paused: evaluated at its last record (1.95 s), not now.
        assert_eq!(v.line(1, 9_000_000, true).map(|l| l.contains('!')), Some(false));
    }

    #[test]
    fn a_node_that_runs_no_detector_gets_no_view() {
        // A mutual-exclusion run's resource: it hears every participant, and judges none.
        for detector in ["phi", "swim"] {
            let set = BTreeMap::from([("detector".to_string(), detector.to_string())]);
            let mut v = Views::new(BTreeMap::from([(1, vec![2])]), &set, Duration::from_millis(100)).without(0);
            let mut r = recv(100_000, 1, "BEGIN");
            r.node = Some(0);
            v.feed(0, &r);
            v.feed(1, &recv(100_000, 2, "BEAT"));
            assert_eq!(v.line(0, 200_000, false), None, "{detector}");
            assert!(v.line(1, 200_000, false).is_some(), "{detector}");
        }
    }

    #[test]
    fn a_peer_heard_of_only_through_the_stamps_another_relays_keeps_a_low_phi() {
        let set = BTreeMap::from([("detector".to_string(), "phi".to_string())]);
        let mut v = Views::new(BTreeMap::from([(1, vec![2, 3])]), &set, Duration::from_millis(100));
        for k in 0..20u64 {
            // 2's link to 1 is cut from 1 s: 3 relays 2's stamps.
            if k < 10 {
                v.feed(1, &recv(k * 100_000, 2, "BEAT"));
            }
            let mut r = recv(k * 100_000 + 50_000, 3, "BEAT");
            if let Event::Recv { brief, .. } = &mut r.event {
                *brief = format!("BEAT(stamp={}; 2:{})", r.t, k * 100_000);
            }
            v.feed(1, &r);
        }
        let now = v.line(1, 2_000_000, false).expect("a phi view");
        assert!(now.contains(" 2=0.") && !now.contains('!'), "{now}");
    }

    #[test]
    fn swim_state_follows_suspect_confirm_refute() {
        let set = BTreeMap::from([("detector".to_string(), "swim".to_string())]);
        let mut v = Views::new(BTreeMap::from([(1, vec![2, 3])]), &set, Duration::from_millis(100));
        let ev = |t, e| Record::unstamped(t, Some(1), e);
        v.feed(
            1,
            &ev(
                1,
                Event::Suspect {
                    target: 2,
                    silence_ms: 0,
                    timeout_ms: 0,
                    cause: "swim".into(),
                    phi: None,
                    incarnation: Some(0),
                },
            ),
        );
        v.feed(
            1,
            &ev(
                2,
                Event::Confirm {
                    target: 2,
                    incarnation: 0,
                    confirmations: 1,
                    suspected_ms: 900,
                },
            ),
        );
        v.feed(
            1,
            &ev(
                3,
                Event::Refute {
                    incarnation: 0,
                    refuted_by: 1,
                },
            ),
        );
        let l = v.line(1, 4, false).expect("a swim view");
        assert_eq!(l, "swim: own incarnation 1; suspects none; declared dead 2@0");
        v.feed(1, &ev(5, Event::Unsuspect { target: 2 }));
        assert_eq!(
            v.line(1, 6, false).as_deref(),
            Some("swim: own incarnation 1; suspects none; declared dead none")
        );
        let fixed = Views::new(
            BTreeMap::from([(1, vec![2])]),
            &BTreeMap::new(),
            Duration::from_millis(100),
        );
        assert_eq!(fixed.line(1, 0, false), None);
    }
}
