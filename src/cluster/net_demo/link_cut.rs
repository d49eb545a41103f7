//! The link-cut story of the election family: two groups joined by one channel, cut and
//! healed (see [`net_demo`](super)).

use super::*;

type SideView = Option<(NodeId, u64)>;

/// Where the link-cut story is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Step {
    /// Waiting for the first leader.
    Elect,
    /// Cut at `wall`; waiting for each side to settle (`held`: the settled view and since when).
    Split {
        wall: u64,
        first: (NodeId, u64),
        held: Option<(Vec<SideView>, Instant)>,
    },
    /// Healed at `wall`; waiting for one leader (`held`: leader, term, since when).
    Rejoin {
        wall: u64,
        held: Option<(NodeId, u64, Instant)>,
    },
}

impl NetStory {
    /// What one side believes now: its agreed leader on its own side, if any, as (leader, term).
    fn side_view(fleet: &Fleet, side: &[NodeId]) -> Option<(NodeId, u64)> {
        fleet
            .beliefs
            .agreement(side)
            .map(|a| (a.belief.leader, a.belief.term))
            .filter(|(l, _)| side.contains(l))
    }

    /// Whether any node of `side` believes it leads.
    fn someone_leads(fleet: &Fleet, side: &[NodeId]) -> Option<NodeId> {
        side.iter()
            .copied()
            .find(|&id| fleet.beliefs.current(id).is_some_and(|b| b.leader == id))
    }

    pub(super) fn link_cut(
        &mut self,
        fleet: &mut Fleet,
        net: &mut NetControl,
        now: Instant,
    ) -> Result<Option<Ending>, String> {
        match self.step.clone() {
            Step::Elect => {
                let Some(a) = fleet.agreement().filter(|a| a.nodes.len() == 10) else {
                    return Ok(None);
                };
                say!("1. {}", crate::cluster::goal::agreement_line(fleet, &a, true));
                let wall = wall_us();
                let (x, y) = BRIDGE;
                let action = if self.majority {
                    NetAction::Partition {
                        sides: vec![LEFT.to_vec(), RIGHT.to_vec()],
                    }
                } else {
                    NetAction::Cut {
                        a: x,
                        b: y,
                        one_way: false,
                    }
                };
                let done = apply(net, fleet, &action)?;
                if self.majority {
                    say!(
                        "2. cut the channel {x}-{y} at {}: majority mode needs every member reachable directly, so the \
                         processes run on a complete mesh whose groups talk only through {x}-{y}; cutting it is, for \
                         them, the partition {} | {} ({done})",
                        fleet.rel(wall),
                        list(&LEFT),
                        list(&RIGHT)
                    );
                } else {
                    say!(
                        "2. cut the link {x}-{y} at {} ({done}): the only channel between nodes {} and nodes {}",
                        fleet.rel(wall),
                        list(&LEFT),
                        list(&RIGHT)
                    );
                }
                self.deadline = now + self.patience;
                self.step = Step::Split {
                    wall,
                    first: (a.leader, a.term),
                    held: None,
                };
                Ok(None)
            }
            Step::Split { wall, first, held } => {
                let sides = [&LEFT[..], &RIGHT[..]];
                let views: Vec<Option<(NodeId, u64)>> = sides.iter().map(|s| Self::side_view(fleet, s)).collect();
                let settled = if self.majority {
                    // The majority side agrees on a leader of its own; no node of the other leads.
                    views[1].is_some() && Self::someone_leads(fleet, &LEFT).is_none()
                } else {
                    views.iter().all(Option::is_some)
                };
                let held = match (settled, held) {
                    (false, _) => None,
                    (true, Some((v, since))) if v == views => Some((v, since)),
                    (true, _) => Some((views.clone(), now)),
                };
                let Some((_, since)) = held.clone().filter(|(_, since)| now >= *since + self.settle) else {
                    self.step = Step::Split { wall, first, held };
                    return Ok(None);
                };
                let _ = since;
                if self.majority {
                    let (l, t) = views[1].expect("settled");
                    say!(
                        "3. only the side holding a majority has a leader: node {l} leads term {t} for {} (6 of 10 votes)",
                        group_words(&RIGHT)
                    );
                    let minority: Vec<String> = LEFT
                        .iter()
                        .map(|&id| match fleet.beliefs.current(id) {
                            Some(b)
                                if LEFT.contains(&b.leader) && Self::someone_leads(fleet, &[b.leader]).is_none() =>
                            {
                                format!(
                                    "{id}: still names node {} of term {}, which no longer leads",
                                    b.leader, b.term
                                )
                            }
                            Some(b) => format!("{id}: names node {} of term {}, out of its reach", b.leader, b.term),
                            None => format!("{id}: no leader"),
                        })
                        .collect();
                    say!(
                        "   {} (4 of 10 votes) cannot reach a majority: no node there leads ({})",
                        group_words(&LEFT),
                        minority.join("; ")
                    );
                    let downs: Vec<String> = fleet
                        .nodes
                        .iter()
                        .filter(|n| LEFT.contains(&n.plan.id))
                        .flat_map(|n| n.step_downs.iter().filter(|s| s.t >= wall).map(move |s| (n.plan.id, s)))
                        .map(|(id, s)| format!("node {id} stepped down at {}: {}", fleet.rel(s.t), s.reason))
                        .collect();
                    if let Some(d) = downs.first() {
                        say!("   {d}");
                    }
                } else {
                    let (l0, t0) = views[0].expect("settled");
                    let (l1, t1) = views[1].expect("settled");
                    say!(
                        "3. two leaders, one per side: node {l0} leads term {t0} for {}; node {l1} leads term {t1} for {}",
                        group_words(&LEFT),
                        group_words(&RIGHT)
                    );
                    say!(
                        "   split-brain by partition: each side took the silence across the cut link for dead nodes \
                         (node {} led term {} before the cut); without majority mode no election can tell the difference",
                        first.0,
                        first.1
                    );
                }
                let wall = wall_us();
                let done = apply(net, fleet, &NetAction::Heal { link: None })?;
                say!("4. healed the network at {} ({done})", fleet.rel(wall));
                self.deadline = now + self.patience;
                self.step = Step::Rejoin { wall, held: None };
                Ok(None)
            }
            Step::Rejoin { wall, held } => {
                let all = fleet.agreement().filter(|a| a.nodes.len() == 10);
                let held = all.as_ref().map(|a| match held {
                    Some((l, t, since)) if (l, t) == (a.leader, a.term) => (l, t, since),
                    _ => (a.leader, a.term, now),
                });
                match (all, held) {
                    (Some(a), Some((_, _, since))) if now >= since + self.settle => {
                        say!("   {}", crate::cluster::goal::agreement_line(fleet, &a, true));
                        Ok(Some(Ending {
                            code: crate::exit::OK,
                            message: format!(
                                "demo complete: the cut split the graph{}, and after the heal one leader remains",
                                if self.majority {
                                    "; only the majority side had a leader"
                                } else {
                                    " and each side elected its own"
                                }
                            ),
                            check: true,
                        }))
                    }
                    (_, held) => {
                        self.step = Step::Rejoin { wall, held };
                        Ok(None)
                    }
                }
            }
        }
    }
}
