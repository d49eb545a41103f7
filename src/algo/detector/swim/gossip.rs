//! SWIM's dissemination: what goes out piggybacked and on the gossip timer, what a node hears, and its refutations (see [`swim`](super)).

use super::*;

impl Swim {
    /// Sends the pending rumours to [`GOSSIP_NODES`] random members that are not dead; nothing
    /// when there is nothing to tell.
    pub(super) fn gossip_round(&mut self, cx: &mut SwimCx<'_>) {
        let mut pool: Vec<NodeId> = self
            .members
            .iter()
            .filter(|(_, m)| m.state != State::Dead)
            .map(|(&n, _)| n)
            .collect();
        for _ in 0..GOSSIP_NODES {
            if pool.is_empty() {
                break;
            }
            let i = cx.rng.range(0, pool.len() as u64) as usize;
            let to = pool.swap_remove(i);
            let rumours = self.gossip(Some(to));
            if !rumours.is_empty() {
                cx.send(to, SwimMsg::Gossip { rumours });
            }
        }
    }

    /// Rumours to piggyback, the least sent first; those sent enough times are dropped.
    pub(super) fn gossip(&mut self, about: Option<NodeId>) -> Vec<Rumour> {
        let limit = RETRANSMIT_MULT * ((self.n as f64 + 1.0).log10().ceil() as u32).max(1);
        self.rumours.sort_by_key(|r| r.1);
        let mut out: Vec<Rumour> = Vec::new();
        // The target of a probe hears its own suspicion, so that it can refute it.
        if let Some(m) = about.and_then(|a| self.members.get(&a).map(|m| (a, m))) {
            match m.1.state {
                State::Suspect { .. } => out.push(Rumour::Suspect {
                    node: m.0,
                    inc: m.1.inc,
                    from: self.me,
                }),
                State::Dead => out.push(Rumour::Dead {
                    node: m.0,
                    inc: m.1.inc,
                    from: self.me,
                }),
                State::Alive => {}
            }
        }
        for r in self.rumours.iter_mut() {
            if out.len() >= PIGGYBACK {
                break;
            }
            if !out.contains(&r.0) {
                out.push(r.0);
                r.1 += 1;
            }
        }
        self.rumours.retain(|r| r.1 < limit);
        out
    }

    pub(super) fn spread(&mut self, r: Rumour) {
        self.rumours.retain(|(o, _)| o.node() != r.node());
        self.rumours.push((r, 0));
    }

    /// Takes in gossip, carried by a message from `from`.
    pub(super) fn hear(&mut self, cx: &mut SwimCx<'_>, silence: &mut Silence, from: NodeId, rumours: &[Rumour]) {
        for &r in rumours {
            match r {
                Rumour::Suspect { node, inc, .. } | Rumour::Dead { node, inc, .. } if node == self.me => {
                    self.refute(cx, from, inc)
                }
                Rumour::Alive { node, .. } if node == self.me => {}
                Rumour::Alive { node, inc } => {
                    let Some(m) = self.members.get_mut(&node) else {
                        continue;
                    };
                    // Only a higher incarnation refutes (or is news).
                    if inc <= m.inc {
                        continue;
                    }
                    m.inc = inc;
                    m.state = State::Alive;
                    if let Some(ev) = silence.forget(node) {
                        cx.record(ev);
                    }
                    cx.cancel_timer(SwimTimer::Suspicion(node));
                    self.spread(r);
                }
                Rumour::Suspect { node, inc, from } => {
                    self.suspect(cx, silence, node, Some((from, inc)), self.params.period)
                }
                Rumour::Dead { node, inc, .. } => {
                    let Some(m) = self.members.get_mut(&node) else {
                        continue;
                    };
                    if inc < m.inc || m.state == State::Dead {
                        continue;
                    }
                    m.inc = inc;
                    m.state = State::Dead;
                    if let Some(ev) = silence.suspect_as(node, cx.now, self.params.period, "gossip", None, Some(inc)) {
                        cx.record(ev);
                    }
                    cx.cancel_timer(SwimTimer::Suspicion(node));
                    self.spread(r);
                }
            }
        }
    }

    /// `teller` believes this node suspect or dead at `inc`: refute with a higher incarnation,
    /// and tell `teller` itself at once.
    pub(super) fn refute(&mut self, cx: &mut SwimCx<'_>, teller: NodeId, inc: u64) {
        if inc < self.inc {
            // Already refuted, but its holder missed the ALIVE (each rumour is sent a bounded
            // number of times, to members drawn at random): tell the one that said so directly,
            // or its suspicion could run to a confirmation while the gossip keeps missing it.
            let alive = Rumour::Alive {
                node: self.me,
                inc: self.inc,
            };
            if !self.rumours.iter().any(|r| r.0 == alive) {
                self.spread(alive);
            }
            cx.send(teller, SwimMsg::Gossip { rumours: vec![alive] });
            return;
        }
        let refuted_by = inc + 1;
        cx.record(Event::Refute {
            incarnation: inc,
            refuted_by,
        });
        self.inc = refuted_by;
        self.lhm_add(1);
        self.spread(Rumour::Alive {
            node: self.me,
            inc: refuted_by,
        });
        // At once, not at the next gossip round: the suspecters' timers are running.
        self.gossip_round(cx);
        cx.send(
            teller,
            SwimMsg::Gossip {
                rumours: vec![Rumour::Alive {
                    node: self.me,
                    inc: refuted_by,
                }],
            },
        );
    }
}
