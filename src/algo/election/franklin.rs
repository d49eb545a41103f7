//! Franklin's election on a bidirectional ring (Franklin 1982): in rounds, every node still
//! active compares its id with the nearest active node on each side; the largest id wins.
//!
//! Rules (each node: Idle, Active(round r), Passive or Won; every message carries its round):
//! - start, or the first election message of a term at an idle node: Active(1); send
//!   ELECTION(1, me) both ways.
//! - on ELECTION(r, j) or VOID(r) at a passive node: pass it on, unchanged, away from where it
//!   came from (also after the winner is known: the last round's messages finish their trip).
//! - at an active node in round r: keep what arrives until the round-r message from both sides
//!   is in (later rounds wait their turn). ELECTION(r, me) from either side: my id went all
//!   round, so no other node is active: I win. Otherwise, with q the largest id of the two (a
//!   VOID counts as none): both VOID: I win; me > q: Active(r + 1), send ELECTION(r + 1, me)
//!   both ways; me < q: Passive, and pass on whatever of later rounds already came.
//! - win: send LEADER(me) both ways. On LEADER(l), the first time: l leads; pass it on away
//!   from where it came from.
//!
//! Messages: every link carries one round-r message each way per round, so 2n per round; at
//! most half the active nodes survive a round (two neighbouring active nodes cannot both be
//! larger than each other), so at most floor(log2 n) + 1 rounds including the last, when the
//! winner's id goes all round both ways: at most 2n(floor(log2 n) + 1) ELECTION messages.
//! Then n + 1 LEADER messages (two from the winner, one from every other node).
//!
//! Dead neighbours ([`neighbours`](super::neighbours)): a neighbour dead before it sent
//! anything in this term breaks the ring into a line, and Franklin runs on the line. A message
//! that should go to a dead (or missing) neighbour comes back as VOID(r), "no active node that
//! way in round r", to be passed back to whoever sent it; a VOID that should go to a dead
//! neighbour stops (nobody there waits for it). Rounds sent towards a neighbour when it is
//! declared dead are answered with VOID the same way. Every link of the line still carries one
//! round-r message each way, so the node whose id is larger than every active node of the line
//! wins with VOID on both sides. After the leader crashes, the new term's election therefore
//! succeeds once the crashed node's two neighbours have declared it dead (two timeouts). A
//! neighbour that dies after it sent something may have knocked out other nodes in a round
//! it then cannot finish: its neighbour that finds out starts a new term, so the winner is
//! always the largest live id. Two dead nodes that are not neighbours split the ring: each
//! piece elects its own leader (only a majority rule can prevent that).
//! Terms, heartbeats and re-election come from [`Leadership`](super::Leadership).

use super::neighbours::{Neighbours, Waits};
use super::{Ask, Election, ElectionCx};
use crate::algo::{Message, NodeId, Setup};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// A side of the ring, as this node sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub(crate) enum Side {
    /// The first neighbour.
    Left,
    /// The second neighbour.
    Right,
}

impl Side {
    fn other(self) -> Side {
        match self {
            Side::Left => Side::Right,
            Side::Right => Side::Left,
        }
    }
    fn ix(self) -> usize {
        self as usize
    }
}

const SIDES: [Side; 2] = [Side::Left, Side::Right];

/// Franklin messages. `side` is the sender's side it left by: in a ring of two nodes both
/// neighbours are the same node, and only this tells the two links apart.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum FrMsg {
    /// An active node's id, in round `round`.
    Election {
        /// The round of the node whose id this is.
        round: u64,
        /// That node's id.
        id: NodeId,
        /// The sender's side it left by.
        side: Side,
    },
    /// No active node that way in round `round` (the line ends at a dead node).
    Void {
        /// The round.
        round: u64,
        /// The sender's side it left by.
        side: Side,
    },
    /// The winner.
    Leader {
        /// Who won.
        leader: NodeId,
        /// The sender's side it left by.
        side: Side,
    },
}

impl Message for FrMsg {
    fn name(&self) -> &'static str {
        match self {
            FrMsg::Election { .. } => "ELECTION",
            FrMsg::Void { .. } => "VOID",
            FrMsg::Leader { .. } => "LEADER",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Idle,
    Active(u64),
    Passive,
    Won,
}

/// A round message that reached this node: from which side, of which round, whose id (None: VOID).
type Arrival = (Side, u64, Option<NodeId>);

/// One node's Franklin state.
#[derive(Debug, Clone)]
pub(crate) struct Franklin {
    me: NodeId,
    /// The neighbour on each side (None: this node ends a line there).
    sides: [Option<NodeId>; 2],
    state: State,
    /// Round messages kept by an active node until their round.
    inbox: BTreeMap<(u64, Side), Option<NodeId>>,
    /// Per side: rounds sent that way whose round-r message from that side has not come yet.
    unanswered: [BTreeSet<u64>; 2],
    /// Per side: rounds that came from that side before this node sent that round that way.
    ahead: [BTreeSet<u64>; 2],
    /// Arrivals made up at this node (VOIDs from a dead side), handled in turn.
    local: VecDeque<Arrival>,
    nb: Neighbours,
}

impl Franklin {
    /// The side a message from `from` arrived on, given the side it left the sender by.
    fn arrival(&self, from: NodeId, left_by: Side) -> Option<Side> {
        match self.sides {
            [Some(l), Some(r)] if l == r && l == from => Some(left_by.other()),
            [Some(l), _] if l == from => Some(Side::Left),
            [_, Some(r)] if r == from => Some(Side::Right),
            _ => None,
        }
    }

    /// The live neighbour on `side`, if any.
    fn towards(&self, side: Side) -> Option<NodeId> {
        self.sides[side.ix()].filter(|&n| !self.nb.is_dead(n))
    }

    /// Sends round `round` towards `side` (an id, or VOID when `id` is None); at the end of the
    /// line an id comes back as VOID and a VOID stops.
    fn send_round(&mut self, cx: &mut ElectionCx<'_, Self>, side: Side, round: u64, id: Option<NodeId>) {
        let Some(to) = self.towards(side) else {
            if id.is_some() {
                self.local.push_back((side, round, None));
            }
            return;
        };
        if !self.ahead[side.ix()].remove(&round) {
            self.unanswered[side.ix()].insert(round);
        }
        let msg = match id {
            Some(id) => FrMsg::Election { round, id, side },
            None => FrMsg::Void { round, side },
        };
        cx.send(to, msg);
    }

    fn enter_round(&mut self, cx: &mut ElectionCx<'_, Self>, round: u64) {
        self.state = State::Active(round);
        let me = self.me;
        for side in SIDES {
            self.send_round(cx, side, round, Some(me));
        }
    }

    fn begin(&mut self, cx: &mut ElectionCx<'_, Self>) {
        if self.state == State::Idle {
            self.enter_round(cx, 1);
            self.pump(cx);
        }
    }

    /// Handles the arrivals made up at this node until none is left.
    fn pump(&mut self, cx: &mut ElectionCx<'_, Self>) {
        while let Some((side, round, id)) = self.local.pop_front() {
            self.arrive(cx, side, round, id);
        }
    }

    fn arrive(&mut self, cx: &mut ElectionCx<'_, Self>, side: Side, round: u64, id: Option<NodeId>) {
        match self.state {
            State::Passive => self.send_round(cx, side.other(), round, id),
            State::Active(_) if id == Some(self.me) => self.win(cx),
            State::Active(_) => {
                self.inbox.insert((round, side), id);
                self.compare(cx);
            }
            // The second copy of the winner's id, or leftovers of a round already decided.
            State::Won | State::Idle => {}
        }
    }

    /// Decides the current round as long as both of its messages are in.
    fn compare(&mut self, cx: &mut ElectionCx<'_, Self>) {
        while let State::Active(r) = self.state {
            let (Some(&a), Some(&b)) = (self.inbox.get(&(r, Side::Left)), self.inbox.get(&(r, Side::Right))) else {
                return;
            };
            self.inbox.remove(&(r, Side::Left));
            self.inbox.remove(&(r, Side::Right));
            let me = self.me;
            match a.max(b) {
                None => return self.win(cx),
                Some(q) if me > q => {
                    let seen = |x: Option<NodeId>| x.map_or("none".to_string(), |v| v.to_string());
                    let (a, b) = (seen(a), seen(b));
                    let next = r + 1;
                    cx.note(format!(
                        "round {r}: my id {me} beats both neighbours' ({a}, {b}): round {next}"
                    ));
                    self.enter_round(cx, r + 1)
                }
                Some(q) => {
                    cx.note(format!("round {r}: {q} > my id {me}: I turn passive and relay"));
                    self.state = State::Passive;
                    for ((round, side), id) in std::mem::take(&mut self.inbox) {
                        self.send_round(cx, side.other(), round, id);
                    }
                }
            }
        }
    }

    fn win(&mut self, cx: &mut ElectionCx<'_, Self>) {
        if !cx.view().may_claim() {
            return cx.ask(Ask::StartElection);
        }
        self.state = State::Won;
        self.inbox.clear();
        self.nb.announce();
        let me = self.me;
        cx.ask(Ask::Elected(me));
        for side in SIDES {
            if let Some(to) = self.towards(side) {
                cx.send(to, FrMsg::Leader { leader: me, side });
            }
        }
    }

    fn on_leader(&mut self, cx: &mut ElectionCx<'_, Self>, side: Side, leader: NodeId) {
        if !self.nb.announce() {
            return;
        }
        if let State::Active(_) = self.state {
            self.state = State::Passive;
            self.inbox.clear();
        }
        cx.ask(Ask::Elected(leader));
        let on = side.other();
        if let Some(to) = self.towards(on) {
            cx.send(to, FrMsg::Leader { leader, side: on });
        }
    }
}

impl Election for Franklin {
    type Msg = FrMsg;
    type Timer = ();

    fn new(setup: &Setup) -> Self {
        let nb = Neighbours::new(setup);
        let sides = match (nb.all(), setup.members.len()) {
            ([x], 2) => [Some(*x), Some(*x)],
            ([x], _) => [Some(*x), None],
            ([l, r, ..], _) => [Some(*l), Some(*r)],
            ([], _) => [None, None],
        };
        Franklin {
            me: setup.me,
            sides,
            state: State::Idle,
            inbox: BTreeMap::new(),
            unanswered: Default::default(),
            ahead: Default::default(),
            local: VecDeque::new(),
            nb,
        }
    }

    fn start(&mut self, cx: &mut ElectionCx<'_, Self>) {
        self.begin(cx);
    }

    fn on_msg(&mut self, cx: &mut ElectionCx<'_, Self>, from: NodeId, msg: FrMsg) {
        if !self.nb.receive(cx, from) {
            return;
        }
        let (round, id, left_by) = match msg {
            FrMsg::Election { round, id, side } => (round, Some(id), side),
            FrMsg::Void { round, side } => (round, None, side),
            FrMsg::Leader { leader, side } => {
                if let Some(s) = self.arrival(from, side) {
                    self.on_leader(cx, s, leader);
                }
                return;
            }
        };
        let Some(side) = self.arrival(from, left_by) else {
            return;
        };
        if self.state == State::Idle {
            if cx.refuse_if_decided(from) {
                return;
            }
            self.begin(cx);
        }
        if !self.unanswered[side.ix()].remove(&round) {
            self.ahead[side.ix()].insert(round);
        }
        self.local.push_back((side, round, id));
        self.pump(cx);
    }

    fn on_liveness(&mut self, cx: &mut ElectionCx<'_, Self>, from: NodeId, probe: bool) {
        if self.nb.liveness(from) && probe && cx.view().leader().is_none() {
            self.begin(cx);
        }
    }

    fn reset(&mut self) {
        self.state = State::Idle;
        self.inbox.clear();
        self.unanswered = Default::default();
        self.ahead = Default::default();
        self.local.clear();
        self.nb.reset();
    }

    fn awaited(&self) -> Vec<NodeId> {
        if self.state == State::Won {
            return Vec::new();
        }
        SIDES
            .into_iter()
            .filter(|s| !self.unanswered[s.ix()].is_empty())
            .filter_map(|s| self.towards(s))
            .collect()
    }

    fn awaited_silent(&mut self, cx: &mut ElectionCx<'_, Self>, nodes: Vec<NodeId>) {
        Neighbours::awaited_silent(self, cx, nodes);
    }
}

impl Waits for Franklin {
    fn neighbours(&mut self) -> &mut Neighbours {
        &mut self.nb
    }

    fn lost(&mut self, cx: &mut ElectionCx<'_, Self>, n: NodeId) {
        for side in SIDES {
            if self.sides[side.ix()] == Some(n) {
                for round in std::mem::take(&mut self.unanswered[side.ix()]) {
                    self.local.push_back((side, round, None));
                }
            }
        }
        self.pump(cx);
    }
}

#[cfg(test)]
#[path = "franklin_tests.rs"]
mod tests;
