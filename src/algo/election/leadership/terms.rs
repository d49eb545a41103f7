//! The wrapper's own state (`Core`): what a protocol reads of it, and the bookkeeping of terms,
//! leaders, stalls and heartbeats.

use super::*;

impl<M: Message> Core<M> {
    /// The current term.
    pub fn term(&self) -> u64 {
        self.term
    }
    /// The node's setup (members in ring order, neighbours, options).
    pub fn setup(&self) -> &Setup {
        &self.setup
    }
    /// The nodes this one may send to.
    pub fn neighbours(&self) -> &[NodeId] {
        &self.setup.neighbours
    }
    /// Who leads this term, as far as this node knows (in majority mode: the protocol's
    /// winner, even before a majority has established it).
    pub fn leader(&self) -> Option<NodeId> {
        self.known_leader()
    }
    /// When this node last started running without a gap: its start, or the end of its last
    /// stall (as after SIGSTOP).
    pub(crate) fn running_since(&self) -> Duration {
        self.live.running_since()
    }
    /// Whether this node suspects `node`.
    pub(crate) fn is_suspected(&self, node: NodeId) -> bool {
        self.live.is_suspected(node)
    }
    /// The first successor this node does not suspect (None when it suspects everyone); in a
    /// sparse mesh, the ring successor if it is a neighbour.
    pub fn successor(&self) -> Option<NodeId> {
        let live = &self.live;
        self.ring.next_hop(self.me(), |x| live.is_suspected(x))
    }
}

impl<M: Message> Core<M> {
    /// This node's id.
    pub fn me(&self) -> NodeId {
        self.setup.me
    }

    pub(super) fn others(&self) -> Vec<NodeId> {
        let me = self.me();
        self.setup.members.iter().copied().filter(|&m| m != me).collect()
    }

    pub(super) fn known_leader(&self) -> Option<NodeId> {
        self.leader.or(self.majority.as_ref().and_then(Majority::decided))
    }

    /// Whether this node may claim to lead the current term: not when it joined the term while
    /// waking from a stall (see "stalls"); it should then ask for a new election instead.
    pub(crate) fn may_claim(&self) -> bool {
        self.term > self.stale_upto
    }

    /// Within one timeout of waking from a stall: still draining what queued up meanwhile.
    pub(super) fn waking(&self, now: Duration) -> bool {
        self.woke.is_some_and(|w| now.saturating_sub(w) <= self.setup.timeout)
    }

    /// Runs `f` on the liveness detector, inside its scope.
    pub(super) fn live<T, R>(
        &mut self,
        cx: &mut WCx<'_, M, T>,
        f: impl FnOnce(&mut Liveness, &mut LiveCx<'_>) -> R,
    ) -> R {
        cx.within::<LiveSlot, _>(|c| f(&mut self.live, c))
    }

    /// Runs `f` on ring repair, inside its scope, with the detector's suspicions.
    pub(super) fn ring<T, R>(
        &mut self,
        cx: &mut WCx<'_, M, T>,
        f: impl FnOnce(&mut RingRepair<M>, &mut RingCx<'_, M>, &Liveness) -> R,
    ) -> R {
        let (ring, live) = (&mut self.ring, &self.live);
        cx.within::<RingSlot<M>, _>(|c| f(ring, c, live))
    }

    /// True when `node` is now suspected (phi or SWIM may disagree with a timeout).
    pub(super) fn suspect<T>(&mut self, cx: &mut WCx<'_, M, T>, node: NodeId, cause: &str) -> bool {
        self.live(cx, |l, c| l.suspect(c, node, cause))
    }

    pub(super) fn forward<T>(&mut self, cx: &mut WCx<'_, M, T>, after: NodeId, msg: M, carried: Option<NodeId>) {
        self.ring(cx, |r, c, live| {
            r.forward(c, after, msg, carried, |x| live.is_suspected(x))
        });
    }

    pub(super) fn election_timeout(&self, rng: &mut Rng) -> Duration {
        let t = self.setup.timeout;
        let jitter = Duration::from_micros(rng.range(0, t.as_micros() as u64 + 1));
        3 * t + Duration::from_millis(self.setup.members.len() as u64) + jitter
    }

    /// Whether `t` is so far above this node's term that it can only be forged or corrupt.
    pub(super) fn implausible(&self, t: u64) -> bool {
        t > self.term.saturating_add(MAX_TERM_LEAP)
    }

    /// This node was stopped for longer than a timeout: restart the watches (the silence it
    /// slept through is no evidence) and mark the current term stale.
    pub(super) fn woke_up<T>(&mut self, cx: &mut WCx<'_, M, T>) {
        cx.state_change("stalled: this node was stopped for longer than a timeout; watches start again");
        self.woke = Some(cx.now);
        self.stale_upto = self.stale_upto.max(self.term);
        if self.leader.is_some_and(|l| l != self.me()) {
            self.leader_seen = cx.now;
            cx.set_timer(LTimer::LeaderTimeout, self.setup.timeout);
        }
        self.ring(cx, |r, c, _| r.restart_timers(c));
    }

    /// Moves to a newer term `t`; false when `t` is not newer.
    pub(super) fn adopt<T>(&mut self, cx: &mut WCx<'_, M, T>, t: u64, why: String) -> bool {
        if t <= self.term {
            return false;
        }
        let was_leading = self.leader == Some(self.me());
        if was_leading {
            cx.record(Event::StepDown {
                term: self.term,
                reason: why,
            });
            cx.cancel_timer(LTimer::Heartbeat);
        }
        self.term = t;
        if was_leading {
            self.tell_followers(cx);
        }
        cx.persist(serde_json::to_vec(&KeptTerm { term: t }).unwrap_or_default());
        self.leader = None;
        self.ring.new_epoch(t);
        self.live.new_epoch(t);
        self.live(cx, |l, c| l.forget_unreachable(c, None));
        let _ = self.majority(cx, |m, c| m.new_term(c));
        cx.cancel_timer(LTimer::LeaderTimeout);
        let d = self.election_timeout(cx.rng);
        cx.set_timer(LTimer::ElectionTimeout, d);
        true
    }

    /// `leader` leads the current term, as far as this node now knows.
    pub(super) fn follow<T>(&mut self, cx: &mut WCx<'_, M, T>, leader: NodeId) {
        let me = self.me();
        // Two claimants of one term (possible only without majority mode) must not both step
        // down to the other, or nobody leads and both suspect each other: the higher id keeps
        // the term, and the lower follows it on hearing its heartbeat.
        if self.leader == Some(me) && leader < me {
            cx.record(Event::Ignore {
                from: leader,
                reason: format!("node {leader} also claims term {}; the higher id keeps it", self.term),
            });
            return;
        }
        if self.leader != Some(leader) {
            if self.leader == Some(me) {
                let reason = format!("node {leader} also leads term {}", self.term);
                cx.record(Event::StepDown {
                    term: self.term,
                    reason,
                });
                cx.cancel_timer(LTimer::Heartbeat);
            }
            self.leader = Some(leader);
            cx.record(Event::Leader {
                leader,
                term: self.term,
            });
            self.live(cx, |l, c| l.forget_unreachable(c, Some(leader)));
            cx.cancel_timer(LTimer::ElectionTimeout);
            if leader == me {
                cx.set_timer(LTimer::Heartbeat, self.setup.heartbeat);
                // Leading a term it may claim, a restarted node has caught up as surely as by
                // hearing another leader: otherwise, in a protocol it wins whenever it takes
                // part (Yo-Yo's smallest id), no leader but itself is ever heard, and it refuses
                // every term begun elsewhere.
                self.catching_up = false;
            }
        }
        if leader != me {
            self.live.reset(leader, cx.now);
            self.leader_seen = cx.now;
            cx.set_timer(LTimer::LeaderTimeout, self.setup.timeout);
            // A live leader makes a pre-vote round of this node pointless.
            let _ = self.majority(cx, |m, c| m.drop_pre_votes(c));
        }
    }

    /// Whether this node leads, or heard its leader within the timeout.
    pub(super) fn leader_live(&self, now: Duration) -> bool {
        match self.leader {
            Some(l) if l == self.me() => true,
            Some(_) => now.saturating_sub(self.leader_seen) < self.setup.timeout,
            None => false,
        }
    }

    /// The protocol's decision: followed at once, or (majority mode) put to a vote. A claim of
    /// a term joined while waking from a stall is refused: a new term is asked for instead.
    pub(super) fn decide<T>(&mut self, cx: &mut WCx<'_, M, T>, leader: NodeId) {
        let me = self.me();
        if leader == me && !self.may_claim() {
            let why = format!(
                "not claiming term {}: joined while waking from a stall, it may have been decided without this node",
                self.term
            );
            cx.discard(me, why);
            self.wants_election = true;
            return;
        }
        if self.majority.is_none() {
            return self.follow(cx, leader);
        }
        self.decide_by_votes(cx, leader);
    }

    /// A leader that leaves its term for a newer one (the news came to it first, perhaps from a
    /// node whose own messages are stuck behind a paused one) tells the members it was sending
    /// heartbeats to: otherwise they take its silence for a death after a timeout, suspect a
    /// running node, and a ring protocol leaves it out of their lists (two lists, two winners).
    /// One NEWER each, naming no leader: they join the term and wait for its election.
    fn tell_followers<T>(&mut self, cx: &mut WCx<'_, M, T>) {
        let term = self.term;
        for m in self.heartbeat_recipients() {
            cx.send(m, LMsg::Newer { term, leader: None });
        }
    }

    /// Whom a leader's heartbeats go to: every other member, or in a sparse mesh the
    /// neighbours, which flood them on.
    fn heartbeat_recipients(&self) -> Vec<NodeId> {
        match self.sparse {
            true => self.setup.neighbours.clone(),
            false => self.others(),
        }
    }

    /// One heartbeat of this leader: to every member, or flooded to the neighbours in a sparse mesh.
    pub(super) fn send_heartbeats<T>(&mut self, cx: &mut WCx<'_, M, T>) {
        let (me, term) = (self.me(), self.term);
        let seq = self.sparse.then(|| self.live.beacon(me, term));
        for m in self.heartbeat_recipients() {
            match seq {
                Some(seq) => cx.send(m, LMsg::Flood { term, leader: me, seq }),
                None => cx.send(m, LMsg::Heartbeat { term }),
            }
        }
    }
}
