//! The families' own views (mutex, clock, snapshot), chosen by the run's family, and ShiViz's
//! log of a run with a resource.

use super::draw::count_class as count;
use super::shiviz;
use super::story::{Story, Window};
use super::tests::{false_suspicion, mutex_run, run_dir};
use crate::algo::Setup;
use crate::sim::{NetConfig, Sim};
use crate::trace::{Event, NodeId};
use std::collections::BTreeSet;
use std::time::Duration;

#[test]
fn the_view_is_the_run_familys_unless_a_flag_names_one() {
    use super::family::View;
    assert_eq!(View::choose("auto", "central").unwrap(), Some(View::Mutex));
    assert_eq!(View::choose("auto", "cristian").unwrap(), Some(View::Clock));
    assert_eq!(View::choose("auto", "bank").unwrap(), Some(View::Snapshot));
    assert_eq!(View::choose("auto", "chang-roberts").unwrap(), None);
    assert_eq!(View::choose("clock", "chang-roberts").unwrap(), Some(View::Clock));
    assert_eq!(View::choose("none", "central").unwrap(), None);
    let e = View::choose("cats", "central").unwrap_err();
    assert!(format!("{e:?}").contains("--view"), "{e:?}");
    // A view of what the run does not have is refused, not drawn empty.
    let run = false_suspicion();
    let story = Story::build(&run, &Window::default());
    assert!(super::family::draw(View::Snapshot, &run, &story).is_err());
    assert!(super::family::draw(View::Mutex, &run, &story).is_err());
}

#[test]
fn the_mutex_view_shows_holders_violations_and_stale_tokens() {
    use super::family::{draw, View};
    for fencing in [false, true] {
        let run = mutex_run(fencing);
        let story = Story::build(&run, &Window::default());
        let svg = draw(View::Mutex, &run, &story).unwrap();
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let begins = run
            .resource
            .iter()
            .filter(|r| matches!(&r.event, Event::Access { phase, .. } if phase == "begin"))
            .count();
        assert_eq!(
            count(&doc, "rect", "hold"),
            begins,
            "one bar per access the resource accepted"
        );
        let enters = run
            .node_events
            .iter()
            .filter(|r| matches!(r.event, Event::CsEnter { .. }))
            .count();
        assert_eq!(count(&doc, "rect", "believed"), enters);
        if fencing {
            assert!(count(&doc, "g", "stale") >= 2 && count(&doc, "g", "violation") == 0);
            assert!(svg.contains("stale "), "the refused token is written");
        } else {
            assert!(count(&doc, "g", "violation") >= 1 && count(&doc, "g", "stale") == 0);
        }
    }
}

#[test]
fn the_clock_view_draws_offsets_corrections_and_bounds() {
    use super::family::{draw, View};
    use crate::algo::clocksync::cristian::Cristian;
    use crate::clock::ClockSpec;
    let ids: Vec<NodeId> = (1..=4).collect();
    let setups: Vec<Setup> = ids
        .iter()
        .map(|&me| {
            let mut s = Setup::new(me, ids.clone(), ids.iter().copied().filter(|&x| x != me).collect());
            s.clock = ClockSpec {
                offset_us: 50_000 * me as i64,
                drift_ppm: 0.0,
            };
            s
        })
        .collect();
    let mut s = Sim::new(NetConfig::default(), setups, Cristian::new);
    s.run_for(Duration::from_secs(3));
    let run = run_dir(&s, "cristian", "mesh:complete");
    let fixes = run
        .node_events
        .iter()
        .filter(|r| matches!(r.event, Event::ClockAdjust { .. }))
        .count();
    assert!(fixes >= 3);
    let story = Story::build(&run, &Window::default());
    let svg = draw(View::Clock, &run, &story).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    assert_eq!(count(&doc, "path", "offset"), 4, "one offset line per node");
    assert_eq!(count(&doc, "g", "correction"), fixes);
    assert!(svg.contains("claimed bound ±") && svg.contains("0 (true time)"));
}

#[test]
fn the_snapshot_view_draws_each_cut_with_its_money() {
    use super::family::{draw, View};
    use crate::algo::snapshot::bank::Bank;
    let ids: Vec<NodeId> = (1..=4).collect();
    let setups: Vec<Setup> = ids
        .iter()
        .map(|&me| {
            let mut s = Setup::new(me, ids.clone(), ids.iter().copied().filter(|&x| x != me).collect());
            s.opts.insert("snapshot".into(), "chandy-lamport".into());
            s.opts.insert("snapshot_ms".into(), "300".into());
            s.opts.insert("transfer_ms".into(), "5".into());
            s
        })
        .collect();
    let mut s = Sim::new(NetConfig::default(), setups, Bank::new);
    s.run_for(Duration::from_millis(1400));
    let run = run_dir(&s, "bank", "mesh:complete");
    let story = Story::build(&run, &Window::default());
    let svg = draw(View::Snapshot, &run, &story).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let snaps: BTreeSet<u64> = run
        .node_events
        .iter()
        .filter_map(|r| match &r.event {
            Event::Snapshot { snap, method, .. } if method != "initial" => Some(*snap),
            _ => None,
        })
        .collect();
    assert!(snaps.len() >= 2, "{snaps:?}");
    assert_eq!(count(&doc, "g", "cut"), snaps.len());
    assert!(svg.contains("(the bank holds 4000)"), "{svg}");
}

#[test]
fn shiviz_logs_the_resources_receives_with_clean_labels() {
    let run = mutex_run(true);
    let log = shiviz::log(&run, &Window::default());
    assert!(log.contains("\nnode0 {"), "the resource's events are logged");
    assert!(log.contains("got BEGIN(req="), "{log}");
    assert!(!log.contains("Some(") && !log.contains("Grant {"), "clean labels");
}
