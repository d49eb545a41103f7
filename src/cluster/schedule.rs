//! Fault schedules (`--faults FILE`): one console action a line, `SECONDS VERB ARGS`
//! (`1.5 pause 8`, `3.0 net cut 2 10`, `6 net heal`), so a teacher replays the same story every
//! time. Blank lines and `#` comments are allowed. The whole file is checked before anything
//! starts; a bad line is refused as `FILE:LINE: problem`.

use crate::net::NetCommand;
use crate::trace::NodeId;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What `--faults` names: fault kinds (chaos draws from them) or a schedule file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultsArg {
    /// `process`, `network` or `all`: the kinds of fault chaos draws.
    Kinds(FaultKinds),
    /// Anything else: the path of a schedule.
    File(PathBuf),
}

/// Which kinds of fault chaos draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKinds {
    /// Pauses, kills, restarts.
    Process,
    /// Cuts, partitions, loss, delay, heals.
    Network,
    /// Both.
    All,
}

impl FaultsArg {
    /// Exactly `process`, `network`, `all` are kinds; anything else is a path.
    pub fn parse(s: &str) -> FaultsArg {
        match s {
            "process" => FaultsArg::Kinds(FaultKinds::Process),
            "network" => FaultsArg::Kinds(FaultKinds::Network),
            "all" => FaultsArg::Kinds(FaultKinds::All),
            path => FaultsArg::File(PathBuf::from(path)),
        }
    }
}

/// One scheduled action.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// When, from the start of the run's algorithms.
    pub at: Duration,
    /// The console line to run (`pause 8`, `net cut 2 10`).
    pub line: String,
    /// Where it came from (`FILE:LINE`), for the console.
    pub origin: String,
}

/// A checked schedule, in time order (equal times keep the file's order).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Schedule {
    /// The entries not run yet, earliest first.
    pub entries: Vec<Entry>,
}

impl Schedule {
    /// Reads and checks the schedule at `path` against the run's `nodes` (every node, for
    /// pause/kill/...) and `members` (those network rules may name). Err: `FILE:LINE: problem`.
    pub fn load(path: &Path, nodes: &[NodeId], members: &[NodeId]) -> Result<Schedule, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        Schedule::parse(&path.display().to_string(), &text, nodes, members)
    }

    /// Checks schedule `text` (named `name` in errors).
    pub fn parse(name: &str, text: &str, nodes: &[NodeId], members: &[NodeId]) -> Result<Schedule, String> {
        let mut entries = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let origin = format!("{name}:{}", i + 1);
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            let at = match words[0].parse::<f64>() {
                Ok(s) if s.is_finite() && (0.0..=86_400.0).contains(&s) => Duration::from_secs_f64(s),
                _ => {
                    return Err(format!(
                        "{origin}: '{}' is not a time in seconds from 0 (SECONDS VERB ARGS, e.g. `1.5 pause 8`)",
                        words[0]
                    ))
                }
            };
            let Some(&verb) = words.get(1) else {
                return Err(format!("{origin}: a time with no action (SECONDS VERB ARGS)"));
            };
            match verb {
                "pause" | "resume" | "kill" | "restart" => {
                    let [_, _, id] = words[..] else {
                        return Err(format!("{origin}: {verb} takes one node id, e.g. `{verb} 3`"));
                    };
                    match id.parse::<NodeId>() {
                        Ok(n) if nodes.contains(&n) => {}
                        Ok(n) => return Err(format!("{origin}: {verb}: there is no node {n}")),
                        Err(_) => return Err(format!("{origin}: {verb}: '{id}' is not a node id")),
                    }
                }
                "net" => {
                    NetCommand::parse(&words[1..], members).map_err(|e| format!("{origin}: {e}"))?;
                }
                other => {
                    return Err(format!(
                        "{origin}: unknown action '{other}' (known: pause, resume, kill, restart, net)"
                    ))
                }
            }
            entries.push(Entry {
                at,
                line: words[1..].join(" "),
                origin,
            });
        }
        entries.sort_by_key(|e| e.at);
        Ok(Schedule { entries })
    }

    /// Takes the entries due at `elapsed`.
    pub(crate) fn due(&mut self, elapsed: Duration) -> Vec<Entry> {
        let k = self.entries.iter().take_while(|e| e.at <= elapsed).count();
        self.entries.drain(..k).collect()
    }

    /// Whether every entry has run.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODES: &[NodeId] = &[1, 2, 3, 10];

    fn parse(text: &str) -> Result<Schedule, String> {
        Schedule::parse("s.txt", text, NODES, NODES)
    }

    #[test]
    fn kinds_are_three_words_and_anything_else_is_a_path() {
        assert_eq!(FaultsArg::parse("process"), FaultsArg::Kinds(FaultKinds::Process));
        assert_eq!(FaultsArg::parse("network"), FaultsArg::Kinds(FaultKinds::Network));
        assert_eq!(FaultsArg::parse("all"), FaultsArg::Kinds(FaultKinds::All));
        assert_eq!(FaultsArg::parse("all.txt"), FaultsArg::File("all.txt".into()));
        assert_eq!(FaultsArg::parse("./process"), FaultsArg::File("./process".into()));
    }

    #[test]
    fn a_schedule_reads_in_time_order_with_comments_and_blank_lines() {
        let s =
            parse("# the course's story\n\n3.0 net cut 2 10   # the bridge\n1.5 pause 3\n6 net heal\n1.5 resume 3\n")
                .unwrap();
        let lines: Vec<(f64, &str, &str)> = s
            .entries
            .iter()
            .map(|e| (e.at.as_secs_f64(), e.line.as_str(), e.origin.as_str()))
            .collect();
        assert_eq!(
            lines,
            vec![
                (1.5, "pause 3", "s.txt:4"),
                (1.5, "resume 3", "s.txt:6"),
                (3.0, "net cut 2 10", "s.txt:3"),
                (6.0, "net heal", "s.txt:5"),
            ]
        );
        let mut s = s;
        assert_eq!(s.due(Duration::from_secs(2)).len(), 2);
        assert_eq!(s.due(Duration::from_secs(2)).len(), 0);
        assert_eq!(s.due(Duration::from_secs(7)).len(), 2);
        assert!(s.is_empty());
    }

    #[test]
    fn a_bad_line_is_named_by_file_and_line() {
        let cases = [
            ("1 pause 3\nsoon pause 3\n", "s.txt:2: 'soon' is not a time"),
            ("-1 pause 3\n", "s.txt:1: '-1' is not a time"),
            ("\n\n2\n", "s.txt:3: a time with no action"),
            ("1 pause\n", "s.txt:1: pause takes one node id"),
            ("1 kill 99\n", "s.txt:1: kill: there is no node 99"),
            ("1 restart x\n", "s.txt:1: restart: 'x' is not a node id"),
            ("1 dance 3\n", "s.txt:1: unknown action 'dance'"),
            ("1 net cut 2 99\n", "s.txt:1: net cut: node 99 is not a member"),
            ("1 net loss 120\n", "s.txt:1: net loss: loss must be a whole percentage"),
            (
                "1 net partition 1,2 2,3\n",
                "s.txt:1: net partition: node 2 is on two sides",
            ),
            (
                "1 net delay -5\n",
                "s.txt:1: net delay: delay must be whole milliseconds",
            ),
        ];
        for (text, want) in cases {
            let e = parse(text).expect_err(text);
            assert!(e.starts_with(want), "{text:?}: {e}");
            assert!(!e.contains('\n'));
        }
    }
}
