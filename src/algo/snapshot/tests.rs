//! Simulator tests of the bank and its snapshots, judged by the checker's snapshot section.

use super::bank::Bank;
use crate::algo::{NodeId, Setup};
use crate::check::snapshot::analyse_records;
use crate::clock::ClockSpec;
use crate::rng::Rng;
use crate::sim::{NetConfig, Sim};
use crate::topology::build;
use std::time::Duration;

fn setups(spec: &str, n: u64, snapshot: &str, seed: u64, max_skew_ms: u64) -> Vec<Setup> {
    let ids: Vec<NodeId> = (1..=n).collect();
    let g = build(spec, &ids, seed).unwrap();
    let mut rng = Rng::new(seed);
    ids.iter()
        .map(|&me| {
            let mut s = Setup::new(me, ids.clone(), g.neighbours(me).to_vec());
            s.opts.insert("snapshot".into(), snapshot.into());
            s.opts.insert("snapshot_ms".into(), "300".into());
            s.opts.insert("transfer_ms".into(), "5".into());
            s.opts.insert("retransmit_ms".into(), "30".into());
            s.opts.insert("settle_ms".into(), "200".into());
            s.clock = ClockSpec {
                offset_us: rng.range(0, max_skew_ms * 1000 + 1) as i64 + 1_000_000,
                drift_ppm: 0.0,
            };
            s
        })
        .collect()
}

#[test]
fn chandy_lamport_conserves_money_under_loss_duplication_and_reordering() {
    for seed in 1..=4 {
        let net = NetConfig {
            seed,
            min_delay: Duration::from_micros(100),
            max_delay: Duration::from_millis(20),
            drop: 0.1,
            duplicate: 0.05,
        };
        let spec = if seed % 2 == 0 { "complete" } else { "grid" };
        let mut s = Sim::new(net, setups(spec, 6, "chandy-lamport", seed, 200), Bank::new);
        s.run_for(Duration::from_secs(3));
        let f = analyse_records(&s.trace);
        assert_eq!(f.initial, 6000);
        let cl: Vec<_> = f.complete.iter().filter(|g| g.method == "chandy-lamport").collect();
        assert!(cl.len() >= 6, "seed {seed}: only {} snapshots", cl.len());
        assert!(f.broken().is_empty(), "seed {seed}: {:?}", f.broken());
        // Money really was in flight in some of them, so the channels' states mattered.
        assert!(cl.iter().any(|g| g.in_flight > 0), "seed {seed}");
        assert!(s.sent("TRANSFER") > 1000);
    }
}

#[test]
fn clock_snapshots_are_exact_with_agreeing_clocks_and_wrong_with_skewed_ones() {
    let net = NetConfig {
        seed: 3,
        min_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
        ..NetConfig::default()
    };
    let mut s = Sim::new(net.clone(), setups("complete", 5, "both", 3, 0), Bank::new);
    s.run_for(Duration::from_secs(3));
    let f = analyse_records(&s.trace);
    let errs = f.clock_errors();
    assert!(errs.len() >= 5, "{f:?}");
    assert!(errs.iter().all(|&e| e == 0), "{errs:?}");
    assert!(f.broken().is_empty());

    let mut s = Sim::new(net, setups("complete", 5, "both", 3, 200), Bank::new);
    s.run_for(Duration::from_secs(3));
    let f = analyse_records(&s.trace);
    assert!(f.clock_errors().iter().any(|&e| e != 0), "{:?}", f.clock_errors());
    assert!(f.broken().is_empty());
    let text = crate::check::snapshot::summary(&f);
    assert!(
        text.contains("chandy-lamport: all") && text.contains("clock:"),
        "{text}"
    );
}
