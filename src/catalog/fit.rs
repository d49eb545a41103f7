//! Where an algorithm runs (each registry entry names its rule), checked before anything
//! starts so that a misfit is refused with a message saying what would fit.

use crate::topology::Graph;

/// What an algorithm needs of the graph it runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    /// It sends round the ring in id order (the wrapper's `send_next`): `coordlab ring`, or a
    /// mesh whose topology is that ring (`ring` or `bidirectional-ring`).
    RingOrder,
    /// It talks to at most two neighbours, both ways (Franklin): `coordlab ring`, or an
    /// undirected mesh in which no node has more than two neighbours (a ring, or a line).
    TwoWayRing,
    /// It sends to every node directly (bully): a complete mesh.
    Complete,
    /// It talks both ways over any connected graph (Yo-Yo, Echo): `coordlab ring` or any
    /// undirected mesh (not the one-way `ring` topology).
    AnyGraph,
}

impl Fit {
    /// Where it runs, in a few words (for `coordlab algos`).
    pub fn describe(self) -> &'static str {
        match self {
            Fit::RingOrder => "ring (one-way, in ring order)",
            Fit::TwoWayRing => "bidirectional ring",
            Fit::Complete => "complete graph",
            Fit::AnyGraph => "any connected graph",
        }
    }

    /// A layout this rule accepts, as `(subcommand, --topology)` (for examples and tests).
    pub fn example(self) -> (&'static str, Option<&'static str>) {
        match self {
            Fit::RingOrder => ("ring", None),
            Fit::TwoWayRing => ("mesh", Some("bidirectional-ring")),
            Fit::Complete => ("mesh", Some("complete")),
            Fit::AnyGraph => ("mesh", Some("grid")),
        }
    }

    /// Whether `algo` may run on `coordlab ring` (`mesh` None) or on a mesh (its topology spec
    /// and graph); the error is one line naming the misfit and what would fit.
    pub fn check(self, algo: &str, mesh: Option<(&str, &Graph)>) -> Result<(), String> {
        let (spec, g) = match mesh {
            None if self == Fit::Complete => {
                return Err(format!(
                    "{algo} sends to every node directly, which a ring does not allow: run it on a complete \
                     graph (coordlab mesh N --topology complete)"
                ))
            }
            None => return Ok(()),
            Some(m) => m,
        };
        let one_way = || {
            format!(
                "{algo} needs two-way links, and --topology ring is one-way: use --topology bidirectional-ring \
                 (or coordlab ring N)"
            )
        };
        match self {
            Fit::RingOrder if matches!(spec, "ring" | "bidirectional-ring") => Ok(()),
            Fit::RingOrder => Err(format!(
                "{algo} is a ring algorithm (it sends round the ring in id order), and '{spec}' is not a ring: \
                 use coordlab ring N, or --topology ring or bidirectional-ring"
            )),
            Fit::TwoWayRing | Fit::AnyGraph if g.is_directed() => Err(one_way()),
            Fit::TwoWayRing => match g.ids().iter().find(|&&x| g.neighbours(x).len() > 2) {
                Some(&x) => Err(format!(
                    "{algo} runs on a bidirectional ring, but on '{spec}' node {x} has {} neighbours: use \
                     --topology bidirectional-ring (or coordlab ring N)",
                    g.neighbours(x).len()
                )),
                None => Ok(()),
            },
            Fit::Complete => match g.ids().iter().find(|&&x| g.neighbours(x).len() + 1 < g.ids().len()) {
                Some(&x) => Err(format!(
                    "{algo} sends to every node directly, but '{spec}' is not a complete graph (node {x} has {} \
                     of {} possible neighbours): use --topology complete",
                    g.neighbours(x).len(),
                    g.ids().len() - 1
                )),
                None => Ok(()),
            },
            Fit::AnyGraph => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::catalog::{find, ENTRIES};
    use crate::topology::build;

    fn check(algo: &str, spec: Option<&str>) -> Result<(), String> {
        let ids: Vec<u64> = (1..=5).collect();
        let g = spec.map(|s| (s, build(s, &ids, 1).unwrap()));
        find(algo)
            .unwrap()
            .runs_on
            .check(algo, g.as_ref().map(|(s, g)| (*s, g)))
    }

    #[test]
    fn each_rule_accepts_its_example_and_refuses_misfits_by_name() {
        for e in ENTRIES {
            let (name, (_, spec)) = (e.name, e.runs_on.example());
            assert_eq!(check(name, spec), Ok(()), "{name}");
        }
        assert_eq!(check("chang-roberts", Some("bidirectional-ring")), Ok(()));
        assert_eq!(check("chang-roberts", Some("ring")), Ok(()));
        let e = check("chang-roberts", Some("grid")).unwrap_err();
        assert!(e.contains("ring algorithm") && e.contains("coordlab ring N"), "{e}");
        let e = check("franklin", Some("grid")).unwrap_err();
        assert!(e.contains("node 2 has 3 neighbours"), "{e}");
        assert!(check("franklin", Some("ring")).unwrap_err().contains("one-way"));
        assert!(check("yoyo", Some("ring")).unwrap_err().contains("one-way"));
        assert_eq!(check("yoyo", Some("random:3")), Ok(()));
        assert_eq!(check("echo", None), Ok(()));
        let e = check("bully", Some("grid")).unwrap_err();
        assert!(e.contains("not a complete graph") && e.contains("of 4 possible"), "{e}");
        assert!(check("bully", None).unwrap_err().contains("--topology complete"));
    }
}
