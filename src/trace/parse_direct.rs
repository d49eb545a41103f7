//! Reads a line written the way the node's encoder (`encode.rs`) writes it, by a byte scan:
//! fields in the encoder's order, no whitespace, numbers in plain digits, strings without
//! escapes, clock entries by increasing node. It takes the `send` and `recv` lines (nine in ten
//! of a busy trace) and the mutual-exclusion kinds that come with every entry (`cs_request`,
//! `cs_enter`, `cs_exit`, and the resource's `access`). The launcher reads every line while its
//! nodes run on the same two cores: serde's path (a map of the clock built as a tree, each
//! string allocated twice, a flattened record parsed twice for its `dvc`) cost the launcher of
//! Ricart-Agrawala 20 x 20 a third of the machine's CPU. Anything else (another order, an
//! escape, another kind) returns None and is read by serde's path, which then gives the same
//! answer as before, so this path only ever answers for lines that path reads alike.

use super::{Event, NodeId, Record};
use crate::clock::VectorClock;

/// A position in a line.
struct Cursor<'a> {
    line: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    /// Steps over `lit` if the line goes on with it.
    fn take(&mut self, lit: &[u8]) -> bool {
        let found = self.line[self.at..].starts_with(lit);
        if found {
            self.at += lit.len();
        }
        found
    }

    /// Steps over `lit`, or gives up on the line.
    fn expect(&mut self, lit: &[u8]) -> Option<()> {
        self.take(lit).then_some(())
    }

    /// A number in plain digits (no sign, fraction, exponent or leading zero) that fits a u64.
    fn number(&mut self) -> Option<u64> {
        let start = self.at;
        let mut v: u64 = 0;
        while let Some(&d) = self.line.get(self.at).filter(|d| d.is_ascii_digit()) {
            v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
            self.at += 1;
        }
        let digits = self.at - start;
        if digits == 0 || (digits > 1 && self.line[start] == b'0') {
            return None;
        }
        // A number that goes on as one JSON would not (`1.5`, `1e3`) is not plain digits.
        match self.line.get(self.at) {
            Some(b'.' | b'e' | b'E') => None,
            _ => Some(v),
        }
    }

    /// A string without escapes or control characters, valid UTF-8.
    fn string(&mut self) -> Option<&'a str> {
        self.expect(b"\"")?;
        let rest = &self.line[self.at..];
        let len = rest.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
        if rest[len] != b'"' {
            return None;
        }
        let s = std::str::from_utf8(&rest[..len]).ok()?;
        self.at += len + 1;
        Some(s)
    }

    /// A clock's entries after its opening brace, through its closing one.
    fn clock(&mut self) -> Option<VectorClock> {
        let mut pairs = Vec::new();
        if self.take(b"}") {
            return Some(VectorClock::from_sorted_pairs(pairs));
        }
        let mut last = None;
        loop {
            self.expect(b"\"")?;
            let node = self.number()?;
            self.expect(b"\":")?;
            let count = self.number()?;
            // A node listed twice, or out of order, is left to serde's path.
            if last.is_some_and(|l| l >= node) {
                return None;
            }
            last = Some(node);
            if count > 0 {
                pairs.push((node, count));
            }
            if self.take(b"}") {
                return Some(VectorClock::from_sorted_pairs(pairs));
            }
            self.expect(b",")?;
        }
    }

    /// A number, or `null` for none.
    fn number_or_null(&mut self) -> Option<Option<u64>> {
        match self.take(b"null") {
            true => Some(None),
            false => self.number().map(Some),
        }
    }

    /// `,"key":` and a number, if the line goes on with that key.
    fn field(&mut self, key: &[u8]) -> Option<Option<u64>> {
        match self.take(key) {
            true => self.number().map(Some),
            false => Some(None),
        }
    }
}

/// The record of `line` and its clock changes (`dvc`), if it is a line of a kind this scan
/// takes, in the encoder's form; None for any other line.
pub(super) fn encoder_line(line: &[u8]) -> Option<(Record, Option<VectorClock>)> {
    let mut c = Cursor { line, at: 0 };
    c.expect(b"{\"t\":")?;
    let t = c.number()?;
    let node = c.field(b",\"node\":")?;
    let lamport = c.field(b",\"lamport\":")?;
    let pt = c.field(b",\"pt\":")?;
    let (vc, dvc) = if c.take(b",\"vc\":{") {
        (Some(c.clock()?), None)
    } else if c.take(b",\"dvc\":{") {
        (None, Some(c.clock()?))
    } else {
        (None, None)
    };
    let hlc = match c.take(b",\"hlc\":[") {
        true => {
            let l = c.number()?;
            c.expect(b",")?;
            let n = u32::try_from(c.number()?).ok()?;
            c.expect(b"]")?;
            Some((l, n))
        }
        false => None,
    };
    let event = event(&mut c)?;
    c.expect(b"}")?;
    if c.at != line.len() {
        return None;
    }
    let rec = Record {
        t,
        node,
        lamport,
        pt,
        vc,
        hlc,
        event,
    };
    Some((rec, dvc))
}

/// The event, from its `"ev"` up to the line's closing brace.
fn event(c: &mut Cursor<'_>) -> Option<Event> {
    let sent = c.take(b",\"ev\":\"send\",\"to\":");
    if sent || c.take(b",\"ev\":\"recv\",\"from\":") {
        let peer: NodeId = c.number()?;
        c.expect(b",\"msg\":")?;
        let msg = c.string()?;
        c.expect(b",\"bytes\":")?;
        let bytes = usize::try_from(c.number()?).ok()?;
        c.expect(b",\"seq\":")?;
        let seq = c.number()?;
        let brief = match c.take(b",\"brief\":") {
            true => c.string()?,
            false => "",
        };
        return Some(Event::datagram_event(
            sent,
            peer,
            msg.to_owned(),
            bytes,
            seq,
            brief.to_owned(),
        ));
    }
    if c.take(b",\"ev\":\"cs_request\",\"req\":") {
        return Some(Event::CsRequest { req: c.number()? });
    }
    if c.take(b",\"ev\":\"cs_exit\",\"req\":") {
        return Some(Event::CsExit { req: c.number()? });
    }
    if c.take(b",\"ev\":\"cs_enter\",\"req\":") {
        let req = c.number()?;
        c.expect(b",\"token\":")?;
        let token = c.number_or_null()?;
        return Some(Event::CsEnter { req, token });
    }
    c.expect(b",\"ev\":\"access\",\"by\":")?;
    let by = c.number()?;
    c.expect(b",\"req\":")?;
    let req = c.number()?;
    c.expect(b",\"token\":")?;
    let token = c.number_or_null()?;
    c.expect(b",\"phase\":")?;
    let phase = c.string()?.to_owned();
    Some(Event::Access { by, req, token, phase })
}
