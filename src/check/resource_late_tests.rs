//! Checker tests of a resource that reads its datagrams late (it was paused): which of each
//! holder's entries a violation it records is about, a holder that died before the resource
//! read its BEGIN, and an END the resource read after the next holder's BEGIN. Each comes from
//! a chaos soak's run (`scripts/soak-all.sh 75 5 1`), cut down to its few records.

use super::restart_tests::R;
use super::*;

fn access(by: NodeId, req: u64, phase: &str, token: Option<u64>) -> Event {
    Event::Access {
        by,
        req,
        token,
        phase: phase.into(),
    }
}

fn enter(req: u64, token: u64) -> Event {
    Event::CsEnter {
        req,
        token: Some(token),
    }
}

fn facts(a: &Analysis) -> &mutex::MutexFacts {
    &a.sections[0].as_any().downcast_ref::<mutex::Section>().unwrap().facts
}

#[test]
fn a_holder_killed_before_the_paused_resource_read_its_begin_is_not_a_holder() {
    // Ricart-Agrawala, soak seed 1: the resource is paused; node 5 enters and sends its BEGIN,
    // and is killed inside the section; the resource, resumed, reads node 5's BEGIN after its
    // death and then node 4's. Node 5 was dead: node 4 was alone.
    let mut r = R::new("ricart-agrawala", &[0, 4, 5]);
    r.fault(50, 0, Event::Pause { pid: 0 })
        .ev(100, 5, enter(21, 55))
        .kill(110, 5)
        .fault(900, 0, Event::Resume { pid: 0 })
        .res(901, access(5, 21, "begin", Some(55)))
        .ev(1500, 4, enter(13, 56))
        .res(1501, access(4, 13, "begin", Some(56)))
        .res(1501, Event::Violation { nodes: vec![4, 5] })
        .ev(1510, 4, Event::CsExit { req: 13 })
        .res(1511, access(4, 13, "end", None));
    let a = analyse(&r.load(3000));
    let f = facts(&a);
    assert!(f.resource_violations.is_empty(), "{f:?}");
    assert_eq!(f.dead_holders.len(), 1, "{f:?}");
    assert_eq!(f.dead_holders[0].dead, vec![(5, restart_tests::ms(110))]);
    assert!(!a.violated());
}

#[test]
fn a_late_resources_violation_is_judged_on_the_entries_whose_begins_it_read() {
    // Suzuki-Kasami, soak seed 1: nodes 1 and 3 both hold (a regenerated token) while the
    // resource is paused; node 1 enters again before the resource reads the first two
    // BEGINs. The violation is about node 1's token 10, not its later entry with token 12.
    let mut r = R::new("suzuki-kasami", &[0, 1, 3]);
    r.fault(50, 0, Event::Pause { pid: 0 })
        .ev(100, 1, enter(7, 10))
        .ev(101, 3, enter(37, 11))
        .ev(110, 1, Event::CsExit { req: 7 })
        .ev(115, 3, Event::CsExit { req: 37 })
        .ev(200, 1, enter(8, 12))
        .ev(210, 1, Event::CsExit { req: 8 })
        .fault(300, 0, Event::Resume { pid: 0 })
        .res(301, access(1, 7, "begin", Some(10)))
        .res(301, access(3, 37, "begin", Some(11)))
        .res(301, Event::Violation { nodes: vec![1, 3] })
        .res(301, access(1, 7, "end", None))
        .res(301, access(3, 37, "end", None))
        .res(302, access(1, 8, "begin", Some(12)))
        .res(302, access(1, 8, "end", None));
    let a = analyse(&r.load(2000));
    let f = facts(&a);
    assert_eq!(f.resource_violations.len(), 1, "{f:?}");
    let w = f.resource_violations[0].explained.as_deref().expect("explained");
    assert!(
        w.contains("node 1 held token 10") && w.contains("higher token 11"),
        "{w}"
    );
    assert!(!w.contains("left the section"), "{w}");
}

#[test]
fn an_end_read_after_the_next_begin_is_explained_only_by_a_pause_that_held_it() {
    // Node 1 leaves by its own trace before node 2 enters, but the resource reads node 2's
    // BEGIN before node 1's END. Node 1 paused between leaving and sending its END explains
    // it; with no pause, nothing does (the network's rules never touch the resource).
    for paused in [true, false] {
        let mut r = R::new("ricart-agrawala", &[0, 1, 2]);
        r.ev(100, 1, enter(1, 10))
            .res(101, access(1, 1, "begin", Some(10)))
            .ev(110, 1, Event::CsExit { req: 1 })
            .ev(300, 2, enter(1, 11))
            .res(301, access(2, 1, "begin", Some(11)))
            .res(301, Event::Violation { nodes: vec![1, 2] })
            .ev(310, 2, Event::CsExit { req: 1 })
            .res(311, access(2, 1, "end", None))
            .res(900, access(1, 1, "end", None));
        if paused {
            r.fault(111, 1, Event::Pause { pid: 0 })
                .fault(899, 1, Event::Resume { pid: 0 });
        }
        let a = analyse(&r.load(2000));
        let f = facts(&a);
        assert_eq!(f.resource_violations.len(), 1, "{f:?}");
        let w = f.resource_violations[0].explained.as_deref();
        if paused {
            let w = w.expect("explained by the pause");
            assert!(
                w.contains("node 1 left the section at +110 ms by its own trace, before node 2 entered")
                    && w.contains("(read at +900 ms)")
                    && w.contains("node 1 was paused at +111 ms"),
                "{w}"
            );
        } else {
            assert_eq!(w, None);
        }
    }
}

#[test]
fn an_end_never_read_by_a_paused_resource_is_explained_by_its_full_buffer() {
    let mut r = R::new("lamport", &[0, 1, 2]);
    r.ev(100, 1, enter(1, 10))
        .res(101, access(1, 1, "begin", Some(10)))
        .fault(105, 0, Event::Pause { pid: 0 })
        .ev(110, 1, Event::CsExit { req: 1 })
        .ev(300, 2, enter(1, 11))
        .fault(800, 0, Event::Resume { pid: 0 })
        .res(801, access(2, 1, "begin", Some(11)))
        .res(801, Event::Violation { nodes: vec![1, 2] });
    let a = analyse(&r.load(2000));
    let w = facts(&a).resource_violations[0].explained.clone().expect("explained");
    assert!(
        w.contains("(never read)") && w.contains("the resource was paused at +105 ms"),
        "{w}"
    );
}

#[test]
fn a_killed_holder_beside_two_live_ones_is_left_out_of_the_violation() {
    // Suzuki-Kasami, soak seed 90 (10 nodes): node 9 is killed inside the section, its END
    // never sent; restarted, it holds nothing. Later nodes 1 and 8 overlap (a regenerated
    // token): the resource records [1, 8, 9]. The violation is 1 and 8's, explained as theirs;
    // with node 9 counted, it went unexplained and failed the soak.
    let mut r = R::new("suzuki-kasami", &[0, 1, 8, 9]);
    r.ev(100, 9, enter(9, 5))
        .res(100, access(9, 9, "begin", Some(5)))
        .kill(101, 9)
        .restart(1500, 9)
        .ev(3000, 1, enter(13, 20))
        .res(3000, access(1, 13, "begin", Some(20)))
        .res(3000, Event::Violation { nodes: vec![1, 9] })
        .ev(3005, 8, enter(11, 21))
        .res(3005, access(8, 11, "begin", Some(21)))
        .res(3005, Event::Violation { nodes: vec![1, 8, 9] })
        .ev(3006, 1, Event::CsExit { req: 13 })
        .res(3006, access(1, 13, "end", None))
        .ev(3010, 8, Event::CsExit { req: 11 })
        .res(3010, access(8, 11, "end", None));
    let a = analyse(&r.load(5000));
    let f = facts(&a);
    assert_eq!(f.resource_violations.len(), 1, "{f:?}");
    assert_eq!(f.resource_violations[0].nodes, vec![1, 8]);
    let w = f.resource_violations[0].explained.as_deref().expect("explained");
    assert!(
        w.contains("node 1 held token 20") && w.contains("higher token 21"),
        "{w}"
    );
    assert_eq!(f.dead_holders.len(), 1, "{f:?}");
}
