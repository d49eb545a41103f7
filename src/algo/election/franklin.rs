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
pub enum Side {
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
pub enum FrMsg {
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
pub struct Franklin {
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
            if cx.view().leader().is_some() {
                cx.discard(
                    from,
                    format!("election of term {} is already decided", cx.view().term()),
                );
                cx.ask(Ask::TellDecided(from));
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

    fn waiting(&self) -> Vec<NodeId> {
        if self.state == State::Won {
            return Vec::new();
        }
        SIDES
            .into_iter()
            .filter(|s| !self.unanswered[s.ix()].is_empty())
            .filter_map(|s| self.towards(s))
            .collect()
    }

    fn silent(&mut self, cx: &mut ElectionCx<'_, Self>, nodes: Vec<NodeId>) {
        Neighbours::silent(self, cx, nodes);
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
mod tests {
    use super::super::testkit::{
        self, bidirectional_ring, elect, ids, net, one_leader_per_term, setups, shuffled, terms,
    };
    use super::Franklin;
    use crate::algo::election::Leadership;
    use crate::algo::NodeId;
    use crate::sim::Sim;
    use std::time::Duration;

    type Fr = Leadership<Franklin>;

    fn sim(ring: &[NodeId], initiators: &[NodeId], seed: u64, max_ms: u64) -> Sim<Fr> {
        testkit::sim::<Franklin>(
            net(seed, max_ms),
            setups(ring, &bidirectional_ring(ring), initiators, seed),
        )
    }

    fn bound(n: u64) -> u64 {
        2 * n * (n.ilog2() as u64 + 1)
    }

    /// Elects on `ring` with every node initiating; returns (leader, ELECTION, LEADER) counts.
    fn run(ring: &[NodeId], initiators: &[NodeId], seed: u64, max_ms: u64) -> (NodeId, usize, usize) {
        let mut s = sim(ring, initiators, seed, max_ms);
        let l = elect(&mut s, None);
        s.run_for(Duration::from_millis(50));
        assert_eq!(s.sent("VOID"), 0);
        assert_eq!(s.sent("PROBE"), 0);
        assert_eq!(terms(&s).len(), 1, "one election, in one term");
        (l, s.sent("ELECTION"), s.sent("LEADER"))
    }

    #[test]
    fn worked_examples_count_two_n_messages_per_round() {
        // [1,2,3]: round 1 leaves 3 (the only local maximum); round 2: 3's id goes all round.
        // [1,2,3,4]: likewise 4. [1,3,2,4]: round 1 leaves 3 and 4, round 2 leaves 4, round 3.
        // [1,8,2,7,3,6,4,5]: round 1 leaves 8,7,6,5; round 2 leaves 8; round 3.
        // [8,1,5,2,7,3,6,4]: round 1 leaves 8,5,7,6; round 2 leaves 8 and 7 (5 and 6 lie between
        // them); round 3 leaves 8; round 4: exactly the bound 2n(floor(log2 n) + 1) = 64.
        let cases: &[(&[NodeId], u64, usize)] = &[
            (&[1], 1, 0),
            (&[1, 2], 2, 2),
            (&[2, 1], 2, 2),
            (&[1, 2, 3], 3, 2),
            (&[3, 1, 2], 3, 2),
            (&[1, 2, 3, 4], 4, 2),
            (&[1, 3, 2, 4], 4, 3),
            (&[1, 8, 2, 7, 3, 6, 4, 5], 8, 3),
            (&[8, 1, 5, 2, 7, 3, 6, 4], 8, 4),
        ];
        for &(ring, leader, rounds) in cases {
            let n = ring.len();
            let (l, election, announce) = run(ring, ring, 1, 1);
            assert_eq!(l, leader, "{ring:?}");
            assert_eq!(election, 2 * n * rounds, "{ring:?}");
            assert_eq!(announce, if n == 1 { 0 } else { n + 1 }, "{ring:?}");
        }
        assert_eq!(bound(8), 64);
    }

    #[test]
    fn one_initiator_wakes_the_others_into_round_one() {
        // Every other node starts when the first message reaches it: the same rounds, the same count.
        let ring = [8, 1, 5, 2, 7, 3, 6, 4];
        assert_eq!(run(&ring, &[1], 1, 1), (8, 64, 9));
        assert_eq!(
            run(&ring, &[], 1, 1),
            (8, 64, 9),
            "nobody initiates: the first timeout starts it"
        );
    }

    #[test]
    fn bound_holds_across_many_arrangements_and_delays() {
        for seed in 0..120 {
            let n = 2 + seed % 40;
            let ring = shuffled(n, seed);
            let initiators: Vec<NodeId> = ring.iter().copied().filter(|&i| (i + seed) % 3 != 0).collect();
            let (l, election, announce) = run(&ring, &initiators, seed, 5);
            assert_eq!(l, n, "seed {seed}");
            assert_eq!(election as u64 % (2 * n), 0, "seed {seed}: 2n per round");
            assert!(election as u64 <= bound(n), "seed {seed}: {election} > {}", bound(n));
            assert_eq!(announce as u64, n + 1, "seed {seed}");
        }
    }

    #[test]
    fn leader_crash_re_elects_on_the_line_that_is_left() {
        for seed in 0..30 {
            let n = 3 + seed % 12;
            let ring = shuffled(n, seed);
            let mut s = sim(&ring, &ring, seed, 3);
            assert_eq!(elect(&mut s, None), n);
            s.run_for(Duration::from_millis(250));
            s.crash(n);
            assert_eq!(elect(&mut s, Some(n)), n - 1, "seed {seed}");
            // Its two neighbours found out it is dead, and the line answered with VOIDs.
            assert!(s.sent("VOID") > 0, "seed {seed}");
            assert!(s
                .events("suspect")
                .iter()
                .any(|r| matches!(r.event, crate::trace::Event::Suspect { target, .. } if target == n)));
            one_leader_per_term(&s);
            // Again, when the two dead nodes were neighbours: the line of n - 2 nodes elects too.
            let at = |x| ring.iter().position(|&y| y == x).unwrap();
            let (i, j) = (at(n), at(n - 1));
            if n > 3 && ((i + 1) % ring.len() == j || (j + 1) % ring.len() == i) {
                s.run_for(Duration::from_millis(250));
                s.crash(n - 1);
                assert_eq!(elect(&mut s, Some(n - 1)), n - 2, "seed {seed}");
                one_leader_per_term(&s);
            }
        }
    }

    #[test]
    fn crash_mid_election_still_ends_with_the_largest_live_id() {
        for seed in 0..150 {
            let n = 4 + seed % 10;
            let ring = shuffled(n, seed);
            let mut s = sim(&ring, &ring, seed, 5);
            s.run_for(Duration::from_millis(1 + seed % 6));
            let victim = 1 + seed % n;
            s.crash(victim);
            let expect = if victim == n { n - 1 } else { n };
            let l = elect(&mut s, None);
            // A leader chosen before the crash may be the crashed node only for a moment.
            let l = if l == victim { elect(&mut s, Some(victim)) } else { l };
            assert_eq!(l, expect, "seed {seed}, crashed {victim}");
            one_leader_per_term(&s);
        }
    }

    #[test]
    fn paused_leader_wakes_up_and_follows_the_new_one() {
        let ring = shuffled(7, 4);
        testkit::pause_and_resume(&mut sim(&ring, &ring, 4, 2), 7, 6);
    }

    #[test]
    fn restarted_node_rejoins_without_disturbing_the_leader() {
        let ring = shuffled(6, 9);
        let mut s = sim(&ring, &ring, 9, 2);
        assert_eq!(elect(&mut s, None), 6);
        s.crash(2);
        s.run_for(Duration::from_secs(1));
        s.restart(2);
        s.run_for(Duration::from_secs(2));
        let b = s.node(2).belief();
        assert_eq!(b.1, Some(6));
        assert!(s.ids().iter().all(|&i| s.node(i).belief() == b));
    }

    #[test]
    fn loss_and_duplication_never_give_two_leaders_a_term() {
        for seed in 0..20 {
            let ring = shuffled(6, seed);
            testkit::lossy::<Franklin>(setups(&ring, &bidirectional_ring(&ring), &ring, seed), seed);
        }
    }

    #[test]
    fn more_than_two_neighbours_is_refused() {
        let g = testkit::complete(&ids(4));
        let s = setups(&ids(4), &g, &[], 1);
        let e = crate::catalog::check_setup("franklin", &s[0]).unwrap_err();
        assert!(e.contains("bidirectional ring"), "{e}");
        let r = setups(&ids(4), &bidirectional_ring(&ids(4)), &[], 1);
        assert!(crate::catalog::check_setup("franklin", &r[0]).is_ok());
    }
}
