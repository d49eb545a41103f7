//! `bench --only net`: what the network faults cost. The user backend's receive filter per
//! datagram (with no rule in force it must add under 1 us), and how long the kernel backend
//! takes to put a partition of 4,096 nodes into halves in force (target: under 100 ms), each
//! beside its floor measured in the same run.

use super::floor;
use crate::error::{failed, CliError};
use crate::net::nft::{self, NftTable};
use crate::net::{NetCommand, NetRules};
use crate::node::netfilter::{NetFilter, Verdict};
use crate::trace::NodeId;
use std::hint::black_box;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Datagrams judged per filter case.
const DATAGRAMS: u64 = 4_000_000;
/// Nodes of the partition measured, and how many times it is put in force and healed.
const PARTITION_NODES: u64 = 4096;
const PARTITION_ROUNDS: usize = 7;

fn action(words: &[&str], ids: &[NodeId]) -> Result<crate::net::NetAction, CliError> {
    match NetCommand::parse(words, ids).map_err(failed)? {
        NetCommand::Act(a) => Ok(a),
        _ => Err(failed(format!("'{}' is not a network action", words.join(" ")))),
    }
}

fn rules(words: &[&[&str]], ids: &[NodeId]) -> Result<NetRules, CliError> {
    let mut r = NetRules::new(ids);
    for w in words {
        r.apply(&action(w, ids)?);
    }
    Ok(r)
}

/// Nanoseconds per datagram through node 2's filter under `rules`, every datagram from node 1.
fn filter_ns(rules: &NetRules) -> f64 {
    let mut f = NetFilter::new(2, None, 1);
    f.set(rules, true);
    let src: SocketAddr = "127.0.0.1:9".parse().expect("address");
    let bytes = [7u8; 96];
    let far = Instant::now() + Duration::from_secs(3600);
    let t = Instant::now();
    let mut passed = 0u64;
    for i in 0..DATAGRAMS {
        if f.admit(black_box(Some(1)), black_box(&bytes), src, || None) == Verdict::Pass {
            passed += 1;
        }
        // Held datagrams are handed back in batches, as the loop does when they fall due.
        if i % 1024 == 1023 {
            while f.due(far).is_some() {}
        }
    }
    black_box(passed);
    t.elapsed().as_nanos() as f64 / DATAGRAMS as f64
}

fn median(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Times `table.apply` of `to`, then of `back`, `PARTITION_ROUNDS` times: medians and ranges.
fn apply_times(table: &mut NftTable, to: &NetRules, back: &NetRules) -> Result<[(f64, f64, f64); 2], CliError> {
    let (mut there, mut home) = (Vec::new(), Vec::new());
    for _ in 0..PARTITION_ROUNDS {
        let t = Instant::now();
        table.apply(to).map_err(failed)?;
        there.push(ms(t.elapsed()));
        let t = Instant::now();
        table.apply(back).map_err(failed)?;
        home.push(ms(t.elapsed()));
    }
    Ok([median(there), median(home)])
}

fn kernel_partition() -> Result<(), CliError> {
    if let Err(e) = nft::usable() {
        println!("kernel backend: not measured here ({e})");
        return Ok(());
    }
    let n = PARTITION_NODES;
    let ids: Vec<NodeId> = (1..=n).collect();
    // Ports far from the ephemeral range; no socket is bound: only the rules are measured.
    let members: Vec<(NodeId, u16)> = ids.iter().map(|&i| (i, 20_000 + i as u16)).collect();
    let mut table = NftTable::create(&format!("coordlab-bench-{}", std::process::id()), &members).map_err(failed)?;
    let side = |r: std::ops::RangeInclusive<u64>| r.map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    let (a, b) = (side(1..=n / 2), side(n / 2 + 1..=n));
    let clear = rules(&[], &ids)?;
    let one_cut = rules(&[&["cut", "1", "2"]], &ids)?;
    let halves = rules(&[&["partition", &a, &b]], &ids)?;
    let measured = apply_times(&mut table, &one_cut, &clear).and_then(|floor| {
        let part = apply_times(&mut table, &halves, &clear)?;
        Ok((floor, part))
    });
    table.remove().map_err(failed)?;
    let ([cut, _], [part, heal]) = measured?;
    println!("kernel backend, {n} nodes, one `nft -f -` batch per change, median of {PARTITION_ROUNDS} (range):");
    println!(
        "  partition into halves in force: {:.1} ms ({:.1}-{:.1}); healed: {:.1} ms ({:.1}-{:.1})",
        part.0, part.1, part.2, heal.0, heal.1, heal.2
    );
    println!(
        "  floor, one link cut (the same nft invocation, one rule): {:.1} ms ({:.1}-{:.1}); target: partition under 100 ms",
        cut.0, cut.1, cut.2
    );
    Ok(())
}

/// Prints the `net` section: the user filter per datagram, then the kernel partition.
pub(crate) fn run_net(rounds: usize) -> Result<(), CliError> {
    let hop = floor(rounds)?.median_us / 2.0;
    let ids: Vec<NodeId> = (1..=8).collect();
    let cases: [(&str, Vec<&[&str]>); 4] = [
        ("no rule in force", vec![]),
        ("a rule on another link into this node", vec![&["cut", "3", "2"]]),
        ("20 % loss on every link", vec![&["loss", "20"]]),
        ("delay 5:5 ms on every link (held, copied)", vec![&["delay", "5:5"]]),
    ];
    println!("user backend: node 2's receive filter, {DATAGRAMS} datagrams of 96 bytes from node 1, in-process:");
    for (name, words) in &cases {
        let ns = filter_ns(&rules(words, &ids)?);
        println!(
            "  {name:<44} {ns:>7.1} ns per datagram ({:.4}x the one-hop floor)",
            ns / 1000.0 / hop
        );
    }
    println!(
        "  floor: one loopback hop, half a plain UDP ping-pong, this run: {hop:.1} us; target: no rule under 1 us"
    );
    kernel_partition()
}
