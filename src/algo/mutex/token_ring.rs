//! The token ring: one token circulates round the participants in ring order; a node that
//! wants the section waits for the token and uses it as it passes.
//!
//! Rules (each node remembers the highest generation it has seen, and -- on stable storage --
//! the highest round it ever minted):
//! - start: the first node of the ring, on its first boot, mints the token of generation
//!   (1, itself). A node that restarts never mints at start: it may have minted before, and a
//!   second token of the same generation would pass every staleness check. It waits for the
//!   token like any other node, and regenerates it when lost.
//! - minting (at start or on regeneration): persist the round (stored before the token
//!   leaves or is used), so that no node ever mints the same generation twice, across restarts.
//! - on TOKEN(gen, seq, idle): a generation older than the highest seen is a stale token (a
//!   resumed old holder's, or a lost one's copy): dropped and counted. Otherwise: if this node
//!   waits, it enters with fencing token (gen, seq+1); else it passes the token on.
//! - release: pass the token to the successor.
//! - a token that went a whole lap without an entry is passed after a 1 ms pause, so that an
//!   idle ring does not spin.
//! - on TOKEN whose (generation, pass number) is not newer than the last received: a
//!   duplicated datagram, dropped (else the ring would carry two tokens).
//! - lost token: a node that has not seen the token within the lost-token timeout (the
//!   failure-detector timeout, plus a lap of hold times and pauses) regenerates it with the
//!   generation (max(highest round seen, highest round it minted) + 1, itself), higher than
//!   every generation it has seen or made, and
//!   tells every participant (REGENERATED), so that their timers restart; two
//!   nodes regenerating at once make two generations, and the lower is dropped at the first
//!   node that saw the higher. A holder that was only paused may still be inside when the
//!   new token is used: the timeout cannot tell slow from dead, and fencing catches it.
//! - a node whose stored round was refused (its state file did not verify: what it minted is
//!   unknown) never regenerates before it has learned a generation from the ring (a TOKEN or
//!   a REGENERATED), and then mints above it: minting from round 0 could repeat a generation
//!   it made before.
//!
//! - with `--set detector=fixed|phi|swim` (the family's detector,
//!   [`peer_watch`](super::peer_watch)): the token goes to the first node after this one in
//!   ring order that the detector does not take for dead, so a dead node costs lost tokens
//!   until the detector's verdict, not one every lap for ever. A node skipped while only paused gets its turn again once
//!   the detector hears from it; with every other node taken for dead, the holder keeps the
//!   token and tries again a timeout later. Without the key there is no detector and no
//!   detector traffic.
//!
//! Messages: one TOKEN per pass; per entry, n passes in a lap divided by the entries in it
//! (1 under full contention).

use super::options::Workload;
use super::peer_watch::{self, PeerWatch};
use super::wrapper::{Ask, MutexCx, Protocol};
use crate::algo::detector::{LiveMsg, LiveTimer};
use crate::algo::{Context, Message, NodeId, Setup};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What a token-ring node keeps on stable storage: the highest round it minted.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub(crate) struct Minted {
    /// That round (0: never minted).
    pub round: u64,
}

/// A generation: (round, the node that created it), compared in that order.
pub(crate) type Gen = (u64, NodeId);

/// The news that a node regenerated a lost token: the generation to accept from now on (sent
/// by both token algorithms, token-ring and Suzuki-Kasami).
#[derive(Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Regenerated {
    /// The new generation.
    pub gen: Gen,
}

// Written as the fields of the variant it travels in, so that traces read `REGENERATED(gen=..)`.
impl std::fmt::Debug for Regenerated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "gen={:?}", self.gen)
    }
}

impl Regenerated {
    /// Raises `highest` to this generation; false when it is not newer (nothing changes).
    pub(crate) fn raise(&self, highest: &mut Gen) -> bool {
        if self.gen <= *highest {
            return false;
        }
        *highest = self.gen;
        true
    }
}

/// Drops a token of a generation older than `highest` (a stale token, still circulating after
/// a regeneration), naming why; true when it did. Both token algorithms drop them alike.
pub(crate) fn drop_stale<M, T, R, V>(cx: &mut Context<'_, M, T, R, V>, from: NodeId, gen: Gen, highest: Gen) -> bool {
    if gen >= highest {
        return false;
    }
    cx.discard(
        from,
        format!("a token of an old generation {gen:?} (newest seen {highest:?}): stale, dropped"),
    );
    true
}

/// Token-ring messages.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum TokenMsg {
    /// The token.
    Token {
        /// Its generation.
        gen: Gen,
        /// Entries made with it.
        seq: u64,
        /// Passes since the last entry.
        idle: u64,
        /// Passes since it was created: a copy not newer than one already seen is a duplicate.
        hops: u64,
    },
    /// A node regenerated the token.
    Regenerated(Regenerated),
    /// The failure detector's (with `--set detector`).
    Live(LiveMsg),
}

impl Message for TokenMsg {
    fn name(&self) -> &'static str {
        match self {
            TokenMsg::Token { .. } => "TOKEN",
            TokenMsg::Regenerated(_) => "REGENERATED",
            TokenMsg::Live(m) => m.name(),
        }
    }
}

/// Token-ring timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum TokenTimer {
    /// Pass the idle token on.
    Pass,
    /// No token seen for too long.
    Lost,
    /// The failure detector's (with `--set detector`).
    Live(LiveTimer),
}

crate::algo::compose::slot! {
    /// The detector's slot in the token ring's messages and timers.
    pub(super) struct TokenLive;
    impl for TokenMsg, TokenTimer: LiveMsg => TokenMsg::Live, LiveTimer => TokenTimer::Live
}

/// The fencing token of entry `seq` of generation `gen`: ordered like (round, creator, seq).
pub fn fencing(gen: Gen, seq: u64) -> u64 {
    (gen.0 << 40) | ((gen.1 & 0xffff) << 24) | (seq & 0xff_ffff)
}

/// One node's token-ring state.
#[derive(Debug, Clone)]
pub(crate) struct TokenRing {
    /// The participants in ring order, and this node's place among them.
    ring: Vec<NodeId>,
    at: usize,
    first: bool,
    lost_after: Duration,
    wants: bool,
    highest: Gen,
    /// The token while this node has it: (gen, seq, idle).
    token: Option<(Gen, u64, u64)>,
    /// The newest (generation, hops) received: older copies are duplicates.
    newest: (Gen, u64),
    /// The highest round this node ever minted, read back from stable storage after a restart.
    minted: u64,
    /// Whether the launcher restarted this node (it may have minted even if nothing was kept).
    restarted: bool,
    /// Its stored round was refused: it may not mint before it has learned a generation.
    amnesiac: bool,
    /// Tokens regenerated by this node.
    pub regenerated: u64,
    /// The failure detector, when `--set detector` asks for one.
    watch: Option<Box<PeerWatch<TokenLive>>>,
    /// The nodes the last pass skipped as dead (told in the log when it changes).
    skipped: Vec<NodeId>,
    /// How long a holder whose every peer is taken for dead waits before trying again.
    retry: Duration,
}

impl TokenRing {
    /// Whether this node has the token now.
    #[cfg(test)]
    pub(crate) fn has_token(&self) -> bool {
        self.token.is_some()
    }
    /// The highest generation seen.
    #[cfg(test)]
    pub(crate) fn generation(&self) -> Gen {
        self.highest
    }

    /// The detector (tests read its opinions).
    #[cfg(test)]
    pub(super) fn watch(&self) -> Option<&PeerWatch<TokenLive>> {
        self.watch.as_deref()
    }

    /// The node the token goes to next: the successor in ring order, past every node the
    /// detector takes for dead (this node itself when it takes every other for dead).
    fn successor(&self) -> NodeId {
        let n = self.ring.len();
        match &self.watch {
            None => self.ring[(self.at + 1) % n],
            Some(w) => (1..n)
                .map(|k| self.ring[(self.at + k) % n])
                .find(|&p| !w.takes_for_dead(p))
                .unwrap_or(self.ring[self.at]),
        }
    }

    fn take(&mut self, cx: &mut MutexCx<'_, Self>, gen: Gen, seq: u64, idle: u64, hops: u64) {
        self.highest = gen;
        self.newest = (gen, hops);
        cx.set_timer(TokenTimer::Lost, self.lost_after);
        if self.wants {
            self.wants = false;
            self.token = Some((gen, seq + 1, 0));
            cx.ask(Ask::Enter(Some(fencing(gen, seq + 1))));
        } else {
            self.token = Some((gen, seq, idle + 1));
            let lap = cx.view().peers.len() as u64;
            if idle + 1 >= lap {
                cx.set_timer(TokenTimer::Pass, Duration::from_millis(1));
            } else {
                self.pass(cx);
            }
        }
    }

    /// Makes a new token of a round above every round seen or minted here, remembered on stable
    /// storage before it is passed or used.
    fn mint(&mut self, cx: &mut MutexCx<'_, Self>) -> Gen {
        let gen = (self.highest.0.max(self.minted) + 1, cx.me);
        self.minted = gen.0;
        cx.persist(serde_json::to_vec(&Minted { round: gen.0 }).unwrap_or_default());
        cx.state_change(format!("minted the token of generation {gen:?}"));
        gen
    }

    fn pass(&mut self, cx: &mut MutexCx<'_, Self>) {
        let Some((gen, seq, idle)) = self.token else { return };
        let to = self.successor();
        self.tell_skips(cx, to);
        if to == cx.me {
            cx.set_timer(TokenTimer::Pass, self.retry);
            return;
        }
        self.token = None;
        let hops = self.newest.1 + 1;
        cx.send(to, TokenMsg::Token { gen, seq, idle, hops });
    }

    /// Logs which nodes a pass to `to` skips as dead, when that changed since the last pass.
    fn tell_skips(&mut self, cx: &mut MutexCx<'_, Self>, to: NodeId) {
        let Some(w) = &self.watch else { return };
        let n = self.ring.len();
        let skipped: Vec<NodeId> = (1..n)
            .map(|k| self.ring[(self.at + k) % n])
            .take_while(|&p| p != to)
            .collect();
        if skipped == self.skipped {
            return;
        }
        let text = if skipped.is_empty() {
            format!(
                "the token goes to {to} again: detector={} takes it for alive",
                w.detector()
            )
        } else if to == cx.me {
            format!(
                "detector={} takes every other node for dead ({skipped:?}): keeping the token",
                w.detector()
            )
        } else {
            format!(
                "detector={} takes {skipped:?} for dead: the token skips to {to}",
                w.detector()
            )
        };
        cx.state_change(text);
        self.skipped = skipped;
    }
}

/// What `setup` says this node minted before it restarted (nothing on a first boot).
fn minted(setup: &Setup) -> Minted {
    setup
        .durable
        .as_ref()
        .and_then(|b| serde_json::from_slice(b).ok())
        .unwrap_or_default()
}

impl Protocol for TokenRing {
    type Msg = TokenMsg;
    type Timer = TokenTimer;

    fn new(setup: &Setup, peers: &[NodeId]) -> Self {
        let i = peers.iter().position(|&p| p == setup.me).unwrap_or(0);
        let work = Workload::parse(setup).unwrap_or_default();
        let lap = peers.len() as u32;
        TokenRing {
            ring: peers.to_vec(),
            at: i,
            first: i == 0,
            // Staggered by ring position, so that one node regenerates and tells the rest before
            // the next one's timer fires.
            lost_after: setup.timeout * 2
                + (work.hold + Duration::from_millis(2)) * lap
                + setup.timeout * i as u32 / lap,
            wants: false,
            highest: (0, 0),
            token: None,
            newest: ((0, 0), 0),
            minted: minted(setup).round,
            restarted: setup.restarted,
            amnesiac: setup.durable_refused.is_some(),
            regenerated: 0,
            watch: peer_watch::wanted(setup).then(|| Box::new(PeerWatch::new(setup, peers))),
            skipped: Vec::new(),
            retry: setup.timeout,
        }
    }

    fn check(setup: &Setup) -> Result<(), String> {
        peer_watch::check_keys(setup, "token-ring").map(|_| ())
    }

    fn start(&mut self, cx: &mut MutexCx<'_, Self>) {
        if let Some(w) = &mut self.watch {
            w.start(cx);
        }
        if self.first && self.minted == 0 && !self.restarted {
            let gen = self.mint(cx);
            self.take(cx, gen, 0, 0, 0);
        } else {
            cx.set_timer(TokenTimer::Lost, self.lost_after);
        }
    }

    fn request(&mut self, cx: &mut MutexCx<'_, Self>, _req: u64) {
        peer_watch::handle(self, cx, |me, cx| me.on_request(cx));
    }

    fn release(&mut self, cx: &mut MutexCx<'_, Self>, _req: u64) {
        peer_watch::handle(self, cx, |me, cx| me.pass(cx));
    }

    fn on_msg(&mut self, cx: &mut MutexCx<'_, Self>, from: NodeId, msg: TokenMsg) {
        peer_watch::handle(self, cx, |me, cx| me.on_message(cx, from, msg));
    }

    fn on_timer(&mut self, cx: &mut MutexCx<'_, Self>, t: TokenTimer) {
        match t {
            TokenTimer::Live(t) => peer_watch::on_timer(self, cx, t),
            t => peer_watch::handle(self, cx, |me, cx| me.on_expiry(cx, t)),
        }
    }
}

impl peer_watch::Hosted for TokenRing {
    type Slot = TokenLive;

    fn watch_mut(&mut self) -> &mut Option<Box<PeerWatch<TokenLive>>> {
        &mut self.watch
    }

    /// The successor the token would go to.
    fn waits_on(&self, _cx: &MutexCx<'_, Self>) -> Vec<NodeId> {
        vec![self.successor()]
    }

    /// Nothing: a verdict is read at the next pass.
    fn settle(&mut self, _cx: &mut MutexCx<'_, Self>) {}
}

/// The handlers, each run inside [`peer_watch::handle`].
impl TokenRing {
    fn on_request(&mut self, cx: &mut MutexCx<'_, Self>) {
        match self.token {
            // The idle token is here, waiting out its pause: use it now.
            Some((gen, seq, _)) => {
                cx.cancel_timer(TokenTimer::Pass);
                self.token = Some((gen, seq + 1, 0));
                cx.ask(Ask::Enter(Some(fencing(gen, seq + 1))));
            }
            None => self.wants = true,
        }
    }

    fn on_message(&mut self, cx: &mut MutexCx<'_, Self>, from: NodeId, msg: TokenMsg) {
        if let Some(w) = &mut self.watch {
            // Any message is a sign of life; the detector's own are its business alone.
            let live = match &msg {
                TokenMsg::Live(m) => Some(m),
                _ => None,
            };
            w.on_msg(cx, from, live);
        }
        let (gen, seq, idle, hops) = match msg {
            TokenMsg::Token { gen, seq, idle, hops } => (gen, seq, idle, hops),
            TokenMsg::Regenerated(r) => {
                if r.raise(&mut self.highest) {
                    cx.set_timer(TokenTimer::Lost, self.lost_after);
                }
                return;
            }
            TokenMsg::Live(m) => {
                if self.watch.is_none() {
                    cx.discard(
                        from,
                        format!("{}: this run of token-ring hosts no failure detector", m.name()),
                    );
                }
                return;
            }
        };
        if drop_stale(cx, from, gen, self.highest) {
            return;
        }
        if gen == self.newest.0 && hops <= self.newest.1 {
            return cx.discard(
                from,
                format!("a copy of the token (generation {gen:?}, pass {hops}) already seen"),
            );
        }
        if let Some((held, _, _)) = self.token {
            // Two tokens here: keep the newer generation's (equal: a duplicated datagram).
            if gen <= held {
                return cx.discard(from, format!("a second token of generation {gen:?} while holding one"));
            }
            cx.cancel_timer(TokenTimer::Pass);
            self.token = None;
        }
        self.take(cx, gen, seq, idle, hops);
    }

    fn on_expiry(&mut self, cx: &mut MutexCx<'_, Self>, t: TokenTimer) {
        match t {
            // Run by `peer_watch::on_timer`.
            TokenTimer::Live(_) => {}
            TokenTimer::Pass => self.pass(cx),
            TokenTimer::Lost if self.token.is_some() => cx.set_timer(TokenTimer::Lost, self.lost_after),
            TokenTimer::Lost if self.amnesiac && self.highest == (0, 0) => {
                cx.state_change(
                    "no token seen, but not regenerating: this node's stored round was refused, so it does not know which generations it minted; waiting to learn one from the ring",
                );
                cx.set_timer(TokenTimer::Lost, self.lost_after);
            }
            TokenTimer::Lost => {
                self.regenerated += 1;
                let gen = self.mint(cx);
                log::warn!("no token for {:?}: regenerated it, generation {gen:?}", self.lost_after);
                cx.send_others(TokenMsg::Regenerated(Regenerated { gen }));
                self.take(cx, gen, 0, 0, 0);
            }
        }
    }
}
