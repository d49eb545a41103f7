//! The majority quorum of the course: every participant is also one of n coordinators
//! (voters); a participant needs the grants of m > n/2 of them (`--set quorum=m`, default the
//! smallest majority), so that any two quorums share a coordinator. Requests carry request
//! ids, so that queued requests of one participant are told apart; releases go to all n.
//!
//! The rules are those of [`voting`](super::voting) with every voter asked and `m` votes needed.
//! A coordinator that restarts forgets what it granted (the course's amnesia, probability P_v:
//! `coordlab quorum-risk`); `--durable` makes it persist its grant, fsynced before it answers.
//!
//! Messages per entry without contention: n REQUEST, n GRANT, n RELEASE (this node's own
//! coordinator included); under contention also INQUIRE, RELINQUISH and FAILED.

use super::options::{boolean, number};
use super::voting::{Durable, VoteMsg, Voting};
use super::wrapper::{MCx, Protocol};
use crate::algo::{NodeId, Setup};

/// A quorum node: participant and coordinator.
#[derive(Debug, Clone)]
pub struct Quorum {
    /// The voting state.
    pub voting: Voting,
    retry: std::time::Duration,
}

/// The quorum size of `setup` among `n` coordinators: `quorum=m`, default n/2 + 1.
pub fn quorum_size(setup: &Setup, n: usize) -> Result<usize, String> {
    let m = match number(setup, "quorum", 0)? as usize {
        0 => n / 2 + 1,
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

/// What a restarted voter persisted, if anything.
pub fn restored(setup: &Setup) -> Option<Durable> {
    setup.durable.as_ref().and_then(|b| serde_json::from_slice(b).ok())
}

/// The retry timer of the voting protocols.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Retry;

impl Protocol for Quorum {
    type Msg = VoteMsg;
    type Timer = Retry;

    fn new(setup: &Setup, peers: &[NodeId]) -> Self {
        let m = quorum_size(setup, peers.len()).unwrap_or(peers.len() / 2 + 1);
        let durable = boolean(setup, "durable", false).unwrap_or(false);
        Quorum {
            voting: Voting::new(peers.to_vec(), m, durable, restored(setup)),
            retry: setup.timeout,
        }
    }

    fn check(setup: &Setup) -> Result<(), String> {
        let n = setup.members.iter().filter(|&&m| m != super::RESOURCE_ID).count();
        quorum_size(setup, n)?;
        boolean(setup, "durable", false).map(|_| ())
    }

    fn request(&mut self, mcx: &mut MCx<'_, '_, Self>, req: u64) {
        self.voting.request(mcx, req);
        mcx.set_timer(Retry, self.retry);
    }

    fn release(&mut self, mcx: &mut MCx<'_, '_, Self>, req: u64) {
        self.voting.release(mcx, req);
    }

    fn on_msg(&mut self, mcx: &mut MCx<'_, '_, Self>, from: NodeId, msg: VoteMsg) {
        self.voting.on_msg(mcx, from, msg);
    }

    fn on_timer(&mut self, mcx: &mut MCx<'_, '_, Self>, _t: Retry) {
        if self.voting.retry(mcx) {
            mcx.set_timer(Retry, self.retry);
        }
    }
}
