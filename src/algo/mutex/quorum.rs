//! The majority quorum of the course: every participant is also one of n coordinators
//! (voters); a participant needs the grants of m > n/2 of them (`--set quorum=m`, default the
//! smallest majority), so that any two quorums share a coordinator. Requests carry request
//! ids, so that queued requests of one participant are told apart; releases go to all n.
//!
//! The rules are those of [`voting`](super::voting) with every voter asked and `m` votes needed,
//! fencing tokens included. A coordinator that restarts forgets what it granted (the course's
//! amnesia, probability P_v: `coordlab quorum-risk`); `--durable` makes it persist its grant,
//! stored before it answers.
//!
//! Messages per entry without contention: n REQUEST, n GRANT, n RELEASE (this node's own
//! coordinator included); under contention also INQUIRE, RELINQUISH and FAILED.

use super::ballot::{Ballot, Voter};
use crate::algo::options::{options, Kind};
use crate::algo::{NodeId, Setup};

/// A quorum node: participant and coordinator.
pub type Quorum = Voter<Majority>;

/// The majority ballot: every coordinator asked, `m` grants needed.
#[derive(Debug, Clone)]
pub struct Majority;

options! {
    /// The quorum's own keys (besides the voters' `durable`).
    pub(crate) struct QuorumOptions {
        quorum: u64 = 0, Kind::Int { min: 0, max: u64::MAX },
            "m, the grants needed: a majority of the n coordinators (0: the smallest, n/2+1)";
    }
}

/// The smallest majority of `n` coordinators.
pub(crate) fn smallest_majority(n: usize) -> usize {
    n / 2 + 1
}

impl QuorumOptions {
    /// The grants needed among `n` coordinators: `quorum`, or the smallest majority when 0;
    /// the error says why a given `quorum` is no majority.
    pub fn size(&self, n: usize) -> Result<usize, String> {
        let m = match self.quorum as usize {
            0 => smallest_majority(n),
            m => m,
        };
        if m * 2 <= n || m > n {
            return Err(format!(
                "--set quorum={m}: a quorum of {n} coordinators must be a majority, more than {} and at most {n}",
                n / 2
            ));
        }
        Ok(m)
    }
}

/// The quorum size of `setup` among `n` coordinators: `quorum=m`, default n/2 + 1.
pub(crate) fn quorum_size(setup: &Setup, n: usize) -> Result<usize, String> {
    QuorumOptions::from_setup(setup)?.size(n)
}

impl Ballot for Majority {
    const NAME: &'static str = "quorum";

    fn ballot(setup: &Setup, peers: &[NodeId]) -> (Vec<NodeId>, usize) {
        let m = quorum_size(setup, peers.len()).unwrap_or(smallest_majority(peers.len()));
        (peers.to_vec(), m)
    }

    fn check(setup: &Setup) -> Result<(), String> {
        let n = setup.members.iter().filter(|&&m| m != super::RESOURCE_ID).count();
        quorum_size(setup, n).map(|_| ())
    }
}
