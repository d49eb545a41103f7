//! Measures how long the kernel backend takes to put a partition of N nodes into halves in
//! force (one `nft -f -` batch), and to heal it. Root and nftables only.
//!
//! `cargo run --profile test-opt --example nft_partition -- 4096`

use coordlab::net::nft::{self, NftTable};
use coordlab::net::{NetCommand, NetRules};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // The table's watchdog is this binary run again (NftTable spawns current_exe).
    if args.get(1).map(String::as_str) == Some("nft-watchdog") {
        std::process::exit(nft::watchdog(&args[2], args[3].parse().expect("pid")));
    }
    if let Err(e) = nft::usable() {
        eprintln!("skipped: {e}");
        return;
    }
    let n: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(4096);
    let ids: Vec<u64> = (1..=n).collect();
    // Ports far from the ephemeral range; no socket is bound: only the rules are measured.
    let members: Vec<(u64, u16)> = ids.iter().map(|&i| (i, 20_000 + i as u16)).collect();
    let mut table = NftTable::create(&format!("coordlab-bench-{}", std::process::id()), &members).expect("table");
    let half = n / 2;
    let side = |r: std::ops::RangeInclusive<u64>| r.map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    let (a, b) = (side(1..=half), side(half + 1..=n));
    let mut rules = NetRules::new(&ids);
    let NetCommand::Act(part) = NetCommand::parse(&["partition", &a, &b], &ids).expect("parse") else {
        unreachable!()
    };
    let NetCommand::Act(heal) = NetCommand::parse(&["heal"], &ids).expect("parse") else {
        unreachable!()
    };
    for round in 1..=5 {
        let t = Instant::now();
        rules.apply(&part);
        table.apply(&rules).expect("partition applies");
        let p = t.elapsed();
        let t = Instant::now();
        rules.apply(&heal);
        table.apply(&rules).expect("heal applies");
        let h = t.elapsed();
        println!(
            "round {round}: partition of {n} nodes into halves in force in {:.1} ms, healed in {:.1} ms",
            p.as_secs_f64() * 1e3,
            h.as_secs_f64() * 1e3
        );
    }
    table.remove().expect("table removed");
}
