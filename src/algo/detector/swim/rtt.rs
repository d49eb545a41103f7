//! The round trips a member measures from its own PINGs' ACKs (each ACK echoes the stamp of
//! the PING it answers, as TCP's timestamps option does, so a re-sent PING's ACK is timed from
//! that PING), and the bound on a round trip a probe allows for: the larger of RFC 6298's
//! `SRTT + 4 RTTVAR` and the longest of the last [`PEAKS`] samples. The peak makes the bound
//! rise with the first slow answer instead of after the mean has caught up: a probe judged too
//! early on a network that just slowed down is a false suspicion gossiped to every member.

use std::time::Duration;

/// Samples whose largest is kept in the bound.
const PEAKS: usize = 16;
/// Samples needed before the bound is trusted.
const WARM: u32 = 4;

/// A member's round-trip estimate, µs.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rtt {
    srtt: u64,
    rttvar: u64,
    peaks: [u32; PEAKS],
    next: usize,
    samples: u32,
}

/// What a PING carries for its ACK to echo: the prober's clock in µs, modulo 2^32 (a round
/// trip is far shorter than the 71 minutes it wraps in), never 0, which marks a relayed ACK.
pub(crate) fn stamp(now: Duration) -> u32 {
    (now.as_micros() as u32).max(1)
}

impl Rtt {
    /// An ACK echoing `ts` arrived at `now`.
    pub(crate) fn sample(&mut self, now: Duration, ts: u32) {
        if ts == 0 {
            return;
        }
        let s = stamp(now).wrapping_sub(ts);
        // A stamp from before this node's restart or stall, or from the future: no sample.
        if s > 60_000_000 {
            return;
        }
        let s64 = u64::from(s);
        if self.samples == 0 {
            self.srtt = s64;
            self.rttvar = s64 / 2;
        } else {
            self.rttvar = (3 * self.rttvar + self.srtt.abs_diff(s64)) / 4;
            self.srtt = (7 * self.srtt + s64) / 8;
        }
        self.peaks[self.next] = s;
        self.next = (self.next + 1) % PEAKS;
        self.samples = self.samples.saturating_add(1);
    }

    /// The round trip a probe allows for, once enough ACKs were timed.
    pub(crate) fn bound(&self) -> Option<Duration> {
        if self.samples < WARM {
            return None;
        }
        let peak = u64::from(self.peaks.iter().copied().max().unwrap_or(0));
        Some(Duration::from_micros((self.srtt + 4 * self.rttvar).max(peak)))
    }

    /// Forgets every sample (this node's own loop stalled: what it measured before, and the
    /// ACKs that waited through the stall, say nothing of the network now).
    pub(crate) fn forget(&mut self) {
        *self = Rtt::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(x: u64) -> Duration {
        Duration::from_micros(x)
    }

    #[test]
    fn the_bound_is_rfc_6298s_rto_or_the_slowest_recent_sample_whichever_is_larger() {
        let mut r = Rtt::default();
        let t0 = us(1_000_000);
        for k in 0..3 {
            r.sample(t0 + us(10_000), stamp(t0));
            assert_eq!(r.bound(), None, "sample {k}: not warm yet");
        }
        r.sample(t0 + us(10_000), stamp(t0));
        // Four samples of 10 ms: SRTT 10 ms, RTTVAR 5 * (3/4)^3 ms; the peak is 10 ms.
        assert_eq!(r.bound(), Some(us(10_000 + 4 * 2_109)));
        // One slow answer of 90 ms: RTTVAR (3 * 2109 + 80000) / 4, SRTT (7 * 10 + 90) / 8 ms.
        r.sample(t0 + us(90_000), stamp(t0));
        assert_eq!(r.bound(), Some(us(20_000 + 4 * 21_581)));
        // Once the mean has settled back, the slow sample still holds the bound up as the peak.
        for _ in 0..10 {
            r.sample(t0 + us(10_000), stamp(t0));
        }
        assert_eq!(r.bound(), Some(us(90_000)));
        // A relayed ACK (stamp 0) is no sample; a stamp from the future is ignored.
        let before = r.bound();
        r.sample(t0, 0);
        r.sample(t0, stamp(t0 + us(5_000)));
        assert_eq!(r.bound(), before);
        r.forget();
        assert_eq!(r.bound(), None);
    }
}
