//! Phi's side of the detector: its BEATs, each relaying the newest stamp of every peer, and
//! its judgement every period.

use super::*;

impl Liveness {
    /// A BEAT from `from` (already heard by [`heard`](Self::heard)): a peer whose newer stamp
    /// it relays is heard of here, and a suspicion of it withdrawn.
    pub(super) fn phi_beat(&mut self, cx: &mut LiveCx<'_>, from: NodeId, stamp: u64, relayed: &[(NodeId, u64)]) {
        if let Mode::Phi(p) = &mut self.mode {
            for n in p.beat(from, stamp, relayed, cx.now) {
                if n != from {
                    self.alive(cx, n);
                }
            }
        }
    }

    /// Phi's period: a BEAT to every peer, then each peer judged; returns the next period.
    pub(super) fn phi_period(&mut self, cx: &mut LiveCx<'_>) -> Duration {
        let Mode::Phi(p) = &mut self.mode else {
            return self.heartbeat;
        };
        let next = p.params.period;
        // Phi keeps a window per peer: its reach is always listed.
        if let Reach::Listed(reach) = &self.reach {
            let (stamp, known) = (p.next_stamp(), p.known());
            for (j, &n) in reach.iter().enumerate() {
                let relayed = p.relayed(&known, cx.me, n, j);
                cx.send(n, LiveMsg::Beat { stamp, relayed });
            }
        }
        let over: Vec<NodeId> = p.peers().filter(|&n| p.over(n, cx.now)).collect();
        // A peer whose phi crosses the threshold before the next look is judged at that
        // moment: a look once a period would add half a period to the detection time.
        let until = cx.now + next;
        for n in p
            .peers()
            .filter(|n| !over.contains(n) && !self.silence.is_suspected(*n))
        {
            if let Some(due) = p.due(n).filter(|&d| d > cx.now && d < until) {
                cx.set_timer(LiveTimer::PhiDue(n), due - cx.now);
            }
        }
        for n in over {
            self.suspect_phi(cx, n);
        }
        next
    }

    /// Suspects `node` on phi's word, its silence phi's own.
    pub(super) fn suspect_phi(&mut self, cx: &mut LiveCx<'_>, node: NodeId) {
        let Mode::Phi(p) = &self.mode else {
            return;
        };
        let (phi, silence) = (p.phi(node, cx.now), p.silence(node, cx.now));
        // The silence is phi's own (any message counts), not the host's last heartbeat.
        self.silence.touch(node, cx.now.saturating_sub(silence));
        if let Some(ev) = self
            .silence
            .suspect_as(node, cx.now, self.timeout, "phi", Some(phi), None)
        {
            cx.record(ev);
            self.news.push(node);
        }
    }
}
