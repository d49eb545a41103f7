//! The process exit statuses of every coordlab command, in one place (README: "Exit codes").
//!
//! A script reads them: 0 the run's check found nothing the faults do not explain (and the
//! goal it was given held), 1 a violation or a goal that did not hold, 2 bad input refused
//! before anything started, 3 a write failed (the evidence or the verdict is incomplete). New statuses get a constant here, never a bare number elsewhere.

/// The run's check found nothing the faults do not explain, and its goal (if any) held.
pub const OK: i32 = 0;
/// The check found a violation, the run's goal did not hold (`--until`, `--demo`, chaos), or
/// something failed while running.
pub const VIOLATED: i32 = 1;
/// Bad input: the command or its values were refused before anything started.
pub const USAGE: i32 = 2;
/// A write failed (a full disk, a closed or full stdout, `summary.txt`, a node's trace): the
/// verdict, if any, is incomplete.
pub const WRITE_FAILED: i32 = 3;

/// The status for a check's verdict: [`VIOLATED`] when it found a violation, else [`OK`].
pub fn of_verdict(violated: bool) -> i32 {
    if violated {
        VIOLATED
    } else {
        OK
    }
}
