//! The keys every election takes: those of its [`Leadership`](super::Leadership) wrapper,
//! declared once.

use crate::algo::options::{options, Kind};
use crate::algo::weights::MAX_WEIGHT;
use crate::algo::NodeId;

options! {
    /// The election family's keys.
    pub(crate) struct ElectionOptions {
        majority: bool = false, Kind::Bool,
            "split-brain contained: votes of a weighted majority, check-quorum, pre-vote";
        weights: Vec<(NodeId, u64)> = none shown "1 each", Kind::IdWeights { max: MAX_WEIGHT },
            "node weights: votes under majority=true; echo's capabilities (unlisted: seeded 1..100)";
        mesh: bool = false, Kind::Bool,
            "leader heartbeats flood over the neighbours (coordlab mesh sets it)", Launcher;
    }
}
