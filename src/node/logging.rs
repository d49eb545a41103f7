//! The human log: one line per event, `time node N L<lamport> LEVEL words`, through env_logger
//! (RUST_LOG respected; default `info`). Refused datagrams reach it already tallied (one `drop`
//! record per class per second, with a count); those records are rate-limited again here.

use crate::trace::{Event, NodeId, Record};
use log::Level;
use std::io::Write;
use std::time::Duration;

/// Installs env_logger writing plain lines to stderr.
pub fn init() {
    let _ = env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
        .format(|buf, rec| writeln!(buf, "{}", rec.args()))
        .try_init();
}

/// `2026-11-22T03:40:01.123456Z` from microseconds since the Unix epoch.
pub(crate) fn fmt_wall(us: u64) -> String {
    let secs = us / 1_000_000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's civil-from-days.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:06}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        us % 1_000_000
    )
}

/// How loud each event kind is in the human log.
fn level(ev: &Event) -> Level {
    match ev {
        Event::Send { .. } | Event::Recv { .. } => Level::Debug,
        Event::Note { level, .. } if level != "info" => Level::Debug,
        Event::Drop { .. } | Event::Suspect { .. } | Event::StepDown { .. } => Level::Warn,
        _ => Level::Info,
    }
}

/// Writes trace records as human lines, letting at most a few drops a second through.
pub(crate) struct HumanLog {
    me: NodeId,
    window_start: u64,
    drops_in_window: u32,
    suppressed: u64,
    /// A step's lines, written together by [`HumanLog::flush`].
    lines: String,
}

/// Drops logged per second before the rest are only counted.
const DROPS_PER_SECOND: u32 = 5;

impl HumanLog {
    /// A human log for node `me`.
    pub fn new(me: NodeId) -> Self {
        HumanLog {
            me,
            window_start: 0,
            drops_in_window: 0,
            suppressed: 0,
            lines: String::new(),
        }
    }

    /// Logs one record.
    pub fn write(&mut self, r: &Record) {
        let lvl = level(&r.event);
        if !log::log_enabled!(lvl) {
            return;
        }
        let mut text = r.event.describe(self.me);
        if matches!(r.event, Event::Drop { .. }) {
            if r.t.saturating_sub(self.window_start) >= Duration::from_secs(1).as_micros() as u64 {
                if self.suppressed > 0 {
                    text = format!(
                        "{text} (and {} more dropped datagrams not logged; all are in the trace)",
                        self.suppressed
                    );
                }
                self.window_start = r.t;
                self.drops_in_window = 0;
                self.suppressed = 0;
            }
            self.drops_in_window += 1;
            if self.drops_in_window > DROPS_PER_SECOND {
                self.suppressed += match r.event {
                    Event::Drop { count, .. } => count,
                    _ => 1,
                };
                return;
            }
        }
        // The line env_logger would write (`init`'s format), kept for the step's one write.
        use std::fmt::Write as _;
        let _ = writeln!(
            self.lines,
            "{} node {} L{} {:<5} {}",
            fmt_wall(r.t),
            self.me,
            r.lamport.unwrap_or(0),
            lvl,
            text
        );
    }

    /// Writes the lines kept since the last call to stderr (the node's log) in one `write(2)`:
    /// a holder's step logs entering, leaving and its next request, and each line's own
    /// system call was most of the human log's cost. Lines only wait for the end of the step
    /// that made them (a SIGKILL inside that step loses them; the trace has their events).
    pub fn flush(&mut self) {
        if !self.lines.is_empty() {
            let _ = std::io::stderr().write_all(self.lines.as_bytes());
            self.lines.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn wall_time_formats_as_utc() {
        assert_eq!(super::fmt_wall(0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(super::fmt_wall(1_795_312_801_123_456), "2026-11-22T02:00:01.123456Z");
    }
}
