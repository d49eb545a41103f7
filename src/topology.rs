//! Graphs for `coordlab mesh N --topology complete | ring | bidirectional-ring | grid | random:K |
//! FILE`: who may talk to whom.
//!
//! Every graph is over the launched ids, in the order given (`--ids`), and must be connected:
//! a graph with a node that cannot be reached is refused, naming that node.
//!
//! `ring` is the one directed graph: each node sends to the next id in order (its only
//! neighbour); it hears from the previous one. Replies of the leadership wrapper (ACK, NEWER)
//! still go back to whoever sent the message they answer, as on `coordlab ring`. Every other
//! graph is undirected: a neighbour is someone this node may send to and hear from.

#[cfg(test)]
use crate::algo::Setup;
use crate::rng::Rng;
use crate::trace::NodeId;
use std::collections::{BTreeMap, BTreeSet};

/// A communication graph over the launched ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Graph {
    ids: Vec<NodeId>,
    directed: bool,
    out: BTreeMap<NodeId, Vec<NodeId>>,
    edges: Vec<(NodeId, NodeId)>,
}

impl Graph {
    /// The ids, in launch order.
    pub fn ids(&self) -> &[NodeId] {
        &self.ids
    }

    /// Whether edges have a direction (only `ring`).
    pub(crate) fn is_directed(&self) -> bool {
        self.directed
    }

    /// The nodes `id` may send to, sorted (empty for an unknown id).
    pub fn neighbours(&self, id: NodeId) -> &[NodeId] {
        self.out.get(&id).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The nodes that send to `id`, sorted (the same as `neighbours` when undirected).
    pub(crate) fn in_neighbours(&self, id: NodeId) -> Vec<NodeId> {
        self.ids
            .iter()
            .copied()
            .filter(|&x| self.neighbours(x).contains(&id))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    }

    #[cfg(test)]
    /// Every edge once: `(from, to)` when directed, `(low, high)` otherwise, sorted.
    pub(crate) fn edges(&self) -> &[(NodeId, NodeId)] {
        &self.edges
    }

    #[cfg(test)]
    /// Whether every node is a neighbour of every other.
    pub(crate) fn is_complete(&self) -> bool {
        self.out.values().all(|v| v.len() + 1 == self.ids.len())
    }

    /// Builds a graph from edges, refusing one that is not (strongly) connected.
    fn new(ids: &[NodeId], directed: bool, edges: impl IntoIterator<Item = (NodeId, NodeId)>) -> Result<Self, String> {
        let mut out: BTreeMap<NodeId, BTreeSet<NodeId>> = ids.iter().map(|&i| (i, BTreeSet::new())).collect();
        let mut set = BTreeSet::new();
        for (a, b) in edges {
            let e = if directed { (a, b) } else { (a.min(b), a.max(b)) };
            set.insert(e);
            out.entry(a).or_default().insert(b);
            if !directed {
                out.entry(b).or_default().insert(a);
            }
        }
        let g = Graph {
            ids: ids.to_vec(),
            directed,
            out: out.into_iter().map(|(k, v)| (k, v.into_iter().collect())).collect(),
            edges: set.into_iter().collect(),
        };
        g.check_connected()?;
        Ok(g)
    }

    /// Every node reachable from the first, and (directed) the first reachable from every node.
    fn check_connected(&self) -> Result<(), String> {
        let Some(&root) = self.ids.first() else {
            return Ok(());
        };
        let seen = self.reach(root, |x| self.neighbours(x).to_vec());
        if let Some(&x) = self.ids.iter().find(|x| !seen.contains(x)) {
            return Err(format!(
                "the graph is not connected: node {x} cannot be reached from node {root}"
            ));
        }
        if self.directed {
            let back = self.reach(root, |x| self.in_neighbours(x));
            if let Some(&x) = self.ids.iter().find(|x| !back.contains(x)) {
                return Err(format!(
                    "the graph is not connected: node {root} cannot be reached from node {x}"
                ));
            }
        }
        Ok(())
    }

    fn reach(&self, root: NodeId, next: impl Fn(NodeId) -> Vec<NodeId>) -> BTreeSet<NodeId> {
        let mut seen = BTreeSet::from([root]);
        let mut todo = vec![root];
        while let Some(x) = todo.pop() {
            for y in next(x) {
                if seen.insert(y) {
                    todo.push(y);
                }
            }
        }
        seen
    }
}

/// Builds topology `spec` over `ids` (launch order); `seed` drives `random:K`.
pub fn build(spec: &str, ids: &[NodeId], seed: u64) -> Result<Graph, String> {
    if ids.is_empty() {
        return Err("a topology needs at least one node".into());
    }
    let mut uniq = BTreeSet::new();
    if let Some(x) = ids.iter().find(|&&x| !uniq.insert(x)) {
        return Err(format!("node id {x} appears twice"));
    }
    let n = ids.len();
    let next = |i: usize| ids[(i + 1) % n];
    match spec {
        "complete" => Graph::new(
            ids,
            false,
            ids.iter()
                .enumerate()
                .flat_map(|(i, &a)| ids[i + 1..].iter().map(move |&b| (a, b))),
        ),
        "ring" => Graph::new(ids, true, (0..n).filter(|_| n > 1).map(|i| (ids[i], next(i)))),
        "bidirectional-ring" => Graph::new(ids, false, (0..n).filter(|_| n > 1).map(|i| (ids[i], next(i)))),
        "grid" => grid(ids),
        _ => match spec.strip_prefix("random:") {
            Some(k) => random(ids, k, seed),
            None => from_file(spec, ids),
        },
    }
}

/// `rows x cols` as square as possible (cols = ceil(sqrt n)), filled row by row; each node is
/// linked to its right and lower neighbours.
fn grid(ids: &[NodeId]) -> Result<Graph, String> {
    let n = ids.len();
    let cols = (1..=n).find(|c| c * c >= n).unwrap_or(1);
    let mut edges = Vec::new();
    for i in 0..n {
        if (i + 1) % cols != 0 && i + 1 < n {
            edges.push((ids[i], ids[i + 1]));
        }
        if i + cols < n {
            edges.push((ids[i], ids[i + cols]));
        }
    }
    Graph::new(ids, false, edges)
}

/// A random spanning tree (each node in a shuffled order hangs off a random earlier one), then
/// random extra edges up to round(n*K/2) edges in all: connected, average degree about K.
fn random(ids: &[NodeId], k: &str, seed: u64) -> Result<Graph, String> {
    let n = ids.len();
    let k: usize = k
        .parse()
        .map_err(|_| format!("random:K: '{k}' is not a whole number (e.g. random:3)"))?;
    if k >= n {
        return Err(format!(
            "random:{k}: the average degree must be less than the number of nodes ({n}); a node has at most {} \
             neighbours (use --topology complete)",
            n - 1
        ));
    }
    let least = n.min(3) - 1;
    if k < least {
        return Err(format!(
            "random:{k}: a connected graph of {n} nodes needs an average degree of at least {least}"
        ));
    }
    let mut rng = Rng::new(seed);
    let mut order = ids.to_vec();
    rng.shuffle(&mut order);
    let mut edges = BTreeSet::new();
    for i in 1..n {
        let j = rng.range(0, i as u64) as usize;
        let (a, b) = (order[i], order[j]);
        edges.insert((a.min(b), a.max(b)));
    }
    let target = ((n * k) as f64 / 2.0).round() as usize;
    let mut rest: Vec<(NodeId, NodeId)> = ids
        .iter()
        .enumerate()
        .flat_map(|(i, &a)| ids[i + 1..].iter().map(move |&b| (a.min(b), a.max(b))))
        .filter(|e| !edges.contains(e))
        .collect();
    rng.shuffle(&mut rest);
    let need = target.saturating_sub(edges.len());
    edges.extend(rest.into_iter().take(need));
    Graph::new(ids, false, edges)
}

/// An edge list: one `a b` per line, `#` starts a comment; undirected.
fn from_file(path: &str, ids: &[NodeId]) -> Result<Graph, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "unknown topology '{path}': not complete, ring, bidirectional-ring, grid or random:K, and not a \
             readable edge-list file ({e})"
        )
    })?;
    let mut edges = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let at = format!("{path}:{}", i + 1);
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let parts: Vec<&str> = line.split_whitespace().collect();
        let [a, b] = parts[..] else {
            return Err(format!("{at}: expected 'a b' (two node ids), found '{line}'"));
        };
        let id = |s: &str| -> Result<NodeId, String> {
            let x: NodeId = s.parse().map_err(|_| format!("{at}: '{s}' is not a node id"))?;
            if !ids.contains(&x) {
                return Err(format!("{at}: node {x} is not among the launched ids"));
            }
            Ok(x)
        };
        let (a, b) = (id(a)?, id(b)?);
        if a == b {
            return Err(format!("{at}: self-loop on node {a}"));
        }
        edges.push((a, b));
    }
    Graph::new(ids, false, edges).map_err(|e| format!("{path}: {e}"))
}

/// An undirected graph over `ids` from an edge list (a demo's own graph), refused when it is
/// not connected.
pub(crate) fn undirected(ids: &[NodeId], edges: &[(NodeId, NodeId)]) -> Result<Graph, String> {
    Graph::new(ids, false, edges.iter().copied())
}

#[cfg(test)]
/// Setups for running `g` in the simulator: members in launch order, neighbours from the
/// graph, `mesh=true`, the given initiators.
pub(crate) fn mesh_setups(g: &Graph, initiators: &[NodeId]) -> Vec<Setup> {
    g.ids()
        .iter()
        .map(|&me| {
            let mut s = Setup::new(me, g.ids().to_vec(), g.neighbours(me).to_vec());
            s.initiator = initiators.contains(&me);
            s.opts.insert("mesh".into(), "true".into());
            s
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: u64) -> Vec<NodeId> {
        (1..=n).collect()
    }

    fn degrees(g: &Graph) -> Vec<usize> {
        g.ids().iter().map(|&i| g.neighbours(i).len()).collect()
    }

    #[test]
    fn complete_links_everyone() {
        let g = build("complete", &ids(5), 0).unwrap();
        assert_eq!(degrees(&g), vec![4; 5]);
        assert_eq!(g.edges().len(), 10);
        assert!(g.is_complete());
        assert_eq!(g.neighbours(3), &[1, 2, 4, 5]);
    }

    #[test]
    fn ring_is_directed_along_the_given_order() {
        let order = [3, 1, 4, 2];
        let g = build("ring", &order, 0).unwrap();
        assert!(g.is_directed());
        assert_eq!(g.neighbours(3), &[1]);
        assert_eq!(g.neighbours(2), &[3]);
        assert_eq!(g.in_neighbours(3), vec![2]);
        assert_eq!(g.edges(), &[(1, 4), (2, 3), (3, 1), (4, 2)]);
    }

    #[test]
    fn bidirectional_ring_has_degree_two() {
        let g = build("bidirectional-ring", &[3, 1, 4, 2], 0).unwrap();
        assert_eq!(degrees(&g), vec![2; 4]);
        assert_eq!(g.neighbours(3), &[1, 2]);
        assert_eq!(g.edges().len(), 4);
        // Two nodes: one link, not two.
        let g2 = build("bidirectional-ring", &[1, 2], 0).unwrap();
        assert_eq!(g2.edges(), &[(1, 2)]);
        assert!(build("ring", &[7], 0).unwrap().edges().is_empty());
    }

    #[test]
    fn grid_is_row_major_and_as_square_as_possible() {
        // 3x3: corners 2, edges 3, centre 4.
        let g = build("grid", &ids(9), 0).unwrap();
        assert_eq!(g.neighbours(1), &[2, 4]);
        assert_eq!(g.neighbours(5), &[2, 4, 6, 8]);
        assert_eq!(g.neighbours(6), &[3, 5, 9]);
        assert_eq!(g.edges().len(), 12);
        // 7 nodes: 3 columns, last row holds only node 7, under node 4.
        let g = build("grid", &ids(7), 0).unwrap();
        assert_eq!(g.neighbours(7), &[4]);
        assert_eq!(g.neighbours(3), &[2, 6]);
        for n in 1..30 {
            build("grid", &ids(n), 0).unwrap();
        }
    }

    #[test]
    fn random_is_connected_with_the_asked_average_degree_and_seeded() {
        for (n, k) in [(10u64, 2usize), (20, 3), (100, 4), (8, 7), (2, 1)] {
            for seed in 0..5 {
                let g = build(&format!("random:{k}"), &ids(n), seed).unwrap();
                let want = ((n as usize * k) as f64 / 2.0).round() as usize;
                assert_eq!(g.edges().len(), want.max(n as usize - 1), "n={n} k={k}");
                assert_eq!(g, build(&format!("random:{k}"), &ids(n), seed).unwrap());
            }
        }
        let a = build("random:3", &ids(30), 1).unwrap();
        let b = build("random:3", &ids(30), 2).unwrap();
        assert_ne!(a.edges(), b.edges(), "another seed gives another graph");
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        let err = |s: &str, n: u64| build(s, &ids(n), 0).unwrap_err();
        assert!(err("random:5", 5).contains("less than the number of nodes (5)"));
        assert!(err("random:1", 5).contains("at least 2"));
        assert!(err("random:x", 5).contains("'x' is not a whole number"));
        assert!(err("random:0", 2).contains("at least 1"));
        assert!(err("hexagon", 5).contains("unknown topology 'hexagon'"));
        assert!(build("complete", &[1, 2, 1], 0)
            .unwrap_err()
            .contains("node id 1 appears twice"));
    }

    fn file(name: &str, text: &str) -> String {
        let dir = std::env::temp_dir().join(format!("coordlab-topology-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    }

    #[test]
    fn edge_list_file_with_comments() {
        let p = file("ok.txt", "# a path and a chord\n1 2\n2 3 # middle\n\n3 4\n4 1\n2 1\n");
        let g = build(&p, &ids(4), 0).unwrap();
        assert_eq!(g.edges(), &[(1, 2), (1, 4), (2, 3), (3, 4)]);
        assert_eq!(g.neighbours(1), &[2, 4]);
    }

    #[test]
    fn bad_edge_lists_name_the_line_and_the_problem() {
        let p = file("loop.txt", "1 2\n# fine\n3 3\n");
        assert_eq!(
            build(&p, &ids(3), 0).unwrap_err(),
            format!("{p}:3: self-loop on node 3")
        );
        let p = file("unknown.txt", "1 2\n2 9\n");
        assert_eq!(
            build(&p, &ids(3), 0).unwrap_err(),
            format!("{p}:2: node 9 is not among the launched ids")
        );
        let p = file("three.txt", "1 2 3\n");
        assert!(build(&p, &ids(3), 0)
            .unwrap_err()
            .starts_with(&format!("{p}:1: expected 'a b'")));
        let p = file("word.txt", "1 x\n");
        assert_eq!(
            build(&p, &ids(3), 0).unwrap_err(),
            format!("{p}:1: 'x' is not a node id")
        );
        let p = file("split.txt", "1 2\n3 4\n");
        assert_eq!(
            build(&p, &ids(4), 0).unwrap_err(),
            format!("{p}: the graph is not connected: node 3 cannot be reached from node 1")
        );
        let p = file("lonely.txt", "1 2\n");
        assert!(build(&p, &ids(3), 0).unwrap_err().contains("node 3 cannot be reached"));
    }

    #[test]
    fn mesh_setups_carry_the_graph() {
        let g = build("grid", &ids(4), 0).unwrap();
        let s = mesh_setups(&g, &[4]);
        assert_eq!(s[0].neighbours, vec![2, 3]);
        assert!(s[3].initiator && !s[0].initiator);
        assert!(s.iter().all(|x| x.flag("mesh", false) && *x.members == *ids(4)));
    }
}
