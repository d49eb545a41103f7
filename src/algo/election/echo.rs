//! Echo election (Vasudevan, Kurose & Towsley 2004, after Chang's echo algorithm), for
//! networks without a fixed topology: a wave builds a spanning tree, the best (capability, id)
//! climbs it, and the root announces the winner.
//!
//! Rules (each node: the wave it is in, named by its initiator's id; in it, a parent and the
//! neighbours it still waits for; the best (capability, id) heard so far, its own to begin with):
//! - start (an initiator): wave := me, no parent; send ELECTION(me) to every neighbour.
//! - on ELECTION(c) from j, c greater than my wave (or no wave yet): abandon the wave I was in;
//!   wave := c, parent := j, best := mine; send ELECTION(c) to every other neighbour.
//! - on ELECTION(c) from j, c my wave: j's ELECTION crossed mine on our edge: it counts as j's
//!   answer (the echo of a non-tree edge).
//! - on ELECTION(c), c below my wave: that wave dies out here (a higher one has reached me).
//! - on ECHO(c, best) from j, c my wave: j is my child: keep the better of the two bests.
//! - once every neighbour but the parent has answered: send ECHO(c, best) to the parent; the
//!   root instead has the winner, best's id: it floods LEADER(winner).
//! - on LEADER(l), the first time: l leads; pass it on to every other neighbour.
//!
//! With one initiator every edge carries exactly two ELECTION/ECHO messages: 2m on m edges,
//! then 2m - (n - 1) LEADER. With several initiators in one term, the wave of the highest
//! initiator id reaches every node and the others die out: the lower waves can never
//! complete, since the highest initiator never answers them.
//!
//! Capabilities come from `--set weights=ID:CAP,...`; a node not listed there, or every node
//! without the option, gets a seeded random capability from 1 to 100 drawn from the run's
//! seed and its id (so every node, and any reader of the run, computes the same one).
//! Ties are broken by the larger id.
//!
//! Dead neighbours ([`neighbours`](super::neighbours)): a neighbour declared dead before it
//! sent anything in this term no longer needs to answer, so the wave completes without it:
//! after the leader crashes, the new term succeeds as long as the crashed node was not a cut
//! vertex, and the winner is the best of the rest. A node that has echoed keeps waiting on its
//! parent until the winner is known, and one that finds dead a neighbour it had heard from in
//! this term starts a new term (so a root that dies after its children echoed costs one timeout
//! pair, not an election timeout). One case stays open, by the nature of the echo: a node that
//! joined a wave sends nothing to its parent until it echoes, so if it dies in between, its
//! parent cannot tell it from a node dead before the election and carries on; the wave may then
//! complete without the claims of the dead node's subtree, whose nodes only start a new term if
//! they find their parent dead before the winner's flood reaches them. The winner is then the
//! best of the nodes whose claims reached the root: live, unique in its term, agreed by all.
//! Terms, heartbeats and re-election come from [`Leadership`](super::Leadership).

use super::neighbours::{Neighbours, Waits};
use super::{Election, ElectionCx};
use crate::algo::options::{id_list, IdListError};
use crate::algo::{Message, NodeId, Setup};
use crate::rng::Rng;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// A node's claim to lead: (capability, id); the larger wins.
pub(crate) type Claim = (u64, NodeId);

/// Echo messages.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum EchoMsg {
    /// The wave of initiator `wave` spreads.
    Election {
        /// The wave's initiator.
        wave: NodeId,
    },
    /// The best claim of the sender's subtree, back to its parent.
    Echo {
        /// The wave's initiator.
        wave: NodeId,
        /// The best (capability, id) below and at the sender.
        best: Claim,
    },
    /// The winner, flooded over the edges.
    Leader(NodeId),
}

impl Message for EchoMsg {
    fn name(&self) -> &'static str {
        match self {
            EchoMsg::Election { .. } => "ELECTION",
            EchoMsg::Echo { .. } => "ECHO",
            EchoMsg::Leader(_) => "LEADER",
        }
    }
}

/// The capabilities given with `--set weights=ID:CAP,...` (empty without the option).
pub fn weights(setup: &Setup) -> Result<BTreeMap<NodeId, u64>, String> {
    let Some(spec) = setup.opts.get("weights") else {
        return Ok(BTreeMap::new());
    };
    let list = id_list::<u64>(spec, &setup.members).map_err(|e| match e {
        IdListError::NotMember(id) => format!("weights: node {id} is not a member"),
        IdListError::Twice(id) => format!("weights: node {id} is given twice"),
        e => format!(
            "weights: '{}' is not ID:CAPABILITY (e.g. weights=1:5,2:3)",
            e.part().unwrap_or_default()
        ),
    })?;
    Ok(list.into_iter().collect())
}

/// The seeded random capability of node `id` in a run with seed `seed` (1 to 100).
pub(crate) fn default_capability(seed: u64, id: NodeId) -> u64 {
    Rng::new(seed ^ id.wrapping_mul(0x9e37_79b9_7f4a_7c15)).range(1, 101)
}

/// The capability of node `id`: its weight if given, the seeded default otherwise.
pub(crate) fn capability(setup: &Setup, id: NodeId) -> Result<u64, String> {
    Ok(weights(setup)?
        .get(&id)
        .copied()
        .unwrap_or_else(|| default_capability(setup.seed, id)))
}

#[derive(Debug, Clone)]
struct Wave {
    id: NodeId,
    parent: Option<NodeId>,
    pending: BTreeSet<NodeId>,
    best: Claim,
    done: bool,
}

/// One node's Echo state.
#[derive(Debug, Clone)]
pub(crate) struct Echo {
    me: NodeId,
    capability: u64,
    wave: Option<Wave>,
    nb: Neighbours,
}

impl Echo {
    /// Joins wave `id` (this node's own when `parent` is None) and passes it on.
    fn join(&mut self, cx: &mut ElectionCx<'_, Self>, id: NodeId, parent: Option<NodeId>) {
        let pending: BTreeSet<NodeId> = self.nb.live().into_iter().filter(|&n| Some(n) != parent).collect();
        for &n in &pending {
            cx.send(n, EchoMsg::Election { wave: id });
        }
        self.wave = Some(Wave {
            id,
            parent,
            pending,
            best: (self.capability, self.me),
            done: false,
        });
        self.answered(cx, None, None);
    }

    /// `from` answered in the current wave (with its subtree's best, for an ECHO); once
    /// everyone has, echo to the parent, or at the root announce the winner.
    fn answered(&mut self, cx: &mut ElectionCx<'_, Self>, from: Option<NodeId>, best: Option<Claim>) {
        let Some(w) = self.wave.as_mut() else {
            return;
        };
        if let Some(f) = from {
            w.pending.remove(&f);
        }
        if let Some(b) = best {
            w.best = w.best.max(b);
        }
        if w.done || !w.pending.is_empty() {
            return;
        }
        w.done = true;
        let (id, best) = (w.id, w.best);
        match w.parent {
            Some(p) => cx.send(p, EchoMsg::Echo { wave: id, best }),
            None => self.nb.flood(cx, None, best.1, EchoMsg::Leader(best.1)),
        }
    }
}

impl Election for Echo {
    type Msg = EchoMsg;
    type Timer = ();

    fn new(setup: &Setup) -> Self {
        // Bad weights are refused before any node is built (registry::check_setup).
        let capability = capability(setup, setup.me).unwrap_or_else(|_| default_capability(setup.seed, setup.me));
        Echo {
            me: setup.me,
            capability,
            wave: None,
            nb: Neighbours::new(setup),
        }
    }

    fn start(&mut self, cx: &mut ElectionCx<'_, Self>) {
        let me = self.me;
        self.join(cx, me, None);
    }

    fn on_msg(&mut self, cx: &mut ElectionCx<'_, Self>, from: NodeId, msg: EchoMsg) {
        if !self.nb.receive(cx, from) {
            return;
        }
        let current = self.wave.as_ref().map(|w| w.id);
        match msg {
            EchoMsg::Leader(l) => self.nb.flood(cx, Some(from), l, EchoMsg::Leader(l)),
            EchoMsg::Election { wave } if cx.view().leader().is_some() => {
                cx.discard(
                    from,
                    format!("wave {wave}: election of term {} is already decided", cx.view().term()),
                );
            }
            EchoMsg::Election { wave } if current.is_none_or(|c| wave > c) => {
                cx.note(format!("joined wave {wave}: node {from} is my parent"));
                self.join(cx, wave, Some(from))
            }
            EchoMsg::Election { wave } if Some(wave) == current => {
                cx.note(format!(
                    "ELECTION of wave {wave} from node {from} crossed mine: it counts as its answer"
                ));
                self.answered(cx, Some(from), None)
            }
            EchoMsg::Election { wave } => cx.discard(from, format!("wave {wave} dies out in a higher wave")),
            EchoMsg::Echo { wave, best } if Some(wave) == current => self.answered(cx, Some(from), Some(best)),
            EchoMsg::Echo { wave, .. } => cx.discard(from, format!("echo of wave {wave}, not the current one")),
        }
    }

    fn on_liveness(&mut self, _cx: &mut ElectionCx<'_, Self>, from: NodeId, _probe: bool) {
        self.nb.liveness(from);
    }

    fn reset(&mut self) {
        self.wave = None;
        self.nb.reset();
    }

    fn awaited(&self) -> Vec<NodeId> {
        match &self.wave {
            Some(w) if !w.done => w.pending.iter().copied().collect(),
            Some(w) => w.parent.into_iter().collect(),
            None => Vec::new(),
        }
    }

    fn awaited_silent(&mut self, cx: &mut ElectionCx<'_, Self>, nodes: Vec<NodeId>) {
        Neighbours::awaited_silent(self, cx, nodes);
    }
}

impl Waits for Echo {
    fn neighbours(&mut self) -> &mut Neighbours {
        &mut self.nb
    }

    fn lost(&mut self, cx: &mut ElectionCx<'_, Self>, n: NodeId) {
        self.answered(cx, Some(n), None);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::{
        self, connected_without, edges, elect, net, one_leader_per_term, setups, shuffled, terms, topologies, Graph,
    };
    use super::{capability, Echo};
    use crate::algo::election::Leadership;
    use crate::algo::{NodeId, Setup};
    use crate::sim::Sim;
    use std::time::Duration;

    fn sim_with(setups: Vec<Setup>, seed: u64, max_ms: u64) -> Sim<Leadership<Echo>> {
        testkit::sim::<Echo>(net(seed, max_ms), setups)
    }

    /// The winner among `live`: the largest (capability, id).
    fn best(setup: &Setup, live: &[NodeId]) -> NodeId {
        live.iter()
            .map(|&i| (capability(setup, i).unwrap(), i))
            .max()
            .unwrap()
            .1
    }

    #[test]
    fn worked_example_on_a_line_with_weights() {
        // Line 1-2-3-4, only 1 initiates; capabilities 5, 3, 9, 9: the tie goes to the larger id.
        // ELECTION 1->2->3->4 (3), ECHO 4->3->2->1 (3): 2m = 6; LEADER back down: 2m - (n - 1) = 3.
        let all = [1, 2, 3, 4];
        let g: Graph = [(1, vec![2]), (2, vec![1, 3]), (3, vec![2, 4]), (4, vec![3])].into();
        let mut st = setups(&all, &g, &[1], 1);
        for s in &mut st {
            s.opts.insert("weights".into(), "1:5, 2:3, 3:9, 4:9".into());
        }
        let mut s = sim_with(st, 1, 1);
        assert_eq!(elect(&mut s, None), 4);
        s.run_for(Duration::from_millis(50));
        assert_eq!((s.sent("ELECTION"), s.sent("ECHO"), s.sent("LEADER")), (3, 3, 3));
    }

    /// One initiator: exactly 2m ELECTION/ECHO (n - 1 of them ECHO, up the tree), then the flood.
    #[test]
    fn one_initiator_counts_exactly_on_every_topology() {
        for seed in 0..15 {
            let n = 1 + seed * 7;
            let all = shuffled(n, seed);
            for (name, g) in topologies(&all, seed) {
                let init = all[seed as usize % all.len()];
                let st = setups(&all, &g, &[init], seed);
                let expect = best(&st[0], &all);
                let mut s = sim_with(st, seed, 4);
                assert_eq!(elect(&mut s, None), expect, "{name}, seed {seed}");
                s.run_for(Duration::from_millis(100));
                let (m, n) = (edges(&g), n as usize);
                assert_eq!(s.sent("ELECTION") + s.sent("ECHO"), 2 * m, "{name}, seed {seed}");
                assert_eq!(s.sent("ECHO"), n - 1, "{name}, seed {seed}: one per tree edge");
                assert_eq!(s.sent("LEADER"), 2 * m - (n - 1), "{name}, seed {seed}");
                assert_eq!(s.sent("PROBE"), 0, "{name}, seed {seed}");
                assert_eq!(terms(&s).len(), 1, "{name}, seed {seed}");
            }
        }
    }

    #[test]
    fn concurrent_initiators_the_highest_wave_decides() {
        for seed in 0..30 {
            let n = 5 + seed * 3;
            let all = shuffled(n, seed);
            let (name, g) = topologies(&all, seed).swap_remove(seed as usize % 6);
            let initiators: Vec<NodeId> = all.iter().copied().filter(|&i| (i * 7 + seed) % 3 == 0).collect();
            let st = setups(&all, &g, &initiators, seed);
            let expect = best(&st[0], &all);
            let mut s = sim_with(st, seed, 5);
            assert_eq!(elect(&mut s, None), expect, "{name}, seed {seed}");
            s.run_for(Duration::from_millis(100));
            assert_eq!(terms(&s).len(), 1, "{name}, seed {seed}");
            // The first node to know the winner is the root of the highest initiator's wave.
            let first = s.events("leader")[0].node;
            assert_eq!(first, initiators.iter().max().copied(), "{name}, seed {seed}");
            assert_eq!(
                s.sent("LEADER"),
                2 * edges(&g) - (n as usize - 1),
                "{name}, seed {seed}"
            );
        }
    }

    #[test]
    fn default_capabilities_are_the_same_at_every_node() {
        let all = shuffled(20, 3);
        let st = setups(&all, &testkit::complete(&all), &[], 42);
        for a in &st {
            for &x in &all {
                assert_eq!(capability(a, x), capability(&st[0], x));
                assert!((1..=100).contains(&capability(a, x).unwrap()));
            }
        }
        let other = setups(&all, &testkit::complete(&all), &[], 43);
        assert!(
            all.iter().any(|&x| capability(&st[0], x) != capability(&other[0], x)),
            "the seed matters"
        );
    }

    #[test]
    fn bad_weights_are_refused_with_a_reason() {
        let all = [1, 2, 3];
        for (w, why) in [
            ("1:x", "not ID:CAPABILITY"),
            ("1=4", "not ID:CAPABILITY"),
            ("9:3", "node 9 is not a member"),
            ("1:2,1:3", "given twice"),
        ] {
            let mut s = setups(&all, &testkit::complete(&all), &[], 1).remove(0);
            s.opts.insert("weights".into(), w.into());
            let e = crate::catalog::check_setup("echo", &s).unwrap_err();
            assert!(e.contains(why), "{w}: {e}");
        }
    }

    #[test]
    fn leader_crash_re_elects_the_best_of_the_rest() {
        for seed in 0..24 {
            let n = 4 + seed % 20;
            let all = shuffled(n, seed);
            let (name, g) = topologies(&all, seed).swap_remove(seed as usize % 6);
            let st = setups(&all, &g, &all[..1], seed);
            let first = best(&st[0], &all);
            if !connected_without(&g, &[first]) {
                continue;
            }
            let rest: Vec<NodeId> = all.iter().copied().filter(|&x| x != first).collect();
            let second = best(&st[0], &rest);
            let mut s = sim_with(st, seed, 3);
            assert_eq!(elect(&mut s, None), first, "{name}, seed {seed}");
            s.run_for(Duration::from_millis(250));
            s.crash(first);
            assert_eq!(elect(&mut s, Some(first)), second, "{name}, seed {seed}");
            one_leader_per_term(&s);
        }
    }

    /// A crash at some moment of the election; `from_start`: before anyone heard from it.
    fn crash_during_election(from_start: bool) {
        let mut tried = 0;
        for seed in 0..80 {
            let n = 5 + seed % 25;
            let all = shuffled(n, seed);
            let (name, g) = topologies(&all, seed).swap_remove(seed as usize % 6);
            let victim = all[(seed as usize * 5) % all.len()];
            if !connected_without(&g, &[victim]) {
                continue;
            }
            tried += 1;
            let initiators: Vec<NodeId> = all
                .iter()
                .copied()
                .filter(|&i| (i + seed) % 4 == 0 && i != victim)
                .collect();
            let st = setups(&all, &g, &initiators, seed);
            let rest: Vec<NodeId> = all.iter().copied().filter(|&x| x != victim).collect();
            let expect = best(&st[0], &rest);
            let mut s = sim_with(st, seed, 5);
            if !from_start {
                s.run_for(Duration::from_millis(2 + seed % 12));
            }
            s.crash(victim);
            let l = elect(&mut s, None);
            let l = if l == victim { elect(&mut s, Some(victim)) } else { l };
            assert_ne!(l, victim);
            if from_start {
                assert_eq!(l, expect, "{name}, seed {seed}, crashed {victim}");
            }
            one_leader_per_term(&s);
        }
        assert!(tried > 40);
    }

    #[test]
    fn node_dead_before_the_election_is_left_out() {
        crash_during_election(true);
    }

    #[test]
    fn crash_mid_election_still_ends_with_one_live_leader() {
        crash_during_election(false);
    }

    #[test]
    fn paused_leader_wakes_up_and_follows_the_new_one() {
        let all = shuffled(8, 6);
        let st = setups(&all, &testkit::launched("grid", &all, 6), &all, 6);
        let first = best(&st[0], &all);
        let rest: Vec<NodeId> = all.iter().copied().filter(|&x| x != first).collect();
        let second = best(&st[0], &rest);
        testkit::pause_and_resume(&mut sim_with(st, 6, 2), first, second);
    }

    #[test]
    fn loss_and_duplication_never_give_two_leaders_a_term() {
        for seed in 0..20 {
            let all = shuffled(8, seed);
            testkit::lossy::<Echo>(
                setups(&all, &testkit::launched("random:3", &all, seed), &all, seed),
                seed,
            );
        }
    }

    #[test]
    fn a_restarted_leaf_cut_off_from_the_mesh_claims_no_term_decided_before() {
        // Issue 23 item 7: line 1-2-3-4 as a sparse mesh; term 1 is won at the start. Leaf 1 and
        // its only neighbour 2 are killed; 1 restarts alone. It came back at term 0 and, hearing
        // nobody, elected itself in term 1: two leaders of term 1. It keeps its term now.
        for seed in 0..5 {
            let all = [1, 2, 3, 4];
            let g: Graph = [(1, vec![2]), (2, vec![1, 3]), (3, vec![2, 4]), (4, vec![3])].into();
            let mut st = setups(&all, &g, &all, seed);
            for s in &mut st {
                s.opts.insert("mesh".into(), "true".into());
            }
            let mut s = sim_with(st, seed, 2);
            let first = elect(&mut s, None);
            let won = s.node(first).belief().0;
            if first <= 2 {
                continue; // the story needs the leader on the far side
            }
            s.crash(1);
            s.crash(2);
            s.run_for(Duration::from_millis(100));
            s.restart(1);
            assert!(
                s.node(1).belief().0 >= won,
                "seed {seed}: the restarted leaf kept its term"
            );
            s.run_for(Duration::from_secs(5));
            assert_eq!(
                s.node(1).belief().1,
                Some(1),
                "seed {seed}: alone, it leads its own side"
            );
            one_leader_per_term(&s);
        }
    }
}
