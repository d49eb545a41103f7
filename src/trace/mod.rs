//! The run directory and event schema of `docs/trace.md`: events, writer, reader.

mod datagram;
pub(crate) mod encode;
mod event;
pub(crate) mod lines;
pub(crate) mod mapped;
pub mod messages;
mod parse;
mod parse_direct;
#[cfg(test)]
mod parse_direct_tests;
mod reader;
pub mod regular;
mod vc_changes;
mod writer;

pub use encode::encode_line;
pub use event::{Event, NodeId, Record};
pub use mapped::MappedTrace;
pub use reader::{read_jsonl, read_jsonl_file, BadLine, Jsonl, RunDir, RunInfo, RunNode};
pub use vc_changes::VcChanges;
pub use writer::{wall_us, JsonlWriter};

/// The node whose trace a run writes as `resource.jsonl` rather than `node-0.jsonl`: a
/// mutual-exclusion run's shared resource.
pub(crate) const RESOURCE_NODE: NodeId = 0;
