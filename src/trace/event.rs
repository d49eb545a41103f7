//! One line of a `.jsonl` trace: common fields plus one event kind.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A node id, as on the wire and in traces.
pub type NodeId = u64;

/// An absent `count` (a trace written before drops were tallied) is one datagram.
fn one() -> u64 {
    1
}

/// One trace line: the common fields of docs/trace.md and the event itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// True time: host CLOCK_REALTIME in microseconds (simulated time in the simulator).
    pub t: u64,
    /// The node the event happened at (absent for the launcher's own lines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<NodeId>,
    /// The node's Lamport clock after the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lamport: Option<u64>,
    /// The node's simulated physical clock, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pt: Option<u64>,
    /// The node's vector clock after the event, when vector clocks are on (`{"<id>": count}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vc: Option<crate::clock::VectorClock>,
    /// The node's hybrid logical clock after the event, `[l, c]` (l in microseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hlc: Option<(u64, u32)>,
    /// The event kind and its fields (`ev` and the rest).
    #[serde(flatten)]
    pub event: Event,
}

impl Record {
    /// A line with no clock stamps: the launcher's, or the simulator's faults.
    pub(crate) fn unstamped(t: u64, node: Option<NodeId>, event: Event) -> Record {
        Record {
            t,
            node,
            lamport: None,
            pt: None,
            vc: None,
            hlc: None,
            event,
        }
    }
}

/// Every event kind of docs/trace.md. Unknown kinds read back as `Other`, so old readers survive new kinds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "ev", rename_all = "snake_case")]
// Each kind's fields are the columns of its row in docs/trace.md, the contract they keep.
#[allow(missing_docs)]
pub enum Event {
    // ---- node events ----
    /// The node is up and bound.
    Start {
        addr: String,
        algo: String,
        pid: u32,
        peers: Vec<NodeId>,
    },
    /// A datagram left; `seq` is the sender's per-boot sequence number, so (node, seq) names the message.
    Send {
        to: NodeId,
        msg: String,
        bytes: usize,
        #[serde(default)]
        seq: u64,
        /// The message's content in brief (`ELECTION(3, term=2)`); empty in older traces.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        brief: String,
    },
    /// A datagram was accepted; (`from`, `seq`) names the message, as in the sender's `send`.
    Recv {
        from: NodeId,
        msg: String,
        bytes: usize,
        #[serde(default)]
        seq: u64,
        /// The message's content in brief (`ELECTION(3, term=2)`); empty in older traces.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        brief: String,
    },
    /// Datagrams refused by the engine (malformed, too large, unknown sender, forged,
    /// replayed, foreign run, ...): `count` of them of one `class` within an interval; `reason`
    /// and `addr` are the first one's.
    Drop {
        reason: String,
        addr: String,
        #[serde(default = "one")]
        count: u64,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        class: String,
    },
    /// The protocol chose to ignore a message it accepted (stale term, already decided, ...).
    Ignore { from: NodeId, reason: String },
    /// A protocol's decision or state change in words (`ELECTION(3) swallowed: 3 < my id 5`);
    /// `level` is `info` for state changes, `debug` for decisions about single messages.
    Note {
        text: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        level: String,
    },
    /// The failure detector now suspects `target`.
    Suspect {
        target: NodeId,
        silence_ms: u64,
        #[serde(default)]
        timeout_ms: u64,
        /// What went unanswered: `heartbeat`, `ack` (of a forwarded message) or `probe`; with
        /// other detectors `phi` (phi over its threshold), `swim` (a failed SWIM probe) or
        /// `gossip` (a SWIM suspicion heard from another member).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        cause: String,
        /// The phi detector: the target's phi when suspected.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        phi: Option<f64>,
        /// SWIM: the target's incarnation suspected.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        incarnation: Option<u64>,
    },
    /// The suspicion was withdrawn.
    Unsuspect { target: NodeId },
    /// SWIM: this node heard itself suspected (or declared dead) at `incarnation` and refutes
    /// it with the higher `refuted_by`.
    Refute { incarnation: u64, refuted_by: u64 },
    /// SWIM: the suspicion of `target` (at `incarnation`) outlived its timeout: declared dead
    /// (it stays suspected until it refutes); `confirmations`: independent suspicions heard.
    Confirm {
        target: NodeId,
        incarnation: u64,
        confirmations: u64,
        suspected_ms: u64,
    },
    /// This node starts (or joins) an election.
    ElectionStart { term: u64 },
    /// This node now believes `leader` leads `term`.
    Leader { leader: NodeId, term: u64 },
    /// This node stops believing it leads.
    StepDown { term: u64, reason: String },
    /// Wants the critical section.
    CsRequest { req: u64 },
    /// Entered the critical section.
    CsEnter {
        req: u64,
        #[serde(default)]
        token: Option<u64>,
    },
    /// Left the critical section.
    CsExit { req: u64 },
    /// Physical clock corrected: the clock, as it read at this event, is to move by `offset_us`.
    ClockAdjust {
        offset_us: i64,
        rtt_us: u64,
        bound_us: u64,
        /// The node whose clock the estimate refers to (Cristian's server, Berkeley's master).
        #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
        reference: Option<NodeId>,
        /// The `seq` of the reference's message the estimate rests on (its `send` event's `pt`
        /// is the reference's clock at the send).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ref_seq: Option<u64>,
        /// What the corrected clock aims at: the reference's clock plus this (Berkeley's average).
        #[serde(default, skip_serializing_if = "is_zero")]
        ref_offset_us: i64,
        /// Applied at once (`--set step=true`) rather than slewed.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        step: bool,
    },
    /// A node's part of a recorded global state (bank): its balance and the money it counted
    /// in its incoming channels. `method`: `initial` (snap 0, the starting balance),
    /// `chandy-lamport` (snap: the initiator's count) or `clock` (snap: the physical-clock time
    /// of the recording, in ms).
    Snapshot {
        snap: u64,
        method: String,
        balance: u64,
        in_flight: u64,
    },
    /// Clean shutdown, with counters.
    Stop {
        sent: u64,
        received: u64,
        dropped: u64,
        /// Messages the protocol accepted but chose to ignore (`ignore` events).
        #[serde(default)]
        ignored: u64,
        /// Datagrams the network filter (`coordlab net`, user backend) dropped before the engine.
        #[serde(default, skip_serializing_if = "is_zero_u64")]
        net_dropped: u64,
        by_type: BTreeMap<String, u64>,
        /// The datagrams the `sent` messages left in: fewer, as a step's messages to one node
        /// share one (0, absent: not counted -- the simulator, older traces).
        #[serde(default, skip_serializing_if = "is_zero_u64")]
        datagrams: u64,
    },
    // ---- launcher events (faults.jsonl) ----
    /// A node process was spawned.
    Spawn { pid: u32, addr: String },
    /// SIGSTOP.
    Pause { pid: u32 },
    /// SIGCONT.
    Resume { pid: u32 },
    /// A signal that ends the process.
    Kill { pid: u32, signal: String },
    /// The node was started again after a kill.
    Restart { pid: u32 },
    /// The process ended.
    Exit { pid: u32, status: String },
    /// The launcher began its clean shutdown of every node (the end of the observed run).
    Shutdown {},
    /// Directed links cut (`[from, to]`; a two-way cut lists both directions).
    Cut {
        #[serde(default)]
        links: Vec<(NodeId, NodeId)>,
        /// Which backend enforces it: `kernel` (nftables) or `user` (the nodes' receive filter).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        backend: String,
    },
    /// The nodes split into `sides` that cannot reach one another; `nodes` is the first side.
    Partition {
        #[serde(default)]
        nodes: Vec<NodeId>,
        /// Every side (a node the command did not name is on a side of its own); empty in
        /// older traces: then `nodes` is cut off from the rest.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        sides: Vec<Vec<NodeId>>,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        backend: String,
    },
    /// Links restored: the directed `links` (made perfect: no cut, partition, loss or delay),
    /// or every rule lifted when `links` is empty.
    Heal {
        #[serde(default)]
        nodes: Vec<NodeId>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        links: Vec<(NodeId, NodeId)>,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        backend: String,
    },
    /// From now on `pct` percent of the datagrams on the directed `links` (every link when
    /// empty) are lost.
    Loss {
        #[serde(default)]
        pct: u32,
        #[serde(default)]
        links: Vec<(NodeId, NodeId)>,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        backend: String,
    },
    /// From now on datagrams on the directed `links` (every link when empty) are held `ms`
    /// plus or minus up to `jitter_ms` (uniform, never below zero) before delivery.
    Delay {
        #[serde(default)]
        ms: u64,
        #[serde(default)]
        jitter_ms: u64,
        #[serde(default)]
        links: Vec<(NodeId, NodeId)>,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        backend: String,
    },
    /// A network rule that could not be applied mid-run, in words.
    NetError {
        #[serde(default)]
        what: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        backend: String,
    },
    // ---- resource events (resource.jsonl) ----
    /// The shared resource was accessed.
    Access {
        /// The node that accessed it (the record's `node` is the resource's own id).
        #[serde(default)]
        by: NodeId,
        req: u64,
        token: Option<u64>,
        phase: String,
    },
    /// Two holders at once.
    Violation { nodes: Vec<NodeId> },
    /// A stale fencing token was refused.
    RejectStale {
        /// The node whose begin was refused.
        #[serde(default)]
        by: NodeId,
        token: u64,
        highest: u64,
    },
    /// An event kind this reader does not know.
    #[serde(other)]
    Other,
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

impl Event {
    /// The `ev` name of this event, as written in the trace.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Start { .. } => "start",
            Event::Send { .. } => "send",
            Event::Recv { .. } => "recv",
            Event::Drop { .. } => "drop",
            Event::Ignore { .. } => "ignore",
            Event::Note { .. } => "note",
            Event::Suspect { .. } => "suspect",
            Event::Unsuspect { .. } => "unsuspect",
            Event::Refute { .. } => "refute",
            Event::Confirm { .. } => "confirm",
            Event::ElectionStart { .. } => "election_start",
            Event::Leader { .. } => "leader",
            Event::StepDown { .. } => "step_down",
            Event::CsRequest { .. } => "cs_request",
            Event::CsEnter { .. } => "cs_enter",
            Event::CsExit { .. } => "cs_exit",
            Event::ClockAdjust { .. } => "clock_adjust",
            Event::Snapshot { .. } => "snapshot",
            Event::Stop { .. } => "stop",
            Event::Spawn { .. } => "spawn",
            Event::Pause { .. } => "pause",
            Event::Resume { .. } => "resume",
            Event::Kill { .. } => "kill",
            Event::Restart { .. } => "restart",
            Event::Exit { .. } => "exit",
            Event::Shutdown {} => "shutdown",
            Event::Cut { .. } => "cut",
            Event::Partition { .. } => "partition",
            Event::Heal { .. } => "heal",
            Event::Loss { .. } => "loss",
            Event::Delay { .. } => "delay",
            Event::NetError { .. } => "net_error",
            Event::Access { .. } => "access",
            Event::Violation { .. } => "violation",
            Event::RejectStale { .. } => "reject_stale",
            Event::Other => "other",
        }
    }

    /// The event in plain words, for the human log.
    pub fn describe(&self, me: NodeId) -> String {
        if let Some(d) = self.datagram() {
            let (name, seq, peer, bytes) = (or_name(d.brief, d.msg), d.seq, d.peer, d.bytes);
            return match d.sent {
                true => format!("sent {name} #{seq} to node {peer} ({bytes} bytes)"),
                false => format!("got {name} #{seq} from node {peer} ({bytes} bytes)"),
            };
        }
        match self {
            Event::Start { addr, algo, pid, peers } => {
                format!("node {me} up on {addr} (pid {pid}), running {algo}; peers {peers:?}")
            }
            Event::Drop { reason, addr, count, .. } if *count > 1 => {
                format!("dropped {count} datagrams in the last second, the first from {addr}: {reason}")
            }
            Event::Drop { reason, addr, .. } => format!("dropped a datagram from {addr}: {reason}"),
            Event::Ignore { from, reason } => format!("ignored a message from node {from}: {reason}"),
            Event::Note { text, .. } => text.clone(),
            Event::Suspect {
                target, phi: Some(phi), silence_ms, ..
            } => format!("suspect node {target}: phi {phi:.2} after {silence_ms} ms of silence"),
            Event::Suspect {
                target, incarnation: Some(inc), cause, ..
            } if cause == "gossip" => format!("suspect node {target} (incarnation {inc}): another member suspects it"),
            Event::Suspect {
                target, incarnation: Some(inc), ..
            } => format!("suspect node {target} (incarnation {inc}): no answer to a direct or indirect probe"),
            Event::Suspect { target, silence_ms, timeout_ms, cause, .. } => match cause.as_str() {
                "ack" => format!(
                    "suspect node {target}: it did not acknowledge a forwarded message within {timeout_ms} ms \
                     (silent for {silence_ms} ms)"
                ),
                "probe" => format!(
                    "suspect node {target}: it did not answer a probe within {timeout_ms} ms (silent for {silence_ms} ms)"
                ),
                _ => format!("suspect node {target}: no heartbeat for {silence_ms} ms (timeout {timeout_ms} ms)"),
            },
            Event::Unsuspect { target } => {
                format!("node {target} is alive after all: suspicion withdrawn")
            }
            Event::Refute { incarnation, refuted_by } => {
                format!("others suspect me at incarnation {incarnation}: refuted with incarnation {refuted_by}")
            }
            Event::Confirm {
                target,
                incarnation,
                confirmations,
                suspected_ms,
            } => format!(
                "node {target} (incarnation {incarnation}) confirmed dead after {suspected_ms} ms of suspicion \
                 ({confirmations} confirmations)"
            ),
            Event::ElectionStart { term } => format!("election starts, term {term}"),
            Event::Leader { leader, term } if *leader == me => {
                format!("I am the leader of term {term}")
            }
            Event::Leader { leader, term } => format!("node {leader} leads term {term}"),
            Event::StepDown { term, reason } => {
                format!("step down as leader of term {term}: {reason}")
            }
            Event::CsRequest { req } => format!("request critical section (req {req})"),
            Event::CsEnter { req, token: Some(token) } => {
                format!("enter critical section (req {req}, fencing token {token})")
            }
            Event::CsEnter { req, token: None } => format!("enter critical section (req {req})"),
            Event::CsExit { req } => format!("leave critical section (req {req})"),
            Event::ClockAdjust {
                offset_us,
                rtt_us,
                bound_us,
                ..
            } => {
                format!("clock adjusted by {offset_us} us (rtt {rtt_us} us, error bound {bound_us} us)")
            }
            Event::Snapshot {
                snap,
                method,
                balance,
                in_flight,
            } => format!("{method} snapshot {snap}: balance {balance}, {in_flight} in incoming channels"),
            Event::Stop {
                sent,
                received,
                dropped,
                ..
            } => {
                format!("stopping: sent {sent}, received {received}, dropped {dropped}")
            }
            other => other.kind().to_string(),
        }
    }
}

/// The brief content when the trace has one, else the type name.
fn or_name<'a>(brief: &'a str, name: &'a str) -> &'a str {
    if brief.is_empty() {
        name
    } else {
        brief
    }
}

#[cfg(test)]
mod tests {
    use super::Event;

    #[test]
    fn an_entry_names_its_fencing_token_as_a_number_or_not_at_all() {
        let with = Event::CsEnter {
            req: 2,
            token: Some(4_294_967_297),
        };
        assert_eq!(
            with.describe(1),
            "enter critical section (req 2, fencing token 4294967297)"
        );
        let without = Event::CsEnter { req: 2, token: None };
        assert_eq!(without.describe(1), "enter critical section (req 2)");
    }
}
