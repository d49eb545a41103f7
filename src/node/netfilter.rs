//! The user-space network: what `coordlab net` does to the datagrams a node receives, before
//! the engine sees them (so no algorithm can tell a dropped datagram from a lost one).
//!
//! The launcher writes the rules in force to `net-rules.json` in the run directory (a rename,
//! so a node reads the old file or the new, never half) and sends every node SIGUSR1; a node
//! reads the file when it starts and at each SIGUSR1. With the kernel backend the file asks
//! the node only for the delay (nftables drops; this kernel has no netem).
//!
//! When no rule is in force the whole cost on the receive path is one branch on `active`.

use crate::net::rules::LinkRule;
use crate::net::NetRules;
use crate::rng::Rng;
use crate::trace::NodeId;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The name of the rules file in the run directory.
pub(crate) const RULES_FILE: &str = "net-rules.json";

/// What the launcher asks of the nodes.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct NodeNetFile {
    /// Counts the launcher's changes (for logs).
    pub version: u64,
    /// True with the user backend: the nodes drop (cut, partition, loss); false with the
    /// kernel backend, which drops itself: the nodes only delay.
    pub drops: bool,
    /// The rules in force.
    pub rules: NetRules,
}

impl NodeNetFile {
    /// Writes the file into `dir` atomically (a temporary file renamed over the old one).
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        let tmp = dir.join(format!(".{RULES_FILE}.tmp"));
        std::fs::write(&tmp, serde_json::to_vec(self).map_err(std::io::Error::other)?)?;
        std::fs::rename(&tmp, dir.join(RULES_FILE))
    }

    /// Reads the file in `dir`; Ok(None) when there is none.
    pub fn read(dir: &Path) -> Result<Option<NodeNetFile>, String> {
        let path = dir.join(RULES_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        #[derive(Deserialize)]
        struct Raw {
            version: u64,
            drops: bool,
            rules: serde_json::Value,
        }
        let raw: Raw = serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        let rules =
            NetRules::from_json(raw.rules.to_string().as_bytes()).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Some(NodeNetFile {
            version: raw.version,
            drops: raw.drops,
            rules,
        }))
    }
}

/// A datagram the network holds back.
struct Held {
    due: Instant,
    /// Arrival order, so that equal deadlines keep it.
    n: u64,
    from: Option<NodeId>,
    src: SocketAddr,
    bytes: Vec<u8>,
}

impl PartialEq for Held {
    fn eq(&self, o: &Self) -> bool {
        (self.due, self.n) == (o.due, o.n)
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Held {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.due, self.n).cmp(&(o.due, o.n))
    }
}

/// What to do with one received datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Hand it to the engine now.
    Pass,
    /// The network lost it.
    Drop,
    /// Held back; [`NetFilter::due`] gives it back later.
    Held,
}

/// A node's receive filter.
pub(crate) struct NetFilter {
    /// Whether any rule touches this node's incoming links: the one branch on the hot path.
    pub active: bool,
    /// Whether any rule delays: the runtime then asks the kernel for each datagram's arrival
    /// time, from which its delay runs.
    pub delays: bool,
    me: NodeId,
    dir: Option<PathBuf>,
    version: u64,
    by_sender: HashMap<NodeId, LinkRule>,
    held: BinaryHeap<Reverse<Held>>,
    arrivals: u64,
    rng: Rng,
}

impl NetFilter {
    /// The filter of node `me`, reading its rules from run directory `dir` (None: no launcher,
    /// never a rule), with loss and jitter drawn from `seed`.
    pub fn new(me: NodeId, dir: Option<PathBuf>, seed: u64) -> Self {
        NetFilter {
            active: false,
            delays: false,
            me,
            dir,
            version: 0,
            by_sender: HashMap::new(),
            held: BinaryHeap::new(),
            arrivals: 0,
            rng: Rng::new(seed ^ me.rotate_left(17)),
        }
    }

    /// Reads the rules file again; returns a line for the log when it changed something.
    pub(crate) fn reload(&mut self) -> Option<String> {
        let dir = self.dir.as_ref()?;
        match NodeNetFile::read(dir) {
            Ok(None) => None,
            Ok(Some(f)) => {
                if f.version == self.version && self.version != 0 {
                    return None;
                }
                self.version = f.version;
                self.set(&f.rules, f.drops);
                Some(format!("network rules v{} in force here", f.version))
            }
            Err(e) => Some(format!("network rules not read, the old ones stay: {e}")),
        }
    }

    /// Puts `rules` in force on this node's incoming links (`drops`: false leaves dropping to
    /// the kernel and keeps only the delay).
    pub fn set(&mut self, rules: &NetRules, drops: bool) {
        self.by_sender.clear();
        for &from in rules.members() {
            if from == self.me {
                continue;
            }
            let mut r = rules.link(from, self.me);
            if !drops {
                r.blocked = false;
                r.loss_pct = 0;
            }
            if !r.is_clear() {
                self.by_sender.insert(from, r);
            }
        }
        self.active = !self.by_sender.is_empty();
        self.delays = self.by_sender.values().any(|r| r.delay_ms > 0 || r.jitter_ms > 0);
    }

    /// What the runtime asks of every datagram: with no rule in force, one branch and `Pass`.
    /// `arrived`: when the kernel took the datagram in, if it said (else now).
    #[inline]
    pub(crate) fn admit(
        &mut self,
        from: Option<NodeId>,
        bytes: &[u8],
        src: SocketAddr,
        arrived: impl FnOnce() -> Option<Instant>,
    ) -> Verdict {
        if !self.active {
            return Verdict::Pass;
        }
        let at = arrived().unwrap_or_else(Instant::now);
        self.judge(from, bytes, src, at)
    }

    /// Judges a datagram from member `from` (None: not a member, left to the engine) that
    /// reached this node's socket at `arrived`; a held datagram is copied and kept until its
    /// delay from then is over. From its arrival, not from its reading: a link delays a
    /// datagram whether or not its receiver runs, so what waited in the socket of a node that
    /// was paused is due the moment the node reads it, not a whole delay later (the resumed
    /// node would otherwise judge its peers' silence before it saw what they had sent it).
    pub(crate) fn judge(&mut self, from: Option<NodeId>, bytes: &[u8], src: SocketAddr, arrived: Instant) -> Verdict {
        let Some(rule) = from.and_then(|f| self.by_sender.get(&f)) else {
            return Verdict::Pass;
        };
        let rule = *rule;
        if rule.blocked || (rule.loss_pct > 0 && self.rng.range(0, 100) < u64::from(rule.loss_pct)) {
            return Verdict::Drop;
        }
        if rule.delay_ms == 0 && rule.jitter_ms == 0 {
            return Verdict::Pass;
        }
        // ms +- jitter, uniform, never below zero: with jitter, later datagrams overtake.
        let lo = (rule.delay_ms * 1000).saturating_sub(rule.jitter_ms * 1000);
        let hi = rule.delay_ms * 1000 + rule.jitter_ms * 1000 + 1;
        let hold = Duration::from_micros(self.rng.range(lo, hi));
        self.arrivals += 1;
        self.held.push(Reverse(Held {
            due: arrived + hold,
            n: self.arrivals,
            from,
            src,
            bytes: bytes.to_vec(),
        }));
        Verdict::Held
    }

    /// When the earliest held datagram is due.
    pub(crate) fn next_due(&self) -> Option<Instant> {
        self.held.peek().map(|h| h.0.due)
    }

    /// Takes the next held datagram due by `now`: (sender, source address, bytes).
    pub(crate) fn due(&mut self, now: Instant) -> Option<(Option<NodeId>, SocketAddr, Vec<u8>)> {
        if self.held.peek()?.0.due > now {
            return None;
        }
        let h = self.held.pop()?.0;
        Some((h.from, h.src, h.bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::NetCommand;

    fn rules(cmds: &[&str]) -> NetRules {
        let members = [1, 2, 3];
        let mut r = NetRules::new(&members);
        for c in cmds {
            let w: Vec<&str> = c.split_whitespace().collect();
            match NetCommand::parse(&w, &members).unwrap() {
                NetCommand::Act(a) => r.apply(&a),
                NetCommand::Status => {}
            }
        }
        r
    }

    fn src() -> SocketAddr {
        "127.0.0.1:9".parse().unwrap()
    }

    #[test]
    fn no_rule_leaves_the_filter_inactive_and_cut_drops_only_that_sender() {
        let mut f = NetFilter::new(2, None, 1);
        f.set(&rules(&[]), true);
        assert!(!f.active);
        f.set(&rules(&["cut 1 2"]), true);
        assert!(f.active);
        let now = Instant::now();
        assert_eq!(f.judge(Some(1), b"x", src(), now), Verdict::Drop);
        assert_eq!(f.judge(Some(3), b"x", src(), now), Verdict::Pass);
        assert_eq!(f.judge(None, b"x", src(), now), Verdict::Pass);
        // The kernel backend drops itself: the node then only delays.
        f.set(&rules(&["cut 1 2", "loss 100"]), false);
        assert!(!f.active);
    }

    #[test]
    fn loss_drops_about_its_share_and_delay_holds_and_reorders() {
        let mut f = NetFilter::new(2, None, 7);
        f.set(&rules(&["loss 30"]), true);
        let now = Instant::now();
        let dropped = (0..10_000)
            .filter(|_| f.judge(Some(1), b"x", src(), now) == Verdict::Drop)
            .count();
        assert!((2_500..3_500).contains(&dropped), "{dropped}");
        f.set(&rules(&["delay 50:50"]), true);
        for i in 0..100u8 {
            assert_eq!(f.judge(Some(1), &[i], src(), now), Verdict::Held);
        }
        let mut order = Vec::new();
        let late = now + Duration::from_millis(101);
        assert!(f.next_due().unwrap() <= late);
        while let Some((from, _, b)) = f.due(late) {
            assert_eq!(from, Some(1));
            order.push(b[0]);
        }
        assert_eq!(order.len(), 100);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_ne!(order, sorted, "jitter reorders");
    }

    #[test]
    fn a_delay_runs_from_the_datagrams_arrival_not_from_its_reading() {
        let mut f = NetFilter::new(2, None, 7);
        f.set(&rules(&["delay 50"]), true);
        assert!(f.delays);
        let now = Instant::now();
        // Waited in the socket 80 ms (its receiver paused): due the moment it is read.
        assert_eq!(
            f.judge(Some(1), b"old", src(), now - Duration::from_millis(80)),
            Verdict::Held
        );
        // Arrived now: due in 50 ms.
        assert_eq!(f.judge(Some(1), b"new", src(), now), Verdict::Held);
        assert_eq!(f.due(now).map(|d| d.2), Some(b"old".to_vec()));
        assert_eq!(f.due(now), None);
        assert_eq!(
            f.due(now + Duration::from_millis(50)).map(|d| d.2),
            Some(b"new".to_vec())
        );
        // A rule that only drops asks for no arrival times.
        f.set(&rules(&["loss 30"]), true);
        assert!(f.active && !f.delays);
    }
}
