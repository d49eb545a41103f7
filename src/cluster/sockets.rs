//! The nodes' UDP sockets, bound by the launcher before any node exists and handed to each
//! child as an inherited descriptor: no port is found, closed and raced for, a datagram sent to
//! a node that has not run yet waits in its socket buffer, and a busy port fails the launch
//! before anything starts. Also the process limits a launch of N nodes needs.

use super::plan::Plan;
use crate::error::{failed, CliError};
use crate::node::socket::bind_std;
use nix::sys::resource::{getrlimit, setrlimit, Resource};
use std::net::{SocketAddr, UdpSocket};

/// Descriptors the launcher needs besides the nodes' sockets: stdio, the poll, the signalfd,
/// the control socket and its connections, faults.jsonl, a trace being read, the log files
/// opened for a child.
const SPARE_FDS: u64 = 64;

/// Binds every node's socket: on `base`, `base+1`, ... or, when `base` is 0, on free ports the
/// system picks; fills each node's address in. Every socket stays open (so free ports are
/// distinct) until its node has it.
pub(crate) fn bind_all(plan: &mut Plan, base: u16) -> Result<Vec<UdpSocket>, CliError> {
    let mut out = Vec::with_capacity(plan.nodes.len());
    for (k, node) in plan.nodes.iter_mut().enumerate() {
        let port = if base == 0 { 0 } else { base + k as u16 };
        let sock = bind_std(SocketAddr::new(node.addr.ip(), port))?;
        node.addr = sock
            .local_addr()
            .map_err(|e| failed(format!("cannot read the address of node {}'s socket: {e}", node.id)))?;
        out.push(sock);
    }
    Ok(out)
}

/// Raises this process's limits as far as their hard limits allow for a launch of `n` nodes:
/// RLIMIT_NOFILE (the launcher holds every node's socket until the node has it; the nodes
/// inherit the raised limit) and RLIMIT_NPROC. Says which limit, when `n` cannot fit.
pub(crate) fn raise_limits(n: usize) -> Result<(), CliError> {
    let need_fds = n as u64 + SPARE_FDS;
    raise(Resource::RLIMIT_NOFILE, need_fds).map_err(|(soft, hard)| {
        failed(format!(
            "{n} nodes need about {need_fds} open files in the launcher, but RLIMIT_NOFILE allows {soft} \
             (hard limit {hard}; raise it with `ulimit -Hn` as root, or launch at most {} nodes)",
            hard.saturating_sub(SPARE_FDS)
        ))
    })?;
    // Processes of this user already running count against RLIMIT_NPROC too, so this is a
    // lower bound: fork failing later still fails the launch with its own message.
    raise(Resource::RLIMIT_NPROC, n as u64 + 1).map_err(|(soft, hard)| {
        failed(format!(
            "{n} nodes need {} processes, but RLIMIT_NPROC allows {soft} (hard limit {hard}; see `ulimit -u`)",
            n + 1
        ))
    })?;
    if let Some(max) = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
    {
        if n + 300 > max {
            return Err(failed(format!(
                "{n} nodes need {n} process ids, but kernel.pid_max is {max} (/proc/sys/kernel/pid_max)"
            )));
        }
    }
    Ok(())
}

/// Sets the soft limit of `r` to at least `need` (up to the hard limit); Err(soft, hard) when
/// the hard limit is below `need`.
fn raise(r: Resource, need: u64) -> Result<(), (u64, u64)> {
    let Ok((soft, hard)) = getrlimit(r) else {
        return Ok(());
    };
    if soft >= need {
        return Ok(());
    }
    if hard < need {
        return Err((soft, hard));
    }
    setrlimit(r, hard, hard).map_err(|_| (soft, hard))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::plan::NodePlan;
    use std::collections::BTreeMap;
    use std::net::Ipv4Addr;

    fn plan(n: u64) -> Plan {
        Plan {
            nodes: (1..=n)
                .map(|id| NodePlan {
                    id,
                    addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
                    neighbours: vec![],
                    initiator: false,
                })
                .collect(),
            topology: "ring".into(),
            set: BTreeMap::new(),
            until_elected: false,
            duration: None,
            demo: None,
            until_done: false,
            mutex_demo: None,
            chaos: None,
            snapshot_demo: false,
            clocks: BTreeMap::new(),
            net_demo: None,
            slow_vs_dead: false,
            chaos_faults: crate::cluster::schedule::FaultKinds::All,
        }
    }

    #[test]
    fn free_ports_are_distinct_and_held() {
        let mut p = plan(3);
        let socks = bind_all(&mut p, 0).unwrap();
        let mut ports: Vec<u16> = p.nodes.iter().map(|n| n.addr.port()).collect();
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 3);
        assert!(ports.iter().all(|&q| q != 0));
        for (s, n) in socks.iter().zip(&p.nodes) {
            assert_eq!(s.local_addr().unwrap(), n.addr);
            assert!(UdpSocket::bind(n.addr).is_err(), "the launcher holds {}", n.addr);
        }
    }

    #[test]
    fn a_busy_port_is_refused_by_number() {
        let busy = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let p = busy.local_addr().unwrap().port();
        let err = bind_all(&mut plan(2), p).unwrap_err();
        assert_eq!(err, failed(format!("port {p} is already in use (127.0.0.1:{p})")));
    }

    #[test]
    fn a_limit_that_cannot_fit_names_itself() {
        let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        if hard > 1 << 30 {
            return; // unlimited: nothing to refuse
        }
        let err = raise_limits(hard as usize).unwrap_err().to_string();
        assert!(
            err.contains("RLIMIT_NOFILE") && err.contains(&hard.to_string()),
            "{err}"
        );
    }
}
