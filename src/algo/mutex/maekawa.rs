//! Maekawa's algorithm (1985) with grid quorums: the participants are laid out row by row in
//! a grid of about sqrt(n) columns; a node's quorum is its whole row plus one node of every
//! other row (the one in its column, or that row's last node where the grid is ragged), so any
//! two quorums meet: each holds one node of the other's row. About 2*sqrt(n) - 1 voters.
//!
//! A node needs the vote of every voter of its quorum; the rules are those of
//! [`voting`](super::voting): REQUEST, LOCKED (named GRANT in the traces), RELEASE, and
//! INQUIRE, RELINQUISH and FAILED so that it cannot deadlock, fencing tokens included.
//!
//! Maekawa assumes reliable channels: the messages ride the shared reliable layer
//! ([`crate::algo::reliable`]: numbered, acknowledged on the messages back or by a bare `CH_ACK`, sent again, delivered once
//! and in order). On learning that a node restarted (see [`Voting::peer_restarted`]): as a
//! voter, a vote locked for its old boot's request is taken back and its queued requests
//! dropped (that boot will never release them); as a participant, a missing or now forgotten
//! vote of it is asked for again at once.
//!
//! Messages per entry: 3K without contention (K the quorum size, own vote included), up to
//! about 5K under contention -- the course's 3*sqrt(n) to 5*sqrt(n) with K about sqrt(n) in
//! its square-grid count.

use super::ballot::{Ballot, Voter};
#[cfg(doc)]
use super::voting::Voting;
use crate::algo::{NodeId, Setup};

/// The grid quorum of participant `me` among `peers` (in their order).
pub(crate) fn grid_quorum(peers: &[NodeId], me: NodeId) -> Vec<NodeId> {
    grid_quorum_avoiding(peers, me, &|_| false).unwrap_or_default()
}

/// A grid quorum of participant `me` with none of the nodes `avoid` picks: the first row
/// from its own on with none of them, plus from every other row its own column's node (that
/// row's last where the grid is ragged) or, if avoided, the next one of that row not avoided.
/// Still a whole row and one node of every row, so it meets every other grid quorum. None when
/// every row holds an avoided node, or a row holds nothing else.
pub(crate) fn grid_quorum_avoiding(
    peers: &[NodeId],
    me: NodeId,
    avoid: &dyn Fn(NodeId) -> bool,
) -> Option<Vec<NodeId>> {
    let n = peers.len();
    let cols = (n as f64).sqrt().ceil().max(1.0) as usize;
    let rows: Vec<&[NodeId]> = peers.chunks(cols).collect();
    let i = peers.iter().position(|&p| p == me).unwrap_or(0);
    let (r, c) = (i / cols, i % cols);
    let whole = (0..rows.len())
        .map(|k| (r + k) % rows.len())
        .find(|&k| !rows[k].iter().any(|&p| avoid(p)))?;
    let mut q: Vec<NodeId> = rows[whole].to_vec();
    for (k, row) in rows.iter().enumerate() {
        if k != whole {
            let at = c.min(row.len() - 1);
            let pick = (0..row.len()).map(|j| row[(at + j) % row.len()]).find(|&p| !avoid(p))?;
            q.push(pick);
        }
    }
    q.sort_unstable();
    q.dedup();
    Some(q)
}

/// A Maekawa node.
pub type Maekawa = Voter<Grid>;

/// The grid ballot: a node's row plus one node of every other row, every vote needed.
#[derive(Debug, Clone)]
pub struct Grid;

impl Ballot for Grid {
    const NAME: &'static str = "maekawa";
    const RELIABLE: bool = true;
    const MOVES: bool = true;

    fn ballot(setup: &Setup, peers: &[NodeId]) -> (Vec<NodeId>, usize) {
        let q = grid_quorum(peers, setup.me);
        let need = q.len();
        (q, need)
    }

    fn avoiding(peers: &[NodeId], me: NodeId, avoid: &dyn Fn(NodeId) -> bool) -> Option<Vec<NodeId>> {
        grid_quorum_avoiding(peers, me, avoid)
    }
}
