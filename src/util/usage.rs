//! The error of a command line that cannot be carried out as given: the process exits with the
//! usage status instead of the failure one. Any layer that checks what the user asked for (a
//! command, a proof case, a bench suite) may raise it.

/// A command line that cannot be carried out as given.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);
