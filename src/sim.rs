//! The deterministic simulator: many hosts on an in-memory network with a fake clock.
//!
//! Messages really go through the wire codec. The network can delay (uniformly in a range),
//! drop, duplicate and partition; nodes can be crashed, restarted, paused and resumed. Paused
//! nodes keep their inbound datagrams queued and fire overdue timers after draining them, as a
//! SIGSTOPped process does. Everything is seeded: a failing seed replays exactly.

use crate::algo::{Algorithm, Setup};
use crate::engine::host::{Host, Now};
use crate::engine::key::Key;
use crate::rng::Rng;
use crate::trace::{Event, NodeId, Record};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
use std::time::Duration;

/// The network's behaviour.
#[derive(Debug, Clone)]
pub struct NetConfig {
    /// Seed of every random choice of the network.
    pub seed: u64,
    /// Shortest one-way delay.
    pub min_delay: Duration,
    /// Longest one-way delay (inclusive of `min_delay`; equal for a fixed delay).
    pub max_delay: Duration,
    /// Probability that a datagram is lost.
    pub drop: f64,
    /// Probability that a datagram is delivered twice.
    pub duplicate: f64,
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig {
            seed: 1,
            min_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(1),
            drop: 0.0,
            duplicate: 0.0,
        }
    }
}

/// A simulated node's state.
enum State {
    Up,
    Paused(Vec<(NodeId, Vec<u8>)>),
    Crashed,
}

struct SimNode<A: Algorithm> {
    host: Host<A>,
    state: State,
    epoch: u64,
    /// Wakeups already queued, so that each deadline is queued once.
    wakes: BTreeSet<Duration>,
}

enum Item {
    Deliver { from: NodeId, to: NodeId, bytes: Vec<u8> },
    Wake { node: NodeId, epoch: u64 },
}

/// The simulator.
pub struct Sim<A: Algorithm> {
    net: NetConfig,
    rng: Rng,
    now: Duration,
    nodes: BTreeMap<NodeId, SimNode<A>>,
    setups: BTreeMap<NodeId, Setup>,
    factory: Box<dyn Fn(&Setup) -> A>,
    queue: BinaryHeap<Reverse<(Duration, u64)>>,
    items: HashMap<u64, Item>,
    seq: u64,
    cut: BTreeSet<(NodeId, NodeId)>,
    /// Each node's durable state, which survives its crash, framed as the runtime frames its
    /// state files (`engine::durable`).
    stores: BTreeMap<NodeId, Vec<u8>>,
    /// Every trace record of every node, in simulated time order.
    pub trace: Vec<Record>,
    /// What was done to the nodes (crash, restart, pause, resume, partition, heal), as the
    /// launcher's `faults.jsonl` would say it: the checker's ground truth.
    pub faults: Vec<Record>,
}

impl<A: Algorithm> Sim<A> {
    /// Builds and starts every node at time zero, in the order of `setups`.
    pub fn new(net: NetConfig, setups: Vec<Setup>, factory: impl Fn(&Setup) -> A + 'static) -> Self {
        let mut sim = Sim {
            rng: Rng::new(net.seed),
            net,
            now: Duration::ZERO,
            nodes: BTreeMap::new(),
            setups: BTreeMap::new(),
            factory: Box::new(factory),
            queue: BinaryHeap::new(),
            items: HashMap::new(),
            seq: 0,
            cut: BTreeSet::new(),
            stores: BTreeMap::new(),
            trace: Vec::new(),
            faults: Vec::new(),
        };
        for s in &setups {
            sim.setups.insert(s.me, s.clone());
        }
        for s in setups {
            sim.boot(s.me, 0);
        }
        sim
    }

    /// The simulated time.
    pub fn now(&self) -> Duration {
        self.now
    }

    /// The algorithm state of node `id`.
    pub fn node(&self, id: NodeId) -> &A {
        &self.nodes[&id].host.algo
    }

    /// The ids of the nodes that are neither crashed nor paused.
    pub fn live(&self) -> Vec<NodeId> {
        self.nodes
            .iter()
            .filter(|(_, n)| matches!(n.state, State::Up))
            .map(|(&id, _)| id)
            .collect()
    }

    /// All node ids.
    pub fn ids(&self) -> Vec<NodeId> {
        self.nodes.keys().copied().collect()
    }

    /// Every node's setup, by id.
    pub fn setups(&self) -> &BTreeMap<NodeId, Setup> {
        &self.setups
    }

    fn fault(&mut self, node: Option<NodeId>, event: Event) {
        let t = self.now.as_micros() as u64;
        self.faults.push(Record::unstamped(t, node, event));
    }

    /// Crashes `id`: its state and timers are gone, datagrams to it are lost.
    pub fn crash(&mut self, id: NodeId) {
        let n = self.nodes.get_mut(&id).expect("crash: no such node");
        n.state = State::Crashed;
        n.epoch += 1;
        let signal = "SIGKILL".into();
        self.fault(Some(id), Event::Kill { pid: 0, signal });
    }

    /// Starts `id` afresh from its setup (after a crash).
    pub fn restart(&mut self, id: NodeId) {
        let epoch = self.nodes.get(&id).map(|n| n.epoch + 1).unwrap_or(0);
        self.fault(Some(id), Event::Restart { pid: 0 });
        self.boot(id, epoch);
    }

    #[cfg(test)]
    /// Overwrites the durable store of `id` with `bytes` (a damaged state file, for tests of
    /// what a node does when what it kept does not verify).
    pub(crate) fn damage_store(&mut self, id: NodeId, bytes: &[u8]) {
        self.stores.insert(id, bytes.to_vec());
    }

    #[cfg(test)]
    /// The durable state node `id` kept (verified), if any.
    pub(crate) fn store(&self, id: NodeId) -> Option<Vec<u8>> {
        self.stores.get(&id).and_then(|f| crate::engine::durable::open(f).ok())
    }

    /// Pauses `id`, as SIGSTOP does: datagrams queue up, timers wait.
    pub fn pause(&mut self, id: NodeId) {
        let n = self.nodes.get_mut(&id).expect("pause: no such node");
        if matches!(n.state, State::Up) {
            n.state = State::Paused(Vec::new());
            self.fault(Some(id), Event::Pause { pid: 0 });
        }
    }

    /// Resumes `id`: it reads what queued up, then fires its overdue timers.
    pub fn resume(&mut self, id: NodeId) {
        let n = self.nodes.get_mut(&id).expect("resume: no such node");
        if let State::Paused(queued) = std::mem::replace(&mut n.state, State::Up) {
            self.fault(Some(id), Event::Resume { pid: 0 });
            for (from, bytes) in queued.into_iter() {
                self.deliver_now(from, id, &bytes[..]);
            }
            self.after_action(id);
        }
    }

    /// Cuts every link between the two groups (both directions).
    pub fn partition(&mut self, a: &[NodeId], b: &[NodeId]) {
        self.fault(
            None,
            Event::Partition {
                nodes: a.to_vec(),
                sides: vec![a.to_vec(), b.to_vec()],
                backend: String::new(),
            },
        );
        for &x in a {
            for &y in b {
                self.cut.insert((x, y));
                self.cut.insert((y, x));
            }
        }
    }

    /// Restores every link.
    pub fn heal(&mut self) {
        self.fault(
            None,
            Event::Heal {
                nodes: Vec::new(),
                links: Vec::new(),
                backend: String::new(),
            },
        );
        self.cut.clear();
    }

    #[cfg(test)]
    /// Delivers raw datagram `bytes` to `to` now, as if sent from `from`'s address (a forged or
    /// corrupt datagram, for tests of what a node does with one).
    pub(crate) fn inject(&mut self, from: NodeId, to: NodeId, bytes: &[u8]) {
        self.deliver_now(from, to, bytes);
    }

    #[cfg(test)]
    /// Whether node `id` is up (neither crashed nor paused).
    pub(crate) fn is_up(&self, id: NodeId) -> bool {
        self.nodes.get(&id).is_some_and(|n| matches!(n.state, State::Up))
    }

    #[cfg(test)]
    /// Changes the network's behaviour from now on.
    pub(crate) fn set_net(&mut self, net: NetConfig) {
        self.net = net;
    }

    /// Runs one queued item; false when nothing is left.
    pub fn step(&mut self) -> bool {
        let Some(Reverse((at, seq))) = self.queue.pop() else {
            return false;
        };
        self.now = self.now.max(at);
        match self.items.remove(&seq) {
            Some(Item::Deliver { from, to, bytes }) => self.deliver_now(from, to, &bytes),
            Some(Item::Wake { node, epoch }) => self.wake(node, epoch),
            None => {}
        }
        true
    }

    /// Runs until `pred` holds (true) or simulated time passes `limit` or nothing is left (false).
    pub fn run_until(&mut self, limit: Duration, mut pred: impl FnMut(&Self) -> bool) -> bool {
        loop {
            if pred(self) {
                return true;
            }
            match self.queue.peek() {
                Some(Reverse((at, _))) if *at <= limit => {
                    self.step();
                }
                _ => {
                    self.now = self.now.max(limit);
                    return pred(self);
                }
            }
        }
    }

    #[cfg(test)]
    /// Runs for `d` of simulated time.
    pub(crate) fn run_for(&mut self, d: Duration) {
        let limit = self.now + d;
        self.run_until(limit, |_| false);
    }

    /// How many messages of type `name` were sent so far.
    pub fn sent(&self, name: &str) -> usize {
        self.trace
            .iter()
            .filter(|r| matches!(&r.event, Event::Send { msg, .. } if msg == name))
            .count()
    }

    /// The events of kind `kind`, with their node.
    pub fn events(&self, kind: &str) -> Vec<&Record> {
        self.trace.iter().filter(|r| r.event.kind() == kind).collect()
    }

    fn wall(&self) -> Now {
        Now {
            mono: self.now,
            wall_us: self.now.as_micros() as u64,
        }
    }

    fn boot(&mut self, id: NodeId, epoch: u64) {
        let mut setup = self.setups[&id].clone();
        setup.restarted = epoch > 0;
        setup.boot = self.now.as_micros() as u64;
        if let Some(file) = self.stores.get(&id) {
            match crate::engine::durable::open(file) {
                Ok(payload) => setup.durable = Some(payload),
                Err(why) => {
                    setup.restarted = true;
                    setup.durable_refused = Some(format!("sim store of node {id}: {why}"));
                }
            }
        }
        // Each boot of a node gets a later boot id, as a real restart's start time is later.
        let host = Host::with_key(&setup, (self.factory)(&setup), &Key::simulated(), epoch);
        self.nodes.insert(
            id,
            SimNode {
                host,
                state: State::Up,
                epoch,
                wakes: BTreeSet::new(),
            },
        );
        let start = Event::Start {
            addr: format!("sim:{id}"),
            algo: "sim".into(),
            pid: 0,
            peers: setup.neighbours.clone(),
        };
        let now = self.wall();
        self.nodes.get_mut(&id).unwrap().host.start(now, start);
        self.after_action(id);
    }

    fn deliver_now(&mut self, from: NodeId, to: NodeId, bytes: &[u8]) {
        let now = self.wall();
        let Some(n) = self.nodes.get_mut(&to) else {
            return;
        };
        match &mut n.state {
            State::Crashed => return,
            State::Paused(q) => {
                q.push((from, bytes.to_vec()));
                return;
            }
            State::Up => n.host.deliver(now, Some(from), bytes, format_args!("sim:{from}")),
        }
        self.after_action(to);
    }

    fn wake(&mut self, id: NodeId, epoch: u64) {
        let now = self.wall();
        let Some(n) = self.nodes.get_mut(&id) else {
            return;
        };
        n.wakes.remove(&self.now);
        if n.epoch != epoch || !matches!(n.state, State::Up) {
            return;
        }
        n.host.fire_timers(now);
        self.after_action(id);
    }

    fn push(&mut self, at: Duration, item: Item) {
        self.seq += 1;
        self.items.insert(self.seq, item);
        self.queue.push(Reverse((at, self.seq)));
    }

    /// Moves a host's output into the network and the trace, and schedules its next wakeup.
    fn after_action(&mut self, id: NodeId) {
        let n = self.nodes.get_mut(&id).unwrap();
        if let Some(bytes) = n.host.take_persisted() {
            self.stores.insert(id, crate::engine::durable::seal(&bytes));
        }
        self.trace.extend(n.host.take_records());
        let out: Vec<_> = n.host.take_outbox().collect();
        let epoch = n.epoch;
        let deadline = n
            .host
            .next_deadline()
            .map(|d| d.max(self.now))
            .filter(|d| n.wakes.insert(*d));
        for o in out {
            if self.cut.contains(&(id, o.to)) || self.rng.chance(self.net.drop) {
                continue;
            }
            let copies = if self.rng.chance(self.net.duplicate) { 2 } else { 1 };
            for _ in 0..copies {
                let lo = self.net.min_delay.as_micros() as u64;
                let hi = self.net.max_delay.as_micros() as u64;
                let at = self.now + Duration::from_micros(self.rng.range(lo, hi + 1));
                self.push(
                    at,
                    Item::Deliver {
                        from: id,
                        to: o.to,
                        bytes: o.bytes.clone(),
                    },
                );
            }
        }
        if let Some(d) = deadline {
            self.push(d, Item::Wake { node: id, epoch });
        }
    }
}

/// Setups for a ring: `ids` in ring order (messages flow from each to the next), every member
/// known to all, the given initiators.
pub fn ring(ids: &[NodeId], initiators: &[NodeId]) -> Vec<Setup> {
    ids.iter()
        .enumerate()
        .map(|(i, &me)| {
            let n = ids.len();
            let mut s = Setup::new(me, ids.to_vec(), vec![ids[(i + n - 1) % n], ids[(i + 1) % n]]);
            s.initiator = initiators.contains(&me);
            s
        })
        .collect()
}
