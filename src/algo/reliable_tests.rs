//! Tests of [`reliable`](super).

use super::*;

const T: Duration = Duration::ZERO;

fn data(f: &Frame<char>) -> (u64, u64) {
    match f {
        Frame::Data { inc, n, .. } => (*inc, *n),
        Frame::Ack { .. } => panic!("not data"),
    }
}

#[test]
fn delivery_is_once_and_in_order_whatever_the_arrival_order() {
    let mut a: Channels<char> = Channels::default();
    let f: Vec<_> = "abc".chars().map(|c| a.send(2, c, T)).collect();
    let mut b: Channels<char> = Channels::default();
    assert!(b.arrive(1, f[2].clone(), T).deliver.is_empty());
    assert_eq!(b.arrive(1, f[0].clone(), T).deliver, vec!['a']);
    let dup = b.arrive(1, f[0].clone(), T);
    assert!(dup.deliver.is_empty() && dup.ignored.unwrap().contains("duplicate"));
    let last = b.arrive(1, f[1].clone(), T);
    assert_eq!(last.deliver, vec!['b', 'c']);
    a.arrive(2, last.ack.unwrap(), T);
    assert!(!a.pending());
}

#[test]
fn unacknowledged_items_are_sent_again_after_the_period() {
    let mut a: Channels<char> = Channels::default();
    a.send(2, 'a', T);
    let rto = Duration::from_millis(100);
    assert!(a.due(Duration::from_millis(50), rto).is_empty());
    let again = a.due(Duration::from_millis(100), rto);
    assert_eq!(again.len(), 1);
    assert_eq!(data(&again[0].1), (0, 1));
    assert!(
        a.due(Duration::from_millis(150), rto).is_empty(),
        "not before another period"
    );
}

#[test]
fn a_restarted_receiver_gets_a_new_incarnation_numbered_from_one() {
    let mut a: Channels<char> = Channels::default();
    let mut b: Channels<char> = Channels::default();
    for c in "ab".chars() {
        let f = a.send(2, c, T);
        let ack = b.arrive(1, f, T).ack.unwrap();
        a.arrive(2, ack, T);
    }
    let lost = a.send(2, 'c', T);
    // b restarts: a fresh process; a learns it and drops what the old boot never took.
    let mut b: Channels<char> = Channels::default();
    assert_eq!(a.peer_restarted(2), vec!['c']);
    // The old incarnation's item reaches the new boot first: held, then superseded.
    assert!(b.arrive(1, lost, T).deliver.is_empty());
    let f = a.send(2, 'x', T);
    assert_eq!(data(&f), (1, 1));
    assert_eq!(b.arrive(1, f, T).deliver, vec!['x']);
    // A straggler of the old incarnation is stale now.
    let stale = b.arrive(
        1,
        Frame::Data {
            inc: 0,
            n: 1,
            item: 'z',
            ack: None,
        },
        T,
    );
    assert!(stale.deliver.is_empty() && stale.ack.is_none());
}

#[test]
fn an_item_going_back_carries_the_acknowledgement_and_no_bare_ack_is_owed() {
    let mut a: Channels<char> = Channels::default();
    let mut b: Channels<char> = Channels::default();
    let f = a.send(2, 'a', T);
    assert!(matches!(f, Frame::Data { ack: None, .. }), "nothing came back yet");
    let arrival = b.arrive(1, f, T);
    assert_eq!(arrival.deliver, vec!['a']);
    assert!(!arrival.ack_now && b.owes_ack());
    let back = b.send(1, 'x', T);
    assert!(matches!(back, Frame::Data { ack: Some((0, 1)), .. }));
    assert!(
        !b.owes_ack() && b.owed_acks(T, Duration::ZERO).is_empty(),
        "the reply carried it"
    );
    assert_eq!(a.arrive(2, back, T).deliver, vec!['x']);
    assert!(!a.pending(), "the carried acknowledgement forgot 'a'");
    // 'x' is owed an acknowledgement until something carries it, or the delay sends it bare.
    let owed = a.owed_acks(T, Duration::ZERO);
    assert_eq!(owed.len(), 1);
    assert!(matches!(owed[0], (2, Frame::Ack { inc: 0, upto: 1 })));
    assert!(!a.owes_ack());
    b.arrive(1, owed[0].1.clone(), T);
    assert!(!b.pending());
}

#[test]
fn a_carried_acknowledgement_counts_even_on_a_duplicate_and_never_above_what_was_sent() {
    let mut a: Channels<char> = Channels::default();
    let mut b: Channels<char> = Channels::default();
    let first = a.send(2, 'a', T);
    b.arrive(1, first.clone(), T);
    let reply = b.send(1, 'x', T);
    a.arrive(2, reply.clone(), T);
    a.send(2, 'b', T);
    // b's reply again (a resend): a duplicate for a, its acknowledgement still read.
    let again = a.arrive(2, reply, T);
    assert!(again.deliver.is_empty() && again.ignored.is_some());
    assert!(a.pending(), "'b' is not acknowledged by an ACK of 1");
    // An acknowledgement above anything numbered: an older boot's, ignored.
    a.arrive(
        2,
        Frame::Data {
            inc: 0,
            n: 2,
            item: 'y',
            ack: Some((0, 9)),
        },
        T,
    );
    assert!(a.pending());
    assert!(a.owes_ack(), "duplicates are owed an acknowledgement too");
}

#[test]
fn a_one_way_burst_is_acknowledged_at_once_every_ack_every_items() {
    let mut a: Channels<u32> = Channels::default();
    let mut b: Channels<u32> = Channels::default();
    let mut now = Vec::new();
    for k in 1..=2 * ACK_EVERY + 1 {
        let arrival = b.arrive(1, a.send(2, k, T), T);
        if arrival.ack_now {
            now.push(k);
            a.arrive(2, b.take_ack(1).unwrap(), T);
        }
    }
    assert_eq!(now, vec![ACK_EVERY, 2 * ACK_EVERY]);
    assert_eq!(a.unacked().count(), 1, "only the last item waits for the delay");
    assert!(b.take_ack(1).is_some() && b.take_ack(1).is_none());
}

#[test]
fn an_item_sent_again_carries_the_current_acknowledgement() {
    let mut a: Channels<char> = Channels::default();
    let mut b: Channels<char> = Channels::default();
    b.arrive(1, a.send(2, 'a', T), T);
    // Lost on the way: only a resend brings it.
    let _ = b.send(1, 'x', T);
    b.arrive(1, a.send(2, 'b', T), T);
    let rto = Duration::from_millis(100);
    let again = b.due(rto, rto);
    assert!(matches!(
        again[..],
        [(
            1,
            Frame::Data {
                n: 1,
                ack: Some((0, 2)),
                ..
            }
        )]
    ));
    assert!(!b.owes_ack());
    assert!(ack_delay(rto) < rto);
}

#[test]
fn an_acknowledgement_of_an_old_boot_carried_to_the_new_one_forgets_nothing() {
    let mut a: Channels<char> = Channels::default();
    a.start(10);
    let mut b: Channels<char> = Channels::default();
    b.start(1_000);
    a.arrive(2, b.send(1, 'p', T), T);
    // b restarts; its new boot sends two items that a has not got yet.
    let mut b: Channels<char> = Channels::default();
    b.start(2_000);
    let (q, r) = (b.send(1, 'q', T), b.send(1, 'r', T));
    // a, not knowing yet, carries its acknowledgement of the old boot's item 1.
    let x = a.send(2, 'x', T);
    assert!(matches!(
        x,
        Frame::Data {
            ack: Some((1_000, 1)),
            ..
        }
    ));
    b.arrive(1, x, T);
    assert_eq!(
        b.unacked().count(),
        2,
        "the new boot's item 1 is not a's to acknowledge"
    );
    // Now a hears the new boot (the host tells it first) and gets both, in order.
    a.peer_restarted(2);
    assert_eq!(a.arrive(2, q, T).deliver, vec!['q']);
    assert_eq!(a.arrive(2, r, T).deliver, vec!['r']);
    b.arrive(1, a.take_ack(2).unwrap(), T);
    assert!(!b.pending());
}

#[test]
fn a_restarted_sender_numbers_from_one_again_and_is_heard() {
    let mut a: Channels<char> = Channels::default();
    let mut b: Channels<char> = Channels::default();
    for c in "abc".chars() {
        b.arrive(1, a.send(2, c, T), T);
    }
    // a restarts: its new boot numbers the channel from 1 in incarnation 0.
    let mut a: Channels<char> = Channels::default();
    b.peer_restarted(1);
    assert_eq!(b.arrive(1, a.send(2, 'n', T), T).deliver, vec!['n']);
}
