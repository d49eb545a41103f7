//! Writes one [`Record`] as its JSON line, byte for byte what serde_json writes for it, without
//! serde: the common fields and the `send`/`recv` events (nine in ten lines of a busy trace)
//! are written by hand, and only the rarer kinds go through serde_json (their object spliced
//! after the common fields). serde_json's flattened, internally tagged record cost a node
//! about 1.6 us a record with a 64-entry vector clock; this is a few hundred nanoseconds.

use super::datagram::Datagram;
use super::{NodeId, Record};

/// Appends `rec` as one JSON line (with its newline) to `out`.
pub fn encode_line(rec: &Record, out: &mut Vec<u8>) {
    encode_line_as(rec, rec.vc.as_ref().map(|v| (&b"vc"[..], v.pairs())), out);
}

/// A vector clock as a line writes it: its key (`vc` for the whole clock, `dvc` for its
/// changes) and its `(node, count)` pairs.
pub(super) type ClockField<'a> = (&'a [u8], &'a [(NodeId, u64)]);

/// Appends `rec` as one JSON line, its vector clock written as `vc` says in place of `rec.vc`.
pub(super) fn encode_line_as(rec: &Record, vc: Option<ClockField<'_>>, out: &mut Vec<u8>) {
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
    if let Some((key, pairs)) = vc {
        out.extend_from_slice(b",\"");
        out.extend_from_slice(key);
        out.extend_from_slice(b"\":{");
        // Most of a line's bytes at n = 64: each entry is made on the stack and appended once.
        out.reserve(pairs.len() * ENTRY_MAX);
        for (i, &(k, c)) in pairs.iter().enumerate() {
            let mut e = [0u8; ENTRY_MAX];
            let mut n = 0;
            if i > 0 {
                e[0] = b',';
                n = 1;
            }
            e[n] = b'"';
            n = put_u64(&mut e, n + 1, k);
            e[n] = b'"';
            e[n + 1] = b':';
            n = put_u64(&mut e, n + 2, c);
            out.extend_from_slice(&e[..n]);
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
    match rec.event.datagram() {
        Some(d) => message(out, d),
        None => {
            // The event alone is `{"ev":...}`: its fields follow the common ones.
            let start = out.len();
            if serde_json::to_writer(&mut *out, &rec.event).is_err() || out.get(start) != Some(&b'{') {
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
fn message(out: &mut Vec<u8>, d: Datagram<'_>) {
    out.extend_from_slice(match d.sent {
        true => b",\"ev\":\"send\",\"to\":",
        false => b",\"ev\":\"recv\",\"from\":",
    });
    push_u64(out, d.peer);
    let (msg, bytes, seq, brief) = (d.msg, d.bytes, d.seq, d.brief);
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

/// The longest vector clock entry: `,"<u64>":<u64>`.
const ENTRY_MAX: usize = 1 + 1 + 20 + 2 + 20;

/// Two-digit pairs "00".."99", so that a number takes half the divisions.
const DIGITS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// `v` in decimal into `buf` at `at`; returns where it ends.
pub(crate) fn put_u64(buf: &mut [u8], at: usize, mut v: u64) -> usize {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    while v >= 100 {
        let d = (v % 100) as usize * 2;
        v /= 100;
        i -= 2;
        tmp[i..i + 2].copy_from_slice(&DIGITS[d..d + 2]);
    }
    if v >= 10 {
        let d = v as usize * 2;
        i -= 2;
        tmp[i..i + 2].copy_from_slice(&DIGITS[d..d + 2]);
    } else {
        i -= 1;
        tmp[i] = b'0' + v as u8;
    }
    let n = tmp.len() - i;
    buf[at..at + n].copy_from_slice(&tmp[i..]);
    at + n
}

/// A decimal number.
fn push_u64(out: &mut Vec<u8>, v: u64) {
    let mut buf = [0u8; 20];
    let n = put_u64(&mut buf, 0, v);
    out.extend_from_slice(&buf[..n]);
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
    use crate::trace::Event;
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
                datagrams: 0,
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
    fn numbers_are_written_as_rust_writes_them() {
        let mut v = vec![0, 1, 9, 10, 99, 100, 101, 999, 1000, 65_535, u64::MAX, u64::MAX - 1];
        v.extend((0..64).map(|i| 1u64 << i));
        v.extend((0..20).map(|i| 10u64.pow(i) - 1));
        for x in v {
            let mut out = Vec::new();
            push_u64(&mut out, x);
            assert_eq!(String::from_utf8(out).unwrap(), x.to_string());
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
