//! Tests of [`bundle`](super).

use super::*;
use crate::rng::Rng;

/// A stand-in for a sealed message: it begins with the version and is at least a header and a
/// MAC long, as every one is.
fn msg(rng: &mut Rng, max: u64) -> Vec<u8> {
    let mut m = vec![VERSION];
    let min = (HEADER_LEN + MAC_LEN) as u64;
    m.extend((1..rng.range(min, min + max)).map(|_| rng.next_u64() as u8));
    m
}

#[test]
fn a_single_message_is_its_own_datagram() {
    let m = vec![VERSION, 1, 2, 3];
    let got: Vec<_> = parts(&m).collect();
    assert_eq!(got, [Ok(&m[..])]);
    let mut p = Packer::default();
    let msgs = [(4, &m[..], false)];
    assert_eq!(p.pack(&msgs).collect::<Vec<_>>(), [(4, &m[..])]);
    assert_eq!(p.pack(&[]).count(), 0);
}

/// Any step's messages: each destination gets its own messages, in order, in datagrams of at
/// most `MAX_DATAGRAM`; datagrams leave in the order of their first message, and none holds a
/// message earlier than that first one (so nothing leaves later than its place in the step);
/// a fence leaves alone, after every message before it and before every one after it.
#[test]
fn packed_steps_unpack_to_each_destinations_messages_in_order() {
    let mut rng = Rng::new(46);
    let mut p = Packer::default();
    for round in 0..600 {
        let dests = rng.range(1, 6);
        let big = if round % 10 == 0 { 12_000 } else { 300 };
        let fences = round % 3 == 0;
        // Each message distinct (its index in its first bytes), so that it can be found again.
        let msgs: Vec<(NodeId, Vec<u8>, bool)> = (0..rng.range(0, 40))
            .map(|i| {
                let mut m = msg(&mut rng, big);
                m.splice(1..1, (i as u16).to_le_bytes());
                (rng.range(1, dests + 1), m, fences && rng.range(0, 6) == 0)
            })
            .collect();
        let refs: Vec<(NodeId, &[u8], bool)> = msgs.iter().map(|(to, b, f)| (*to, b.as_slice(), *f)).collect();
        let datagrams: Vec<(NodeId, Vec<u8>)> = p.pack(&refs).map(|(to, b)| (to, b.to_vec())).collect();
        let mut got: Vec<(NodeId, Vec<u8>)> = Vec::new();
        let mut firsts = Vec::new();
        // Where each message left: its datagram's place.
        let mut left_in = vec![usize::MAX; msgs.len()];
        for (k, (to, d)) in datagrams.iter().enumerate() {
            assert!(d.len() <= MAX_DATAGRAM, "round {round}: {} bytes", d.len());
            let mut first = None;
            let n = parts(d).count();
            for part in parts(d) {
                let part = part.unwrap_or_else(|e| panic!("round {round}: {e}"));
                let i = msgs
                    .iter()
                    .position(|(t, b, _)| t == to && b == part)
                    .expect("a message of the step");
                assert!(!msgs[i].2 || n == 1, "round {round}: fence {i} shares a datagram");
                left_in[i] = k;
                first.get_or_insert(i);
                got.push((*to, part.to_vec()));
            }
            firsts.push(first.expect("no empty datagram"));
        }
        assert!(firsts.windows(2).all(|w| w[0] < w[1]), "round {round}: {firsts:?}");
        for (f, _) in msgs.iter().enumerate().filter(|(_, m)| m.2) {
            assert!(
                left_in[..f].iter().all(|&k| k < left_in[f]),
                "round {round}: before fence {f}"
            );
            assert!(
                left_in[f + 1..].iter().all(|&k| k > left_in[f]),
                "round {round}: after fence {f}"
            );
        }
        for to in 1..=dests {
            let want: Vec<_> = msgs.iter().filter(|m| m.0 == to).map(|m| &m.1).collect();
            let have: Vec<_> = got.iter().filter(|m| m.0 == to).map(|m| &m.1).collect();
            assert_eq!(want, have, "round {round}, node {to}");
        }
        let fewer = msgs.len() > dests as usize && big < 1000 && !fences;
        assert!(
            !fewer || datagrams.len() <= dests as usize,
            "round {round}: {} datagrams",
            datagrams.len()
        );
    }
}

#[test]
fn a_broken_bundle_gives_what_came_before_the_break_then_one_error() {
    let mut p = Packer::default();
    let (a, b) = (vec![VERSION; 80], vec![VERSION; 90]);
    let msgs = [(1, &a[..], false), (1, &b[..], false)];
    let whole: Vec<u8> = p.pack(&msgs).next().unwrap().1.to_vec();
    assert_eq!(whole[0], BUNDLE);
    for cut in 1..whole.len() {
        let got: Vec<_> = parts(&whole[..cut]).collect();
        let (ok, err): (Vec<_>, Vec<_>) = got.iter().partition(|r| r.is_ok());
        let want = if cut >= 1 + 2 + a.len() { 1 } else { 0 };
        assert_eq!(ok.len(), want, "cut at {cut}");
        if cut == 1 + 2 + a.len() {
            // Cut where a message ends: a whole bundle of one message.
            assert!(err.is_empty(), "cut at {cut}: {got:?}");
            continue;
        }
        assert_eq!(err.len(), 1, "cut at {cut}: {got:?}");
        assert!(matches!(got.last(), Some(Err(WireError::Bundle(_)))), "cut at {cut}");
    }
    assert_eq!(parts(&whole).filter(Result::is_ok).count(), 2);
    // A message too short to be one ends the bundle: nothing after it is looked at.
    let mut short = vec![BUNDLE, 3, 0, VERSION, 0, 0];
    short.extend_from_slice(&whole[1..]);
    let got: Vec<_> = parts(&short).collect();
    assert!(matches!(got[..], [Err(WireError::Bundle(_))]), "{got:?}");
    let mut huge = vec![BUNDLE];
    huge.resize(MAX_DATAGRAM + 1, 0);
    assert_eq!(
        parts(&huge).collect::<Vec<_>>(),
        [Err(WireError::TooLarge(MAX_DATAGRAM + 1))]
    );
}

#[test]
fn garbage_that_looks_like_a_bundle_never_panics_and_stays_inside_it() {
    let mut rng = Rng::new(7);
    for _ in 0..5000 {
        let mut d = vec![BUNDLE];
        d.extend((0..rng.range(0, 80)).map(|_| rng.next_u64() as u8 & 0x0f));
        let mut total = 0;
        for b in parts(&d).flatten() {
            total += b.len() + 2;
        }
        assert!(total < d.len());
    }
}
