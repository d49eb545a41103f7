//! The network-fault vocabulary, pure: parsing `net VERB ...`, the rules in force, and the
//! `faults.jsonl` event of each action.
//!
//! Semantics (docs/trace.md repeats them):
//! - `cut A B` blocks A->B and B->A; `--one-way` only A->B. A cut stays until a heal of that
//!   link or of everything.
//! - `partition S1 S2 ...`: each argument is one side (`1,2,3`); every member not named is on a
//!   side of its own. Nodes on different sides cannot reach one another. A new partition
//!   replaces the previous one (cuts stay). Only members take part: the shared resource of a
//!   mutex run (id 0, not a member) is never cut off by a partition.
//! - `heal` lifts every rule; `heal A B` makes the link A-B perfect in both directions: no cut,
//!   bridged across the partition, no loss, no delay (until a later rule names it again).
//! - `loss PCT` / `delay MS[:JITTER]` without a link set every link (and forget per-link
//!   values); with `A B` they set that link, both directions. The latest rule wins.
//! - Delay holds a datagram `MS` plus or minus up to `JITTER` ms (uniform, never below zero),
//!   so with jitter datagrams overtake one another.

use super::action::{delay_words, set_words};
pub use super::action::{Link, NetAction, NetCommand};
use crate::trace::{Event, NodeId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// What the network does to the datagrams of one directed link.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkRule {
    /// Dropped, all of them (cut or partition).
    pub blocked: bool,
    /// Percentage lost at random.
    pub loss_pct: u32,
    /// Mean hold time, ms.
    pub delay_ms: u64,
    /// Largest deviation of the hold time, ms.
    pub jitter_ms: u64,
}

impl LinkRule {
    /// Whether the link is perfect.
    pub(crate) fn is_clear(&self) -> bool {
        *self == LinkRule::default()
    }
}

/// The network rules in force: the fold of every action so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NetRules {
    /// The run's members (an old `partition {nodes}` event cuts `nodes` off from the others).
    members: Vec<NodeId>,
    /// Directed links cut.
    #[serde(with = "as_list")]
    cuts: BTreeSet<Link>,
    /// The partition's sides (empty: none).
    sides: Vec<Vec<NodeId>>,
    /// Old-trace partitions: the members not named are one side (the rest).
    #[serde(default)]
    rest_is_a_side: bool,
    /// Directed links healed across the partition.
    #[serde(with = "as_list")]
    bridged: BTreeSet<Link>,
    /// Loss on every link without a value of its own.
    loss_all: u32,
    /// Links with a loss of their own.
    #[serde(with = "as_pairs")]
    loss_link: BTreeMap<Link, u32>,
    /// Delay (ms, jitter) on every link without a value of its own.
    delay_all: (u64, u64),
    /// Links with a delay of their own.
    #[serde(with = "as_pairs")]
    delay_link: BTreeMap<Link, (u64, u64)>,
    #[serde(skip)]
    side_of: HashMap<NodeId, usize>,
}

/// JSON maps need string keys: a map of links travels as a list of pairs.
mod as_pairs {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::collections::BTreeMap;

    pub(crate) fn serialize<K: Serialize + Ord, V: Serialize, S: Serializer>(
        m: &BTreeMap<K, V>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(m.iter())
    }

    pub(crate) fn deserialize<'de, K: Deserialize<'de> + Ord, V: Deserialize<'de>, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<K, V>, D::Error> {
        Ok(Vec::<(K, V)>::deserialize(d)?.into_iter().collect())
    }
}

/// A set of links as a list.
mod as_list {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::collections::BTreeSet;

    pub(crate) fn serialize<K: Serialize + Ord, S: Serializer>(m: &BTreeSet<K>, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(m.iter())
    }

    pub(crate) fn deserialize<'de, K: Deserialize<'de> + Ord, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeSet<K>, D::Error> {
        Ok(Vec::<K>::deserialize(d)?.into_iter().collect())
    }
}

impl NetRules {
    /// No rule in force, for a run of `members`.
    pub fn new(members: &[NodeId]) -> Self {
        NetRules {
            members: members.to_vec(),
            ..NetRules::default()
        }
    }

    /// Reads rules written by `serde_json::to_vec(&rules)` (the launcher's rules file).
    pub(crate) fn from_json(bytes: &[u8]) -> Result<Self, String> {
        let mut r: NetRules = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        r.index_sides();
        Ok(r)
    }

    #[cfg(test)]
    /// The rules as JSON, for [`NetRules::from_json`].
    pub(crate) fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("rules serialise")
    }

    fn index_sides(&mut self) {
        self.side_of = self
            .sides
            .iter()
            .enumerate()
            .flat_map(|(i, s)| s.iter().map(move |&n| (n, i)))
            .collect();
    }

    /// Puts `action` in force.
    pub fn apply(&mut self, action: &NetAction) {
        self.apply_event(&action.event(""));
    }

    /// Puts in force the network event `ev` of `faults.jsonl` (any other event: no change,
    /// false). Exact for every event [`NetAction::event`] writes, and for the older
    /// `partition {nodes}` (those nodes against the rest) and `heal {}` (everything).
    pub(crate) fn apply_event(&mut self, ev: &Event) -> bool {
        match ev {
            Event::Cut { links, .. } => self.cuts.extend(links.iter().copied()),
            Event::Partition { nodes, sides, .. } => {
                self.bridged.clear();
                if sides.is_empty() {
                    self.sides = vec![nodes.clone()];
                    self.rest_is_a_side = true;
                } else {
                    self.sides = sides.clone();
                    self.rest_is_a_side = false;
                }
                self.index_sides();
            }
            Event::Heal { links, .. } if links.is_empty() => {
                *self = NetRules::new(&self.members);
            }
            Event::Heal { links, .. } => {
                for &l in links {
                    self.cuts.remove(&l);
                    if self.partition_blocks(l.0, l.1) {
                        self.bridged.insert(l);
                    }
                    if self.loss_all > 0 {
                        self.loss_link.insert(l, 0);
                    } else {
                        self.loss_link.remove(&l);
                    }
                    if self.delay_all != (0, 0) {
                        self.delay_link.insert(l, (0, 0));
                    } else {
                        self.delay_link.remove(&l);
                    }
                }
            }
            Event::Loss { pct, links, .. } if links.is_empty() => {
                self.loss_all = *pct;
                self.loss_link.clear();
            }
            Event::Loss { pct, links, .. } => {
                for &l in links {
                    self.loss_link.insert(l, *pct);
                }
            }
            Event::Delay {
                ms, jitter_ms, links, ..
            } if links.is_empty() => {
                self.delay_all = (*ms, *jitter_ms);
                self.delay_link.clear();
            }
            Event::Delay {
                ms, jitter_ms, links, ..
            } => {
                for &l in links {
                    self.delay_link.insert(l, (*ms, *jitter_ms));
                }
            }
            _ => return false,
        }
        true
    }

    fn side(&self, n: NodeId) -> Option<usize> {
        match self.side_of.get(&n) {
            Some(&s) => Some(s),
            None if self.rest_is_a_side => Some(usize::MAX),
            None => None,
        }
    }

    /// Whether the partition alone (bridges aside) separates `from` and `to`.
    fn partition_blocks(&self, from: NodeId, to: NodeId) -> bool {
        if self.sides.is_empty() {
            return false;
        }
        match (self.side(from), self.side(to)) {
            (Some(a), Some(b)) => a != b,
            _ => false,
        }
    }

    /// Whether every datagram from `from` to `to` is dropped (a cut or the partition).
    pub(crate) fn blocked(&self, from: NodeId, to: NodeId) -> bool {
        self.cuts.contains(&(from, to)) || (self.partition_blocks(from, to) && !self.bridged.contains(&(from, to)))
    }

    /// The percentage of datagrams from `from` to `to` lost at random.
    pub fn loss(&self, from: NodeId, to: NodeId) -> u32 {
        self.loss_link.get(&(from, to)).copied().unwrap_or(self.loss_all)
    }

    /// The hold time of datagrams from `from` to `to`: (ms, jitter ms).
    pub fn delay(&self, from: NodeId, to: NodeId) -> (u64, u64) {
        self.delay_link.get(&(from, to)).copied().unwrap_or(self.delay_all)
    }

    /// Everything the network does from `from` to `to`.
    pub fn link(&self, from: NodeId, to: NodeId) -> LinkRule {
        let (delay_ms, jitter_ms) = self.delay(from, to);
        LinkRule {
            blocked: self.blocked(from, to),
            loss_pct: self.loss(from, to),
            delay_ms,
            jitter_ms,
        }
    }

    /// Whether no link is blocked (loss and delay aside).
    pub(crate) fn blocks_nothing(&self) -> bool {
        self.cuts.is_empty() && self.sides.is_empty()
    }

    /// Whether no rule of any kind is in force.
    pub(crate) fn is_clear(&self) -> bool {
        self.cuts.is_empty()
            && self.sides.is_empty()
            && self.loss_all == 0
            && self.loss_link.values().all(|&p| p == 0)
            && self.delay_all == (0, 0)
            && self.delay_link.values().all(|&d| d == (0, 0))
    }

    /// Whether a loss is in force anywhere.
    pub(crate) fn has_loss(&self) -> bool {
        self.loss_all != 0 || self.loss_link.values().any(|&p| p != 0)
    }

    /// Whether a delay is in force anywhere (the kernel backend leaves delay to the nodes).
    pub(crate) fn has_delay(&self) -> bool {
        self.delay_all != (0, 0) || self.delay_link.values().any(|&d| d != (0, 0))
    }

    /// The run's members.
    pub fn members(&self) -> &[NodeId] {
        &self.members
    }

    /// The directed links cut.
    pub fn cuts(&self) -> impl Iterator<Item = Link> + '_ {
        self.cuts.iter().copied()
    }

    /// The partition's sides (empty: none); with an old-trace partition, the members not named
    /// form one more side.
    pub fn sides(&self) -> Vec<Vec<NodeId>> {
        let mut sides = self.sides.clone();
        if self.rest_is_a_side && !sides.is_empty() {
            let rest: Vec<NodeId> = self
                .members
                .iter()
                .copied()
                .filter(|m| !self.side_of.contains_key(m))
                .collect();
            if !rest.is_empty() {
                sides.push(rest);
            }
        }
        sides
    }

    /// The directed links healed across the partition.
    pub(crate) fn bridged(&self) -> impl Iterator<Item = Link> + '_ {
        self.bridged.iter().copied()
    }

    /// The loss on every link without one of its own, and the links with their own.
    pub(crate) fn losses(&self) -> (u32, impl Iterator<Item = (Link, u32)> + '_) {
        (self.loss_all, self.loss_link.iter().map(|(&l, &p)| (l, p)))
    }

    /// The rules in force in words, one line each, for `net status`.
    pub fn describe(&self) -> Vec<String> {
        if self.is_clear() {
            return vec!["no network rule in force".into()];
        }
        let mut out = Vec::new();
        if !self.cuts.is_empty() {
            out.push(format!("cut: {}", links_words(self.cuts.iter().copied())));
        }
        let sides = self.sides();
        if !sides.is_empty() {
            let words: Vec<String> = sides.iter().map(|s| set_words(s)).collect();
            let mut line = format!("partition: {}", words.join(" | "));
            if !self.bridged.is_empty() {
                line += &format!(" (healed across it: {})", links_words(self.bridged.iter().copied()));
            }
            out.push(line);
        }
        let own_loss: Vec<_> = self.loss_link.iter().filter(|(_, &p)| p != self.loss_all).collect();
        if self.loss_all > 0 || !own_loss.is_empty() {
            let mut parts = Vec::new();
            if self.loss_all > 0 {
                parts.push(format!("{}% on every link", self.loss_all));
            }
            for (pct, links) in group(own_loss.iter().map(|(&l, &p)| (l, p))) {
                parts.push(format!("{pct}% on {}", links_words(links.into_iter())));
            }
            out.push(format!("loss: {}", parts.join("; ")));
        }
        let own_delay: Vec<_> = self.delay_link.iter().filter(|(_, &d)| d != self.delay_all).collect();
        if self.delay_all != (0, 0) || !own_delay.is_empty() {
            let hold = |(m, j): (u64, u64)| delay_words(m, j).trim_start_matches("delay ").to_string();
            let mut parts = Vec::new();
            if self.delay_all != (0, 0) {
                parts.push(format!("{} on every link", hold(self.delay_all)));
            }
            for (d, links) in group(own_delay.iter().map(|(&l, &d)| (l, d))) {
                parts.push(format!("{} on {}", hold(d), links_words(links.into_iter())));
            }
            out.push(format!("delay: {}", parts.join("; ")));
        }
        out
    }
}

/// Links grouped by value.
fn group<V: Ord + Copy>(items: impl Iterator<Item = (Link, V)>) -> BTreeMap<V, Vec<Link>> {
    let mut m: BTreeMap<V, Vec<Link>> = BTreeMap::new();
    for (l, v) in items {
        m.entry(v).or_default().push(l);
    }
    m
}

/// `2-10, 3->4`: a link present both ways is written once with `-`.
fn links_words(links: impl Iterator<Item = Link>) -> String {
    let set: BTreeSet<Link> = links.collect();
    let mut words = Vec::new();
    for &(a, b) in &set {
        if set.contains(&(b, a)) {
            if a < b {
                words.push(format!("{a}-{b}"));
            }
        } else {
            words.push(format!("{a}->{b}"));
        }
    }
    words.join(", ")
}

#[cfg(test)]
mod tests;
