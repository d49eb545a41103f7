//! A node's own physical clock: host time made to disagree (offset and drift), and corrected
//! by slewing so that it never runs backwards.
//!
//! The hardware reading is H(t) = t + offset + drift * (t - t0), where t is true time and t0
//! the first reading. The software clock is S(t) = H(t) + c(t): a correction asked for is not
//! applied at once but slewed in at a bounded rate, |dc/dH| <= max_slew, so that S advances at
//! between (1 - max_slew) and (1 + max_slew) times the hardware rate: with max_slew < 1 it
//! never runs backwards (the S(t) = (1 + a) H(t) + b of the course, piecewise). A step
//! (`--set step=true`) applies the correction at once, backwards if need be.

/// How one node's hardware clock disagrees with true time.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ClockSpec {
    /// Offset from true time at the start, microseconds.
    pub offset_us: i64,
    /// Rate error, parts per million (positive: the clock runs fast).
    pub drift_ppm: f64,
}

/// The default slew bound: fast enough that a 200 ms error is absorbed in a few seconds (real
/// NTP slews at most 500 ppm and steps beyond 128 ms).
pub(crate) const DEFAULT_MAX_SLEW_PPM: f64 = 100_000.0;

/// One node's software clock.
#[derive(Debug, Clone)]
pub struct PhysicalClock {
    spec: ClockSpec,
    max_slew: f64,
    t0: Option<u64>,
    last_h: f64,
    applied: f64,
    pending: f64,
    last: u64,
}

impl PhysicalClock {
    /// A clock that disagrees as `spec` says and slews at most `max_slew_ppm`.
    pub fn new(spec: ClockSpec, max_slew_ppm: f64) -> Self {
        PhysicalClock {
            spec,
            max_slew: (max_slew_ppm * 1e-6).clamp(0.0, 0.999),
            t0: None,
            last_h: 0.0,
            applied: 0.0,
            pending: 0.0,
            last: 0,
        }
    }

    /// How this clock disagrees with true time.
    pub fn spec(&self) -> ClockSpec {
        self.spec
    }

    fn hardware(&self, t_us: u64) -> f64 {
        let t0 = self.t0.unwrap_or(t_us);
        t_us as f64 + self.spec.offset_us as f64 + self.spec.drift_ppm * 1e-6 * (t_us as f64 - t0 as f64)
    }

    /// The clock's reading at true time `t_us` (microseconds). Readings must come in true-time
    /// order; the slew in progress advances with them.
    pub fn read(&mut self, t_us: u64) -> u64 {
        if self.t0.is_none() {
            self.t0 = Some(t_us);
            self.last_h = self.hardware(t_us);
        }
        let h = self.hardware(t_us);
        let dh = (h - self.last_h).max(0.0);
        self.last_h = self.last_h.max(h);
        let step = (self.max_slew * dh).min(self.pending.abs());
        let step = if self.pending < 0.0 { -step } else { step };
        self.applied += step;
        self.pending -= step;
        let s = (h + self.applied).round().max(0.0) as u64;
        self.last = self.last.max(s);
        self.last
    }

    /// Slews the clock by `delta_us` from now on, replacing any correction still in progress
    /// (a new estimate is measured against the clock as it now reads).
    pub fn slew(&mut self, delta_us: i64) {
        self.pending = delta_us as f64;
    }

    /// Steps the clock by `delta_us` at once (backwards when negative).
    pub fn step(&mut self, t_us: u64, delta_us: i64) {
        self.read(t_us);
        self.applied += self.pending + delta_us as f64;
        self.pending = 0.0;
        self.last = (self.last_h + self.applied).round().max(0.0) as u64;
    }

    /// The clock's total correction once slewed in (software minus hardware), microseconds:
    /// what a restarted node restores ([`crate::clock::kept`]).
    pub(crate) fn correction_us(&self) -> i64 {
        (self.applied + self.pending).round() as i64
    }

    /// Starts this clock with `correction_us` already applied, before its first reading (a
    /// restarted node restoring the correction it kept): the new boot's first reading is corrected.
    pub(crate) fn restore(&mut self, correction_us: i64) {
        self.applied = correction_us as f64;
        self.pending = 0.0;
    }

    #[cfg(test)]
    /// The correction still to be slewed in, microseconds.
    pub(crate) fn pending_us(&self) -> i64 {
        self.pending.round() as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_and_drift_make_the_clock_disagree() {
        let mut c = PhysicalClock::new(
            ClockSpec {
                offset_us: 5_000,
                drift_ppm: 100.0,
            },
            DEFAULT_MAX_SLEW_PPM,
        );
        assert_eq!(c.read(1_000_000), 1_005_000);
        // 10 s later a clock 100 ppm fast has gained 1 ms.
        assert_eq!(c.read(11_000_000), 11_006_000);
    }

    #[test]
    fn a_negative_correction_is_slewed_and_never_runs_backwards() {
        let mut c = PhysicalClock::new(
            ClockSpec {
                offset_us: 200_000,
                drift_ppm: 0.0,
            },
            100_000.0,
        );
        let mut last = c.read(0);
        c.slew(-200_000);
        let mut t = 0;
        while c.pending_us() != 0 {
            t += 1_000;
            let r = c.read(t);
            assert!(r > last, "clock stood still or ran back at t={t}");
            // Slewing at 10% means each true millisecond advances the clock by 0.9 ms at least.
            assert!(r - last >= 899, "{}", r - last);
            last = r;
        }
        // 200 ms absorbed at 10% takes about 2 s of hardware time.
        assert!((1_900_000..=2_100_000).contains(&t), "{t}");
        assert_eq!(c.read(t + 1_000) as i64 - (t as i64 + 1_000), 0);
    }

    #[test]
    fn a_restored_correction_is_there_from_the_first_reading() {
        let spec = ClockSpec {
            offset_us: 80_000,
            drift_ppm: 0.0,
        };
        let mut old = PhysicalClock::new(spec, DEFAULT_MAX_SLEW_PPM);
        old.read(0);
        old.slew(-80_000);
        old.read(100_000);
        assert_eq!(old.correction_us(), -80_000, "the target, half slewed in or not");
        let mut new = PhysicalClock::new(spec, DEFAULT_MAX_SLEW_PPM);
        new.restore(old.correction_us());
        assert_eq!(new.read(5_000_000), 5_000_000);
    }

    #[test]
    fn a_step_jumps_at_once() {
        let mut c = PhysicalClock::new(ClockSpec::default(), DEFAULT_MAX_SLEW_PPM);
        assert_eq!(c.read(1_000), 1_000);
        c.step(2_000, -500);
        assert_eq!(c.read(2_000), 1_500);
    }
}
