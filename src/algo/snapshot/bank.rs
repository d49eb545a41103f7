//! `--algo bank`: every node holds an account and sends random transfers to its neighbours;
//! the total never changes, so a recorded global state is right only if it sums to it.
//!
//! Rules:
//! - every `transfer_ms` (random, at most twice that): pick a neighbour and an amount up to 50
//!   (not more than the balance); balance -= amount; send TRANSFER(id) to it, `id` this
//!   sender's next transfer number (kept on stable storage, so it only ever grows).
//! - on TRANSFER(id) delivered from j (in channel order): if id > applied[j]: balance += amount,
//!   applied[j] := id; otherwise it was applied before (sent again after a restart): ignored.
//! - channels: the shared reliable layer ([`crate::algo::reliable`]): numbered, acknowledged
//!   (ACK), sent again until they are, delivered once and in order. No money is lost in them.
//! - `--set snapshot=chandy-lamport` (Chandy & Lamport 1985): every `snapshot_ms` the initiator
//!   (the smallest id) records its balance, sends MARKER(k) on every outgoing channel and starts
//!   recording every incoming one. On the first MARKER(k) from j: record the balance, the
//!   channel from j is empty, send MARKER(k) on every channel, record the other incoming
//!   channels. On a later MARKER(k) from j: stop recording j's channel (its state: the transfers
//!   delivered on it since recording began). When every incoming channel has its marker, write
//!   the `snapshot` event. Markers ride the same FIFO channels as transfers, so no transfer
//!   sent before a marker is delivered after it.
//! - `--set snapshot=clock`: each node records its balance when its own clock reaches the next
//!   multiple of `snapshot_ms` (before doing anything else in that handler); afterwards, every
//!   transfer delivered that its sender sent before that time (by the sender's clock, carried
//!   in the transfer) is counted as in the channel; `settle_ms` later it writes the `snapshot`.
//!   Exact when clocks agree. With skewed clocks, a transfer sent after its sender recorded
//!   (by a clock ahead) that arrives before its receiver records (by a clock behind) is counted
//!   in the receiver's balance: the recorded state holds more money than there is.
//! - `--set snapshot=both` takes both on the same run (`--demo snapshot`).
//!
//! Crash and restart: a restart neither creates nor destroys money. Each node keeps on stable
//! storage, in one file written atomically, its balance, its next transfer id, applied[j] for
//! every sender, the transfers it sent that are not yet acknowledged, and the highest snapshot
//! it took part in. Every `flush_ms` (when something changed) it stores that state, and only
//! then lets out what it sent meanwhile: no transfer leaves before its debit is stored, and no
//! ACK before the credit it acknowledges is. A crash loses only what was never let out (the
//! debit and its transfer together; a credit whose ACK never left, so its sender sends the
//! transfer again). Storing at each flush rather than at each transfer keeps the stores (and
//! with `--set fsync=true` the fsyncs) to about 1000 / `flush_ms` per second.
//! - on restart with a stored state: take it back (`snapshot snap 0 method restored`), send
//!   again every transfer not acknowledged (its receiver ignores the ones it applied), say
//!   HELLO to every neighbour. Without a stored state (none, or one that did not verify) the
//!   account starts from `balance` again (`method initial`): money created or destroyed,
//!   which the checker counts.
//! - on learning that neighbour j came back as a new boot: every transfer it never
//!   acknowledged is sent again on the new channel (it will ignore those it applied); markers
//!   to its old boot are dropped, and every snapshot in progress here is abandoned (noted):
//!   the new boot knows nothing of it. The next snapshot completes.

use crate::algo::reliable::{Channels, Frame};
use crate::algo::{Algorithm, Cx, Event, NodeId, Setup};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

pub(crate) use super::bank_messages::{BankMsg, BankTimer, Item};
pub(crate) use super::bank_options::{BankKeys, BankOptions};

/// A Chandy-Lamport snapshot in progress at this node.
#[derive(Debug, Clone)]
struct Recording {
    balance: u64,
    open: BTreeSet<NodeId>,
    in_flight: u64,
}

/// A clock snapshot taken, waiting for transfers sent before it.
#[derive(Debug, Clone, Copy)]
struct Taken {
    at_us: u64,
    balance: u64,
    in_flight: u64,
}

/// What an account keeps on stable storage (one file, replaced atomically).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Stored {
    /// The balance.
    pub balance: u64,
    /// The last transfer id used.
    pub next_id: u64,
    /// Per sender, the highest transfer id applied.
    pub applied: BTreeMap<NodeId, u64>,
    /// Transfers sent and not known to be acknowledged, in sending order: (receiver, transfer).
    pub outbox: Vec<(NodeId, Item)>,
    /// The highest Chandy-Lamport snapshot taken part in.
    pub snap: u64,
}

impl Stored {
    /// The money in the transfers not yet acknowledged.
    pub(crate) fn outbox_money(&self) -> u64 {
        self.outbox.iter().map(|(_, i)| money(i)).sum()
    }
}

fn money(item: &Item) -> u64 {
    match item {
        Item::Transfer { amount, .. } => *amount,
        Item::Marker { .. } => 0,
    }
}

/// One account.
#[derive(Debug, Clone)]
pub(crate) struct Bank {
    opts: BankOptions,
    neighbours: Vec<NodeId>,
    initiator: bool,
    /// The balance now.
    pub balance: u64,
    channels: Channels<Item>,
    next_id: u64,
    applied: BTreeMap<NodeId, u64>,
    snap: u64,
    recording: BTreeMap<u64, Recording>,
    next_clock_us: u64,
    taken: BTreeMap<u64, Taken>,
    /// Frames that wait for the next store to be let out.
    held: Vec<(NodeId, Frame<Item>)>,
    /// The acknowledgement to send each sender at the next flush (the latest covers the rest).
    acks: BTreeMap<NodeId, Frame<Item>>,
    /// The stored state is behind the state in memory.
    dirty: bool,
    /// What the previous boot stored (taken back at start).
    restored: Option<Stored>,
    /// This node ran before in this run.
    restarted: bool,
}

impl Bank {
    /// An account set up as `setup` (options checked by [`BankOptions::from_setup`] first).
    pub fn new(setup: &Setup) -> Self {
        let opts = BankOptions::from_setup(setup).unwrap_or_else(|e| panic!("bank: {e}"));
        let restored: Option<Stored> = setup.durable.as_ref().and_then(|b| serde_json::from_slice(b).ok());
        Bank {
            balance: opts.balance,
            opts,
            neighbours: setup.neighbours.clone(),
            initiator: setup.members.iter().min() == Some(&setup.me),
            channels: Channels::default(),
            next_id: 0,
            applied: BTreeMap::new(),
            snap: 0,
            recording: BTreeMap::new(),
            next_clock_us: 0,
            taken: BTreeMap::new(),
            held: Vec::new(),
            acks: BTreeMap::new(),
            dirty: false,
            restored,
            restarted: setup.restarted || setup.durable.is_some(),
        }
    }

    /// The state as it would be stored now.
    pub fn stored(&self) -> Stored {
        Stored {
            balance: self.balance,
            next_id: self.next_id,
            applied: self.applied.clone(),
            outbox: self
                .channels
                .unacked()
                .filter(|(_, i)| matches!(i, Item::Transfer { .. }))
                .map(|(to, i)| (to, i.clone()))
                .collect(),
            snap: self.snap,
        }
    }

    /// Numbers `item` on the channel to `to`; it leaves at the next flush, after the store.
    fn send(&mut self, cx: &mut Cx<'_, Self>, to: NodeId, item: Item) {
        let frame = self.channels.send(to, item, cx.now);
        self.held.push((to, frame));
    }

    /// Stores the state if it changed, then lets out what waited for it and sends again what
    /// is unacknowledged (only after a store, so nothing unstored is ever sent again either).
    fn flush(&mut self, cx: &mut Cx<'_, Self>) {
        if self.dirty {
            cx.persist(serde_json::to_vec(&self.stored()).unwrap_or_default());
            self.dirty = false;
        }
        for (to, f) in std::mem::take(&mut self.held) {
            cx.send(to, BankMsg::Link(f));
        }
        for (to, f) in std::mem::take(&mut self.acks) {
            cx.send(to, BankMsg::Link(f));
        }
        for (to, f) in self.channels.due(cx.now, self.opts.retransmit) {
            cx.send(to, BankMsg::Link(f));
        }
    }

    fn every_us(&self) -> u64 {
        self.opts.every.as_micros() as u64
    }

    /// The clock snapshot comes first in any handler that runs at or after its time.
    fn clock_snapshot_due(&mut self, cx: &mut Cx<'_, Self>) {
        if !self.opts.methods.clock {
            return;
        }
        let every = self.every_us();
        if self.next_clock_us == 0 {
            self.next_clock_us = (cx.pt / every + 1) * every;
        }
        while cx.pt >= self.next_clock_us {
            let at = self.next_clock_us;
            self.taken.insert(
                at,
                Taken {
                    at_us: at,
                    balance: self.balance,
                    in_flight: 0,
                },
            );
            cx.set_timer(BankTimer::Settle(at / 1000), self.opts.settle);
            self.next_clock_us += every;
        }
        let wait = self.next_clock_us.saturating_sub(cx.pt);
        cx.set_timer(BankTimer::ClockSnap, Duration::from_micros(wait));
    }

    fn start_recording(&mut self, cx: &mut Cx<'_, Self>, snap: u64, except: Option<NodeId>) {
        // The snapshot number is stored before the markers leave: a restarted node must never
        // take part again in a snapshot its old boot began.
        self.dirty = true;
        let open = self.neighbours.iter().copied().filter(|&j| Some(j) != except).collect();
        self.recording.insert(
            snap,
            Recording {
                balance: self.balance,
                open,
                in_flight: 0,
            },
        );
        for j in self.neighbours.clone() {
            self.send(cx, j, Item::Marker { snap });
        }
        self.finish_if_closed(cx, snap);
    }

    fn finish_if_closed(&mut self, cx: &mut Cx<'_, Self>, snap: u64) {
        if self.recording.get(&snap).is_some_and(|r| r.open.is_empty()) {
            let r = self.recording.remove(&snap).expect("checked");
            cx.record(Event::Snapshot {
                snap,
                method: "chandy-lamport".into(),
                balance: r.balance,
                in_flight: r.in_flight,
            });
        }
    }

    fn deliver(&mut self, cx: &mut Cx<'_, Self>, from: NodeId, item: Item) {
        match item {
            Item::Transfer { id, amount, sent_pt } => {
                let applied = self.applied.entry(from).or_insert(0);
                if id <= *applied {
                    return cx.discard(
                        from,
                        format!("TRANSFER {id} of {amount} again: applied before (sent again after a restart)"),
                    );
                }
                *applied = id;
                self.dirty = true;
                self.balance += amount;
                for r in self.recording.values_mut().filter(|r| r.open.contains(&from)) {
                    r.in_flight += amount;
                }
                for t in self.taken.values_mut().filter(|t| sent_pt < t.at_us) {
                    t.in_flight += amount;
                }
            }
            Item::Marker { snap } => match self.recording.get_mut(&snap) {
                Some(r) => {
                    r.open.remove(&from);
                    self.finish_if_closed(cx, snap);
                }
                None if snap > self.snap => {
                    self.snap = snap;
                    self.start_recording(cx, snap, Some(from));
                }
                None => cx.discard(
                    from,
                    format!("marker of snapshot {snap}, already recorded or abandoned"),
                ),
            },
        }
    }
}

impl Algorithm for Bank {
    type Msg = BankMsg;
    type Timer = BankTimer;

    fn on_start(&mut self, cx: &mut Cx<'_, Self>) {
        self.channels.start(cx.pt);
        match self.restored.take() {
            Some(st) => {
                cx.record(Event::Snapshot {
                    snap: 0,
                    method: "restored".into(),
                    balance: st.balance,
                    in_flight: st.outbox_money(),
                });
                cx.state_change(format!(
                    "restarted with its stored state: balance {}, {} transfer(s) of {} not acknowledged, sent again",
                    st.balance,
                    st.outbox.len(),
                    st.outbox_money()
                ));
                self.balance = st.balance;
                self.next_id = st.next_id;
                self.applied = st.applied;
                self.snap = st.snap;
                for (to, item) in st.outbox {
                    if self.neighbours.contains(&to) {
                        self.send(cx, to, item);
                    }
                }
            }
            None => {
                cx.record(Event::Snapshot {
                    snap: 0,
                    method: "initial".into(),
                    balance: self.balance,
                    in_flight: 0,
                });
                if self.restarted {
                    cx.state_change(format!(
                        "restarted without a stored state (none, or one that did not verify): the starting balance {} again",
                        self.balance
                    ));
                }
                // Stored at once, so that a kill before the first transfer restores it too.
                self.dirty = true;
            }
        }
        if self.restarted {
            for &j in &self.neighbours {
                cx.send(j, BankMsg::Hello);
            }
        }
        cx.set_timer(BankTimer::Transfer, self.opts.transfer);
        cx.set_timer(BankTimer::Flush, self.opts.flush);
        if self.opts.methods.markers && self.initiator {
            cx.set_timer(BankTimer::Initiate, self.opts.every);
        }
        self.clock_snapshot_due(cx);
        self.flush(cx);
    }

    fn on_msg(&mut self, cx: &mut Cx<'_, Self>, from: NodeId, msg: BankMsg) {
        self.clock_snapshot_due(cx);
        if !self.neighbours.contains(&from) {
            return cx.discard(from, format!("node {from} is not a neighbour"));
        }
        match msg {
            BankMsg::Link(frame) => {
                let arrival = self.channels.arrive(from, frame, cx.now);
                if let Some(ack) = arrival.ack {
                    // Held to the next flush: it must not leave before the credit is stored.
                    self.acks.insert(from, ack);
                }
                if let Some(why) = arrival.ignored {
                    cx.discard(from, why);
                }
                for item in arrival.deliver {
                    self.deliver(cx, from, item);
                }
            }
            // Its work is done by `on_peer_restart`, which the host called before this.
            BankMsg::Hello => {}
        }
    }

    fn on_peer_restart(&mut self, cx: &mut Cx<'_, Self>, peer: NodeId) {
        if !self.neighbours.contains(&peer) {
            return;
        }
        self.held.retain(|(to, _)| *to != peer);
        self.acks.remove(&peer);
        let lost = self.channels.peer_restarted(peer);
        let transfers: Vec<Item> = lost
            .into_iter()
            .filter(|i| matches!(i, Item::Transfer { .. }))
            .collect();
        if !transfers.is_empty() {
            cx.note(format!(
                "node {peer} restarted: {} transfer(s) of {} it never acknowledged sent again (it ignores those it applied)",
                transfers.len(),
                transfers.iter().map(money).sum::<u64>()
            ));
        }
        for item in transfers {
            self.send(cx, peer, item);
        }
        for (snap, _) in std::mem::take(&mut self.recording) {
            cx.state_change(format!(
                "snapshot {snap} abandoned: node {peer} restarted in the middle of it"
            ));
        }
    }

    fn on_timer(&mut self, cx: &mut Cx<'_, Self>, timer: BankTimer) {
        self.clock_snapshot_due(cx);
        match timer {
            BankTimer::Transfer => {
                let mean = self.opts.transfer.as_micros() as u64;
                let next = Duration::from_micros(cx.rng.range(1, 2 * mean + 1));
                cx.set_timer(BankTimer::Transfer, next);
                if self.balance > 0 {
                    let to = self.neighbours[cx.rng.range(0, self.neighbours.len() as u64) as usize];
                    let amount = cx.rng.range(1, self.balance.min(50) + 1);
                    self.balance -= amount;
                    self.next_id += 1;
                    self.dirty = true;
                    let (id, sent_pt) = (self.next_id, cx.pt);
                    self.send(cx, to, Item::Transfer { id, amount, sent_pt });
                }
            }
            BankTimer::Flush => {
                cx.set_timer(BankTimer::Flush, self.opts.flush);
                self.flush(cx);
            }
            BankTimer::Initiate => {
                cx.set_timer(BankTimer::Initiate, self.opts.every);
                self.snap += 1;
                let snap = self.snap;
                self.start_recording(cx, snap, None);
            }
            BankTimer::ClockSnap => {}
            BankTimer::Settle(ms) => {
                if let Some(t) = self.taken.remove(&(ms * 1000)) {
                    cx.record(Event::Snapshot {
                        snap: ms,
                        method: "clock".into(),
                        balance: t.balance,
                        in_flight: t.in_flight,
                    });
                }
            }
        }
    }
}
