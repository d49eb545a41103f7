//! Tests of [`detection`](super).

use super::*;
use crate::trace::Record;

fn rec(t: u64, node: NodeId, event: Event) -> Record {
    Record::unstamped(t, Some(node), event)
}

fn suspect(target: NodeId) -> Event {
    Event::Suspect {
        target,
        silence_ms: 300,
        timeout_ms: 300,
        cause: String::new(),
        phi: None,
        incarnation: None,
    }
}

#[test]
fn each_node_is_judged_by_its_fate() {
    let ms = 1000;
    let faults = vec![
        rec(1000 * ms, 1, Event::Pause { pid: 11 }),
        rec(1500 * ms, 1, Event::Resume { pid: 11 }),
        rec(
            5000 * ms,
            3,
            Event::Kill {
                pid: 13,
                signal: "SIGKILL".into(),
            },
        ),
    ];
    let mut faults = faults;
    // Node 2 starved: five stops of 60 ms every 100 ms from 2 s.
    for i in 0..5 {
        faults.push(rec((2000 + 100 * i) * ms, 2, Event::Pause { pid: 12 }));
        faults.push(rec((2060 + 100 * i) * ms, 2, Event::Resume { pid: 12 }));
    }
    faults.sort_by_key(|r| r.t);
    let events = vec![
        rec(1300 * ms, 4, suspect(1)),
        rec(1600 * ms, 4, Event::Unsuspect { target: 1 }),
        rec(2300 * ms, 4, suspect(2)),
        rec(5300 * ms, 4, suspect(3)),
        rec(5400 * ms, 2, suspect(3)),
        rec(6000 * ms, 3, suspect(4)),
    ];
    let run = RunDir::of_ring_test(events, faults);
    let s = stories(&run, &[1, 2, 3, 4], 8000 * ms, false);
    assert_eq!(
        s[0].fates,
        vec![Fate::Paused {
            at: 1000 * ms,
            stopped_ms: 500
        }]
    );
    assert_eq!(s[0].verdict, Verdict::Corrected);
    assert_eq!(s[0].mistakes, vec![(4, 1300 * ms, 1600 * ms)]);
    assert!(matches!(
        s[1].fates[0],
        Fate::Starved {
            stops: 5,
            stopped_ms: 300,
            ..
        }
    ));
    // Never withdrawn: still suspected at the end.
    assert_eq!(s[1].verdict, Verdict::Wrong);
    assert_eq!(s[1].held_at_end, BTreeSet::from([4]));
    assert_eq!(s[2].verdict, Verdict::Detected);
    assert_eq!(s[2].detected_ms, Some(300));
    assert_eq!(s[2].suspected_by.keys().copied().collect::<Vec<_>>(), vec![2, 4]);
    // The dead node 3's suspicion of 4, made after its death, does not count.
    assert_eq!(s[3].verdict, Verdict::Right);
    let t = Truth::of(&run);
    assert_eq!(t.cause(4, 1, 1300 * ms), Cause::Paused);
    assert_eq!(t.cause(4, 2, 2300 * ms), Cause::Starved);
    assert_eq!(t.cause(4, 1, 4000 * ms), Cause::Running);
    // SWIM counts a detection only when declared dead.
    let s = stories(&run, &[3], 8000 * ms, true);
    assert_eq!(s[0].verdict, Verdict::Missed);
}
