//! `coordlab cut`: a global state of a run read off its traces. `--at-pt MS` takes, at every
//! node, the last event its own clock stamped at or before MS after the run's start (what
//! "everyone records its state at noon" gives when clocks disagree), says whether that cut is
//! consistent, and lists every message received inside it but sent outside it. `--at-vc MS`
//! starts from the same cut and widens it to the causal past of its frontier, read off the
//! vector clocks: at node j, everything up to the largest entry j of any frontier vector. The
//! causal past of any set of events is consistent, so that cut always is.

use crate::trace::messages::{sent, Sends};
use crate::trace::{Event, NodeId, Record, RunDir};
use std::collections::BTreeMap;

/// How the cut is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutRule {
    /// Each node's own clock at or before this many microseconds after the run's start.
    Pt(u64),
    /// The causal past of the `Pt` cut's frontier (vector clocks).
    Vc(u64),
}

/// A message received inside the cut whose send is outside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Orphan {
    /// The sender.
    pub from: NodeId,
    /// The receiver.
    pub to: NodeId,
    /// The message type.
    pub msg: String,
    /// The sender's seq.
    pub seq: u64,
    /// The send's position in the sender's trace (1-based).
    pub send_at: usize,
    /// The receive's position in the receiver's trace (1-based).
    pub recv_at: usize,
}

/// A cut: how many events of each node it holds, and its orphan messages.
#[derive(Debug, Clone, PartialEq)]
pub struct Cut {
    /// Per node, the number of its events inside the cut.
    pub frontier: BTreeMap<NodeId, usize>,
    /// Messages received inside, sent outside.
    pub orphans: Vec<Orphan>,
}

impl Cut {
    /// Whether no message is received inside the cut and sent outside it.
    pub fn consistent(&self) -> bool {
        self.orphans.is_empty()
    }
}

/// Each node's events in its own order.
pub(crate) fn per_node(records: &[Record]) -> BTreeMap<NodeId, Vec<&Record>> {
    let mut out: BTreeMap<NodeId, Vec<&Record>> = BTreeMap::new();
    for r in records {
        if let Some(n) = r.node {
            out.entry(n).or_default().push(r);
        }
    }
    out
}

/// The orphans of a frontier.
pub fn orphans(events: &BTreeMap<NodeId, Vec<&Record>>, frontier: &BTreeMap<NodeId, usize>) -> Vec<Orphan> {
    let mut sends: Sends<usize> = Sends::default();
    for evs in events.values() {
        for (i, r) in evs.iter().enumerate() {
            if let Some(name) = sent(r) {
                sends.insert(name, r.t, i);
            }
        }
    }
    let mut out = Vec::new();
    for (&n, evs) in events {
        let k = frontier.get(&n).copied().unwrap_or(0);
        for (i, r) in evs.iter().enumerate().take(k) {
            if let Event::Recv { from, msg, seq, .. } = &r.event {
                let inside = frontier.get(from).copied().unwrap_or(0);
                match sends.send_of((*from, n, *seq), r.t) {
                    Some(&s) if s < inside => {}
                    Some(&s) => out.push(Orphan {
                        from: *from,
                        to: n,
                        msg: msg.clone(),
                        seq: *seq,
                        send_at: s + 1,
                        recv_at: i + 1,
                    }),
                    None => {}
                }
            }
        }
    }
    out
}

/// The cut of `records` by `rule`, the run having started at `start_us`; the error says why
/// the rule cannot be applied.
pub fn cut(records: &[Record], start_us: u64, rule: CutRule) -> Result<Cut, String> {
    let events = per_node(records);
    let at = match rule {
        CutRule::Pt(ms) | CutRule::Vc(ms) => start_us + ms,
    };
    let mut frontier: BTreeMap<NodeId, usize> = BTreeMap::new();
    for (&n, evs) in &events {
        if evs.iter().all(|r| r.pt.is_none()) {
            return Err(format!("node {n}'s trace has no physical clock readings (pt)"));
        }
        let k = evs
            .iter()
            .rposition(|r| r.pt.is_some_and(|pt| pt <= at))
            .map_or(0, |i| i + 1);
        frontier.insert(n, k);
    }
    if let CutRule::Vc(_) = rule {
        let mut wide = frontier.clone();
        for (&n, &k) in &frontier {
            if k == 0 {
                continue;
            }
            let Some(vc) = &events[&n][k - 1].vc else {
                return Err(format!(
                    "node {n}'s trace has no vector clocks (vc): run with --set vc=true"
                ));
            };
            for &(j, c) in vc.pairs() {
                let e = wide.entry(j).or_default();
                *e = (*e).max(c as usize);
            }
        }
        frontier = wide;
    }
    Ok(Cut {
        orphans: orphans(&events, &frontier),
        frontier,
    })
}

/// `coordlab cut` in words.
pub fn report(run: &RunDir, rule: CutRule) -> Result<String, String> {
    let c = cut(&run.node_events, run.info.start_us, rule)?;
    let events = per_node(&run.node_events);
    let mut s = match rule {
        CutRule::Pt(ms) => format!(
            "cut at +{:.3} s on each node's own clock (the last event stamped pt <= run start + {ms} us):\n",
            ms as f64 / 1e6
        ),
        CutRule::Vc(ms) => format!(
            "consistent cut from vector clocks: the causal past of the frontier of the clock cut at +{:.3} s:\n",
            ms as f64 / 1e6
        ),
    };
    for (n, &k) in &c.frontier {
        let evs = &events[n];
        if k == 0 {
            s += &format!("  node {n}: no event yet\n");
            continue;
        }
        let r = evs[k - 1];
        s += &format!(
            "  node {n}: event {k} of {} ({}), true time +{:.3} ms, its clock {:+.3} ms\n",
            evs.len(),
            r.event.describe(*n),
            r.t.saturating_sub(run.info.start_us) as f64 / 1000.0,
            r.pt.unwrap_or(0) as f64 / 1000.0 - run.info.start_us as f64 / 1000.0
        );
    }
    if c.consistent() {
        s += "consistent: every message received inside the cut was sent inside it\n";
    } else {
        s += &format!(
            "NOT consistent: {} messages received inside the cut were sent outside it:\n",
            c.orphans.len()
        );
        for o in &c.orphans {
            s += &format!(
                "  {} #{} from node {} (its event {}, outside) to node {} (its event {}, inside)\n",
                o.msg, o.seq, o.from, o.send_at, o.to, o.recv_at
            );
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(node: NodeId, t: u64, pt: u64, vc: &[(NodeId, u64)], event: Event) -> Record {
        Record {
            t,
            node: Some(node),
            lamport: None,
            pt: Some(pt),
            vc: Some(crate::clock::VectorClock::from_pairs(vc.iter().copied())),
            hlc: None,
            event,
        }
    }

    fn send(to: NodeId, seq: u64) -> Event {
        Event::Send {
            to,
            msg: "M".into(),
            bytes: 1,
            seq,
            brief: String::new(),
        }
    }

    fn recv(from: NodeId, seq: u64) -> Event {
        Event::Recv {
            from,
            msg: "M".into(),
            bytes: 1,
            seq,
            brief: String::new(),
        }
    }

    #[test]
    fn a_clock_ahead_makes_an_inconsistent_cut_and_vector_clocks_repair_it() {
        // Node 1's clock is 50 ahead: it sends at true time 100 (its clock: 150); node 2, its
        // clock right, receives at 110. "Everyone at 120": node 2's receive is in, node 1's send
        // is not.
        let trace = vec![
            rec(1, 10, 60, &[(1, 1)], Event::Other),
            rec(1, 100, 150, &[(1, 2)], send(2, 1)),
            rec(2, 20, 20, &[(2, 1)], Event::Other),
            rec(2, 110, 110, &[(1, 2), (2, 2)], recv(1, 1)),
            rec(2, 200, 200, &[(1, 2), (2, 3)], Event::Other),
        ];
        let c = cut(&trace, 0, CutRule::Pt(120)).unwrap();
        assert_eq!(c.frontier, BTreeMap::from([(1, 1), (2, 2)]));
        assert!(!c.consistent());
        assert_eq!(c.orphans[0].send_at, 2);
        assert_eq!(c.orphans[0].recv_at, 2);
        let v = cut(&trace, 0, CutRule::Vc(120)).unwrap();
        assert_eq!(v.frontier, BTreeMap::from([(1, 2), (2, 2)]));
        assert!(v.consistent());
    }
}
