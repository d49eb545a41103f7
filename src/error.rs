//! The one error type of the command line: what went wrong, in words, and the exit status.

use std::fmt;

/// An error for the user: bad input (exit 2), a failure while running (exit 1), or output that
/// could not be written (exit 3).
///
/// Exit statuses of `coordlab`: 0 done (for `check`: nothing violated); 1 a violation (`check`,
/// a launch's goal) or a failure while running; 2 bad input; 3 a write failed (a full disk, a
/// closed or full stdout, `summary.txt`, a node's trace): the verdict, if any, is incomplete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CliError {
    /// The command or its values are wrong (exit status 2).
    Usage(String),
    /// Something failed while running (exit status 1).
    Failed(String),
    /// A write failed: output, a summary or a trace is lost or cut (exit status 3).
    Write(String),
}

/// The exit status of a write failure ([`CliError::Write`]); a node exits with it when it
/// cannot write its trace, which is how the launcher learns it.
pub const WRITE_FAILED: i32 = crate::exit::WRITE_FAILED;

impl CliError {
    /// The process exit status for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Usage(_) => crate::exit::USAGE,
            CliError::Failed(_) => crate::exit::VIOLATED,
            CliError::Write(_) => WRITE_FAILED,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(m) | CliError::Failed(m) | CliError::Write(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for CliError {}

/// Shorthand for a usage error.
pub fn usage(msg: impl Into<String>) -> CliError {
    CliError::Usage(msg.into())
}

/// Shorthand for a failure.
pub fn failed(msg: impl Into<String>) -> CliError {
    CliError::Failed(msg.into())
}

/// Shorthand for a write failure.
pub fn write_failed(msg: impl Into<String>) -> CliError {
    CliError::Write(msg.into())
}
