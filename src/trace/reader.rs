//! Reads a run directory back: `run.json` and every `.jsonl`, merged by true time.

use super::Record;
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

/// One node as launched (in `run.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunNode {
    /// Its id.
    pub id: u64,
    /// Its UDP address.
    pub addr: String,
    /// Its neighbours (who it may talk to).
    #[serde(default)]
    pub peers: Vec<u64>,
}

/// What was launched: `run.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunInfo {
    /// The algorithm name (`--algo`).
    pub algo: String,
    /// `ring`, `mesh:<topology>`, ...
    pub topology: String,
    /// The nodes, in ring order for rings.
    pub nodes: Vec<RunNode>,
    /// Wall-clock start, microseconds.
    pub start_us: u64,
    /// The options the launcher was given, as it understood them.
    #[serde(default)]
    pub options: serde_json::Value,
    /// The launcher's control socket, for `coordlab pause` from another terminal.
    #[serde(default)]
    pub control: Option<String>,
}

/// Reads every line of a `.jsonl` file; a line that does not parse is skipped and counted.
pub fn read_jsonl(path: &Path) -> io::Result<(Vec<Record>, usize)> {
    let file = match fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((Vec::new(), 0)),
        Err(e) => return Err(e),
    };
    let mut recs = Vec::new();
    let mut bad = 0;
    for line in BufReader::new(file).lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Record>(&line) {
            Ok(r) => recs.push(r),
            Err(_) => bad += 1,
        }
    }
    Ok((recs, bad))
}

/// A run directory loaded in memory.
#[derive(Debug, Clone)]
pub struct RunDir {
    /// Where it is.
    pub path: PathBuf,
    /// `run.json`.
    pub info: RunInfo,
    /// Every node event, merged and sorted by `t` (stable, so each node's order is kept).
    pub node_events: Vec<Record>,
    /// `faults.jsonl`, in order.
    pub faults: Vec<Record>,
    /// `resource.jsonl`, in order.
    pub resource: Vec<Record>,
    /// Lines that did not parse, over all files.
    pub bad_lines: usize,
}

impl RunDir {
    /// Loads `dir` (following the `latest` symlink if given one).
    pub fn load(dir: &Path) -> io::Result<Self> {
        let info_path = dir.join("run.json");
        let text = fs::read_to_string(&info_path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("{}: {e} (is this a run directory?)", info_path.display()),
            )
        })?;
        let info: RunInfo = serde_json::from_str(&text)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {e}", info_path.display())))?;
        let mut bad_lines = 0;
        let mut node_events = Vec::new();
        for n in &info.nodes {
            let (recs, bad) = read_jsonl(&dir.join(format!("node-{}.jsonl", n.id)))?;
            bad_lines += bad;
            node_events.extend(recs);
        }
        node_events.sort_by_key(|r| r.t);
        let (faults, bad) = read_jsonl(&dir.join("faults.jsonl"))?;
        bad_lines += bad;
        let (resource, bad) = read_jsonl(&dir.join("resource.jsonl"))?;
        bad_lines += bad;
        Ok(Self {
            path: dir.to_path_buf(),
            info,
            node_events,
            faults,
            resource,
            bad_lines,
        })
    }
}
