//! A message's brief, the short text its trace records and log lines name it by: `ELECTION(3)`,
//! `REQUEST(ts=24)`. Made from the message's `Debug` text ([`brief_of`]), or written by hand with
//! [`Brief`] for the messages a busy run sends most.

use std::fmt::Debug;

/// A brief written by hand as [`brief_of`] renders the message's `Debug` text, `NAME(k=v, ...)`
/// with numbers for values. For the messages of the busy runs (Ricart-Agrawala's, Lamport's,
/// Chang-Roberts' ring), where a node makes a brief for every datagram it sends and every one it
/// accepts: the `Debug` text through `core::fmt` and its rewriting were a twentieth of a node's
/// time (perf, Ricart-Agrawala 20 x 60). Each is tested against [`brief_of`] of the same message
/// (Lamport's, which names its kind and leaves that field out, against its own text).
pub(crate) struct Brief {
    text: String,
    fields: bool,
}

impl Brief {
    /// A brief of message `name`, fields to follow.
    pub(crate) fn new(name: &str) -> Self {
        let mut text = String::with_capacity(name.len() + 24);
        text.push_str(name);
        Brief { text, fields: false }
    }

    /// Field `key` of value `v`.
    pub(crate) fn field(mut self, key: &str, v: u64) -> Self {
        self.next_field();
        self.text.push_str(key);
        self.text.push('=');
        push_decimal(&mut self.text, v);
        self
    }

    /// A field without a name (a tuple variant's), of value `v`.
    pub(crate) fn value(mut self, v: u64) -> Self {
        self.next_field();
        push_decimal(&mut self.text, v);
        self
    }

    /// What goes before a field: the parenthesis, or the comma after the one before.
    fn next_field(&mut self) {
        self.text.push_str(if self.fields { ", " } else { "(" });
        self.fields = true;
    }

    /// The brief.
    pub(crate) fn done(mut self) -> String {
        if self.fields {
            self.text.push(')');
        }
        self.text
    }
}

/// `v` in decimal at the end of `out`.
pub(crate) fn push_decimal(out: &mut String, v: u64) {
    let mut buf = [0u8; 20];
    let n = crate::trace::encode::put_u64(&mut buf, 0, v);
    out.extend(buf[..n].iter().map(|&d| char::from(d)));
}

/// The brief of a message named `name` from its `Debug` text (see [`brief_from_debug`]). The
/// text is written into a buffer kept per thread: a node makes a brief for every datagram it
/// sends or accepts, and the text, the brief and the fields' rewriting were three allocations.
pub(crate) fn brief_of(name: &str, msg: &dyn Debug) -> String {
    thread_local! {
        static TEXT: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
    }
    TEXT.with(|text| match text.try_borrow_mut() {
        Ok(mut text) => {
            use std::fmt::Write;
            text.clear();
            let _ = write!(text, "{msg:?}");
            brief_from_debug(name, &text)
        }
        // A brief made inside another's Debug text: no buffer to lend.
        Err(_) => brief_from_debug(name, &format!("{msg:?}")),
    })
}

/// Renders a `Debug` text of an enum variant as `NAME(fields)`: `Coordinator { leader: 5 }`
/// becomes `COORDINATOR(leader=5)`, `Election(3)` becomes `ELECTION(3)`, `Probe` becomes `PROBE`.
pub(crate) fn brief_from_debug(name: &str, debug: &str) -> String {
    let bytes = debug.as_bytes();
    let start = bytes
        .iter()
        .position(|&c| !(c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80))
        .unwrap_or(bytes.len());
    let rest = debug[start..].trim();
    if let Some(fields) = rest.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
        let fields = fields.trim().as_bytes();
        let mut out = Vec::with_capacity(name.len() + fields.len() + 2);
        out.extend_from_slice(name.as_bytes());
        out.push(b'(');
        // Each `: ` between a field's name and its value becomes `=` (a byte scan: this runs
        // for every datagram a node sends or accepts).
        let mut i = 0;
        while i < fields.len() {
            if fields[i] == b':' && fields.get(i + 1) == Some(&b' ') {
                out.push(b'=');
                i += 2;
            } else {
                out.push(fields[i]);
                i += 1;
            }
        }
        out.push(b')');
        // Only ASCII `: ` became ASCII `=`: the bytes are still UTF-8.
        String::from_utf8(out).unwrap_or_default()
    } else if rest.starts_with('(') {
        let mut out = String::with_capacity(name.len() + rest.len());
        out.push_str(name);
        out.push_str(rest);
        out
    } else {
        name.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn briefs_name_the_type_then_the_fields() {
        assert_eq!(brief_from_debug("ELECTION", "Election(3)"), "ELECTION(3)");
        assert_eq!(
            brief_from_debug("COORDINATOR", "Coordinator { leader: 5, ring: [1, 5] }"),
            "COORDINATOR(leader=5, ring=[1, 5])"
        );
        assert_eq!(brief_from_debug("PROBE", "Probe"), "PROBE");
        assert_eq!(
            brief_from_debug("ECHO", "Echo { wave: 1, best: Some(Best { id: 3 }), note: \"a:b\" }"),
            "ECHO(wave=1, best=Some(Best { id=3 }), note=\"a:b\")"
        );
    }

    #[test]
    fn a_brief_written_by_hand_reads_as_the_debug_text_does() {
        #[derive(Debug)]
        #[allow(dead_code)]
        enum M {
            Request { ts: u64 },
            Pair { a: u64, b: u64 },
            Election(u64),
            Two(u64, u64),
            Probe,
        }
        for v in [0, 7, 10, 99, 100, 12_345, u64::MAX] {
            let by_hand = Brief::new("REQUEST").field("ts", v).done();
            assert_eq!(by_hand, brief_of("REQUEST", &M::Request { ts: v }));
            let pair = Brief::new("PAIR").field("a", v).field("b", v / 3).done();
            assert_eq!(pair, brief_of("PAIR", &M::Pair { a: v, b: v / 3 }));
            assert_eq!(
                Brief::new("ELECTION").value(v).done(),
                brief_of("ELECTION", &M::Election(v))
            );
            let two = Brief::new("TWO").value(v).value(3).done();
            assert_eq!(two, brief_of("TWO", &M::Two(v, 3)));
            let mut n = String::new();
            push_decimal(&mut n, v);
            assert_eq!(n, v.to_string());
        }
        assert_eq!(Brief::new("PROBE").done(), brief_of("PROBE", &M::Probe));
    }

    #[test]
    fn the_messages_briefed_by_hand_read_as_their_debug_text_does() {
        use crate::algo::election::chang_roberts::CrMsg;
        use crate::algo::mutex::lamport::LamportMsg;
        use crate::algo::mutex::ricart_agrawala::RaMsg;
        use crate::algo::Message;
        for v in [0, 24, u64::MAX] {
            for m in [RaMsg::Request { ts: v }, RaMsg::Reply { ts: v }] {
                assert_eq!(m.brief(), brief_of(m.name(), &m));
            }
            for m in [CrMsg::Election(v), CrMsg::Elected(v)] {
                assert_eq!(m.brief(), brief_of(m.name(), &m));
            }
        }
        // Lamport's names its kind and leaves the kind's field out.
        let ack = LamportMsg::Stamped {
            kind: crate::algo::mutex::lamport::Kind::Ack,
            ts: 12,
        };
        assert_eq!(ack.brief(), "ACK(ts=12)");
    }
}
