//! The launcher's own timestamps of a launch's phases (bind, zygote, forks, gate, goal, stop,
//! reap, check), printed to stderr at the end when `COORDLAB_PHASES` is set in the
//! environment: how docs/startup.md breaks a launch of thousands of nodes down.

use std::sync::Mutex;
use std::time::Instant;

static MARKS: Mutex<Vec<(&'static str, Instant)>> = Mutex::new(Vec::new());

/// Whether the phases are printed (read once).
fn wanted() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("COORDLAB_PHASES").is_some_and(|v| !v.is_empty() && v != "0"))
}

/// Marks the end of phase `name` now.
pub(crate) fn mark(name: &'static str) {
    if wanted() {
        if let Ok(mut m) = MARKS.lock() {
            m.push((name, Instant::now()));
        }
    }
}

/// Prints every phase since the first mark: `phases: bound +12 ms (12 ms), ...`.
pub(crate) fn report() {
    if !wanted() {
        return;
    }
    let Ok(m) = MARKS.lock() else { return };
    let Some(&(_, first)) = m.first() else { return };
    let mut prev = first;
    let parts: Vec<String> = m
        .iter()
        .map(|&(name, t)| {
            let s = format!(
                "{name} +{} ms ({} ms)",
                t.duration_since(first).as_millis(),
                t.duration_since(prev).as_millis()
            );
            prev = t;
            s
        })
        .collect();
    eprintln!("phases: {}", parts.join(", "));
}
