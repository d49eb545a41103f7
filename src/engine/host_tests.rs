//! Tests of [`host`](super).

use super::*;
use crate::algo::election::chang_roberts::CrMsg;
use crate::algo::election::{chang_roberts::ChangRoberts, LMsg, Leadership};
use crate::engine::wire::Stamps;

type Cr = Leadership<ChangRoberts>;

const T: Now = Now {
    mono: Duration::from_millis(1),
    wall_us: 1,
};

fn host() -> Host<Cr> {
    let setup = Setup::new(2, vec![1, 2, 3], vec![1, 3]);
    let mut h = Host::new(&setup, Cr::new(&setup));
    h.start(
        Now {
            mono: Duration::ZERO,
            wall_us: 0,
        },
        Event::Start {
            addr: "x".into(),
            algo: "t".into(),
            pid: 0,
            peers: vec![],
        },
    );
    h.take_records().for_each(drop);
    h
}

fn sealed(key: &Key, from: NodeId, boot: u64, seq: u64) -> Vec<u8> {
    let msg: LMsg<CrMsg> = LMsg::Inner {
        term: 1,
        ack: 1,
        msg: CrMsg::Election(3),
    };
    Sealer::new(key).seal(&Envelope {
        from,
        to: 2,
        boot,
        seq,
        lamport: 40,
        stamps: Stamps::default(),
        msg,
    })
}

fn good(from: NodeId, seq: u64) -> Vec<u8> {
    sealed(&Key::simulated(), from, 7, seq)
}

/// The `drop` records written so far (forcing the open tallies out), as (class, count).
fn drops(h: &mut Host<Cr>) -> Vec<(String, u64, String)> {
    h.flush_drops(T, true);
    h.take_records()
        .filter_map(|r| match r.event {
            Event::Drop {
                class, count, reason, ..
            } => Some((class, count, reason)),
            _ => None,
        })
        .collect()
}

#[test]
fn hostile_datagrams_are_dropped_and_counted_never_a_panic() {
    let mut h = host();
    let mut rng = Rng::new(9);
    let mut dropped = 0;
    for i in 0..2000 {
        let mut bytes = good(3, i + 1);
        match i % 4 {
            0 => bytes = (0..rng.range(0, 300)).map(|_| rng.next_u64() as u8).collect(),
            1 => bytes.truncate(rng.range(0, bytes.len() as u64) as usize),
            2 => {
                let k = rng.range(0, bytes.len() as u64) as usize;
                bytes[k] ^= 1 << rng.range(0, 8);
            }
            _ => bytes.extend((0..rng.range(1, 50)).map(|_| rng.next_u64() as u8)),
        }
        let before = h.counters().clone();
        h.deliver(T, Some(3), &bytes, "127.0.0.1:1");
        let after = h.counters();
        assert_eq!(
            after.received, before.received,
            "datagram {i} was damaged, yet accepted"
        );
        // Garbage that begins like a bundle may hold more than one (bad) message.
        assert!(after.dropped > before.dropped, "datagram {i}");
        dropped += after.dropped - before.dropped;
    }
    let recs = drops(&mut h);
    assert_eq!(recs.iter().map(|r| r.1).sum::<u64>(), dropped);
    assert!(recs.len() <= 7, "one record per class: {recs:?}");
    assert_eq!(h.counters().dropped_by.values().sum::<u64>(), dropped);
}

#[test]
fn forged_replayed_foreign_spoofed_and_unknown_datagrams_are_refused_with_the_reason() {
    let mut h = host();
    let other = Key::from_bytes([9; 32]);
    let mut forged = sealed(&other, 3, 7, 1);
    forged[1..9].copy_from_slice(&Key::simulated().run_id().to_le_bytes());
    let cases: [(Option<NodeId>, Vec<u8>, &str); 5] = [
        (Some(3), sealed(&other, 3, 7, 1), "foreign-run"),
        (Some(3), forged, "forged"),
        (Some(1), good(3, 1), "spoofed"),
        (None, good(3, 1), "unknown-sender"),
        (Some(1), sealed(&Key::simulated(), 1, 7, 1)[..].to_vec(), ""),
    ];
    for (from, bytes, _) in &cases {
        h.deliver(T, *from, bytes, "127.0.0.1:1");
    }
    // The forged datagram did not use up seq 1 of node 3: the genuine one is accepted once.
    h.deliver(T, Some(3), &good(3, 1), "127.0.0.1:3");
    h.deliver(T, Some(3), &good(3, 1), "127.0.0.1:3");
    assert_eq!(h.counters().received, 2);
    assert!(h.lamport() > 40, "the Lamport clock jumps past the sender's");
    let recs = drops(&mut h);
    let classes: Vec<&str> = recs.iter().map(|r| r.0.as_str()).collect();
    for (_, _, class) in &cases[..4] {
        assert!(classes.contains(class), "{class} missing from {recs:?}");
    }
    assert!(classes.contains(&"replay"), "{recs:?}");
    assert!(
        recs.iter()
            .all(|r| r.2.starts_with(r.0.replace('-', " ").as_str()) || r.2.starts_with(r.0.as_str())),
        "{recs:?}"
    );
}

#[test]
fn a_restarted_sender_is_not_a_replay_but_its_old_boot_is() {
    let mut h = host();
    h.deliver(T, Some(3), &sealed(&Key::simulated(), 3, 7, 5), "a");
    h.deliver(T, Some(3), &sealed(&Key::simulated(), 3, 8, 1), "a");
    assert_eq!(h.counters().received, 2);
    h.deliver(T, Some(3), &sealed(&Key::simulated(), 3, 7, 6), "a");
    assert_eq!(h.counters().dropped_by.get("replay"), Some(&1));
}

#[test]
fn a_flood_is_a_few_records_a_second_and_they_come_due_without_traffic() {
    let mut h = host();
    for _ in 0..100_000 {
        h.deliver(T, None, b"junk junk junk", "127.0.0.1:9");
    }
    assert!(h.take_records().next().is_none(), "tallied, not written one by one");
    let due = h.next_deadline().unwrap();
    assert!(due <= T.mono + super::super::drops::INTERVAL);
    h.fire_timers(Now {
        mono: T.mono + super::super::drops::INTERVAL,
        wall_us: 1_000_001,
    });
    let recs: Vec<_> = h.take_records().filter(|r| r.event.kind() == "drop").collect();
    assert_eq!(recs.len(), 1);
    assert!(matches!(recs[0].event, Event::Drop { count: 100_000, .. }));
}

#[test]
fn a_bundle_is_its_messages_in_order_and_a_bad_one_in_it_spoils_only_itself() {
    let mut h = host();
    let mut forged = good(3, 2);
    let n = forged.len();
    forged[n - 1] ^= 1;
    let msgs = [good(3, 1), forged, good(3, 3)];
    let mut packer = crate::engine::bundle::Packer::default();
    let pairs: Vec<(NodeId, &[u8], bool)> = msgs.iter().map(|m| (2, m.as_slice(), false)).collect();
    let datagrams: Vec<Vec<u8>> = packer.pack(&pairs).map(|(_, b)| b.to_vec()).collect();
    assert_eq!(datagrams.len(), 1, "three messages to one node: one datagram");
    h.deliver(T, Some(3), &datagrams[0], "127.0.0.1:3");
    assert_eq!(h.counters().received, 2);
    assert_eq!(h.counters().dropped_by.get("forged"), Some(&1));
    let seqs: Vec<u64> = h
        .take_records()
        .filter_map(|r| match r.event {
            Event::Recv { seq, bytes, .. } => Some((seq, bytes)),
            _ => None,
        })
        .map(|(seq, bytes)| {
            assert_eq!(
                bytes,
                msgs[0].len(),
                "a recv's bytes are its message's, not the datagram's"
            );
            seq
        })
        .collect();
    assert_eq!(seqs, [1, 3]);
    // The same bundle again is two replays and one forgery, nothing accepted.
    h.deliver(T, Some(3), &datagrams[0], "127.0.0.1:3");
    assert_eq!(h.counters().received, 2);
    assert_eq!(h.counters().dropped_by.get("replay"), Some(&2));
}
