//! Tests of [`detector_confirms`](super).

use super::*;
use crate::trace::Record;

fn rec(t: u64, node: NodeId, event: Event) -> Record {
    Record::unstamped(t, Some(node), event)
}

fn confirm(target: NodeId, suspected_ms: u64) -> Event {
    Event::Confirm {
        target,
        incarnation: 0,
        confirmations: 1,
        suspected_ms,
    }
}

#[test]
fn each_false_confirmation_is_attributed_and_judged_against_the_shortest_timeout() {
    let ms = 1000;
    let mut faults = vec![
        // Node 1 paused 1.5 s (longer than the 900 ms timeout), node 2 paused 600 ms.
        rec(1000 * ms, 1, Event::Pause { pid: 11 }),
        rec(2500 * ms, 1, Event::Resume { pid: 11 }),
        rec(4000 * ms, 2, Event::Pause { pid: 12 }),
        rec(4600 * ms, 2, Event::Resume { pid: 12 }),
        rec(
            9000 * ms,
            5,
            Event::Kill {
                pid: 15,
                signal: "SIGKILL".into(),
            },
        ),
    ];
    // Node 3 starved from 6 s.
    for i in 0..5 {
        faults.push(rec((6000 + 100 * i) * ms, 3, Event::Pause { pid: 13 }));
        faults.push(rec((6060 + 100 * i) * ms, 3, Event::Resume { pid: 13 }));
    }
    faults.sort_by_key(|r| r.t);
    let events = vec![
        rec(2300 * ms, 4, confirm(1, 950)),
        rec(2700 * ms, 6, confirm(1, 1000)),
        rec(4550 * ms, 4, confirm(2, 900)),
        rec(6400 * ms, 4, confirm(3, 900)),
        rec(8000 * ms, 4, confirm(6, 900)),
        // Of the dead: no mistake.
        rec(9900 * ms, 4, confirm(5, 900)),
    ];
    let run = RunDir::of_ring_test(events, faults);
    let c = false_confirms(&run, 0, Duration::from_millis(900));
    let brief: Vec<(NodeId, NodeId, &str, bool)> = c
        .iter()
        .map(|c| (c.by, c.target, c.fault.as_str(), c.allowed))
        .collect();
    assert_eq!(
        brief,
        vec![
            (4, 1, "paused 1500 ms from +1.00 s (still stopped)", true),
            (6, 1, "paused 1500 ms from +1.00 s (resumed 200 ms before)", true),
            (4, 2, "paused 600 ms from +4.00 s (still stopped)", false),
            (4, 3, "starved of CPU", false),
            (4, 6, "running", false),
        ]
    );
    assert!(c[2].line().ends_with("BREAKS THE GOAL"), "{}", c[2].line());
    assert_eq!(c[0].json()["suspected_ms"], 950);
}
