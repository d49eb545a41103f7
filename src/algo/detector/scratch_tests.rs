//! Scratch: not committed.
use crate::algo::election::chang_roberts::ChangRoberts;
use crate::algo::election::Leadership;
use crate::algo::{Event, NodeId};
use crate::sim::{ring, NetConfig, Sim};
use std::time::Duration;

type Cr = Leadership<ChangRoberts>;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn sim(det: &str, extra: &[(String, String)], net: NetConfig) -> Sim<Cr> {
    let ids: Vec<NodeId> = (1..=8).collect();
    let mut setups = ring(&ids, &[1]);
    for s in &mut setups {
        s.opts.insert("detector".into(), det.into());
        s.opts.insert("detector_watch".into(), "all".into());
        for (k, v) in extra {
            s.opts.insert(k.clone(), v.clone());
        }
    }
    Sim::new(net, setups, Cr::new)
}

fn net(seed: u64, drop: f64, max_ms: u64) -> NetConfig {
    NetConfig { seed, min_delay: ms(5), max_delay: ms(max_ms), drop, duplicate: 0.0 }
}

const DET: &[&str] = &["PROBE", "ALIVE", "BEAT", "PING", "PING_REQ", "SWIM_ACK", "NACK", "GOSSIP"];

fn run(det: &str, extra: &[(String, String)]) -> String {
    let seeds = 3u64;
    let (mut sus, mut conf, mut dg, mut all) = (0, 0, 0, 0);
    for seed in 1..=seeds {
        let mut s = sim(det, extra, net(seed, 0.05, 25));
        s.run_for(ms(8_000));
        let before = s.events("suspect").len();
        s.set_net(net(seed + 100, 0.25, 55));
        s.run_for(ms(12_000));
        sus += s.events("suspect").len() - before;
        conf += s.events("confirm").len();
        dg += DET.iter().map(|m| s.sent(m)).sum::<usize>();
        all += s.events("send").len();
    }
    let node_s = (seeds * 8 * 20) as f64;
    let tds: Vec<u64> = (1..=6)
        .map(|seed| {
            let mut s = sim(det, extra, net(seed, 0.05, 25));
            s.run_for(ms(5_000 + seed * 37));
            let victim = 2 + seed % 6;
            s.crash(victim);
            let at = s.now().as_micros() as u64;
            s.run_for(ms(3000));
            let first = s
                .events("suspect")
                .into_iter()
                .find(|r| r.t >= at && matches!(r.event, Event::Suspect { target, .. } if target == victim));
            first.map(|r| (r.t - at) / 1000).unwrap_or(99999)
        })
        .collect();
    let td = tds.iter().sum::<u64>() as f64 / tds.len() as f64;
    format!(
        "{det} {extra:?}: heavy suspicions {sus} confirms {conf}; det dgram/node/s {:.0} all {:.0}; td mean {td:.0} max {}",
        dg as f64 / node_s,
        all as f64 / node_s,
        tds.iter().max().unwrap()
    )
}

#[test]
#[ignore]
fn scratch() {
    let spec = std::env::var("SCRATCH").unwrap_or_default();
    for line in spec.split(';').filter(|l| !l.trim().is_empty()) {
        let mut words = line.split_whitespace();
        let det = words.next().unwrap();
        let extra: Vec<(String, String)> = words
            .map(|w| {
                let (k, v) = w.split_once('=').unwrap();
                (k.to_string(), v.to_string())
            })
            .collect();
        println!("{}", run(det, &extra));
    }
}
