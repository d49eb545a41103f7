//! Tests of [`central`](super)'s lease (`regrant_ms`): a holder renews its grant; one cut off is regranted.

use super::*;
use crate::algo::mutex::testkit::sim;
use crate::sim::NetConfig;

fn opts(fencing: &str) -> [(&'static str, &str); 4] {
    [
        ("think_ms", "20"),
        ("hold_ms", "300"),
        ("regrant_ms", "100"),
        ("fencing", fencing),
    ]
}

#[test]
fn a_holder_renews_its_grant_so_a_long_hold_alone_never_regrants() {
    let mut s = sim::<Central>(3, NetConfig::default(), &opts("false"));
    s.run_for(Duration::from_secs(3));
    assert!(s.events("cs_exit").len() >= 6, "entries were served");
    assert!(
        s.events("violation").is_empty(),
        "holds of 300 ms under a 100 ms regrant"
    );
    assert!(s.sent("HOLDING") > 0);
}

#[test]
fn a_holder_cut_off_from_the_coordinator_is_regranted_and_fencing_rejects_it() {
    for fencing in ["false", "true"] {
        let mut s = sim::<Central>(3, NetConfig::default(), &opts(fencing));
        let holder = crate::algo::mutex::testkit::first_to_enter(&mut s, Duration::from_secs(2), 3);
        // The coordinator (3) stops hearing the holder; the resource (0) still does.
        s.partition(&[holder], &[3]);
        s.run_for(Duration::from_millis(600));
        let v = s.events("violation").len();
        let stale = s.events("reject_stale").len();
        if fencing == "true" {
            assert_eq!(v, 0, "fenced");
            assert!(stale >= 1, "the cut-off holder's END carries the older token");
        } else {
            assert!(v >= 1, "two holders at once");
        }
        // Healed, the holder's next message withdraws the coordinator's suspicion.
        s.heal();
        s.run_for(Duration::from_millis(1000));
        assert!(s
            .events("unsuspect")
            .iter()
            .any(|r| r.node == Some(3) && matches!(r.event, Event::Unsuspect { target } if target == holder)));
    }
}
