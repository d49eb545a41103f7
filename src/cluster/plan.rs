//! Checks a launch's options before anything starts and turns them into a plan: which node
//! runs where, who it talks to, who starts, and what the run is for.

use super::LaunchOptions;
use crate::algo::registry;
use crate::error::{failed, usage, CliError};
use crate::node::config::parse_ids;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::time::Duration;

/// One node as it will be launched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodePlan {
    /// Its id.
    pub id: u64,
    /// Its UDP address.
    pub addr: SocketAddr,
    /// Its ring predecessor and successor (who it may talk to).
    pub neighbours: Vec<u64>,
    /// Whether it starts the first election.
    pub initiator: bool,
}

/// The scripted stories `--demo` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DemoKind {
    /// Pause the leader, let the others elect, resume it, watch it step down.
    FalseSuspicion,
}

/// A checked launch.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The nodes in ring order.
    pub nodes: Vec<NodePlan>,
    /// `--until elected`.
    pub until_elected: bool,
    /// `--duration`.
    pub duration: Option<Duration>,
    /// `--demo`.
    pub demo: Option<DemoKind>,
}

/// Checks `opts` (every problem is one line naming it) and plans the ring.
pub fn plan(opts: &LaunchOptions) -> Result<Plan, CliError> {
    if opts.topology != "ring" {
        return Err(failed(format!(
            "topology '{}' is not supported by this launcher yet (only ring)",
            opts.topology
        )));
    }
    let n = opts.n;
    if n < 2 {
        return Err(usage(format!("a ring needs at least 2 nodes (got {n})")));
    }
    let ids = ring_ids(n, opts.ids.as_deref())?;
    if !registry::is_known(&opts.algo) {
        return Err(usage(format!(
            "unknown algorithm '{}' (known: {})",
            opts.algo,
            registry::names()
        )));
    }
    let initiators = initiators(&opts.initiators, &ids)?;
    let until_elected = match opts.until.as_deref() {
        None => false,
        Some("elected") => true,
        Some(other) => return Err(usage(format!("--until: unknown condition '{other}' (known: elected)"))),
    };
    let demo = match opts.demo.as_deref() {
        None => None,
        Some("false-suspicion") => Some(DemoKind::FalseSuspicion),
        Some(other) => {
            return Err(usage(format!(
                "--demo: unknown story '{other}' (known: false-suspicion)"
            )))
        }
    };
    let duration = match opts.duration {
        None => None,
        Some(s) if s.is_finite() && s > 0.0 && s < 1e9 => Some(Duration::from_secs_f64(s)),
        Some(s) => return Err(usage(format!("--duration: {s} is not a positive number of seconds"))),
    };
    if demo.is_some() && (until_elected || duration.is_some()) {
        return Err(usage(
            "--demo runs its own story; it cannot be combined with --until or --duration",
        ));
    }
    let ports = ports(opts.base_port, n)?;
    let nodes = ids
        .iter()
        .enumerate()
        .map(|(k, &id)| {
            let mut neighbours = vec![ids[(k + n - 1) % n], ids[(k + 1) % n]];
            neighbours.dedup();
            NodePlan {
                id,
                addr: SocketAddr::from((Ipv4Addr::LOCALHOST, ports[k])),
                neighbours,
                initiator: initiators.contains(&id),
            }
        })
        .collect();
    Ok(Plan {
        nodes,
        until_elected,
        duration,
        demo,
    })
}

/// The ids around the ring: `--ids` (exactly n, no duplicates) or 1..=n.
fn ring_ids(n: usize, given: Option<&[u64]>) -> Result<Vec<u64>, CliError> {
    let Some(ids) = given else {
        return Ok((1..=n as u64).collect());
    };
    if ids.len() != n {
        return Err(usage(format!(
            "--ids lists {} ids but the ring has {n} nodes",
            ids.len()
        )));
    }
    for (i, id) in ids.iter().enumerate() {
        if ids[..i].contains(id) {
            return Err(usage(format!("--ids: id {id} appears twice")));
        }
    }
    Ok(ids.to_vec())
}

/// `all`, `none`, or a list of ids that are in the ring.
fn initiators(spec: &str, ids: &[u64]) -> Result<Vec<u64>, CliError> {
    match spec.trim() {
        "all" => Ok(ids.to_vec()),
        "none" => Ok(Vec::new()),
        list => {
            let chosen = parse_ids("--initiators", list)?;
            if chosen.is_empty() {
                return Err(usage("--initiators is empty (say none for no initiator)"));
            }
            if let Some(x) = chosen.iter().find(|x| !ids.contains(x)) {
                return Err(usage(format!("--initiators: node {x} is not in the ring")));
            }
            Ok(chosen)
        }
    }
}

/// The UDP port of every ring position: base, base+1, ... each checked bindable now, or
/// free ports the system picks when base is 0.
fn ports(base: u16, n: usize) -> Result<Vec<u16>, CliError> {
    // Every probe socket stays open until all are taken, so that free ports are distinct.
    let mut held = Vec::with_capacity(n);
    if base == 0 {
        for _ in 0..n {
            let s = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))
                .map_err(|e| usage(format!("cannot find a free UDP port on 127.0.0.1: {e}")))?;
            held.push(s);
        }
        return held
            .iter()
            .map(|s| s.local_addr().map(|a| a.port()))
            .collect::<io::Result<_>>()
            .map_err(|e| usage(format!("cannot find a free UDP port on 127.0.0.1: {e}")));
    }
    let last = base as usize + n - 1;
    if last > u16::MAX as usize {
        return Err(usage(format!(
            "--base-port {base}: {n} nodes need ports up to {last}, past 65535"
        )));
    }
    let ports: Vec<u16> = (base..=last as u16).collect();
    for &p in &ports {
        match UdpSocket::bind((Ipv4Addr::LOCALHOST, p)) {
            Ok(s) => held.push(s),
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
                return Err(usage(format!("port {p} is already in use")));
            }
            Err(e) => return Err(usage(format!("port {p} cannot be used: {e}"))),
        }
    }
    Ok(ports)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    fn opts(n: usize) -> LaunchOptions {
        LaunchOptions {
            n,
            topology: "ring".into(),
            algo: "chang-roberts".into(),
            ids: None,
            initiators: "all".into(),
            heartbeat_ms: 100,
            timeout_ms: 300,
            base_port: 0,
            duration: None,
            until: None,
            seed: 1,
            logs: PathBuf::from("logs"),
            demo: None,
            set: BTreeMap::new(),
        }
    }

    fn err(o: LaunchOptions) -> String {
        match plan(&o) {
            Err(CliError::Usage(m)) => m,
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    #[test]
    fn a_ring_knows_its_neighbours_and_initiators() {
        let mut o = opts(3);
        o.ids = Some(vec![5, 2, 8]);
        o.initiators = "2".into();
        let p = plan(&o).unwrap();
        let got: Vec<_> = p
            .nodes
            .iter()
            .map(|n| (n.id, n.neighbours.clone(), n.initiator))
            .collect();
        assert_eq!(
            got,
            vec![(5, vec![8, 2], false), (2, vec![5, 8], true), (8, vec![2, 5], false)]
        );
        let mut ports: Vec<_> = p.nodes.iter().map(|n| n.addr.port()).collect();
        ports.dedup();
        assert_eq!(ports.len(), 3);
        let two = plan(&opts(2)).unwrap();
        assert_eq!(two.nodes[0].neighbours, vec![2]);
    }

    #[test]
    fn every_bad_option_is_named() {
        assert!(err(opts(1)).contains("at least 2 nodes"));
        let mut o = opts(3);
        o.ids = Some(vec![1, 2]);
        assert!(err(o).contains("--ids lists 2 ids"));
        let mut o = opts(3);
        o.ids = Some(vec![1, 2, 1]);
        assert!(err(o).contains("id 1 appears twice"));
        let mut o = opts(3);
        o.algo = "paxos".into();
        assert!(err(o).contains("unknown algorithm 'paxos'"));
        let mut o = opts(3);
        o.initiators = "4".into();
        assert!(err(o).contains("node 4 is not in the ring"));
        let mut o = opts(3);
        o.until = Some("done".into());
        assert!(err(o).contains("--until"));
        let mut o = opts(3);
        o.demo = Some("party".into());
        assert!(err(o).contains("--demo"));
        let mut o = opts(3);
        o.duration = Some(-1.0);
        assert!(err(o).contains("--duration"));
        let mut o = opts(3);
        o.base_port = 65_535;
        assert!(err(o).contains("past 65535"));
    }

    #[test]
    fn a_busy_port_is_refused_by_number() {
        let busy = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let p = busy.local_addr().unwrap().port();
        let mut o = opts(2);
        o.base_port = p;
        assert_eq!(err(o), format!("port {p} is already in use"));
    }
}
