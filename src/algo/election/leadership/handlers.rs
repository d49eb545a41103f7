//! The wrapper's handlers: running the protocol and mapping what it asks, starting and joining
//! elections, heartbeats and floods, liveness, and the `Algorithm` impl that calls them in order.

use super::*;

/// What a protocol issued during one call, in order.
type Issued<E> = Vec<Command<<E as Election>::Msg, <E as Election>::Timer, Ask<<E as Election>::Msg>>>;

impl<E: Election> Leadership<E> {
    /// Runs `f` on the protocol, then whatever it left to do: messages that came back to this
    /// node, a requested election, and the leader hook.
    pub(super) fn with_inner(&mut self, cx: &mut LCx<'_, E>, f: impl FnOnce(&mut E, &mut ElectionCx<'_, E>)) {
        let before = self.core.leader;
        self.run_protocol(cx, f);
        let me = self.core.me();
        // Every other member suspected: a ring message for someone else (ELECTED(j) of a
        // suspected j) would come back here forever. Past two laps' worth of hops it is
        // dropped, and a new election asked for.
        let mut laps = 2 * self.core.setup.members.len() + 2;
        while let Some(m) = self.core.ring.take_local() {
            if laps == 0 {
                let why = format!("{} keeps coming back: every other member is suspected", m.name());
                cx.discard(me, why);
                self.core.ring.clear_local();
                // Not while starting one: a protocol whose own start loops would recurse.
                self.core.wants_election |= !self.core.starting;
                break;
            }
            laps -= 1;
            self.run_protocol(cx, |e, pcx| e.on_msg(pcx, me, m));
        }
        self.after(cx, before);
    }

    /// Runs `f` on the protocol with its own context, which reads the wrapper's state as it is
    /// now, then maps what the protocol issued.
    pub(super) fn run_protocol(&mut self, cx: &mut LCx<'_, E>, f: impl FnOnce(&mut E, &mut ElectionCx<'_, E>)) {
        let inner = &mut self.inner;
        let ((), out) = cx.run_inner(&self.core, |pcx| f(inner, pcx));
        self.process(cx, out);
    }

    /// Maps the protocol's commands onto the wrapper's, in the order it issued them: its
    /// messages travel in the current term, and its requests act on the wrapper's state here.
    /// No protocol reads the view after a request in the same call that would change what it
    /// reads (a decision or a suspicion), so acting after the call is acting at once.
    pub(super) fn process(&mut self, cx: &mut LCx<'_, E>, out: Issued<E>) {
        let me = self.core.me();
        for c in out {
            match c {
                Command::Send(to, msg) => {
                    let term = self.core.term;
                    cx.send(to, LMsg::Inner { term, ack: 0, msg });
                }
                Command::SetTimer(t, after) => cx.set_timer(LTimer::Inner(t), after),
                Command::CancelTimer(t) => cx.cancel_timer(LTimer::Inner(t)),
                Command::Record(ev) => cx.record(ev),
                Command::Persist(bytes) => cx.persist(bytes),
                Command::AdjustClock(c) => cx.adjust_clock(c),
                Command::Ask(Ask::Elected(leader)) => self.core.decide(cx, leader),
                Command::Ask(Ask::SendNext(msg)) => {
                    let carried = E::node_named_by(&msg);
                    self.core.forward(cx, me, msg, carried);
                }
                Command::Ask(Ask::TellDecided(to)) => {
                    let (term, leader) = (self.core.term, self.core.leader);
                    cx.send(to, LMsg::Newer { term, leader });
                }
                Command::Ask(Ask::StartElection) => self.core.wants_election = true,
                Command::Ask(Ask::Suspect(node, cause)) => {
                    self.core.suspect(cx, node, &cause);
                }
            }
        }
    }

    pub(super) fn after(&mut self, cx: &mut LCx<'_, E>, before: Option<NodeId>) {
        if std::mem::take(&mut self.core.wants_election) {
            self.start_election(cx);
        } else if let Some(l) = self.core.leader.filter(|&l| Some(l) != before) {
            self.hand_leader(cx, l);
        }
    }

    /// Tells the protocol who leads (bully deposes a lower id), then starts the election it
    /// may have asked for.
    pub(super) fn hand_leader(&mut self, cx: &mut LCx<'_, E>, l: NodeId) {
        self.run_protocol(cx, |e, pcx| e.on_leader(pcx, l));
        if std::mem::take(&mut self.core.wants_election) {
            self.start_election(cx);
        }
    }

    /// Starts an election; in majority mode, first asks for pre-votes. Not while waking from a
    /// stall: the term it would pick may already be taken by messages still queued, so it waits
    /// for the window to end and then decides again ([`settled`](Self::settled)).
    pub(super) fn start_election(&mut self, cx: &mut LCx<'_, E>) {
        if self.core.waking(cx.now) {
            if !std::mem::replace(&mut self.core.deferred, true) {
                let w = self.core.woke.unwrap_or(cx.now) + self.core.setup.timeout;
                cx.set_timer(LTimer::Settled, w.saturating_sub(cx.now) + Duration::from_millis(1));
            }
            return;
        }
        let Some(t) = self.core.term.checked_add(1) else {
            return cx.discard(self.core.me(), "no term after 2^64-1: not starting an election");
        };
        if self.core.majority.is_none() {
            return self.begin_election(cx);
        }
        self.ask_pre_votes(cx, t);
    }

    /// Moves to a new term and lets the protocol begin.
    pub(super) fn begin_election(&mut self, cx: &mut LCx<'_, E>) {
        let Some(t) = self.core.term.checked_add(1) else {
            return;
        };
        self.core.adopt(cx, t, "starting a new election".into());
        cx.record(Event::ElectionStart { term: t });
        self.inner.reset();
        self.core.starting = true;
        self.with_inner(cx, |e, pcx| e.start(pcx));
        self.core.starting = false;
    }

    /// Moves to `t` if newer, joining that term's election; true when it did.
    pub(super) fn join(&mut self, cx: &mut LCx<'_, E>, t: u64, from: NodeId) -> bool {
        if !self.core.adopt(cx, t, format!("heard of term {t} from node {from}")) {
            return false;
        }
        // Joined while draining what queued up during a stall, or after a restart before it
        // knew a leader: maybe decided without this node.
        if self.core.catching_up
            || self
                .core
                .woke
                .is_some_and(|w| cx.now.saturating_sub(w) <= self.core.setup.timeout)
        {
            self.core.stale_upto = self.core.stale_upto.max(t);
        }
        self.inner.reset();
        cx.record(Event::ElectionStart { term: t });
        true
    }

    pub(super) fn stale(&mut self, cx: &mut LCx<'_, E>, from: NodeId, t: u64) {
        cx.discard(from, format!("stale term {t} < {}", self.core.term));
        cx.send(
            from,
            LMsg::Newer {
                term: self.core.term,
                leader: self.core.leader,
            },
        );
    }

    /// A heartbeat of `leader` in `term` (direct or flooded), already known not to be stale.
    pub(super) fn heartbeat(&mut self, cx: &mut LCx<'_, E>, from: NodeId, term: u64, leader: NodeId) {
        // A leader heard at first hand: a restarted node has caught up.
        self.core.catching_up = false;
        let before = self.core.leader;
        self.join(cx, term, from);
        self.core.follow(cx, leader);
        let _ = self.core.majority(cx, |m, c| m.acknowledge(c, leader, term));
        self.after(cx, before);
    }

    pub(super) fn on_flood(&mut self, cx: &mut LCx<'_, E>, from: NodeId, term: u64, leader: NodeId, seq: u64) {
        if !self.core.live.fresh_beacon(leader, term, seq) {
            return;
        }
        if term < self.core.term {
            return self.stale(cx, from, term);
        }
        if leader == self.core.me() {
            // Sent by an earlier life of this node (before a restart): only its term is news.
            self.join(cx, term, from);
            return;
        }
        // A fresh beacon is news of the leader itself, not only of the neighbour that passed it.
        self.core.live(cx, |l, c| l.heard(c, leader));
        self.heartbeat(cx, from, term, leader);
        for &n in self.core.setup.neighbours.iter().filter(|&&n| n != from && n != leader) {
            cx.send(n, LMsg::Flood { term, leader, seq });
        }
    }

    pub(super) fn on_live(&mut self, cx: &mut LCx<'_, E>, from: NodeId, m: LiveMsg) {
        self.core.live(cx, |l, c| l.on_msg(c, from, &m));
        if m.detector_only() {
            return;
        }
        let t = m.epoch();
        if t < self.core.term {
            return self.stale(cx, from, t);
        }
        let probe = match m {
            // A re-probe of a suspect is no part of any election: it only asks for ALIVE.
            LiveMsg::Probe { wait: false, .. } => return,
            LiveMsg::Probe { .. } => true,
            LiveMsg::Alive { .. } => false,
            LiveMsg::Beat { .. } | LiveMsg::Swim(_) => return,
        };
        self.join(cx, t, from);
        self.with_inner(cx, |e, pcx| e.on_liveness(pcx, from, probe));
    }

    /// The detector's check: probes the nodes the protocol waits on, and tells it who is silent.
    pub(super) fn check(&mut self, cx: &mut LCx<'_, E>) {
        let waiting = if self.core.known_leader().is_none() {
            self.inner.awaited()
        } else {
            Vec::new()
        };
        let silent = self.core.live(cx, |l, c| l.check(c, &waiting));
        if !silent.is_empty() {
            self.with_inner(cx, |e, pcx| e.awaited_silent(pcx, silent));
        }
    }

    /// After every handler: the check runs while the protocol waits on someone.
    pub(super) fn watch(&mut self, cx: &mut LCx<'_, E>) {
        let waits = self.core.known_leader().is_none() && !self.inner.awaited().is_empty();
        self.core.live(cx, |l, c| l.watch(c, waits));
    }

    /// Phi and SWIM suspect on their own timers and gossip: a suspected leader is carried on
    /// without, as after a leader timeout (the fixed detector never has news).
    pub(super) fn detector_news(&mut self, cx: &mut LCx<'_, E>) {
        if !self.core.live.judges_alone() {
            return;
        }
        let news = self.core.live.take_news();
        let me = self.core.me();
        if self.core.leader.is_some_and(|l| l != me && news.contains(&l)) {
            self.start_election(cx);
        }
    }

    /// Runs first in every handler: notices a stall of this node; true when there was one.
    pub(super) fn notice_stall(&mut self, cx: &mut LCx<'_, E>) -> bool {
        let stalled = self.core.live.notice_stall(cx.now);
        if stalled {
            self.core.woke_up(cx);
        }
        stalled
    }

    pub(super) fn on_message(&mut self, cx: &mut LCx<'_, E>, from: NodeId, msg: LMsg<E::Msg>) {
        if let Some(t) = msg.term().filter(|&t| self.core.implausible(t)) {
            return cx.discard(
                from,
                format!(
                    "term {t} is implausibly far ahead (this node is at term {}; at most {MAX_TERM_LEAP} more is accepted)",
                    self.core.term
                ),
            );
        }
        self.core.live(cx, |l, c| l.heard(c, from));
        let before = self.core.leader;
        match msg {
            LMsg::Ack { seqs } => self.core.ring(cx, |r, c, _| r.acked(c, &seqs)),
            LMsg::Heartbeat { term } if term < self.core.term => self.stale(cx, from, term),
            LMsg::Heartbeat { term } => self.heartbeat(cx, from, term, from),
            LMsg::Flood { term, leader, seq } => self.on_flood(cx, from, term, leader, seq),
            LMsg::Newer { term, leader } => {
                let newer = self.join(cx, term, from);
                // In majority mode this node leads only on its own count of votes, never on hearsay
                // (a NEWER naming it is about an earlier life, before a restart); nor, in any
                // mode, in a term it may not claim (joined while waking from a stall).
                let me = self.core.me();
                let hearsay = leader == Some(me) && (self.core.majority.is_some() || !self.core.may_claim());
                let fits = newer || (term == self.core.term && before.is_none());
                if let Some(l) = leader.filter(|_| fits && !hearsay) {
                    self.core.follow(cx, l);
                }
                self.after(cx, before);
            }
            LMsg::Inner { term, ack, msg } => {
                // Owed, and sent later with the others (see `ring_repair`): a forward is on the
                // ring's critical path, the ACK is not. A retried hop already handled (its ACK
                // was lost) is only acknowledged again.
                if !self.core.ring(cx, |r, c, _| r.received(c, from, ack)) {
                    return;
                }
                if term < self.core.term {
                    self.stale(cx, from, term);
                } else {
                    self.join(cx, term, from);
                    self.with_inner(cx, |e, pcx| e.on_msg(pcx, from, msg));
                }
            }
            LMsg::Majority(m) => self.on_majority(cx, from, m),
            LMsg::Live(m) => self.on_live(cx, from, m),
        }
    }

    pub(super) fn on_timeout(&mut self, cx: &mut LCx<'_, E>, timer: LTimer<E::Timer>, stalled: bool) {
        let me = self.core.me();
        match timer {
            LTimer::Heartbeat if self.core.leader == Some(me) => self.lead(cx),
            LTimer::Heartbeat => {}
            // Overdue because this node itself was stopped: `woke_up` started it again.
            LTimer::Ring(RingTimer::SendAcks) => self.core.ring(cx, |r, c, _| r.send_acks(c)),
            LTimer::LeaderTimeout | LTimer::Ring(_) | LTimer::Live(LiveTimer::Check) if stalled => {}
            LTimer::LeaderTimeout => {
                // Phi and SWIM may not agree yet: their own judgement then starts the election
                // (see `detector_news`).
                if let Some(l) = self.core.leader.filter(|&l| l != me) {
                    // The sweep (`detector_watch=all`) heard the leader answer within the
                    // timeout: its heartbeats were lost, it was not silent. Look again when
                    // that answer is a timeout old.
                    let answered = self.core.live.swept_last_heard(l).map(|t| t + self.core.setup.timeout);
                    if let Some(due) = answered.filter(|&due| due > cx.now) {
                        cx.set_timer(LTimer::LeaderTimeout, due - cx.now);
                        return;
                    }
                    if self.core.suspect(cx, l, "heartbeat") {
                        self.start_election(cx);
                    }
                }
            }
            LTimer::ElectionTimeout => {
                let wanted = match self.core.majority {
                    // A failed pre-vote round leaves the suspected leader believed: try again
                    // while it stays silent.
                    Some(_) => !self.core.leader_live(cx.now),
                    None => self.core.leader.is_none(),
                };
                if wanted {
                    self.start_election(cx);
                }
            }
            LTimer::Ring(RingTimer::NoAck(seq)) => {
                let now = cx.now;
                let expiry = self.core.ring(cx, |r, c, live| {
                    let to = r.pending_to(seq);
                    let alive = to.is_some_and(|to| live.heard_within_timeout(to, now));
                    r.expired(c, seq, alive)
                });
                let Some(Expiry::GiveUp(to, msg)) = expiry else {
                    return;
                };
                self.core.suspect(cx, to, "ack");
                let carried = E::node_named_by(&msg);
                self.core.forward(cx, to, msg, carried);
                self.with_inner(cx, |_, _| {});
            }
            LTimer::Inner(t) => self.with_inner(cx, |e, pcx| e.on_timer(pcx, t)),
            LTimer::Majority(t) => self.on_majority_timer(cx, t),
            LTimer::Settled => self.settled(cx),
            LTimer::Live(LiveTimer::Check) => self.check(cx),
            LTimer::Live(t) => self.core.live(cx, |l, c| l.on_timer(c, t)),
        }
    }

    /// The waking window is over: an election deferred meanwhile starts, unless a leader is
    /// known by now; then the protocol is asked about it again (bully deposes a lower id).
    pub(super) fn settled(&mut self, cx: &mut LCx<'_, E>) {
        if !std::mem::take(&mut self.core.deferred) {
            return;
        }
        match self.core.leader {
            None => self.start_election(cx),
            Some(l) => self.hand_leader(cx, l),
        }
    }

    /// The leader's heartbeat period: a heartbeat to everyone, unless (majority mode) it lost
    /// its quorum and steps down.
    pub(super) fn lead(&mut self, cx: &mut LCx<'_, E>) {
        if !self.core.has_quorum(cx.now) {
            cx.record(Event::StepDown {
                term: self.core.term,
                reason: "lost quorum".into(),
            });
            self.core.leader = None;
            let d = self.core.election_timeout(cx.rng);
            cx.set_timer(LTimer::ElectionTimeout, d);
            return;
        }
        self.core.send_heartbeats(cx);
        cx.set_timer(LTimer::Heartbeat, self.core.setup.heartbeat);
    }
}

impl<E: Election> Algorithm for Leadership<E> {
    type Msg = LMsg<E::Msg>;
    type Timer = LTimer<E::Timer>;

    fn on_start(&mut self, cx: &mut LCx<'_, E>) {
        self.core.live(cx, |l, c| l.start(c));
        if self.core.setup.initiator {
            self.start_election(cx);
        } else {
            let t = self.core.setup.timeout;
            let jitter = Duration::from_micros(cx.rng.range(0, t.as_micros() as u64 + 1));
            cx.set_timer(LTimer::ElectionTimeout, t + jitter);
        }
        self.watch(cx);
    }

    fn on_msg(&mut self, cx: &mut LCx<'_, E>, from: NodeId, msg: LMsg<E::Msg>) {
        self.notice_stall(cx);
        self.on_message(cx, from, msg);
        self.detector_news(cx);
        self.watch(cx);
    }

    fn on_timer(&mut self, cx: &mut LCx<'_, E>, timer: LTimer<E::Timer>) {
        let stalled = self.notice_stall(cx);
        self.on_timeout(cx, timer, stalled);
        self.detector_news(cx);
        self.watch(cx);
    }
    fn on_peer_restart(&mut self, _cx: &mut LCx<'_, E>, peer: NodeId) {
        self.core.ring.peer_restarted(peer);
    }
}
