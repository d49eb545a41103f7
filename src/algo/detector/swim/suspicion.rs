//! SWIM's suspicions: raising one, and confirming it once its timeout ran (see [`swim`](super)).

use super::*;

/// How many times a held suspicion is told to its suspect, evenly through the hold.
const TELLINGS: u32 = 3;

impl Swim {
    /// The suspicion of `node` may have run its time: confirm it, or look again when it will.
    pub(super) fn judge(&mut self, cx: &mut SwimCx<'_>, node: NodeId) {
        let (min, max, k) = self.suspicion_bounds();
        let Some(m) = self.members.get_mut(&node) else {
            return;
        };
        let State::Suspect {
            since,
            began,
            confirmers,
        } = &m.state
        else {
            return;
        };
        // This node's own suspicion is not a confirmation.
        let others = confirmers.iter().filter(|&&c| c != self.me).count();
        let timeout = suspicion_timeout(others, k, min, max);
        let due = *since + timeout;
        if cx.now < due {
            cx.set_timer(SwimTimer::Suspicion(node), due - cx.now);
            return;
        }
        cx.record(Event::Confirm {
            target: node,
            incarnation: m.inc,
            confirmations: others as u64,
            suspected_ms: cx.now.saturating_sub(*began).as_millis() as u64,
        });
        let inc = m.inc;
        m.state = State::Dead;
        self.held.remove(&node);
        self.spread(Rumour::Dead {
            node,
            inc,
            from: self.me,
        });
    }

    /// Suspects `node` (at `inc`, or its known incarnation), by this node (`by` None) or on
    /// the word of another member; `waited`: the trace's `timeout_ms` (first hand, how long
    /// the probe waited: its window; on another's word, the period, for reference only).
    pub(super) fn suspect(
        &mut self,
        cx: &mut SwimCx<'_>,
        silence: &mut Silence,
        node: NodeId,
        by: Option<(NodeId, u64)>,
        waited: Duration,
    ) {
        let me = self.me;
        let (min, max, k) = self.suspicion_bounds();
        let Some(m) = self.members.get_mut(&node) else {
            return;
        };
        let (from, inc) = by.unwrap_or((me, m.inc));
        if inc < m.inc || m.state == State::Dead {
            return;
        }
        if let State::Suspect { confirmers, since, .. } = &mut m.state {
            if inc == m.inc {
                if confirmers.insert(from) {
                    // A new, independent confirmation shortens the timeout: look again.
                    let others = confirmers.iter().filter(|&&c| c != me).count();
                    let due = *since + suspicion_timeout(others, k, min, max);
                    cx.set_timer(SwimTimer::Suspicion(node), due.saturating_sub(cx.now));
                    self.spread(Rumour::Suspect { node, inc, from });
                    // Others spread it already: nothing left to hold back.
                    self.held.remove(&node);
                }
                return;
            }
        }
        m.inc = inc;
        m.state = State::Suspect {
            since: cx.now,
            began: cx.now,
            confirmers: [from].into_iter().collect(),
        };
        let cause = if from == me { "swim" } else { "gossip" };
        if let Some(ev) = silence.suspect_as(node, cx.now, waited, cause, None, Some(inc)) {
            cx.record(ev);
        }
        let others = usize::from(from != me);
        cx.set_timer(SwimTimer::Suspicion(node), suspicion_timeout(others, k, min, max));
        let rumour = Rumour::Suspect { node, inc, from };
        if from == me && self.params.hold {
            // Told first: a live suspect refutes to this node alone.
            self.held.insert(node, (inc, 0));
            self.hold_over(cx, node);
        } else {
            self.spread(rumour);
        }
    }

    /// How long a first-hand suspicion is held back before it is gossiped: two round-trip
    /// bounds (the suspect told [`TELLINGS`] times through it, each telling answered), two
    /// probe timeouts before any round trip was timed; between a probe timeout and a period.
    pub(crate) fn hold(&self) -> Duration {
        let rt = self.rtt.bound().unwrap_or(self.probe_timeout());
        (2 * rt).clamp(self.probe_timeout(), self.period())
    }

    /// The next part of the hold of `node`'s suspicion begins: tell the suspect (again: a
    /// telling or its refutation may have been lost); after the last part: gossip the
    /// suspicion, unrefuted. At 35% loss and 64 members (simulator, 10 seeds), telling it
    /// twice left 148 suspicions held by anyone from 31 first-hand mistakes, three times 82
    /// from 22, four times 93 from 34.
    pub(super) fn hold_over(&mut self, cx: &mut SwimCx<'_>, node: NodeId) {
        let Some(&(inc, told)) = self.held.get(&node) else {
            return;
        };
        let still =
            matches!(self.members.get(&node), Some(m) if m.inc == inc && matches!(m.state, State::Suspect { .. }));
        if !still {
            self.held.remove(&node);
            return;
        }
        let rumour = Rumour::Suspect {
            node,
            inc,
            from: self.me,
        };
        if told >= TELLINGS {
            self.held.remove(&node);
            self.spread(rumour);
        } else {
            self.held.insert(node, (inc, told + 1));
            cx.send(node, SwimMsg::Gossip { rumours: vec![rumour] });
            cx.set_timer(SwimTimer::Hold(node), self.hold() / TELLINGS);
        }
    }
}
