//! The kernel backend: nftables rules in a table of the run's own, keyed by each member's UDP
//! port on loopback (every node has its own port on 127.0.0.1), so no node can see or cheat a
//! drop. Every change rebuilds the rules from [`NetRules`] in one `nft -f -` batch (atomic in
//! the kernel); a partition is one set of ports per side of two or more nodes, plus one set of
//! the nodes alone, so halving 4,096 nodes is a handful of rules, not millions.
//!
//! The table dies with its run: the launcher deletes it on every ending, and a watchdog process
//! (`coordlab nft-watchdog`, spawned when the table is made) deletes it when the launcher dies
//! any other way, SIGKILL included (the kernel sends the watchdog its parent-death signal).

use super::NetRules;
use crate::trace::NodeId;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::process::{Child, Command, Stdio};

/// Whether the kernel backend can work here: root, `nft` on `PATH` (every rule is an `nft`
/// batch), and nf_tables answering this process. Err: why not, one line.
pub(crate) fn usable() -> Result<(), String> {
    // SAFETY: geteuid cannot fail and touches no memory.
    if unsafe { nix::libc::geteuid() } != 0 {
        return Err("--net kernel needs root (nftables rules); run as root or use --net user".into());
    }
    if super::netlink::on_path("nft").is_none() {
        return Err(
            "--net kernel: cannot run nft (not on PATH); install Debian's nftables (scripts/setup-nftables.sh) or use --net user"
                .into(),
        );
    }
    super::netlink::nftables_answers()
        .map_err(|e| format!("--net kernel: nft does not work here: {e} (use --net user)"))
}

/// Runs one `nft -f -` batch.
fn nft_batch(script: &str) -> Result<(), String> {
    let mut child = Command::new("nft")
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run nft: {e}"))?;
    let written = child.stdin.take().expect("piped").write_all(script.as_bytes());
    let out = child.wait_with_output().map_err(|e| format!("nft: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("failed")
            .trim()
            .to_string();
        return Err(format!("nft: {first}"));
    }
    written.map_err(|e| format!("nft: {e}"))
}

/// Deletes table `name` (family inet); Ok when it is gone, including when it never existed.
pub(crate) fn delete_table(name: &str) -> Result<(), String> {
    let out = Command::new("nft")
        .args(["delete", "table", "inet", name])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("cannot run nft: {e}"))?;
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.success() || err.contains("No such file or directory") {
        Ok(())
    } else {
        Err(format!("nft delete table inet {name}: {}", err.trim()))
    }
}

/// The match of `pct` percent of packets (nftables' own random numbers); empty for all of them.
fn chance(pct: u32) -> String {
    if pct >= 100 {
        String::new()
    } else {
        format!("numgen random mod 100 < {pct}")
    }
}

/// The run's own table and its watchdog.
pub(crate) struct NftTable {
    name: String,
    port: HashMap<NodeId, u16>,
    /// Side sets made so far (`side0`...), reused by later partitions.
    side_sets: usize,
    watchdog: Option<Child>,
}

/// Err (one line) if two of `members` (id, UDP port) share a port: the rules tell nodes
/// apart by port.
pub(crate) fn distinct_ports(members: &[(NodeId, u16)]) -> Result<(), String> {
    let mut seen = HashMap::new();
    for &(id, p) in members {
        if let Some(other) = seen.insert(p, id) {
            return Err(format!(
                "--net kernel: nodes {other} and {id} share port {p}; the rules tell nodes apart by port"
            ));
        }
    }
    Ok(())
}

impl NftTable {
    /// Makes the empty table `name` for `members` at their ports, and the watchdog that deletes
    /// it when this process dies. Err: one line.
    pub fn create(name: &str, members: &[(NodeId, u16)]) -> Result<NftTable, String> {
        distinct_ports(members)?;
        let port: HashMap<NodeId, u16> = members.iter().copied().collect();
        // `members` is an interval set: the kernel filled a plain (hash) set of 16,384 ports in
        // 0.95 s (quadratic), an interval set in 0.19 s; a lookup matches the same ports.
        let script = format!(
            "table inet {name} {{\n\
             set members {{ type inet_service; flags interval; }}\n\
             set cuts {{ type inet_service . inet_service; }}\n\
             set bridged {{ type inet_service . inet_service; }}\n\
             set alone {{ type inet_service; }}\n\
             chain part {{ }}\n\
             chain input {{ type filter hook input priority filter; policy accept; }}\n\
             }}\n"
        );
        nft_batch(&script)?;
        let mut t = NftTable {
            name: name.to_string(),
            port,
            side_sets: 0,
            watchdog: None,
        };
        let exe = std::env::current_exe().map_err(|e| format!("cannot find my own binary: {e}"));
        let spawned = exe.and_then(|exe| {
            Command::new(exe)
                .args(["nft-watchdog", name, &std::process::id().to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .spawn()
                .map_err(|e| format!("cannot start the nftables watchdog: {e}"))
        });
        match spawned {
            Ok(c) => t.watchdog = Some(c),
            Err(e) => {
                let _ = delete_table(name);
                return Err(e);
            }
        }
        let ports: Vec<String> = t.port.values().map(|p| p.to_string()).collect();
        if !ports.is_empty() {
            nft_batch(&format!("add element inet {name} members {{ {} }}\n", ports.join(", ")))?;
        }
        Ok(t)
    }

    fn p(&self, id: NodeId) -> Option<u16> {
        self.port.get(&id).copied()
    }

    /// The batch that makes the table enforce `rules` (cuts, partition, loss; delay is the
    /// nodes' own).
    pub fn script(&self, rules: &NetRules) -> String {
        let t = &self.name;
        let mut s = String::new();
        let _ = writeln!(s, "flush chain inet {t} input");
        let _ = writeln!(s, "flush chain inet {t} part");
        // Side sets are kept and flushed, not deleted and made again: fewer kernel objects
        // change per batch.
        for i in 0..self.side_sets {
            let _ = writeln!(s, "flush set inet {t} side{i}");
        }
        for set in ["cuts", "bridged", "alone"] {
            let _ = writeln!(s, "flush set inet {t} {set}");
        }
        let pair = |(a, b): (NodeId, NodeId)| Some(format!("{} . {}", self.p(a)?, self.p(b)?));
        let cuts: Vec<String> = rules.cuts().filter_map(pair).collect();
        if !cuts.is_empty() {
            let _ = writeln!(s, "add element inet {t} cuts {{ {} }}", cuts.join(", "));
            let _ = writeln!(s, "add rule inet {t} input iif lo udp sport . udp dport @cuts drop");
        }
        let sides = rules.sides();
        if !sides.is_empty() {
            let bridged: Vec<String> = rules.bridged().filter_map(pair).collect();
            if bridged.is_empty() {
                let _ = writeln!(s, "add rule inet {t} input iif lo jump part");
            } else {
                let _ = writeln!(s, "add element inet {t} bridged {{ {} }}", bridged.join(", "));
                let _ = writeln!(
                    s,
                    "add rule inet {t} input iif lo udp sport . udp dport != @bridged jump part"
                );
            }
            let ports = |side: &[NodeId]| -> Vec<String> {
                side.iter().filter_map(|&n| self.p(n)).map(|p| p.to_string()).collect()
            };
            let mut alone = Vec::new();
            let mut k = 0;
            for side in &sides {
                if side.len() == 1 {
                    alone.extend(ports(side));
                    continue;
                }
                if k >= self.side_sets {
                    let _ = writeln!(s, "add set inet {t} side{k} {{ type inet_service; }}");
                }
                let _ = writeln!(s, "add element inet {t} side{k} {{ {} }}", ports(side).join(", "));
                let _ = writeln!(
                    s,
                    "add rule inet {t} part udp sport @side{k} udp dport != @side{k} udp dport @members drop"
                );
                k += 1;
            }
            if !alone.is_empty() {
                let _ = writeln!(s, "add element inet {t} alone {{ {} }}", alone.join(", "));
                let _ = writeln!(s, "add rule inet {t} part udp sport @alone udp dport @members drop");
                let _ = writeln!(s, "add rule inet {t} part udp dport @alone udp sport @members drop");
            }
        }
        let (all, own) = rules.losses();
        for ((a, b), pct) in own {
            let (Some(pa), Some(pb)) = (self.p(a), self.p(b)) else {
                continue;
            };
            if pct > 0 {
                let _ = writeln!(
                    s,
                    "add rule inet {t} input iif lo udp sport {pa} udp dport {pb} {} drop",
                    chance(pct)
                );
            }
            // This link's own value replaces the every-link one.
            if all > 0 {
                let _ = writeln!(s, "add rule inet {t} input iif lo udp sport {pa} udp dport {pb} accept");
            }
        }
        if all > 0 {
            let _ = writeln!(
                s,
                "add rule inet {t} input iif lo udp sport @members udp dport @members {} drop",
                chance(all)
            );
        }
        s
    }

    /// Makes the table enforce `rules`, in one batch. Err: nft's complaint, one line.
    pub fn apply(&mut self, rules: &NetRules) -> Result<(), String> {
        let script = self.script(rules);
        nft_batch(&script)?;
        self.side_sets = self.side_sets.max(rules.sides().iter().filter(|s| s.len() > 1).count());
        Ok(())
    }

    /// Deletes the table and ends the watchdog.
    pub(crate) fn remove(&mut self) -> Result<(), String> {
        let r = delete_table(&self.name);
        if let Some(mut w) = self.watchdog.take() {
            let _ = w.kill();
            let _ = w.wait();
        }
        r
    }
}

impl Drop for NftTable {
    fn drop(&mut self) {
        if self.watchdog.is_some() {
            let _ = self.remove();
        }
    }
}

/// `coordlab nft-watchdog TABLE PID`: waits for process PID (the launcher, its parent) to die,
/// then deletes the table. Its own process group, so a Ctrl-C at the terminal leaves it to the
/// launcher's clean ending (which kills it).
pub fn watchdog(table: &str, parent: i32) -> i32 {
    use nix::sys::signal::{SigSet, Signal};
    let _ = nix::unistd::setpgid(nix::unistd::Pid::from_raw(0), nix::unistd::Pid::from_raw(0));
    let mut mask = SigSet::empty();
    for s in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP, Signal::SIGUSR1] {
        mask.add(s);
    }
    if mask.thread_block().is_err() || nix::sys::prctl::set_pdeathsig(Signal::SIGTERM).is_err() {
        let _ = delete_table(table);
        return 1;
    }
    // Already orphaned (the launcher died before the death signal was armed): delete now.
    if nix::unistd::getppid().as_raw() == parent {
        // A stray network-rule reload (SIGUSR1) is not for us; anything else ends the wait.
        while let Ok(Signal::SIGUSR1) = mask.wait() {}
    }
    match delete_table(table) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("coordlab nft-watchdog: {e}");
            1
        }
    }
}
