//! The network-fault actions: parsing `net VERB ...` into a [`NetCommand`], and the
//! `faults.jsonl` event of each [`NetAction`] (and back). What each action means is in
//! [`rules`](super::rules), which folds them into the rules in force.

use crate::trace::{Event, NodeId};
use std::collections::HashSet;

/// A directed link: (from, to).
pub type Link = (NodeId, NodeId);

/// One change to the network, as parsed from `net VERB ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetAction {
    /// Cut the link `a`-`b` (only `a`->`b` when `one_way`).
    Cut {
        /// One end (the sender, when one-way).
        a: NodeId,
        /// The other end.
        b: NodeId,
        /// Only `a` to `b`.
        one_way: bool,
    },
    /// Split the members into `sides` (complete: unnamed members each on a side of their own).
    Partition {
        /// Every side, the named ones first.
        sides: Vec<Vec<NodeId>>,
    },
    /// Lift every rule (`None`) or make one link perfect both ways.
    Heal {
        /// The link to heal, or everything.
        link: Option<(NodeId, NodeId)>,
    },
    /// Lose `pct` percent of the datagrams on every link (`None`) or one link, both ways.
    Loss {
        /// Percentage, 0-100.
        pct: u32,
        /// The link, or every link.
        link: Option<(NodeId, NodeId)>,
    },
    /// Hold datagrams `ms` plus or minus up to `jitter_ms` on every link or one link, both ways.
    Delay {
        /// Mean hold time in milliseconds.
        ms: u64,
        /// Largest deviation from `ms`, in milliseconds.
        jitter_ms: u64,
        /// The link, or every link.
        link: Option<(NodeId, NodeId)>,
    },
}

/// A parsed `net ...` command: an action, or `status` (list the rules in force).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetCommand {
    /// Change the network.
    Act(NetAction),
    /// List the rules in force.
    Status,
}

/// The verbs, for help texts and error messages.
pub(crate) const VERBS: &str = "cut, partition, heal, loss, delay, status";

impl NetCommand {
    /// Parses `net VERB ARGS` (the leading `net` optional), checking every id against `members`.
    /// The error is one line naming the problem.
    pub fn parse(args: &[&str], members: &[NodeId]) -> Result<NetCommand, String> {
        let args = match args.first() {
            Some(&"net") => &args[1..],
            _ => args,
        };
        let Some((&verb, rest)) = args.split_first() else {
            return Err(format!("net: which verb? ({VERBS})"));
        };
        let known: HashSet<NodeId> = members.iter().copied().collect();
        let err = |m: String| format!("net {verb}: {m}");
        let id = |s: &str| -> Result<NodeId, String> {
            let n: NodeId = s.parse().map_err(|_| err(format!("'{s}' is not a node id")))?;
            if known.contains(&n) {
                Ok(n)
            } else {
                Err(err(format!("node {n} is not a member of this run")))
            }
        };
        let link = |a: &str, b: &str| -> Result<(NodeId, NodeId), String> {
            let (a, b) = (id(a)?, id(b)?);
            if a == b {
                return Err(err(format!("a link joins two different nodes, not {a} and {b}")));
            }
            Ok((a, b))
        };
        let opt_link = |r: &[&str]| -> Result<Option<(NodeId, NodeId)>, String> {
            match r {
                [] => Ok(None),
                [a, b] => link(a, b).map(Some),
                _ => Err(err(format!(
                    "expected a link as two node ids (A B) or nothing, got '{}'",
                    r.join(" ")
                ))),
            }
        };
        let action = match verb {
            "status" => {
                if !rest.is_empty() {
                    return Err(err(format!("takes no arguments, got '{}'", rest.join(" "))));
                }
                return Ok(NetCommand::Status);
            }
            "cut" => {
                let one_way = rest.contains(&"--one-way");
                let ids: Vec<&str> = rest.iter().copied().filter(|a| *a != "--one-way").collect();
                if let Some(bad) = ids.iter().find(|a| a.starts_with("--")) {
                    return Err(err(format!("unknown option '{bad}' (known: --one-way)")));
                }
                let [a, b] = ids[..] else {
                    return Err(err(format!(
                        "expected two node ids (net cut A B [--one-way]), got '{}'",
                        rest.join(" ")
                    )));
                };
                let (a, b) = link(a, b)?;
                NetAction::Cut { a, b, one_way }
            }
            "partition" => {
                if rest.is_empty() {
                    return Err(err("expected sides such as 1,2,3 4,5".into()));
                }
                let mut seen = HashSet::new();
                let mut sides = Vec::new();
                for side in rest {
                    let mut ids = Vec::new();
                    for s in side.split(',') {
                        if s.is_empty() {
                            return Err(err(format!("empty node id in side '{side}'")));
                        }
                        let n = id(s)?;
                        if !seen.insert(n) {
                            return Err(err(format!("node {n} is on two sides (or named twice)")));
                        }
                        ids.push(n);
                    }
                    sides.push(ids);
                }
                sides.extend(members.iter().filter(|m| !seen.contains(m)).map(|&m| vec![m]));
                if sides.len() < 2 {
                    return Err(err("every member is on one side: nothing would be cut".into()));
                }
                NetAction::Partition { sides }
            }
            "heal" => NetAction::Heal { link: opt_link(rest)? },
            "loss" => {
                let Some((pct, r)) = rest.split_first() else {
                    return Err(err("expected a percentage 0-100 (net loss PCT [A B])".into()));
                };
                let digits = pct.strip_suffix('%').unwrap_or(pct);
                let pct = match digits.parse::<u32>() {
                    Ok(p) if p <= 100 => p,
                    _ => {
                        return Err(err(format!(
                            "loss must be a whole percentage from 0 to 100, not '{pct}'"
                        )))
                    }
                };
                NetAction::Loss {
                    pct,
                    link: opt_link(r)?,
                }
            }
            "delay" => {
                let Some((spec, r)) = rest.split_first() else {
                    return Err(err("expected MS or MS:JITTER_MS (net delay MS[:JITTER] [A B])".into()));
                };
                let ms = |s: &str| {
                    s.parse::<u64>().map_err(|_| {
                        err(format!(
                            "delay must be whole milliseconds, 0 or more (MS or MS:JITTER_MS), not '{spec}'"
                        ))
                    })
                };
                let (m, j) = match spec.split_once(':') {
                    Some((m, j)) => (ms(m)?, ms(j)?),
                    None => (ms(spec)?, 0),
                };
                // A day: far beyond any lesson, and keeps deadline arithmetic far from overflow.
                if m > 86_400_000 || j > 86_400_000 {
                    return Err(err(format!("delay '{spec}' is longer than a day")));
                }
                NetAction::Delay {
                    ms: m,
                    jitter_ms: j,
                    link: opt_link(r)?,
                }
            }
            other => return Err(format!("net: unknown verb '{other}' (known: {VERBS})")),
        };
        Ok(NetCommand::Act(action))
    }
}

/// Both directions of a link.
fn both((a, b): (NodeId, NodeId)) -> Vec<Link> {
    vec![(a, b), (b, a)]
}

/// `{1,2,3}`.
pub(super) fn set_words(side: &[NodeId]) -> String {
    let ids: Vec<String> = side.iter().map(|n| n.to_string()).collect();
    format!("{{{}}}", ids.join(","))
}

pub(super) fn delay_words(ms: u64, jitter_ms: u64) -> String {
    if jitter_ms == 0 {
        format!("delay {ms} ms")
    } else {
        format!("delay {ms} ms +- {jitter_ms} ms")
    }
}

impl NetAction {
    /// The `faults.jsonl` event recording this action, enforced by `backend` (`kernel`/`user`).
    pub fn event(&self, backend: &str) -> Event {
        let backend = backend.to_string();
        let links = |l: &Option<(NodeId, NodeId)>| l.map(both).unwrap_or_default();
        match self {
            NetAction::Cut { a, b, one_way } => Event::Cut {
                links: if *one_way { vec![(*a, *b)] } else { both((*a, *b)) },
                backend,
            },
            NetAction::Partition { sides } => Event::Partition {
                nodes: sides.first().cloned().unwrap_or_default(),
                sides: sides.clone(),
                backend,
            },
            NetAction::Heal { link } => Event::Heal {
                nodes: link.map(|(a, b)| vec![a, b]).unwrap_or_default(),
                links: links(link),
                backend,
            },
            NetAction::Loss { pct, link } => Event::Loss {
                pct: *pct,
                links: links(link),
                backend,
            },
            NetAction::Delay { ms, jitter_ms, link } => Event::Delay {
                ms: *ms,
                jitter_ms: *jitter_ms,
                links: links(link),
                backend,
            },
        }
    }

    /// The action a `faults.jsonl` event records, when it is a network action written by
    /// [`NetAction::event`] (for any other shape of links, fold with [`NetRules::apply_event`]).
    pub(crate) fn from_event(ev: &Event) -> Option<NetAction> {
        // The link of a list that is one link both ways; None for an empty list.
        fn pair(links: &[Link]) -> Result<Option<(NodeId, NodeId)>, ()> {
            match links {
                [] => Ok(None),
                [(a, b), (c, d)] if (a, b) == (d, c) => Ok(Some((*a, *b))),
                _ => Err(()),
            }
        }
        Some(match ev {
            Event::Cut { links, .. } => match links[..] {
                [(a, b)] => NetAction::Cut { a, b, one_way: true },
                [(a, b), (c, d)] if (a, b) == (d, c) => NetAction::Cut { a, b, one_way: false },
                _ => return None,
            },
            Event::Partition { sides, .. } if !sides.is_empty() => NetAction::Partition { sides: sides.clone() },
            Event::Heal { links, .. } => NetAction::Heal {
                link: pair(links).ok()?,
            },
            Event::Loss { pct, links, .. } => NetAction::Loss {
                pct: *pct,
                link: pair(links).ok()?,
            },
            Event::Delay {
                ms, jitter_ms, links, ..
            } => NetAction::Delay {
                ms: *ms,
                jitter_ms: *jitter_ms,
                link: pair(links).ok()?,
            },
            _ => return None,
        })
    }

    /// The action in words, for the console: `cut the link 2-10 (both ways)`.
    pub fn describe(&self) -> String {
        let on = |l: &Option<(NodeId, NodeId)>| match l {
            Some((a, b)) => format!("on the link {a}-{b} (both ways)"),
            None => "on every link".to_string(),
        };
        match self {
            NetAction::Cut { a, b, one_way: false } => format!("cut the link {a}-{b} (both ways)"),
            NetAction::Cut { a, b, one_way: true } => {
                format!("cut the link {a}->{b} (one way: {b} still reaches {a})")
            }
            NetAction::Partition { sides } => {
                let words: Vec<String> = sides.iter().map(|s| set_words(s)).collect();
                format!("partition into {} sides: {}", sides.len(), words.join(" | "))
            }
            NetAction::Heal { link: None } => "healed every link: no network rule in force".into(),
            NetAction::Heal { link: Some((a, b)) } => format!("healed the link {a}-{b} (both ways)"),
            NetAction::Loss { pct, link } => format!("loss {pct}% {}", on(link)),
            NetAction::Delay { ms, jitter_ms, link } => format!("{} {}", delay_words(*ms, *jitter_ms), on(link)),
        }
    }
}
