//! The checker tests' fixture: a synthetic run written as traces, record by record.

use super::*;
use crate::trace::{Event, JsonlWriter, Record, RunInfo, RunNode};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The run's wall-clock start; every time below is milliseconds after it.
pub(super) const START: u64 = 1_700_000_000_000_000;

pub(super) fn ms(x: u64) -> u64 {
    START + x * 1000
}

pub(super) fn rec(t_ms: u64, node: NodeId, event: Event) -> Record {
    Record {
        t: ms(t_ms),
        node: Some(node),
        lamport: None,
        pt: None,
        vc: None,
        hlc: None,
        event,
    }
}

pub(super) fn leader(leader: NodeId, term: u64) -> Event {
    Event::Leader { leader, term }
}

pub(super) fn election_start(term: u64) -> Event {
    Event::ElectionStart { term }
}

pub(super) fn start(node: NodeId) -> Event {
    Event::Start {
        addr: format!("127.0.0.1:{}", 9000 + node),
        algo: "chang-roberts".into(),
        pid: 100 + node as u32,
        peers: vec![],
    }
}

pub(super) fn suspect(target: NodeId, silence_ms: u64) -> Event {
    Event::Suspect {
        target,
        silence_ms,
        timeout_ms: 300,
        cause: "heartbeat".into(),
        phi: None,
        incarnation: None,
    }
}

/// A run being written: every node spawned and started at +0 ms.
pub(super) struct Run {
    pub(super) ids: Vec<NodeId>,
    pub(super) start_us: u64,
    pub(super) node_events: Vec<Record>,
    pub(super) faults: Vec<Record>,
}

impl Run {
    pub(super) fn new(ids: &[NodeId]) -> Self {
        let mut r = Run {
            ids: ids.to_vec(),
            start_us: START,
            node_events: Vec::new(),
            faults: Vec::new(),
        };
        for &id in ids {
            r.fault(
                0,
                id,
                Event::Spawn {
                    pid: 100 + id as u32,
                    addr: String::new(),
                },
            );
            r.ev(0, id, start(id));
        }
        r
    }

    pub(super) fn ev(&mut self, t_ms: u64, node: NodeId, e: Event) -> &mut Self {
        self.node_events.push(rec(t_ms, node, e));
        self
    }

    pub(super) fn fault(&mut self, t_ms: u64, node: NodeId, e: Event) -> &mut Self {
        self.faults.push(rec(t_ms, node, e));
        self
    }

    pub(super) fn pause(&mut self, t_ms: u64, node: NodeId) -> &mut Self {
        self.fault(t_ms, node, Event::Pause { pid: 0 })
    }

    pub(super) fn resume(&mut self, t_ms: u64, node: NodeId) -> &mut Self {
        self.fault(t_ms, node, Event::Resume { pid: 0 })
    }

    pub(super) fn kill(&mut self, t_ms: u64, node: NodeId) -> &mut Self {
        self.fault(
            t_ms,
            node,
            Event::Kill {
                pid: 0,
                signal: "SIGKILL".into(),
            },
        )
    }

    pub(super) fn shutdown(&mut self, t_ms: u64) -> &mut Self {
        self.faults.push(Record {
            t: ms(t_ms),
            node: None,
            lamport: None,
            pt: None,
            vc: None,
            hlc: None,
            event: Event::Shutdown {},
        });
        self
    }

    /// Every node learns `l` leads `term` at `t_ms` (the leader first, declaring itself).
    pub(super) fn everyone_learns(&mut self, t_ms: u64, l: NodeId, term: u64) -> &mut Self {
        self.ev(t_ms, l, leader(l, term));
        for id in self.ids.clone().into_iter().filter(|&id| id != l) {
            self.ev(t_ms + 1, id, leader(l, term));
        }
        self
    }

    pub(super) fn info(&self) -> RunInfo {
        RunInfo {
            algo: "chang-roberts".into(),
            topology: "ring".into(),
            nodes: self
                .ids
                .iter()
                .map(|&id| RunNode {
                    id,
                    addr: format!("127.0.0.1:{}", 9000 + id),
                    peers: vec![],
                })
                .collect(),
            start_us: self.start_us,
            options: serde_json::Value::Null,
            control: None,
        }
    }

    pub(super) fn load(&self) -> RunDir {
        let mut node_events = self.node_events.clone();
        node_events.sort_by_key(|r| r.t);
        RunDir::whole("synthetic", self.info(), node_events, self.faults.clone(), Vec::new())
    }

    pub(super) fn analyse(&self) -> Analysis {
        analyse(&self.load())
    }

    /// Writes the run directory as the launcher and nodes would.
    pub(super) fn write(&self, dir: &Path) {
        std::fs::write(dir.join("run.json"), serde_json::to_string(&self.info()).unwrap()).unwrap();
        for &id in &self.ids {
            let mut w = JsonlWriter::append(&dir.join(format!("node-{id}.jsonl"))).unwrap();
            for r in self.node_events.iter().filter(|r| r.node == Some(id)) {
                w.write(r).unwrap();
            }
            w.flush().unwrap();
        }
        let mut w = JsonlWriter::append(&dir.join("faults.jsonl")).unwrap();
        for r in &self.faults {
            w.write(r).unwrap();
        }
        w.flush().unwrap();
    }
}

/// A fresh directory under the system temp dir, removed when dropped.
pub(super) struct TempDir(pub(super) PathBuf);

impl TempDir {
    pub(super) fn new(label: &str) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("coordlab-check-{}-{n}-{label}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub(super) fn facts(a: &Analysis) -> &ElectionFacts {
    a.election.as_ref().expect("an election was recorded")
}

pub(super) fn clean_run() -> Run {
    let mut r = Run::new(&[1, 2, 3]);
    r.ev(10, 1, election_start(1))
        .ev(12, 2, election_start(1))
        .ev(14, 3, election_start(1))
        .everyone_learns(30, 3, 1)
        .shutdown(100);
    r
}
