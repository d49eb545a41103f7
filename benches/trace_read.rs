//! Reading a trace as the launcher's tail and `coordlab check` read it:
//! `cargo bench --bench trace_read`. The lines are a hop's two records of a ring of 64 with
//! vector clocks on (a whole clock on the `recv`, its changes on the `send`), written by the
//! node's encoder; each iteration reads both into records as `Jsonl::read_line` does, beside
//! serde_json reading the same two lines as `Record`s (serde's general path).

use coordlab::trace::{Event, Jsonl, Record};
use divan::{black_box, Bencher};
use std::time::Duration;

fn main() {
    divan::Divan::default()
        .min_time(Duration::from_secs(1))
        .config_with_args()
        .main();
}

/// A hop's lines as a node of a busy ring of 64 writes them.
fn hop_lines() -> [Vec<u8>; 2] {
    let vc: String = (1..=64)
        .map(|k| format!("\"{k}\":{}", 1000 + k))
        .collect::<Vec<_>>()
        .join(",");
    let recv = format!(
        r#"{{"t":1795713857390635,"node":5,"lamport":137,"pt":1795713857390635,"vc":{{{vc}}},"hlc":[1795713857390635,0],"ev":"recv","from":4,"msg":"TOKEN","bytes":215,"seq":2,"brief":"TOKEN(2)"}}"#
    );
    let send = r#"{"t":1795713857390635,"node":5,"lamport":138,"pt":1795713857390635,"dvc":{"5":1006},"hlc":[1795713857390635,1],"ev":"send","to":6,"msg":"TOKEN","bytes":215,"seq":2,"brief":"TOKEN(2)"}"#;
    [recv.into_bytes(), send.as_bytes().to_vec()]
}

/// Both lines through the project's reader (the byte scan for `send`/`recv`, serde otherwise).
#[divan::bench]
fn read_hop_lines(b: Bencher) {
    let lines = hop_lines();
    b.bench_local(|| {
        let mut j = Jsonl::default();
        for (i, l) in lines.iter().enumerate() {
            j.read_line("node-5.jsonl", i + 1, black_box(l));
        }
        assert!(matches!(j.records[1].event, Event::Send { .. }));
        j
    });
}

/// Both lines through serde_json's general path (the `send` line's clock changes unexpanded).
#[divan::bench]
fn read_hop_lines_serde(b: Bencher) {
    let lines = hop_lines();
    b.bench_local(|| {
        lines
            .iter()
            .map(|l| serde_json::from_slice::<Record>(black_box(l)).expect("a record"))
            .collect::<Vec<_>>()
    });
}
