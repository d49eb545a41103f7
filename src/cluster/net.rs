//! The launcher's side of `coordlab net`: it owns the rules in force, enforces them through a
//! backend (nftables, or the nodes' receive filter), and writes each change to `faults.jsonl`
//! once it has taken effect.

use super::model::State;
use super::nodes::Fleet;
use crate::net::nft::{self, NftTable};
use crate::net::{NetAction, NetCommand, NetRules};
use crate::node::netfilter::NodeNetFile;
use crate::trace::{Event, NodeId};
use nix::sys::signal::{kill, Signal};
use std::path::{Path, PathBuf};

/// Who enforces the drops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    /// nftables rules in the run's own table (root only).
    Kernel,
    /// The nodes' own receive filter.
    User,
}

impl Backend {
    /// `kernel` or `user`, as in the banner, run.json and faults.jsonl.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Kernel => "kernel",
            Backend::User => "user",
        }
    }

    /// Chooses from `--net` (None: kernel when it works here, else user). A `--net kernel`
    /// that cannot work is a usage error, one line; `--net` of another name too.
    pub(crate) fn choose(flag: Option<&str>) -> Result<Backend, String> {
        match flag {
            Some("kernel") => nft::usable().map(|_| Backend::Kernel),
            Some("user") => Ok(Backend::User),
            Some(other) => Err(format!("--net {other}: expected kernel or user")),
            None if nft::usable().is_ok() => Ok(Backend::Kernel),
            None => Ok(Backend::User),
        }
    }
}

/// The rules in force and what enforces them.
pub(crate) struct NetControl {
    backend: Backend,
    rules: NetRules,
    /// With the kernel backend: the run's table, once a rule needed it.
    table: Option<NftTable>,
    /// With the kernel backend: the table's name and the members' ports, for making it.
    planned: Option<(String, Vec<(NodeId, u16)>)>,
    dir: PathBuf,
    version: u64,
    /// The members, for a quick "is this node one" when signalling thousands.
    member_set: std::collections::HashSet<NodeId>,
}

impl NetControl {
    /// Sets up `backend` for `members` (id, UDP port) of the run in `dir`. The kernel backend's
    /// table (and its watchdog) is made at the first rule, not here: most runs never cut a
    /// link, and making it at every launch as root cost 5-8 ms before any node started.
    /// Err: one line (two nodes on one port, which the kernel's rules could not tell apart).
    pub fn new(backend: Backend, dir: &Path, members: &[(NodeId, u16)]) -> Result<NetControl, String> {
        let ids: Vec<NodeId> = members.iter().map(|m| m.0).collect();
        let planned = match backend {
            Backend::Kernel => {
                nft::distinct_ports(members)?;
                let name = format!(
                    "coordlab-{}-{}",
                    std::process::id(),
                    crate::trace::wall_us() / 1_000_000
                );
                Some((name, members.to_vec()))
            }
            Backend::User => None,
        };
        Ok(NetControl {
            backend,
            rules: NetRules::new(&ids),
            table: None,
            planned,
            dir: dir.to_path_buf(),
            version: 0,
            member_set: ids.iter().copied().collect(),
        })
    }

    /// The nftables table's name, with the kernel backend (made at the first rule).
    pub(crate) fn table_name(&self) -> Option<&str> {
        self.planned.as_ref().map(|p| p.0.as_str())
    }

    /// The kernel backend's table, made now if no rule needed it before. None: the user backend.
    fn table(&mut self) -> Result<Option<&mut NftTable>, String> {
        if self.table.is_none() {
            if let Some((name, members)) = &self.planned {
                self.table = Some(NftTable::create(name, members)?);
            }
        }
        Ok(self.table.as_mut())
    }

    /// The members the rules may name.
    pub fn members(&self) -> &[NodeId] {
        self.rules.members()
    }

    /// Runs `net WORDS...`: the answer for the console, or one line saying what is wrong. A rule
    /// that fails in the kernel is recorded as `net_error` and changes nothing.
    pub(crate) fn execute(&mut self, words: &[&str], fleet: &mut Fleet) -> Result<String, String> {
        match NetCommand::parse(words, self.members())? {
            NetCommand::Status => Ok(format!(
                "network ({} backend): {}",
                self.backend.name(),
                self.rules.describe().join("; ")
            )),
            NetCommand::Act(a) => self.act(&a, fleet),
        }
    }

    /// Records a change that was not applied (`net_error`); returns what the user is told.
    fn refused(&self, fleet: &mut Fleet, what: String) -> String {
        fleet.fault(
            None,
            Event::NetError {
                what: what.clone(),
                backend: self.backend.name().into(),
            },
        );
        what
    }

    fn act(&mut self, action: &NetAction, fleet: &mut Fleet) -> Result<String, String> {
        // The event's time brackets the change conservatively: a heal is stamped before it is
        // applied, anything else once applied, so that between a rule's event and the heal's
        // the rule surely held (a message sent in the few hundred microseconds of an `nft`
        // batch is on one side or the other).
        let before = crate::trace::wall_us();
        let mut next = self.rules.clone();
        next.apply(action);
        let applied = match self.table() {
            Ok(Some(t)) => t.apply(&next),
            Ok(None) => Ok(()),
            Err(e) => Err(e),
        };
        if let Err(e) = applied {
            return Err(self.refused(fleet, format!("{}: not applied: {e}", action.describe())));
        }
        // The nodes hear of every change with the user backend; with the kernel one only of
        // delays, the part nftables cannot do here.
        let nodes_care = self.backend == Backend::User || next.has_delay() || self.rules.has_delay();
        if nodes_care {
            self.version += 1;
            let file = NodeNetFile {
                version: self.version,
                drops: self.backend == Backend::User,
                rules: next.clone(),
            };
            if let Err(e) = file.write(&self.dir) {
                let what = format!(
                    "{}: not applied: cannot write the nodes' rules file: {e}",
                    action.describe()
                );
                if let Some(t) = &mut self.table {
                    // Back to the rules the nodes still have.
                    let _ = t.apply(&self.rules);
                }
                return Err(self.refused(fleet, what));
            }
            // A paused node gets the signal when it is resumed; one being restarted reads the
            // file when it starts.
            for n in &fleet.nodes {
                if !matches!(n.state, State::Running | State::Paused) || !self.member_set.contains(&n.plan.id) {
                    continue;
                }
                if let Some(pid) = n.pid {
                    let _ = kill(pid, Signal::SIGUSR1);
                }
            }
        }
        fleet.net_rules = next.clone();
        self.rules = next;
        let t = match action {
            NetAction::Heal { .. } => before,
            _ => crate::trace::wall_us(),
        };
        fleet.fault_at(t, None, action.event(self.backend.name()));
        Ok(action.describe())
    }

    /// Lifts everything: the table deleted (its watchdog ended). Err: one line.
    pub(crate) fn finish(&mut self) -> Result<(), String> {
        match self.table.take() {
            Some(mut t) => t.remove(),
            None => Ok(()),
        }
    }
}
