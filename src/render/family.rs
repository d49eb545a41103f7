//! The families' own pictures, beside the timeline: a mutex view (who holds the resource when,
//! each violation and each stale begin refused, with the fencing tokens), a clock view (each
//! node's offset from true time over the run, before and after each correction, with the bound
//! it claimed) and a snapshot view (each recorded global state drawn as a cut across the nodes'
//! lines, with the balances and the money in channels). `coordlab timeline` picks the one of
//! the run's family (the registry says it) unless `--view` names another.

use super::draw::{self, Anchor};
use super::story::Story;
use super::xml_escape as esc;
use crate::error::{usage, CliError};
use crate::trace::messages::{received, Sends};
use crate::trace::{Event, NodeId, Record, RunDir};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

mod clock;
mod mutex;
mod snapshot;

/// Which family picture to draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// Who holds the resource when.
    Mutex,
    /// Each clock's offset from true time.
    Clock,
    /// The recorded global states as cuts.
    Snapshot,
}

impl View {
    /// The view's name, as `--view` takes it and as its file is named (`mutex.svg`).
    pub fn name(self) -> &'static str {
        match self {
            View::Mutex => "mutex",
            View::Clock => "clock",
            View::Snapshot => "snapshot",
        }
    }

    /// The view `--view` asks for: `auto` (the run's family's, if it has one), `none`, or a
    /// view's name; None for no family picture.
    pub(crate) fn choose(flag: &str, algo: &str) -> Result<Option<View>, CliError> {
        match flag {
            "auto" => Ok(crate::catalog::family(algo).and_then(|f| View::of_family(f.name))),
            "none" | "timeline" => Ok(None),
            other => View::of_family(other).map(Some).ok_or_else(|| {
                usage(format!(
                    "--view: unknown '{other}' (known: auto, none, mutex, clock, snapshot)"
                ))
            }),
        }
    }

    fn of_family(name: &str) -> Option<View> {
        match name {
            "mutex" => Some(View::Mutex),
            "clock" => Some(View::Clock),
            "snapshot" => Some(View::Snapshot),
            _ => None,
        }
    }
}

const WIDTH: f64 = 1400.0;
const LEFT: f64 = 110.0;
const RIGHT: f64 = 40.0;

/// The time scale every view shares with the timeline's window.
struct Frame<'a> {
    story: &'a Story,
}

impl Frame<'_> {
    fn x(&self, t: u64) -> f64 {
        let s = self.story;
        let span = (s.t1 - s.t0).max(1) as f64;
        LEFT + (t.clamp(s.t0, s.t1) - s.t0) as f64 / span * (WIDTH - LEFT - RIGHT)
    }

    fn axis(&self, out: &mut String, y: f64) {
        let s = self.story;
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" y1="{y}" x2="{}" y2="{y}" stroke="#333"/>"##,
            WIDTH - RIGHT
        );
        let span = s.ms(s.t1) - s.ms(s.t0);
        let step = draw::nice_step(span / 10.0);
        let mut ms = (s.ms(s.t0) / step).ceil() * step;
        while ms <= s.ms(s.t1) + 1e-9 {
            let x = self.x((s.start_us as f64 + ms * 1000.0).max(0.0) as u64);
            draw::text(out, x, y + 14.0, Anchor::Middle, "", &format!("+{} ms", ms.round()));
            ms += step;
        }
    }
}

/// Draws `view` of `run` over `story`'s window; an error when the run has nothing it draws.
pub fn draw(view: View, run: &RunDir, story: &Story) -> Result<String, CliError> {
    let f = Frame { story };
    match view {
        View::Mutex => mutex::mutex(run, &f),
        View::Clock => clock::clock(run, &f),
        View::Snapshot => snapshot::snapshot(run, &f),
    }
}

/// Every record of the run, nodes' and resource's, in time order.
fn records(run: &RunDir) -> Vec<&Record> {
    let mut all: Vec<&Record> = run.node_events.iter().chain(&run.resource).collect();
    all.sort_by_key(|r| r.t);
    all
}

/// A lane: its name at the left, in bold, and its line across the picture at height `y`.
fn lane(out: &mut String, y: f64, name: &str, stroke: &str) {
    draw::text(out, 10.0, y + 4.0, Anchor::Start, r#"font-weight="bold""#, name);
    let _ = writeln!(
        out,
        r##"<line x1="{LEFT}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="{stroke}"/>"##,
        WIDTH - RIGHT
    );
}

fn header(out: &mut String, title: &str, lines: &[String]) {
    draw::text(
        out,
        10.0,
        20.0,
        Anchor::Start,
        r#"font-size="15" font-weight="bold""#,
        title,
    );
    for (i, l) in lines.iter().enumerate() {
        draw::text(out, 10.0, 38.0 + 15.0 * i as f64, Anchor::Start, r#"font-size="11""#, l);
    }
}
