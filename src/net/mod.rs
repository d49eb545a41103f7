//! Network faults between real nodes: one vocabulary (`net cut 2 10`, `net partition 1,2 3`,
//! `net heal`, `net loss 20`, `net delay 50:20`, `net status`), the rules it puts in force, and
//! the trace events that record them.
//!
//! [`rules`] is pure: the parser, [`NetRules`] (what the network is doing) and the mapping
//! between actions and `faults.jsonl` events. The checker folds `faults.jsonl` through
//! [`NetRules::apply_event`] to know what the network was doing at any time.

pub mod action;
mod netlink;
pub mod nft;
pub mod rules;

pub use action::{Link, NetAction, NetCommand};
pub use rules::NetRules;
