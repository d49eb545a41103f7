//! What a node process is told on its command line, parsed with errors that name the problem.

use crate::algo::{NodeId, Setup};
use crate::error::{usage, CliError};
use std::collections::HashSet;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::path::PathBuf;
use std::sync::Arc;

/// A node process's configuration.
#[derive(Debug, Clone)]
pub struct NodeOptions {
    /// Who the node is and what its algorithm is told.
    pub setup: Setup,
    /// The algorithm name.
    pub algo: String,
    /// The address to bind (or that the inherited socket is bound to).
    pub listen: SocketAddr,
    /// The socket the launcher bound and left open as this descriptor; None: bind `listen`.
    pub fd: Option<RawFd>,
    /// The read end of the launcher's go pipe: the algorithm and its clock start when this
    /// reads end-of-file, once every node of the launch has warmed up (None: at once).
    pub go_fd: Option<RawFd>,
    /// The write end of the launcher's ready pipe, closed once the node has warmed up.
    pub ready_fd: Option<RawFd>,
    /// The launcher's pid: the node dies with it (parent-death signal); None: started by hand.
    pub parent_pid: Option<i32>,
    /// Every member's address (its own included).
    pub addrs: Members,
    /// Where `node-<id>.jsonl` goes (none: no machine trace).
    pub log_dir: Option<PathBuf>,
    /// The run's key file (`--key FILE`, required: every datagram is sealed and checked with
    /// the key), read once the other options passed their checks.
    pub key_file: Option<PathBuf>,
    /// The zygote this node was forked from rehearsed the algorithm before forking it (see
    /// `node::warmup`), so the node inherits what a rehearsal warms and skips its own.
    pub warmed: bool,
}

/// Every member's address, looked up both ways: by id to send, by address to name a sender.
/// Cloning it is cheap (shared), so the launcher builds it once for all the nodes it forks
/// instead of each node building its own O(n) tables. Two sorted lists searched by halves:
/// every node of a launch maps the whole table, so its size is in each node's resident memory
/// (at 4,096 members, 320 KiB against ~560 KiB as a tree and a hash map).
#[derive(Debug, Clone, Default)]
pub struct Members(Arc<MemberTables>);

#[derive(Debug, Default)]
struct MemberTables {
    /// `(id, address)`, sorted by id.
    by_id: Vec<(NodeId, SocketAddr)>,
    /// `(address, id)`, sorted by address.
    by_addr: Vec<(SocketAddr, NodeId)>,
}

impl FromIterator<(NodeId, SocketAddr)> for Members {
    /// A member listed twice keeps its last address.
    fn from_iter<I: IntoIterator<Item = (NodeId, SocketAddr)>>(list: I) -> Self {
        let mut by_id: Vec<(NodeId, SocketAddr)> = list.into_iter().collect();
        // Stable: of one id's entries the last given ends last, and replaces the others.
        by_id.sort_by_key(|m| m.0);
        by_id.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                *kept = *later;
            }
            same
        });
        by_id.shrink_to_fit();
        let mut by_addr: Vec<(SocketAddr, NodeId)> = by_id.iter().map(|&(id, a)| (a, id)).collect();
        by_addr.sort_unstable();
        Members(Arc::new(MemberTables { by_id, by_addr }))
    }
}

impl Members {
    /// Whether `id` is a member.
    pub fn contains_key(&self, id: &NodeId) -> bool {
        self.get(id).is_some()
    }

    /// Member `id`'s address.
    pub fn get(&self, id: &NodeId) -> Option<&SocketAddr> {
        let t = &self.0.by_id;
        t.binary_search_by_key(id, |m| m.0).ok().map(|i| &t[i].1)
    }

    /// The member at `addr`.
    pub(crate) fn id_at(&self, addr: &SocketAddr) -> Option<NodeId> {
        let t = &self.0.by_addr;
        t.binary_search_by(|m| m.0.cmp(addr)).ok().map(|i| t[i].1)
    }

    /// How many members.
    pub fn len(&self) -> usize {
        self.0.by_id.len()
    }

    /// Whether there is no member.
    pub fn is_empty(&self) -> bool {
        self.0.by_id.is_empty()
    }
}

/// Refuses timing that cannot work: a timeout not above the heartbeat period makes every node
/// suspect its peers between two of their heartbeats (an endless stream of elections).
pub fn check_timing(heartbeat_ms: u64, timeout_ms: u64) -> Result<(), CliError> {
    if timeout_ms <= heartbeat_ms {
        return Err(usage(format!(
            "--timeout-ms {timeout_ms} must be above --heartbeat-ms {heartbeat_ms}: \
             nodes would suspect live peers between their heartbeats"
        )));
    }
    Ok(())
}

/// Parses `1=127.0.0.1:9001,2=127.0.0.1:9002,...`, keeping the order (ring order).
pub fn parse_members(s: &str) -> Result<Vec<(NodeId, SocketAddr)>, CliError> {
    let mut out: Vec<(NodeId, SocketAddr)> = Vec::new();
    // Sets, not a scan of `out`: every node parses the whole list, so a quadratic check made
    // a launch of n nodes cubic (seconds of CPU per node at 4,096).
    let mut ids = HashSet::new();
    let mut addrs = HashSet::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (id, addr) = part
            .split_once('=')
            .ok_or_else(|| usage(format!("--members: '{part}' is not ID=ADDR (e.g. 3=127.0.0.1:9003)")))?;
        let id: NodeId = id
            .trim()
            .parse()
            .map_err(|_| usage(format!("--members: '{id}' is not a node id")))?;
        let addr: SocketAddr = addr
            .trim()
            .parse()
            .map_err(|_| usage(format!("--members: '{addr}' is not an address like 127.0.0.1:9003")))?;
        if !ids.insert(id) {
            return Err(usage(format!("--members: node id {id} appears twice")));
        }
        if !addrs.insert(addr) {
            return Err(usage(format!("--members: address {addr} appears twice")));
        }
        out.push((id, addr));
    }
    if out.is_empty() {
        return Err(usage("--members is empty"));
    }
    Ok(out)
}

/// Parses a comma-separated list of ids (`5,2,8`), refusing duplicates.
pub fn parse_ids(flag: &str, s: &str) -> Result<Vec<NodeId>, CliError> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let id: NodeId = part
            .parse()
            .map_err(|_| usage(format!("{flag}: '{part}' is not a node id (a whole number)")))?;
        if out.contains(&id) {
            return Err(usage(format!("{flag}: id {id} appears twice")));
        }
        out.push(id);
    }
    Ok(out)
}

/// Parses `key=value`.
pub fn parse_kv(s: &str) -> Result<(String, String), CliError> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| usage(format!("--set: '{s}' is not KEY=VALUE")))?;
    Ok((k.trim().to_string(), v.trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_parse_in_order_and_refuse_nonsense() {
        let m = parse_members("2=127.0.0.1:9002, 1=127.0.0.1:9001").unwrap();
        assert_eq!(m.iter().map(|x| x.0).collect::<Vec<_>>(), vec![2, 1]);
        for bad in [
            "",
            "1",
            "x=127.0.0.1:1",
            "1=nowhere",
            "1=127.0.0.1:1,1=127.0.0.1:2",
            "1=127.0.0.1:1,2=127.0.0.1:1",
        ] {
            assert!(matches!(parse_members(bad), Err(CliError::Usage(_))), "{bad}");
        }
        assert_eq!(parse_ids("--ids", "5,2,8").unwrap(), vec![5, 2, 8]);
        assert!(parse_ids("--ids", "5,2,5").unwrap_err().to_string().contains("twice"));
    }

    #[test]
    fn members_are_found_by_id_and_by_address() {
        let list = parse_members("2=127.0.0.1:9002,1=127.0.0.1:9001").unwrap();
        let m: Members = list.into_iter().collect();
        let a1: SocketAddr = "127.0.0.1:9001".parse().unwrap();
        assert_eq!(m.len(), 2);
        assert!(m.contains_key(&2) && !m.contains_key(&3));
        assert_eq!(m.get(&1), Some(&a1));
        assert_eq!(m.id_at(&a1), Some(1));
        assert_eq!(m.id_at(&"127.0.0.1:9003".parse().unwrap()), None);
        let shared = m.clone();
        assert_eq!(shared.get(&2), m.get(&2));
        // Ids and ports in unrelated orders: both lookups find every member.
        let many: Members = (1..=1000u64)
            .map(|i| {
                (
                    i * 7919 % 1009,
                    SocketAddr::from(([127, 0, 0, 1], (40_000 + i * 31 % 1009) as u16)),
                )
            })
            .collect();
        for i in 1..=1000u64 {
            let (id, addr) = (
                i * 7919 % 1009,
                SocketAddr::from(([127, 0, 0, 1], (40_000 + i * 31 % 1009) as u16)),
            );
            assert_eq!(many.get(&id), Some(&addr));
            assert_eq!(many.id_at(&addr), Some(id));
        }
        assert_eq!(many.get(&1009), None);
    }

    #[test]
    fn a_timeout_must_be_above_the_heartbeat() {
        assert!(check_timing(100, 300).is_ok());
        for (hb, to) in [(100, 1), (100, 100)] {
            let e = check_timing(hb, to).unwrap_err();
            assert!(
                matches!(e, CliError::Usage(_)) && e.to_string().contains("must be above"),
                "{e}"
            );
        }
    }
}
