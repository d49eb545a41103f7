//! `--demo snapshot`: one bank run on skewed clocks (`--clock-skew random:200,100` unless clock
//! flags are given) taking both kinds of snapshot every second (`snapshot=both`), stopped after
//! a few seconds and told in words: every Chandy-Lamport snapshot sums to the money there is,
//! the clock-based ones do not, and why.

use super::goal::Ending;
use crate::check::{clock, snapshot};
use crate::trace::RunDir;
use std::time::{Duration, Instant};

/// How long the bank runs: long enough for several snapshots of each kind to complete.
pub(crate) const RUN_FOR: Duration = Duration::from_secs(6);

/// The story's clock.
pub(crate) struct SnapshotDemo {
    until: Instant,
}

impl SnapshotDemo {
    /// A story starting at `t0`.
    pub fn new(t0: Instant) -> Self {
        say!(
            "demo snapshot: every account sends money to its neighbours; every second each node records a \
             global state twice: by Chandy-Lamport's markers, and when its own (skewed) clock reads the second"
        );
        SnapshotDemo { until: t0 + RUN_FOR }
    }

    /// Ends the run once it has run long enough.
    pub fn step(&mut self, now: Instant) -> Option<Ending> {
        (now >= self.until).then(|| Ending {
            code: 0,
            message: format!("demo snapshot: {} s of banking done", RUN_FOR.as_secs()),
            check: true,
        })
    }

    /// The story's closing lines, from the traces of the run in `dir`.
    pub(crate) fn conclude(&self, dir: &std::path::Path) -> Vec<String> {
        let Ok(run) = RunDir::load(dir) else {
            return vec![format!("cannot read {} to tell the story", dir.display())];
        };
        let (s, c) = (snapshot::analyse(&run), clock::analyse(&run));
        let cl = s.complete.iter().filter(|g| g.method == "chandy-lamport").count();
        let errs = s.clock_errors();
        let wrong = errs.iter().filter(|&&e| e != 0).count();
        let worst = errs.iter().copied().max_by_key(|e| e.abs()).unwrap_or(0);
        let mut out = vec![format!(
            "the bank held {} all along. {cl} Chandy-Lamport snapshots: {}. {} clock snapshots: {wrong} wrong, the worst by {worst:+}.",
            s.initial,
            if s.broken().is_empty() {
                "every one sums to it".to_string()
            } else {
                format!("{} do NOT sum to it (a bug)", s.broken().len())
            },
            errs.len()
        )];
        out.push(format!(
            "why: the clocks disagreed by up to {:.0} ms. A node whose clock is ahead records its balance early, \
             so a transfer it sends afterwards is still in its recorded balance; when that transfer reaches a node \
             whose clock is behind before that node records, it is in the receiver's recorded balance too: counted \
             twice, money the bank never had. (Every transfer sent before its sender recorded is counted once: in \
             the receiver's balance, or in the channel when it arrives after the receiver recorded.) Markers need \
             no clock: a node records on the first marker, which its sender sent right after recording, and FIFO \
             channels (numbered, held back until in order, resent until acknowledged) deliver every transfer sent \
             before a marker ahead of it and every one sent after it behind it: each is counted exactly once.",
            c.spread_before_us() as f64 / 1000.0
        ));
        out
    }
}
