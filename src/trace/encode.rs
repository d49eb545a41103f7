//! Writes one [`Record`] as its JSON line, byte for byte what serde_json writes for it, without
//! serde: the common fields and the `send`/`recv` events (nine in ten lines of a busy trace)
//! are written by hand, and only the rarer kinds go through serde_json (their object spliced
//! after the common fields). serde_json's flattened, internally tagged record cost a node
//! about 1.6 us a record with a 64-entry vector clock; this is a few hundred nanoseconds.

use super::{Event, Record};

/// Appends `rec` as one JSON line (with its newline) to `out`.
pub fn encode_line(rec: &Record, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"t\":");
    push_u64(out, rec.t);
    if let Some(n) = rec.node {
        out.extend_from_slice(b",\"node\":");
        push_u64(out, n);
    }
    if let Some(l) = rec.lamport {
        out.extend_from_slice(b",\"lamport\":");
        push_u64(out, l);
    }
    if let Some(pt) = rec.pt {
        out.extend_from_slice(b",\"pt\":");
        push_u64(out, pt);
    }
    if let Some(vc) = &rec.vc {
        out.extend_from_slice(b",\"vc\":{");
        for (i, &(k, c)) in vc.pairs().iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.push(b'"');
            push_u64(out, k);
            out.extend_from_slice(b"\":");
            push_u64(out, c);
        }
        out.push(b'}');
    }
    if let Some((l, c)) = rec.hlc {
        out.extend_from_slice(b",\"hlc\":[");
        push_u64(out, l);
        out.push(b',');
        push_u64(out, u64::from(c));
        out.push(b']');
    }
    match &rec.event {
        Event::Send {
            to,
            msg,
            bytes,
            seq,
            brief,
        } => message(out, b"send", b"to", *to, msg, *bytes, *seq, brief),
        Event::Recv {
            from,
            msg,
            bytes,
            seq,
            brief,
        } => message(out, b"recv", b"from", *from, msg, *bytes, *seq, brief),
        other => {
            // The event alone is `{"ev":...}`: its fields follow the common ones.
            let start = out.len();
            if serde_json::to_writer(&mut *out, other).is_err() || out.get(start) != Some(&b'{') {
                // Serialising an event to memory cannot fail; should it, the line still parses.
                out.truncate(start);
                out.extend_from_slice(b",\"ev\":\"other\"}");
            } else {
                out[start] = b',';
            }
        }
    }
    out.push(b'\n');
}

/// The rest of a `send` or `recv` line, from `"ev"` to the closing brace.
#[allow(clippy::too_many_arguments)]
fn message(out: &mut Vec<u8>, ev: &[u8], peer_key: &[u8], peer: u64, msg: &str, bytes: usize, seq: u64, brief: &str) {
    out.extend_from_slice(b",\"ev\":\"");
    out.extend_from_slice(ev);
    out.extend_from_slice(b"\",\"");
    out.extend_from_slice(peer_key);
    out.extend_from_slice(b"\":");
    push_u64(out, peer);
    out.extend_from_slice(b",\"msg\":");
    push_str(out, msg);
    out.extend_from_slice(b",\"bytes\":");
    push_u64(out, bytes as u64);
    out.extend_from_slice(b",\"seq\":");
    push_u64(out, seq);
    if !brief.is_empty() {
        out.extend_from_slice(b",\"brief\":");
        push_str(out, brief);
    }
    out.push(b'}');
}

/// A decimal number.
fn push_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// A JSON string escaped as serde_json escapes it: `"` and `\`, control characters as `\n`,
/// `\t`, `\r`, `\b`, `\f` or `\u00XX`; everything else (non-ASCII included) as it is.
fn push_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\t' => b"\\t",
            b'\r' => b"\\r",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if esc.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xf)]);
        } else {
            out.extend_from_slice(esc);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::VectorClock;
    use std::collections::BTreeMap;

    fn rec(event: Event, full: bool) -> Record {
        Record {
            t: 1_795_312_801_123_456,
            node: full.then_some(7),
            lamport: full.then_some(u64::MAX),
            pt: full.then_some(0),
            vc: full.then(|| VectorClock::from_pairs([(1, 3), (7, 12), (64, 1), (16384, 99)])),
            hlc: full.then_some((1_795_312_801_123_400, u32::MAX)),
            event,
        }
    }

    #[test]
    fn every_kind_is_written_exactly_as_serde_json_writes_it() {
        let nasty = "q\"b\\s/\n\t\r\u{8}\u{c}\u{1}\u{1f}\u{7f} é 😀 ELECTION(3, term=2)".to_string();
        let events = vec![
            Event::Send {
                to: 3,
                msg: "ELECTION".into(),
                bytes: 1234,
                seq: 9,
                brief: nasty.clone(),
            },
            Event::Send {
                to: 0,
                msg: nasty.clone(),
                bytes: 0,
                seq: 0,
                brief: String::new(),
            },
            Event::Recv {
                from: u64::MAX,
                msg: "OK".into(),
                bytes: 77,
                seq: 10,
                brief: "OK(1)".into(),
            },
            Event::Recv {
                from: 2,
                msg: "OK".into(),
                bytes: 77,
                seq: 10,
                brief: String::new(),
            },
            Event::Note {
                text: nasty.clone(),
                level: "debug".into(),
            },
            Event::Start {
                addr: "127.0.0.1:9".into(),
                algo: "bully".into(),
                pid: 4,
                peers: vec![1, 2],
            },
            Event::Stop {
                sent: 1,
                received: 2,
                dropped: 3,
                ignored: 4,
                net_dropped: 0,
                by_type: BTreeMap::from([("A".to_string(), 1), ("B\"".to_string(), 2)]),
            },
            Event::ClockAdjust {
                offset_us: -5,
                rtt_us: 3,
                bound_us: 2,
                reference: Some(1),
                ref_seq: None,
                ref_offset_us: 0,
                step: true,
            },
            Event::Shutdown {},
            Event::Leader { leader: 3, term: 2 },
        ];
        for full in [true, false] {
            for ev in &events {
                let r = rec(ev.clone(), full);
                let mut want = serde_json::to_vec(&r).unwrap();
                want.push(b'\n');
                let mut got = Vec::new();
                encode_line(&r, &mut got);
                assert_eq!(String::from_utf8(got).unwrap(), String::from_utf8(want).unwrap());
            }
        }
    }

    #[test]
    fn every_control_character_round_trips() {
        let text: String = (0u8..0x80).map(char::from).collect();
        let r = rec(
            Event::Note {
                text: text.clone(),
                level: String::new(),
            },
            true,
        );
        let mut got = Vec::new();
        encode_line(&r, &mut got);
        assert!(
            !got.contains(&0),
            "no NUL byte in a line: readers take one as the written end"
        );
        assert_eq!(Record::from_json(&got[..got.len() - 1]).unwrap(), r);
        for b in 0u8..0x80 {
            let r = rec(
                Event::Send {
                    to: 1,
                    msg: "M".into(),
                    bytes: 1,
                    seq: 1,
                    brief: char::from(b).to_string(),
                },
                false,
            );
            let mut got = Vec::new();
            encode_line(&r, &mut got);
            let mut want = serde_json::to_vec(&r).unwrap();
            want.push(b'\n');
            assert_eq!(got, want, "byte {b:#x}");
        }
    }
}
