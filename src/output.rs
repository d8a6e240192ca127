//! Standard output (or error) that its reader closed, as `statebench advise r.json --json | head`
//! does: the command ends quietly, as `cat` or `git log` would, instead of panicking on the
//! closed pipe.
//!
//! Commands print with `println!`, which panics when the write fails, and some write through
//! `std::io::stdout()` and return the error. Rust ignores SIGPIPE, so a closed pipe is a write
//! error (EPIPE) rather than the end of the process. [`until_closed_pipe`] turns both into
//! [`Ended::PipeClosed`] in one place: the panic unwinds (RocksDB closes, temporary directories
//! go) without its message, and the error is recognised in the chain.

use std::any::Any;
use std::io;
use std::panic::{self, AssertUnwindSafe};
use std::process::ExitCode;
use std::sync::Once;

/// The exit status of a command whose output was closed: 128 + SIGPIPE, what a shell reports
/// for `yes | head -1`'s `yes`, so that `set -o pipefail` still sees that the command did not
/// finish (a bench gate cut short has not passed).
pub const CLOSED_PIPE_STATUS: u8 = 128 + 13;

/// How a command ended.
#[derive(Debug)]
pub enum Ended<T> {
    /// It returned.
    Returned(T),
    /// Its standard output or error was closed by the reader before it finished.
    PipeClosed,
}

impl Ended<anyhow::Result<()>> {
    /// The process's exit status for this end, with the error said on stderr (when it is
    /// still open): 0, [`crate::exit_code`]'s, or [`CLOSED_PIPE_STATUS`] quietly.
    pub fn exit_code(self) -> ExitCode {
        match self {
            Ended::Returned(Ok(())) => ExitCode::SUCCESS,
            Ended::Returned(Err(err)) => {
                use std::io::Write as _;
                // A closed stderr has nobody to tell; not a reason to panic.
                let _ = writeln!(io::stderr(), "error: {err:#}");
                ExitCode::from(crate::exit_code(&err))
            }
            Ended::PipeClosed => ExitCode::from(CLOSED_PIPE_STATUS),
        }
    }
}

/// Runs `command`; a closed standard output or error ends it as [`Ended::PipeClosed`], with
/// nothing printed. Any other panic goes on as before (message and unwinding).
pub fn until_closed_pipe(
    command: impl FnOnce() -> anyhow::Result<()>,
) -> Ended<anyhow::Result<()>> {
    quiet_closed_pipe_panics();
    match panic::catch_unwind(AssertUnwindSafe(command)) {
        Ok(Err(err)) if is_closed_pipe_error(&err) => Ended::PipeClosed,
        Ok(result) => Ended::Returned(result),
        Err(payload) if is_closed_pipe_panic(payload.as_ref()) => Ended::PipeClosed,
        Err(payload) => panic::resume_unwind(payload),
    }
}

/// Whether `err` (anywhere in its chain) is a write to a closed pipe.
pub fn is_closed_pipe_error(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
            || e.downcast_ref::<serde_json::Error>()
                .and_then(|e| e.io_error_kind())
                == Some(io::ErrorKind::BrokenPipe)
    })
}

/// Whether a panic's message is `print!`'s on a closed pipe: "failed printing to stdout: " (or
/// stderr) and the EPIPE error.
fn is_closed_pipe_message(message: &str) -> bool {
    let Some(error) = message
        .strip_prefix("failed printing to stdout: ")
        .or_else(|| message.strip_prefix("failed printing to stderr: "))
    else {
        return false;
    };
    error == closed_pipe_text()
}

/// How std words the EPIPE error in `print!`'s panic ("Broken pipe (os error 32)" on Linux).
fn closed_pipe_text() -> String {
    // EPIPE is 32 on Linux, the BSDs and macOS.
    const EPIPE: i32 = 32;
    io::Error::from_raw_os_error(EPIPE).to_string()
}

fn is_closed_pipe_panic(payload: &(dyn Any + Send)) -> bool {
    payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .is_some_and(is_closed_pipe_message)
}

/// Wraps the panic hook once so that a closed pipe's panic prints nothing; every other panic
/// reaches the hook that was there (the default one, or the TUI's that restores the terminal
/// first, which is installed later and calls this one).
fn quiet_closed_pipe_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if is_closed_pipe_panic(info.payload()) {
                return;
            }
            previous(info);
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn print_failures_on_a_closed_pipe_are_recognised_and_others_are_not() {
        let epipe = closed_pipe_text();
        assert!(is_closed_pipe_message(&format!(
            "failed printing to stdout: {epipe}"
        )));
        assert!(is_closed_pipe_message(&format!(
            "failed printing to stderr: {epipe}"
        )));
        // A full disk is a failure to report, not a reader that went away.
        let enospc = io::Error::from_raw_os_error(28);
        assert!(!is_closed_pipe_message(&format!(
            "failed printing to stdout: {enospc}"
        )));
        assert!(!is_closed_pipe_message("index out of bounds"));
    }

    #[test]
    fn a_closed_pipe_error_in_the_chain_ends_quietly_and_other_errors_do_not() {
        let closed = anyhow::Error::from(io::Error::from(io::ErrorKind::BrokenPipe))
            .context("writing the report");
        assert!(matches!(
            until_closed_pipe(|| Err(closed)),
            Ended::PipeClosed
        ));
        let json = serde_json::to_writer(BrokenPipe, &[1, 2, 3]).unwrap_err();
        assert!(is_closed_pipe_error(&json.into()));
        let other = anyhow::anyhow!("unknown key");
        assert!(matches!(
            until_closed_pipe(|| Err(other)),
            Ended::Returned(Err(_))
        ));
    }

    struct BrokenPipe;

    impl io::Write for BrokenPipe {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
}
