//! Distributed mutual exclusion: a wrapper ([`Mutex`]) that runs the workload (think, request,
//! hold the shared resource, release) and hosts one textbook protocol, and the shared resource
//! itself ([`resource`]), which catches two holders at once.
//!
//! One file per protocol, each with its rules at the top: [`central`], [`token_ring`],
//! [`ricart_agrawala`], [`lamport`], [`suzuki_kasami`], [`quorum`] and [`maekawa`] (the
//! same [`voting`] rules; each says in [`ballot`] whom it asks and how many votes it needs).

pub mod ballot;
mod ceiling;
pub mod central;
mod central_detector;
#[cfg(test)]
mod central_detector_tests;
#[cfg(test)]
mod hosted_detector_tests;
pub mod lamport;
pub mod maekawa;
pub mod options;
mod peer_watch;
pub mod quorum;
pub mod resource;
pub mod ricart_agrawala;
pub mod suzuki_kasami;
pub mod token_ring;
pub mod voting;
#[cfg(test)]
mod voting_detector_tests;
mod wrapper;

#[cfg(test)]
mod every_protocol_tests;
#[cfg(test)]
mod link_tests;
#[cfg(test)]
mod maekawa_tests;
#[cfg(test)]
mod restart_tests;
#[cfg(test)]
pub(crate) mod testkit;
#[cfg(test)]
mod tests;

pub use resource::{Resource, ResourceNode};
pub use wrapper::{Ask, Mutex, MutexCx, MutexView, MxMsg, MxTimer, Protocol};

use crate::algo::NodeId;

/// The shared resource's node id: it is a member of the cluster like any node, never a
/// participant of the protocol (its trace is the run's `resource.jsonl`).
pub(crate) const RESOURCE_ID: NodeId = crate::trace::RESOURCE_NODE;
