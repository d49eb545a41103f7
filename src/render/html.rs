//! The timeline as a self-contained HTML page (no network fetch): the run's messages, marks
//! and spans as data, drawn by the page's script on a canvas that stays readable at any
//! scale. The wheel zooms time only (node names, legend and axis stay in place), dragging pans,
//! the time axis is sticky, and the view opens fitted to where the activity is. Filters by node,
//! message type and event kind; heartbeats are in the data, hidden until ticked. Past a few
//! thousand messages in view the script aggregates them, each stroke with its count.
//!
//! When its script has run, the page marks `<body>` with `data-ok`, `data-lines` (lanes),
//! `data-arrows` (messages of the types shown), `data-drawn` (messages in the first view),
//! `data-view` (the first view, ms), `data-open-ms` (time from navigation to the first
//! frame), `data-frame-ms` (the first frame's drawing alone), and any script error with `data-errors`: what the browser tests read back.

use super::story::{MarkKind, Story, HEARTBEATS};
use super::svg::{mark_label, mark_meaning};
use super::xml_escape as esc;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};

const SCRIPT: &str = include_str!("page.js");

const STYLE: &str = r#"
body { font-family: sans-serif; margin: 0 1em; }
#bar { position: sticky; top: 0; background: #fff; padding: 0.3em 0; border-bottom: 1px solid #ccc; z-index: 2; }
#bar label { margin-right: 0.8em; white-space: nowrap; font-size: 0.85em; }
#info { font-family: monospace; white-space: pre-wrap; min-height: 2.6em; color: #222; }
#plotbox { position: relative; }
#plot { position: sticky; display: block; width: 100%; cursor: grab; }
.row { margin: 0.2em 0; }
.extra { margin-top: 1em; }
"#;

/// How many heartbeats the page carries at most (the rest would only slow it): past this, it
/// leaves them out and says so.
pub(crate) const MAX_HEARTBEATS: usize = 300_000;

/// The times (ms since the run's start) where `story`'s activity is: from its first message or
/// mark to its last, leaving out heartbeats and protocol notes, with a margin; the whole window
/// when nothing happened.
pub(crate) fn fit(story: &Story) -> (f64, f64) {
    let mut times: Vec<u64> = Vec::new();
    for a in story.arrows.iter().filter(|a| !HEARTBEATS.contains(&a.name.as_str())) {
        times.push(a.sent);
        times.extend(a.recv);
    }
    times.extend(story.marks.iter().filter(|m| m.kind != MarkKind::Note).map(|m| m.t));
    let (Some(&lo), Some(&hi)) = (times.iter().min(), times.iter().max()) else {
        return (story.ms(story.t0), story.ms(story.t1));
    };
    let pad = ((hi - lo) as f64 / 1000.0 * 0.04).max(0.5);
    let (t0, t1) = (story.ms(story.t0), story.ms(story.t1));
    ((story.ms(lo) - pad).max(t0), (story.ms(hi) + pad).min(t1))
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// The data the page's script draws from `story` (drawn with heartbeats; `heartbeats`: shown
/// at first).
pub fn data(title: &str, story: &Story, heartbeats: bool) -> Value {
    let index: HashMap<u64, usize> = story.nodes.iter().enumerate().map(|(i, &n)| (n, i)).collect();
    let beats = story
        .arrows
        .iter()
        .filter(|a| HEARTBEATS.contains(&a.name.as_str()))
        .count();
    let keep_beats = beats <= MAX_HEARTBEATS;
    let mut types: BTreeMap<&str, usize> = BTreeMap::new();
    for a in &story.arrows {
        *types.entry(a.name.as_str()).or_default() += 1;
    }
    if !keep_beats {
        types.retain(|n, _| !HEARTBEATS.contains(n));
    }
    let type_index: HashMap<&str, usize> = types.keys().enumerate().map(|(i, &n)| (n, i)).collect();
    let (mut from, mut to, mut sent, mut recv, mut ty, mut seq, mut brief) =
        (vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
    for a in &story.arrows {
        let (Some(&f), Some(&t), Some(&k)) = (index.get(&a.from), index.get(&a.to), type_index.get(a.name.as_str()))
        else {
            continue;
        };
        from.push(f);
        to.push(t);
        sent.push(round3(story.ms(a.sent)));
        recv.push(a.recv.map_or(-1.0, |r| round3(story.ms(r))));
        ty.push(k);
        seq.push(a.seq);
        brief.push(a.brief.as_str());
    }
    let mut kinds: BTreeMap<&'static str, (String, usize)> = BTreeMap::new();
    let marks: Vec<Value> = story
        .marks
        .iter()
        .filter_map(|m| {
            let i = index.get(&m.node)?;
            let cls = m.kind.class();
            kinds.entry(cls).or_insert((mark_meaning(cls).to_string(), 0)).1 += 1;
            let info = format!("node {} at +{:.3} ms: {}", m.node, story.ms(m.t), m.text);
            Some(json!([i, round3(story.ms(m.t)), cls, info, mark_label(m)]))
        })
        .collect();
    let spans: Vec<Value> = story
        .spans
        .iter()
        .filter_map(|s| {
            let i = index.get(&s.node)?;
            let cls = s.kind.class();
            let label = if cls == "critical" { "critical section" } else { cls };
            kinds.entry(cls).or_insert((label.to_string(), 0)).1 += 1;
            let info = format!("{} (+{:.1} ms to +{:.1} ms)", s.text, story.ms(s.from), story.ms(s.to));
            Some(json!([i, round3(story.ms(s.from)), round3(story.ms(s.to)), cls, info]))
        })
        .collect();
    let (a, b) = fit(story);
    json!({
        "title": title,
        "t0": round3(story.ms(story.t0)),
        "t1": round3(story.ms(story.t1)),
        "fit": [round3(a), round3(b)],
        "nodes": story.nodes,
        "names": story.nodes.iter().map(|&n| story.lane_name(n)).collect::<Vec<_>>(),
        "types": types.iter().map(|(&name, &count)| json!({
            "name": name,
            "colour": super::draw::type_colour(name),
            "count": count,
            "hidden": !heartbeats && HEARTBEATS.contains(&name),
        })).collect::<Vec<_>>(),
        "kinds": kinds.into_iter().map(|(cls, (label, count))| json!({"cls": cls, "label": label, "count": count})).collect::<Vec<_>>(),
        "arrows": {"from": from, "to": to, "sent": sent, "recv": recv, "type": ty, "seq": seq, "brief": brief},
        "marks": marks,
        "spans": spans,
        "beats_left_out": if keep_beats { 0 } else { beats },
    })
}

/// The page of `story` (built with heartbeats) titled `title`; `heartbeats`: shown at first;
/// `extra`: further HTML under the timeline (the family's own picture).
pub fn page(title: &str, story: &Story, heartbeats: bool, extra: &str) -> String {
    // `</` cannot close the script element from inside the data.
    let value = data(title, story, heartbeats);
    let left_out = match value["beats_left_out"].as_u64() {
        Some(n) if n > 0 => format!(" ({n} heartbeats left out: too many for a page)"),
        _ => String::new(),
    };
    let data = value.to_string().replace("</", "<\\/");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{STYLE}</style></head>\n\
         <body><div id=\"bar\"><b>{t}</b>{left_out} &#8212; wheel: zoom time; shift+wheel or drag: pan; arrows keys, +/-; hover for details \
         <button id=\"fit\">fit to activity</button> <button id=\"all\">whole run</button> \
         <label>nodes <input id=\"nodes\" size=\"14\" placeholder=\"all (e.g. 1-10, 15)\"></label>\
         <div class=\"row\" id=\"types\">messages: </div><div class=\"row\" id=\"kinds\">events: </div>\
         <div id=\"info\"></div></div>\n\
         <div id=\"plotbox\"><canvas id=\"plot\"></canvas></div>\n{extra}\
         <script type=\"application/json\" id=\"data\">{data}</script>\n<script>{SCRIPT}</script></body></html>\n",
        t = esc(title)
    )
}
