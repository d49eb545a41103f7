//! Reads one trace line as a [`Record`]. `send` and `recv` lines, nine in ten of a busy trace,
//! take a direct path: serde reads a flattened, internally tagged enum by buffering every field
//! twice, which made parsing most of what `coordlab check` and the launcher's tail spend.
//! Any line the direct path cannot read (another kind, a missing field, a wrong type) is read
//! the general way, so both paths accept and refuse exactly the same lines.

use super::{Event, NodeId, Record};
use crate::clock::VectorClock;
use serde::Deserialize;
use std::borrow::Cow;

/// The fields a `send` or `recv` line may have (others are ignored, as the general path does).
#[derive(Deserialize)]
struct MessageLine<'a> {
    t: u64,
    #[serde(default)]
    node: Option<NodeId>,
    #[serde(default)]
    lamport: Option<u64>,
    #[serde(default)]
    pt: Option<u64>,
    #[serde(default)]
    vc: Option<crate::clock::VectorClock>,
    #[serde(default)]
    dvc: Option<crate::clock::VectorClock>,
    #[serde(default)]
    hlc: Option<(u64, u32)>,
    #[serde(borrow)]
    ev: Cow<'a, str>,
    #[serde(default)]
    to: Option<NodeId>,
    #[serde(default)]
    from: Option<NodeId>,
    #[serde(default)]
    msg: Option<String>,
    #[serde(default)]
    bytes: Option<usize>,
    #[serde(default)]
    seq: u64,
    #[serde(default)]
    brief: String,
}

impl MessageLine<'_> {
    fn into_record(self) -> Option<(Record, Option<VectorClock>)> {
        let (sent, peer, msg, bytes) = match (&*self.ev, self.to, self.from, self.msg, self.bytes) {
            ("send", Some(to), _, Some(msg), Some(bytes)) => (true, to, msg, bytes),
            ("recv", _, Some(from), Some(msg), Some(bytes)) => (false, from, msg, bytes),
            _ => return None,
        };
        let event = Event::datagram_event(sent, peer, msg, bytes, self.seq, self.brief);
        let rec = Record {
            t: self.t,
            node: self.node,
            lamport: self.lamport,
            pt: self.pt,
            vc: self.vc,
            hlc: self.hlc,
            event,
        };
        Some((rec, self.dvc))
    }
}

/// Only the vector clock changes of a line (`dvc`, see `vc_changes.rs`).
#[derive(Deserialize)]
struct Changes {
    #[serde(default)]
    dvc: Option<VectorClock>,
}

impl Record {
    #[cfg(test)]
    /// Parses one JSON line of a trace.
    /// A line whose clock was written as changes (`dvc`) reads with no `vc`: the readers of
    /// whole files ([`super::Jsonl`]) put it back from the lines before.
    pub(crate) fn from_json(line: &[u8]) -> serde_json::Result<Record> {
        Self::from_json_with_changes(line).map(|(r, _)| r)
    }

    /// Parses one JSON line of a trace, and its vector clock changes (`dvc`) if it has them.
    pub(crate) fn from_json_with_changes(line: &[u8]) -> serde_json::Result<(Record, Option<VectorClock>)> {
        match super::parse_direct::encoder_line(line) {
            Some(r) => Ok(r),
            None => Self::from_json_by_serde(line),
        }
    }

    /// [`from_json_with_changes`](Self::from_json_with_changes) by serde alone: the path every
    /// line the byte scan of `parse_direct.rs` does not take goes.
    pub(super) fn from_json_by_serde(line: &[u8]) -> serde_json::Result<(Record, Option<VectorClock>)> {
        if let Some(r) = serde_json::from_slice::<MessageLine>(line)
            .ok()
            .and_then(MessageLine::into_record)
        {
            return Ok(r);
        }
        let rec = serde_json::from_slice(line)?;
        // Only a line naming the key is parsed a second time for it.
        let dvc = if line.windows(5).any(|w| w == b"\"dvc\"") {
            serde_json::from_slice::<Changes>(line)?.dvc
        } else {
            None
        };
        Ok((rec, dvc))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn general(line: &str) -> Result<Record, String> {
        serde_json::from_str::<Record>(line).map_err(|e| e.to_string())
    }

    fn direct(line: &str) -> Result<Record, String> {
        Record::from_json(line.as_bytes()).map_err(|e| e.to_string())
    }

    #[test]
    fn both_paths_read_every_kind_of_line_alike() {
        let lines = [
            r#"{"t":5,"node":2,"lamport":7,"ev":"send","to":3,"msg":"ELECTION","bytes":40,"seq":9,"brief":"ELECTION(2)"}"#,
            r#"{"t":5,"node":2,"pt":11,"vc":{"1":2,"2":5},"hlc":[11,0],"ev":"recv","from":3,"msg":"OK","bytes":40}"#,
            r#"{"t":5,"node":2,"ev":"send","to":3,"msg":"X","bytes":1,"extra":"ignored"}"#,
            r#"{"ev":"recv","from":1,"msg":"X","bytes":1,"t":3}"#,
            r#"{"t":5,"node":2,"ev":"recv","from":3,"msg":"X"}"#,
            r#"{"t":5,"node":2,"ev":"send","to":"three","msg":"X","bytes":1}"#,
            r#"{"t":5,"node":2,"ev":"send","to":3,"to":4,"msg":"X","bytes":1}"#,
            r#"{"t":5,"node":2,"ev":"send","from":3,"msg":"X","bytes":1}"#,
            r#"{"t":5,"node":2,"ev":"leader","leader":2,"term":1}"#,
            r#"{"t":5,"node":2,"ev":"some_future_kind","x":1}"#,
            r#"{"t":5,"ev":"send","to":3,"msg":"A \"quoted\" \u00e9","bytes":1}"#,
            r#"{"node":2,"ev":"send","to":3,"msg":"X","bytes":1}"#,
            r#"not json"#,
        ];
        for line in lines {
            let (g, d) = (general(line), direct(line));
            assert_eq!(g.is_ok(), d.is_ok(), "{line}: {g:?} vs {d:?}");
            if let (Ok(g), Ok(d)) = (g, d) {
                assert_eq!(g, d, "{line}");
            }
        }
    }

    #[test]
    fn what_the_writer_writes_reads_back_the_same() {
        let rec = Record {
            t: 1,
            node: Some(4),
            lamport: Some(3),
            pt: None,
            vc: Some(crate::clock::VectorClock::from_pairs([(1, 1), (4, 2)])),
            hlc: None,
            event: Event::Recv {
                from: 1,
                msg: "GRANT".into(),
                bytes: 52,
                seq: 17,
                brief: "GRANT(req=3)".into(),
            },
        };
        let line = serde_json::to_vec(&rec).unwrap();
        assert_eq!(Record::from_json(&line).unwrap(), rec);
    }
}
