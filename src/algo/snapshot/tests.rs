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

/// 20% loss and 10% duplication on every link; delays drawn from 0.1 to 30 ms reorder.
fn lossy(seed: u64) -> NetConfig {
    NetConfig {
        seed,
        min_delay: Duration::from_micros(100),
        max_delay: Duration::from_millis(30),
        drop: 0.2,
        duplicate: 0.1,
    }
}

#[test]
fn chandy_lamport_conserves_money_under_loss_duplication_and_reordering() {
    for seed in 1..=4 {
        let net = lossy(seed);
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

/// The reproduction in the simulator: 5 accounts on a complete graph, Chandy-Lamport
/// every second, node 2 killed at 3 s and restarted at 4 s, run to 10 s; with `net` between.
fn kill_and_restart_2(net: NetConfig, damage: bool) -> (Sim<Bank>, crate::check::snapshot::SnapshotFacts) {
    let mut setups = setups("complete", 5, "chandy-lamport", net.seed, 0);
    for s in &mut setups {
        s.opts.insert("snapshot_ms".into(), "1000".into());
    }
    let mut s = Sim::new(net, setups, Bank::new);
    s.run_for(Duration::from_secs(3));
    s.crash(2);
    s.run_for(Duration::from_secs(1));
    if damage {
        s.damage_store(2, &[7u8; 11]);
    }
    s.restart(2);
    s.run_for(Duration::from_secs(6));
    let f = analyse_records(&s.trace);
    (s, f)
}

#[test]
fn a_restarted_account_takes_back_its_money_and_snapshots_go_on() {
    for seed in 1..=3 {
        let net = lossy(seed);
        let (s, f) = kill_and_restart_2(net, false);
        assert_eq!(f.initial, 5000, "seed {seed}");
        assert!(f.restarts.is_empty(), "seed {seed}: no new epoch: {:?}", f.restarts);
        assert_eq!(f.restored.len(), 1, "seed {seed}");
        let back = f.restored[0].1;
        assert!(f.broken().is_empty(), "seed {seed}: {:?}", f.broken());
        assert!(f.stopped.is_none(), "seed {seed}");
        let after: Vec<_> = f
            .complete
            .iter()
            .filter(|g| g.method == "chandy-lamport" && g.t > back)
            .collect();
        assert!(
            after.len() >= 3,
            "seed {seed}: {} snapshots after the restart",
            after.len()
        );
        assert!(after.iter().all(|g| g.total() == 5000), "seed {seed}: {after:?}");
        // It came back with what it stored, not its starting balance, and trades again.
        assert_ne!(f.restored[0].2, 1000, "seed {seed}");
        let sent_by_2_after = s
            .trace
            .iter()
            .filter(|r| r.node == Some(2) && r.t > back)
            .filter(|r| matches!(&r.event, crate::trace::Event::Send { msg, .. } if msg == "TRANSFER"))
            .count();
        assert!(sent_by_2_after > 100, "seed {seed}: {sent_by_2_after}");
    }
}

#[test]
fn a_damaged_state_file_starts_a_new_epoch_and_the_checker_says_so() {
    let net = NetConfig {
        seed: 5,
        min_delay: Duration::from_micros(100),
        max_delay: Duration::from_millis(5),
        ..NetConfig::default()
    };
    let (_, f) = kill_and_restart_2(net, true);
    assert!(f.restored.is_empty());
    assert_eq!(
        f.restarts.len(),
        1,
        "the damaged store is refused: starting balance again"
    );
    assert_eq!(f.restarts[0].2, 1000);
    assert!(f.broken().is_empty(), "each epoch counted on its own: {:?}", f.broken());
    assert!(f.stopped.is_none());
    let text = crate::check::snapshot::summary(&f);
    assert!(text.contains("without its stored state"), "{text}");
}
