//! The pictures of simulated runs: the false-suspicion story, an echo wave, Yo-Yo, a ring
//! repaired around a dead node; each drawing checked as data and as well-formed XML.

use super::draw::count_class as count;
use super::story::{MarkKind, SpanKind, Story, Window, HEARTBEATS};
use super::{mermaid, shiviz, svg};
use crate::algo::election::{chang_roberts::ChangRoberts, Leadership};
use crate::algo::Algorithm;
use crate::sim::{ring, NetConfig, Sim};
use crate::trace::{Event, NodeId, RunDir};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

pub(super) type Cr = Leadership<ChangRoberts>;

/// A run directory in memory from a simulation, faults and all (the checker's own reading).
pub(super) fn run_dir<A: Algorithm>(s: &Sim<A>, algo: &str, topology: &str) -> RunDir {
    crate::check::sim_run(s, algo, topology)
}

pub(super) fn agree<A: Algorithm>(
    s: &mut Sim<A>,
    belief: impl Fn(&Sim<A>, NodeId) -> (u64, Option<NodeId>),
    want: (u64, NodeId),
) {
    let limit = s.now() + Duration::from_secs(20);
    let ok = s.run_until(limit, |s| {
        s.live().iter().all(|&i| belief(s, i) == (want.0, Some(want.1)))
    });
    assert!(ok, "no agreement on {want:?}");
}

/// The README's story in the simulator: a ring of 8 elects 8; 8 is paused for 1.5 s; the
/// others suspect it (falsely) and elect 7 in term 2; 8 resumes and steps down.
pub(super) fn false_suspicion() -> RunDir {
    let ids: Vec<NodeId> = (1..=8).collect();
    let setups = ring(&ids, &ids);
    let mut s = Sim::new(NetConfig::default(), setups, Cr::new);
    agree(&mut s, |s, i| s.node(i).belief(), (1, 8));
    s.pause(8);
    s.run_for(Duration::from_millis(1500));
    s.resume(8);
    agree(&mut s, |s, i| s.node(i).belief(), (2, 7));
    s.run_for(Duration::from_millis(300));
    run_dir(&s, "chang-roberts", "ring")
}

fn sends(run: &RunDir, heartbeats: bool) -> usize {
    run.node_events
        .iter()
        .filter(|r| matches!(&r.event, Event::Send { msg, .. } if heartbeats || !HEARTBEATS.contains(&msg.as_str())))
        .count()
}

#[test]
fn the_false_suspicion_story_is_drawn_with_its_truth() {
    let run = false_suspicion();
    let story = Story::build(&run, &Window::default());
    assert_eq!(story.nodes, (1..=8).collect::<Vec<_>>());
    // Every message is paired with its receive, which never comes before the send.
    assert_eq!(story.arrows.len(), sends(&run, false));
    assert!(story.arrows.iter().all(|a| !HEARTBEATS.contains(&a.name.as_str())));
    assert!(story.hidden > 0, "heartbeats are hidden by default");
    let received = run
        .node_events
        .iter()
        .filter(|r| matches!(&r.event, Event::Recv { msg, .. } if !HEARTBEATS.contains(&msg.as_str())))
        .count();
    assert_eq!(story.arrows.iter().filter(|a| a.recv.is_some()).count(), received);
    assert!(story.arrows.iter().all(|a| a.recv.is_none_or(|r| r >= a.sent)));
    assert!(story.arrows.iter().any(|a| a.brief == "ELECTION(7, term=2)"));
    // Node 8 was paused: every suspicion of it is false, and there is at least one.
    let of_8: Vec<bool> = story
        .marks
        .iter()
        .filter_map(|m| match m.kind {
            MarkKind::Suspect { target: 8, right } => Some(right),
            _ => None,
        })
        .collect();
    assert!(!of_8.is_empty() && of_8.iter().all(|&right| !right), "{of_8:?}");
    assert!(story.marks.iter().any(|m| m.node == 8 && m.kind == MarkKind::StepDown));
    assert!(story
        .marks
        .iter()
        .any(|m| m.kind == MarkKind::Leader { leader: 7, term: 2 }));
    let paused: Vec<_> = story.spans.iter().filter(|s| s.kind == SpanKind::Paused).collect();
    assert_eq!(paused.len(), 1);
    assert_eq!(paused[0].node, 8);

    let text = svg::timeline(&story);
    let doc = roxmltree::Document::parse(&text).expect("the SVG is well-formed XML");
    assert_eq!(count(&doc, "line", "node-line"), 8);
    assert_eq!(count(&doc, "g", "msg"), story.arrows.len());
    assert_eq!(count(&doc, "g", "suspect-false"), of_8.len());
    assert_eq!(count(&doc, "rect", "paused"), 1);
    let page = super::html::page("t", &story, false, "");
    assert!(
        page.contains("\"ELECTION(7, term=2)\""),
        "the messages are in the page's data"
    );
    assert!(
        !page.contains(" src=") && !page.contains("<link"),
        "the page fetches nothing"
    );

    // With heartbeats, every send is an arrow.
    let all = Story::build(&run, &Window::new(None, None, &["heartbeats".into()]).unwrap());
    assert_eq!(all.arrows.len(), sends(&run, true));
    assert_eq!(all.hidden, 0);
}

#[test]
fn a_window_draws_only_what_happened_in_it() {
    let run = false_suspicion();
    let w = Window::new(Some(200), Some(900), &[]).unwrap();
    let story = Story::build(&run, &w);
    assert!(!story.arrows.is_empty());
    assert!(story.arrows.iter().all(|a| (200_000..=900_000).contains(&a.sent)));
    assert!(story.marks.iter().all(|m| (200_000..=900_000).contains(&m.t)));
    assert!(Window::new(Some(5), Some(5), &[]).is_err());
    assert!(Window::new(None, None, &["cats".into()]).is_err());
}

/// A ring of 8 for 40 s: some 2000 heartbeats.
fn busy_run() -> RunDir {
    let ids: Vec<NodeId> = (1..=8).collect();
    let setups = ring(&ids, &ids);
    let mut s = Sim::new(NetConfig::default(), setups, Cr::new);
    s.run_for(Duration::from_secs(40));
    run_dir(&s, "chang-roberts", "ring")
}

#[test]
fn a_long_busy_run_is_drawn_aggregated() {
    let run = busy_run();
    let story = Story::build(&run, &Window::new(None, None, &["heartbeats".into()]).unwrap());
    assert!(story.arrows.len() > svg::MAX_ARROWS, "{}", story.arrows.len());
    let text = svg::timeline(&story);
    let doc = roxmltree::Document::parse(&text).unwrap();
    let drawn = count(&doc, "g", "msg");
    assert_eq!(drawn, count(&doc, "g", "agg"));
    assert!(
        drawn > 0 && drawn < story.arrows.len() / 2,
        "{drawn} of {}",
        story.arrows.len()
    );
}

/// Mermaid's grammar as this renderer uses it: declared participants, then arrows and notes.
fn check_mermaid(text: &str, nodes: &[NodeId]) {
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("sequenceDiagram"));
    let mut declared = BTreeSet::new();
    let part = |p: &str, declared: &BTreeSet<String>| {
        assert!(declared.contains(p), "undeclared participant {p:?}");
    };
    for line in lines {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("participant ") {
            let (id, alias) = rest.split_once(" as ").expect("participant X as Y");
            declared.insert(id.to_string());
            assert!(alias.starts_with("node "));
            continue;
        }
        let (head, words) = line.split_once(": ").unwrap_or_else(|| panic!("no text in {line:?}"));
        // Outside Mermaid's entity codes (#lt;), none of the characters its parser reads.
        let plain: String = words
            .split('#')
            .enumerate()
            .map(|(i, part)| {
                if i == 0 {
                    part
                } else {
                    part.split_once(';').expect("an entity code").1
                }
            })
            .collect();
        assert!(
            !plain.contains(';') && !plain.contains('<') && !plain.contains('>'),
            "{line:?}"
        );
        if let Some(who) = head.strip_prefix("Note over ") {
            who.split(',').for_each(|p| part(p, &declared));
        } else {
            let (a, b) = head
                .split_once("->>")
                .or_else(|| head.split_once("-x"))
                .unwrap_or_else(|| panic!("{line:?}"));
            part(a, &declared);
            part(b, &declared);
        }
    }
    assert_eq!(declared.len(), nodes.len());
}

#[test]
fn mermaid_draws_messages_and_notes_in_its_grammar() {
    let run = false_suspicion();
    let story = Story::build(&run, &Window::new(Some(0), Some(2500), &[]).unwrap());
    let text = mermaid::sequence(&story);
    check_mermaid(&text, &story.nodes);
    assert!(text.contains("n7->>n1: ELECTION(7, term=2)"), "{text}");
    assert!(text.contains("Note over n8: node 8 paused (SIGSTOP)"));
    assert!(text.contains("FALSE: it was alive"));
    // A long run is cut with a note saying how to draw the rest.
    let all = Story::build(&busy_run(), &Window::new(None, None, &["heartbeats".into()]).unwrap());
    let long = mermaid::sequence(&all);
    check_mermaid(&long, &all.nodes);
    assert!(long.contains("more steps from"), "{}", long.len());
    assert!(long.len() < 50_000, "Mermaid's maxTextSize");
}

#[test]
fn shiviz_clocks_follow_its_rules() {
    let run = false_suspicion();
    let w = Window::default();
    let text = shiviz::log(&run, &w);
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(shiviz::REGEX));
    assert_eq!(lines.next(), Some(""));
    let rest: Vec<&str> = lines.collect();
    assert_eq!(rest.len() % 2, 0);
    let mut own: BTreeMap<String, u64> = BTreeMap::new();
    let mut named = BTreeSet::new();
    for pair in rest.chunks(2) {
        let (host, clock) = pair[0].split_once(' ').unwrap();
        let clock: BTreeMap<String, u64> = serde_json::from_str(clock).expect("the clock is a JSON object");
        // The host's own entry starts at 1 and grows by one per logged event.
        let next = own.entry(host.to_string()).or_insert(0);
        *next += 1;
        assert_eq!(clock.get(host), Some(&*next), "{}", pair[0]);
        named.extend(clock.keys().cloned());
        assert!(!pair[1].is_empty());
    }
    let hosts: BTreeSet<String> = own.keys().cloned().collect();
    assert!(named.is_subset(&hosts), "no clock names a host that never logs");
    assert_eq!(hosts.len(), 8);
    // A receive merges its send's clock, then ticks.
    let events = shiviz::clocks(&run, &w);
    let mut at_send = BTreeMap::new();
    for (n, clock, r) in &events {
        match r.event {
            Event::Send { to, seq, .. } => {
                at_send.insert((*n, to, seq), clock.clone());
            }
            Event::Recv { from, seq, .. } => {
                let sent = at_send
                    .get(&(from, *n, seq))
                    .expect("the send is written before its receive");
                assert!(sent.iter().all(|(k, v)| clock.get(k).is_some_and(|c| c >= v)));
            }
            _ => {}
        }
    }
}

/// A mutex run read as the launcher writes it: the resource's events (node 0) in
/// resource.jsonl, not among the nodes' traces. Central, a holder paused past the regrant
/// timeout: two holders at once, or, with fencing, the stale holder's begin refused.
pub(super) fn mutex_run(fencing: bool) -> RunDir {
    use crate::algo::mutex::{central::Central, testkit, RESOURCE_ID};
    let opts = [
        ("think_ms", "0"),
        ("hold_ms", "30"),
        ("regrant_ms", "100"),
        ("fencing", if fencing { "true" } else { "false" }),
    ];
    let mut s = testkit::sim::<Central>(3, NetConfig::default(), &opts);
    let first = testkit::first_to_enter(&mut s, Duration::from_secs(1), 3);
    s.pause(first);
    s.run_for(Duration::from_millis(300));
    s.resume(first);
    s.run_for(Duration::from_millis(300));
    let mut run = run_dir(&s, "central", "mesh:complete");
    let (resource, nodes): (Vec<_>, Vec<_>) = run.node_events.drain(..).partition(|r| r.node == Some(RESOURCE_ID));
    run.node_events = nodes;
    run.resource = resource;
    run
}

#[test]
fn the_mutex_timeline_draws_what_the_resource_received() {
    for fencing in [false, true] {
        let run = mutex_run(fencing);
        assert!(!run.resource.is_empty());
        let story = Story::build(&run, &Window::default());
        let to_resource: Vec<_> = story.arrows.iter().filter(|a| a.to == 0).collect();
        assert!(to_resource.len() >= 4, "BEGIN and END go to the resource");
        let received = run
            .resource
            .iter()
            .filter(|r| matches!(r.event, Event::Recv { .. }))
            .count();
        assert_eq!(
            to_resource.iter().filter(|a| a.recv.is_some()).count(),
            received,
            "every BEGIN/END the resource recorded is drawn received"
        );
        assert!(received >= 4);
        // Marks the resource saw: two holders at once, or a stale begin refused.
        let want = if fencing { MarkKind::Stale } else { MarkKind::Violation };
        assert!(story.marks.iter().any(|m| m.node == 0 && m.kind == want), "{want:?}");
        // Labels as a person writes them, no Rust debug text.
        for a in &story.arrows {
            assert!(
                !a.brief.contains("Some(") && !a.brief.contains(" {") && !a.brief.contains(": "),
                "{}",
                a.brief
            );
        }
        assert!(
            story.arrows.iter().any(|a| a.brief.starts_with("GRANT(req=")),
            "GRANT(req=...)"
        );
        let svg = svg::timeline(&story);
        let doc = roxmltree::Document::parse(&svg).unwrap();
        assert!(count(&doc, "g", if fencing { "stale" } else { "violation" }) > 0);
        assert!(svg.contains(">resource</text>"), "the resource's lane is named");
        let lost_to_resource = story.arrows.iter().filter(|a| a.to == 0 && a.recv.is_none()).count();
        assert_eq!(lost_to_resource, 0);
    }
}

#[test]
fn debug_text_is_cleaned_out_of_labels() {
    use super::story::clean_brief;
    assert_eq!(
        clean_brief("BEGIN(req=1, token=Some(4294967297))"),
        "BEGIN(req=1, token=4294967297)"
    );
    assert_eq!(
        clean_brief("GRANT(Grant { req: 4294967297, token: 4294967303 })"),
        "GRANT(req=4294967297, token=4294967303)"
    );
    assert_eq!(clean_brief("RELEASE(Release { req: 7 })"), "RELEASE(req=7)");
    assert_eq!(clean_brief("BEGIN(req=1, token=None)"), "BEGIN(req=1, token=none)");
    assert_eq!(
        clean_brief("ECHO(wave=1, best=Some((5, 3)))"),
        "ECHO(wave=1, best=(5, 3))"
    );
    assert_eq!(clean_brief("ELECTION(3, term=2)"), "ELECTION(3, term=2)");
    assert_eq!(clean_brief("X(a=1, inner=Inner { b: 2 })"), "X(a=1, inner=(b=2))");
    assert_eq!(clean_brief("PROBE"), "PROBE");
}

#[test]
fn the_page_opens_on_the_activity_with_one_colour_per_type() {
    let run = false_suspicion();
    let all = Story::build(
        &run,
        &Window {
            heartbeats: true,
            ..Window::default()
        },
    );
    let data = super::html::data("t", &all, false);
    let types = data["types"].as_array().unwrap();
    for t in types {
        let name = t["name"].as_str().unwrap();
        assert_eq!(t["colour"].as_str().unwrap(), super::draw::type_colour(name));
        assert_eq!(t["hidden"].as_bool().unwrap(), HEARTBEATS.contains(&name), "{name}");
    }
    assert!(
        types.iter().any(|t| t["name"] == "HEARTBEAT"),
        "heartbeats are in the data, hidden"
    );
    // The fit starts at the first message that is not a heartbeat and ends at the last event.
    let (a, b) = super::html::fit(&all);
    let first = all
        .arrows
        .iter()
        .filter(|x| !HEARTBEATS.contains(&x.name.as_str()))
        .map(|x| all.ms(x.sent))
        .fold(f64::MAX, f64::min);
    assert!(a <= first && a >= first - 0.05 * (b - a) - 0.5, "{a} {first}");
    assert!(b <= all.ms(all.t1));
    // Kinds: only those the run has.
    let kinds: Vec<&str> = data["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["cls"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"suspect-false") && kinds.contains(&"paused"),
        "{kinds:?}"
    );
    assert!(
        !kinds.contains(&"violation") && !kinds.contains(&"critical"),
        "{kinds:?}"
    );
    let page = super::html::page("a </script> title", &all, false, "");
    assert!(!page.contains("a </script> title"), "the title is escaped");
}

#[test]
fn many_nodes_get_narrow_lanes_and_a_legend_of_what_is_there() {
    assert_eq!(svg::lane_height(8), 56.0);
    assert_eq!(svg::lane_height(100), 10.0);
    assert_eq!(svg::lane_height(1000), 4.0);
    let run = false_suspicion();
    let story = Story::build(&run, &Window::default());
    let s = svg::timeline(&story);
    let doc = roxmltree::Document::parse(&s).unwrap();
    let legend: Vec<String> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("legend"))
        .filter_map(|n| {
            n.descendants()
                .find(|d| d.has_tag_name("text"))
                .and_then(|t| t.text())
                .map(str::to_string)
        })
        .collect();
    assert!(legend.contains(&"false suspicion".to_string()), "{legend:?}");
    assert!(
        !legend
            .iter()
            .any(|l| l == "critical section" || l == "two holders at once"),
        "{legend:?}"
    );
    // Arrow heads are open chevrons, no event mark is.
    assert!(s.contains(r#"fill="none""#) && !s.contains("M0,0L10,5L0,10z"));
}
