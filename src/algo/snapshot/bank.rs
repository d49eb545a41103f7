//! `--algo bank`: every node holds an account and sends random transfers to its neighbours;
//! the total never changes, so a recorded global state is right only if it sums to it.
//!
//! Rules:
//! - every `transfer_ms` (random, at most twice that): pick a neighbour and an amount up to 50
//!   (not more than the balance); balance -= amount; send TRANSFER on the FIFO channel to it.
//! - on TRANSFER delivered (in channel order): balance += amount. Every channel item is
//!   acknowledged (ACK) and sent again until it is (see [`super::fifo`]): no money is lost.
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

use super::fifo::Channels;
use crate::algo::{Algorithm, Cx, Event, Message, NodeId, Setup};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// What travels on a FIFO channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Item {
    /// Money.
    Transfer {
        /// How much.
        amount: u64,
        /// The sender's physical clock at the (first) send, microseconds.
        sent_pt: u64,
    },
    /// Chandy-Lamport's marker of snapshot `snap`.
    Marker {
        /// The snapshot.
        snap: u64,
    },
}

/// The bank's messages.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum BankMsg {
    /// Item number `ch` of the sender's channel to the receiver.
    Data {
        /// The channel sequence number.
        ch: u64,
        /// The item.
        item: Item,
    },
    /// Item number `ch` arrived.
    Ack {
        /// The channel sequence number.
        ch: u64,
    },
}

impl Message for BankMsg {
    fn name(&self) -> &'static str {
        match self {
            BankMsg::Data {
                item: Item::Transfer { .. },
                ..
            } => "TRANSFER",
            BankMsg::Data {
                item: Item::Marker { .. },
                ..
            } => "MARKER",
            BankMsg::Ack { .. } => "ACK",
        }
    }
}

/// The bank's timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BankTimer {
    /// Send a transfer.
    Transfer,
    /// Send unacknowledged items again.
    Retransmit,
    /// Start a Chandy-Lamport snapshot (initiator).
    Initiate,
    /// Check whether the clock reached the next recording time.
    ClockSnap,
    /// Write the clock snapshot taken at this time (ms).
    Settle(u64),
}

/// Which snapshots a bank takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Methods {
    /// Chandy-Lamport markers.
    pub markers: bool,
    /// Recording at a physical-clock time.
    pub clock: bool,
}

/// The bank's options, from `--set`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BankOptions {
    /// Starting balance of every account: `balance`, default 1000.
    pub balance: u64,
    /// Mean time between one node's transfers: `transfer_ms`, default 20.
    pub transfer: Duration,
    /// Retransmission period: `retransmit_ms`, default 100.
    pub retransmit: Duration,
    /// Snapshot period: `snapshot_ms`, default 1000.
    pub every: Duration,
    /// How long a clock snapshot waits for transfers in flight: `settle_ms`, default 500.
    pub settle: Duration,
    /// `snapshot=none|chandy-lamport|clock|both`, default none.
    pub methods: Methods,
}

impl BankOptions {
    /// The `--set` keys read here.
    pub const KEYS: &'static [&'static str] = &[
        "balance",
        "transfer_ms",
        "retransmit_ms",
        "snapshot_ms",
        "settle_ms",
        "snapshot",
    ];

    /// Reads and checks the options; the error names the bad value.
    pub fn from_setup(setup: &Setup) -> Result<Self, String> {
        let num = |k: &str, default: u64, min: u64| -> Result<u64, String> {
            match setup.opts.get(k) {
                None => Ok(default),
                Some(v) => match v.parse::<u64>() {
                    Ok(x) if x >= min && x <= 1_000_000_000 => Ok(x),
                    _ => Err(format!("--set {k}={v}: expected a whole number of at least {min}")),
                },
            }
        };
        let methods = match setup.opts.get("snapshot").map(String::as_str) {
            None | Some("none") => Methods {
                markers: false,
                clock: false,
            },
            Some("chandy-lamport") => Methods {
                markers: true,
                clock: false,
            },
            Some("clock") => Methods {
                markers: false,
                clock: true,
            },
            Some("both") => Methods {
                markers: true,
                clock: true,
            },
            Some(v) => {
                return Err(format!(
                    "--set snapshot={v}: expected none, chandy-lamport, clock or both"
                ))
            }
        };
        if setup.neighbours.is_empty() {
            return Err(format!("bank: node {} has no neighbour to send money to", setup.me));
        }
        Ok(BankOptions {
            balance: num("balance", 1000, 0)?,
            transfer: Duration::from_millis(num("transfer_ms", 20, 1)?),
            retransmit: Duration::from_millis(num("retransmit_ms", 100, 1)?),
            every: Duration::from_millis(num("snapshot_ms", 1000, 10)?),
            settle: Duration::from_millis(num("settle_ms", 500, 1)?),
            methods,
        })
    }
}

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

/// One account.
#[derive(Debug, Clone)]
pub struct Bank {
    opts: BankOptions,
    neighbours: Vec<NodeId>,
    initiator: bool,
    /// The balance now.
    pub balance: u64,
    channels: Channels<Item>,
    snap: u64,
    recording: BTreeMap<u64, Recording>,
    next_clock_us: u64,
    taken: BTreeMap<u64, Taken>,
}

impl Bank {
    /// An account set up as `setup` (options checked by [`BankOptions::from_setup`] first).
    pub fn new(setup: &Setup) -> Self {
        let opts = BankOptions::from_setup(setup).unwrap_or_else(|e| panic!("bank: {e}"));
        Bank {
            balance: opts.balance,
            opts,
            neighbours: setup.neighbours.clone(),
            initiator: setup.members.iter().min() == Some(&setup.me),
            channels: Channels::default(),
            snap: 0,
            recording: BTreeMap::new(),
            next_clock_us: 0,
            taken: BTreeMap::new(),
        }
    }

    /// Money sent and not yet acknowledged by its receiver.
    pub fn unacked_money(&self) -> u64 {
        self.channels
            .unacked()
            .iter()
            .map(|(_, _, i)| match i {
                Item::Transfer { amount, .. } => *amount,
                Item::Marker { .. } => 0,
            })
            .sum()
    }

    fn send(&mut self, cx: &mut Cx<'_, Self>, to: NodeId, item: Item) {
        let ch = self.channels.push(to, item.clone());
        cx.send(to, BankMsg::Data { ch, item });
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
            Item::Transfer { amount, sent_pt } => {
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
                None => cx.discard(from, format!("marker of snapshot {snap}, already recorded")),
            },
        }
    }
}

impl Algorithm for Bank {
    type Msg = BankMsg;
    type Timer = BankTimer;

    fn on_start(&mut self, cx: &mut Cx<'_, Self>) {
        cx.record(Event::Snapshot {
            snap: 0,
            method: "initial".into(),
            balance: self.balance,
            in_flight: 0,
        });
        cx.set_timer(BankTimer::Transfer, self.opts.transfer);
        cx.set_timer(BankTimer::Retransmit, self.opts.retransmit);
        if self.opts.methods.markers && self.initiator {
            cx.set_timer(BankTimer::Initiate, self.opts.every);
        }
        self.clock_snapshot_due(cx);
    }

    fn on_msg(&mut self, cx: &mut Cx<'_, Self>, from: NodeId, msg: BankMsg) {
        self.clock_snapshot_due(cx);
        match msg {
            BankMsg::Data { ch, item } => {
                cx.send(from, BankMsg::Ack { ch });
                for item in self.channels.arrive(from, ch, item) {
                    self.deliver(cx, from, item);
                }
            }
            BankMsg::Ack { ch } => self.channels.ack(from, ch),
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
                    let sent_pt = cx.pt;
                    self.send(cx, to, Item::Transfer { amount, sent_pt });
                }
            }
            BankTimer::Retransmit => {
                cx.set_timer(BankTimer::Retransmit, self.opts.retransmit);
                for (to, ch, item) in self.channels.unacked() {
                    cx.send(to, BankMsg::Data { ch, item });
                }
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
