//! SWIM's suspicions: raising one, and confirming it once its timeout ran (see [`swim`](super)).

use super::*;

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
        self.spread(Rumour::Suspect { node, inc, from });
    }
}
