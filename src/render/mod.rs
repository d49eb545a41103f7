//! Pictures of a run: the space-time diagram (SVG, and an HTML page with hover and zoom), a
//! Mermaid `sequenceDiagram`, a ShiViz log, and the graph of a mesh run with the election's
//! result on it.

pub mod draw;
pub mod family;
pub mod graph;
pub mod html;
pub mod mermaid;
pub mod orientation;
pub mod shiviz;
pub mod story;
pub mod svg;

#[cfg(test)]
mod family_tests;
#[cfg(test)]
mod graph_tests;
#[cfg(test)]
mod tests;

pub(crate) use story::Story;
pub use story::Window;

use crate::error::{failed, usage, CliError};
use crate::trace::RunDir;
use std::path::{Path, PathBuf};

/// Text safe inside XML content and attribute values.
pub(crate) fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Loads the run directory `dir`, naming it in the error.
pub fn load(dir: &Path) -> Result<RunDir, CliError> {
    if !dir.is_dir() {
        return Err(usage(format!("{}: no such run directory", dir.display())));
    }
    RunDir::load(dir).map_err(|e| usage(format!("{}: {e}", dir.display())))
}

fn write(path: PathBuf, text: &str) -> Result<PathBuf, CliError> {
    std::fs::write(&path, text).map_err(|e| failed(format!("cannot write {}: {e}", path.display())))?;
    Ok(path)
}

/// `coordlab timeline`: writes `timeline.svg` and `timeline.html` into `dir`, and the family's
/// own picture that `view` chooses (`auto`: the run's family's; family::View::choose) as
/// `<view>.svg`, also shown under the page's timeline (with `mermaid`, `timeline.mmd` instead);
/// returns the files written.
pub fn timeline(dir: &Path, w: &Window, mermaid: bool, view: &str) -> Result<Vec<PathBuf>, CliError> {
    let run = load(dir)?;
    let chosen = family::View::choose(view, &run.info.algo)?;
    let story = Story::build(&run, w);
    if mermaid {
        return Ok(vec![write(dir.join("timeline.mmd"), &mermaid::sequence(&story))?]);
    }
    let svg = svg::timeline(&story);
    let all = Story::build(
        &run,
        &Window {
            heartbeats: true,
            ..w.clone()
        },
    );
    let title = run_title(&run, &story);
    let mut written = vec![write(dir.join("timeline.svg"), &svg)?];
    let mut extra = String::new();
    if let Some(v) = chosen {
        let picture = family::draw(v, &run, &story)?;
        written.push(write(dir.join(format!("{}.svg", v.name())), &picture)?);
        extra = format!("<div class=\"extra\" id=\"view-{}\">\n{picture}</div>\n", v.name());
    }
    written.push(write(
        dir.join("timeline.html"),
        &html::page(&title, &all, w.heartbeats, &extra),
    )?);
    Ok(written)
}

/// The title of `run`'s pictures: what ran, and the run's own name (its directory's), never
/// the path it was read from.
pub(crate) fn run_title(run: &RunDir, story: &Story) -> String {
    let name = story.run_name.as_deref().unwrap_or("a run");
    let nodes = match story.resource {
        Some(_) => format!("{} nodes and the resource", run.info.nodes.len().saturating_sub(1)),
        None => format!("{} nodes", run.info.nodes.len()),
    };
    format!("{} on {} of {nodes}: run {name}", run.info.algo, run.info.topology)
}

/// `coordlab shiviz`: writes `shiviz.log` into `dir`.
pub fn shiviz(dir: &Path, w: &Window) -> Result<PathBuf, CliError> {
    let run = load(dir)?;
    write(dir.join("shiviz.log"), &shiviz::log(&run, w))
}

/// `coordlab graph`: writes `graph.svg` into `dir`.
pub fn graph(dir: &Path) -> Result<PathBuf, CliError> {
    let run = load(dir)?;
    write(dir.join("graph.svg"), &graph::Drawing::build(&run).svg())
}
