//! The one error type of the command line: what went wrong, in words, and the exit status.

use std::fmt;

/// An error for the user: bad input (exit 2) or a failure while running (exit 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CliError {
    /// The command or its values are wrong (exit status 2).
    Usage(String),
    /// Something failed while running (exit status 1).
    Failed(String),
}

impl CliError {
    /// The process exit status for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Usage(_) => crate::exit::USAGE,
            CliError::Failed(_) => crate::exit::VIOLATED,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(m) | CliError::Failed(m) => f.write_str(m),
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
