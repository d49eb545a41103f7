//! The byte scan of `parse_direct.rs` against serde's path: the same record for every line the
//! encoder writes, and for any damaged line either no answer (serde's path reads it) or
//! serde's own answer.

use super::encode::encode_line_as;
use super::parse_direct::encoder_line;
use super::{Event, Record};
use crate::clock::VectorClock;

/// A small seeded generator (xorshift64*), so that a failure repeats.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A number of any width: small ones, big ones and the edges.
    fn number(&mut self) -> u64 {
        match self.below(5) {
            0 => 0,
            1 => self.below(10),
            2 => self.below(100_000),
            3 => u64::MAX - self.below(3),
            _ => self.next() >> self.below(64),
        }
    }
}

const TEXTS: [&str; 7] = [
    "",
    "TOKEN",
    "ELECTION(3, term=2)",
    "A \"quoted\" one",
    "back\\slash",
    "tab\there",
    "non-ASCII é ✓",
];

/// A record of a kind the scan takes, with a random choice of every field the encoder may write.
fn record(rng: &mut Rng) -> (Record, Option<VectorClock>) {
    let clock = |rng: &mut Rng| {
        VectorClock::from_pairs((0..rng.below(70)).map(|_| (rng.number() % 200, rng.below(4) * rng.number())))
    };
    let (vc, dvc) = match rng.below(3) {
        0 => (None, None),
        1 => (Some(clock(rng)), None),
        _ => (None, Some(clock(rng))),
    };
    let opt = |rng: &mut Rng| (rng.below(2) == 0).then(|| rng.number());
    let (msg, brief) = (TEXTS[rng.below(7) as usize], TEXTS[rng.below(7) as usize]);
    let (peer, bytes, seq) = (rng.number(), rng.number() as usize, rng.number());
    let rec = Record {
        t: rng.number(),
        node: opt(rng),
        lamport: opt(rng),
        pt: opt(rng),
        vc,
        hlc: (rng.below(2) == 0).then(|| (rng.number(), rng.number() as u32)),
        event: match rng.below(6) {
            0 | 1 => Event::datagram_event(rng.below(2) == 0, peer, msg.into(), bytes, seq, brief.into()),
            2 => Event::CsRequest { req: seq },
            3 => Event::CsExit { req: seq },
            4 => Event::CsEnter {
                req: seq,
                token: opt(rng),
            },
            _ => Event::Access {
                by: peer,
                req: seq,
                token: opt(rng),
                phase: msg.into(),
            },
        },
    };
    (rec, dvc)
}

/// The line the encoder writes for `rec` (its changes `dvc` in place of `vc`, if given).
fn line(rec: &Record, dvc: &Option<VectorClock>) -> Vec<u8> {
    let mut out = Vec::new();
    let clock = match dvc {
        Some(d) => Some((&b"dvc"[..], d.pairs())),
        None => rec.vc.as_ref().map(|v| (&b"vc"[..], v.pairs())),
    };
    encode_line_as(rec, clock, &mut out);
    assert_eq!(out.pop(), Some(b'\n'));
    out
}

#[test]
fn every_line_the_encoder_writes_reads_back_as_serde_reads_it() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut direct = 0;
    for _ in 0..5_000 {
        let (rec, dvc) = record(&mut rng);
        let bytes = line(&rec, &dvc);
        let serde = Record::from_json_by_serde(&bytes).expect("serde reads the encoder's line");
        assert_eq!(serde, (rec.clone(), dvc.clone()), "{}", String::from_utf8_lossy(&bytes));
        match encoder_line(&bytes) {
            Some(got) => {
                direct += 1;
                assert_eq!(got, serde, "{}", String::from_utf8_lossy(&bytes));
            }
            // Only a string with an escape is left to serde.
            None => assert!(bytes.contains(&b'\\'), "{}", String::from_utf8_lossy(&bytes)),
        }
    }
    // Three of the seven texts have an escape. A message line has two texts, an access one, a
    // `cs_*` line none: 5,000 x (2/6 (4/7)^2 + 3/6 + 1/6 4/7), about 3,520 lines, have none.
    assert!(direct > 3_200, "only {direct} of 5000 lines took the direct path");
}

#[test]
fn a_damaged_line_reads_as_serde_reads_it_or_is_left_to_serde() {
    let mut rng = Rng(7);
    let replacements = b"0123456789\"{}[],:.-+e \\x\n\x00";
    for _ in 0..300 {
        let (rec, dvc) = record(&mut rng);
        let good = line(&rec, &dvc);
        for at in 0..=good.len() {
            let mut variants = vec![];
            if at < good.len() {
                let mut cut = good.clone();
                cut.remove(at);
                variants.push(cut);
                let mut twice = good.clone();
                twice.insert(at, good[at]);
                variants.push(twice);
                variants.push(good[..at].to_vec());
            }
            let mut changed = good.clone();
            let b = replacements[rng.below(replacements.len() as u64) as usize];
            match changed.get_mut(at) {
                Some(slot) => *slot = b,
                None => changed.push(b),
            }
            variants.push(changed);
            for v in variants {
                if let Some(got) = encoder_line(&v) {
                    let serde = Record::from_json_by_serde(&v);
                    assert_eq!(serde.ok(), Some(got), "{}", String::from_utf8_lossy(&v));
                }
            }
        }
    }
}

#[test]
fn lines_of_other_shapes_are_left_to_serde() {
    for l in [
        r#"{"t":5,"node":2,"ev":"leader","leader":2,"term":1}"#,
        r#"{"node":2,"t":5,"ev":"send","to":3,"msg":"X","bytes":1,"seq":0}"#,
        r#"{"t":5,"ev":"send","to":3,"msg":"X","bytes":1,"seq":0,"extra":1}"#,
        r#"{"t":5,"vc":{"2":1,"1":1},"ev":"send","to":3,"msg":"X","bytes":1,"seq":0}"#,
        r#"{"t":5,"vc":{"1":1,"1":2},"ev":"send","to":3,"msg":"X","bytes":1,"seq":0}"#,
        r#"{"t":05,"ev":"send","to":3,"msg":"X","bytes":1,"seq":0}"#,
        r#"{"t":5.0,"ev":"send","to":3,"msg":"X","bytes":1,"seq":0}"#,
        r#"{"t":5,"ev":"send","to":3,"msg":"X","bytes":1}"#,
        r#"{"t":5,"hlc":[1,4294967296],"ev":"send","to":3,"msg":"X","bytes":1,"seq":0}"#,
        r#"{"t":18446744073709551616,"ev":"send","to":3,"msg":"X","bytes":1,"seq":0}"#,
        r#"{"t":5,"ev":"send","to":3,"msg":"X","bytes":1,"seq":0} "#,
        r#"{"t":5,"ev":"cs_enter","req":1}"#,
        r#"{"t":5,"ev":"cs_exit","token":null,"req":1}"#,
        r#"{"t":5,"ev":"access","req":1,"token":null,"phase":"begin"}"#,
        r#"{"t":5,"ev":"access","by":2,"req":1,"token":1.5,"phase":"begin"}"#,
    ] {
        assert_eq!(encoder_line(l.as_bytes()), None, "{l}");
    }
    // A clock's zero entries are dropped, as serde's path drops them.
    let l = br#"{"t":5,"vc":{"1":0,"2":3},"ev":"recv","from":3,"msg":"X","bytes":1,"seq":2}"#;
    let got = encoder_line(l).expect("the encoder's shape");
    assert_eq!(got.0.vc, Some(VectorClock::from_pairs([(2, 3)])));
    assert_eq!(Some(got), Record::from_json_by_serde(l).ok());
}
