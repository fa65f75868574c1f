//! The trading system's errors: a bad name on the command line, a log that
//! cannot be opened or written, and a run that could not be built or did
//! not finish (a scenario that cannot be split is `topology::ScenarioError`). Each says what was expected
//! and what happened.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use trading_engine::codec::DecodeError;
use troupe_journal::JournalError;

/// A name that is not one of the accepted ones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    what: &'static str,
    got: String,
    expected: &'static str,
}

impl ParseError {
    /// `got` is not a valid `what`; `expected` lists the valid ones.
    pub fn new(what: &'static str, got: &str, expected: &'static str) -> Self {
        ParseError {
            what,
            got: got.to_string(),
            expected,
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown {} {:?} (expected {})",
            self.what, self.got, self.expected
        )
    }
}

impl std::error::Error for ParseError {}

/// A transaction log failure: the order it concerned is not acknowledged.
#[derive(Debug)]
pub enum LogError {
    /// The journal refused to open or to take a record.
    Journal(JournalError),
    /// A record read back at open is not an order this engine can replay.
    Replay {
        /// The log directory.
        dir: PathBuf,
        /// The record's sequence number.
        seq: u64,
        /// What was wrong with it.
        error: DecodeError,
    },
    /// A failure injected on purpose (`EngineMsg::FailAppends`), standing
    /// for a disk that refuses a write.
    Injected,
}

impl fmt::Display for LogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LogError::Journal(e) => e.fmt(f),
            LogError::Replay { dir, seq, error } => {
                write!(f, "{}: record {seq}: {error}", dir.display())
            }
            LogError::Injected => f.write_str("append failure injected on purpose"),
        }
    }
}

impl std::error::Error for LogError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LogError::Journal(e) => Some(e),
            LogError::Replay { error, .. } => Some(error),
            LogError::Injected => None,
        }
    }
}

impl From<JournalError> for LogError {
    fn from(e: JournalError) -> Self {
        LogError::Journal(e)
    }
}

/// Why a run could not be made or finished. (A run that finished but
/// failed its checks is not an error: see `RunResult::problems`.)
#[derive(Debug)]
pub enum RunError {
    /// The log is on but no directory was given.
    NoLogDirectory,
    /// A window of more than one order in flight for the sync variant,
    /// whose client thread calls the engines itself.
    WindowNeedsActors,
    /// An engine's log could not be opened.
    Log(LogError),
    /// The actor system could not be built, or an actor spawned.
    System(String),
    /// Not every client finished within the timeout.
    Timeout {
        /// Clients that finished.
        finished: usize,
        /// Clients started.
        clients: usize,
        /// The timeout.
        timeout: Duration,
    },
    /// An engine did not answer the request for its summary.
    Summary(troupe::AskError),
    /// A client thread of the locked variant panicked, or left an engine's
    /// lock poisoned.
    ClientPanicked,
    /// Latency histograms could not be merged.
    Histogram(hdrhistogram::AdditionError),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::NoLogDirectory => {
                f.write_str("a log directory is needed when the transaction log is on")
            }
            RunError::WindowNeedsActors => f.write_str(
                "a window of more than one order in flight needs an actor variant \
                 (request-reply or one-way): a sync client calls the engines itself",
            ),
            RunError::Log(e) => write!(f, "transaction log: {e}"),
            RunError::System(e) => write!(f, "actor system: {e}"),
            RunError::Timeout {
                finished,
                clients,
                timeout,
            } => write!(
                f,
                "only {finished} of {clients} clients finished within {timeout:?}"
            ),
            RunError::Summary(e) => write!(f, "engine summary: {e}"),
            RunError::ClientPanicked => f.write_str("a client thread panicked"),
            RunError::Histogram(e) => write!(f, "merging latencies: {e}"),
        }
    }
}

impl std::error::Error for RunError {}

impl From<LogError> for RunError {
    fn from(e: LogError) -> Self {
        RunError::Log(e)
    }
}

impl From<hdrhistogram::AdditionError> for RunError {
    fn from(e: hdrhistogram::AdditionError) -> Self {
        RunError::Histogram(e)
    }
}

/// Why the replay tool could not replay a file or a log.
#[derive(Debug)]
pub enum ReplayError {
    /// A file could not be read, created or written.
    Io {
        /// What was being done: "read", "create", "write".
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// The finished trade file could not be moved into place.
    Move {
        /// The temporary file.
        from: PathBuf,
        /// Where it was to go.
        to: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// The command file has malformed lines (up to 20 listed); nothing was
    /// applied.
    Malformed {
        /// The command file.
        path: PathBuf,
        /// The malformed lines.
        errors: Vec<trading_engine::text::ParseError>,
    },
    /// The directory holds no journal segment.
    NoSegments {
        /// The directory.
        dir: PathBuf,
    },
    /// The journal could not be read (a damaged record names its segment
    /// and offset).
    Journal(JournalError),
    /// A record is not an encoded command.
    Decode {
        /// The record's sequence number.
        seq: u64,
        /// What was wrong with it.
        error: DecodeError,
    },
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayError::Io {
                action,
                path,
                error,
            } => write!(f, "cannot {action} {}: {error}", path.display()),
            ReplayError::Move { from, to, error } => write!(
                f,
                "cannot move {} to {}: {error}",
                from.display(),
                to.display()
            ),
            ReplayError::Malformed { path, errors } => {
                write!(f, "{} is malformed; nothing was applied:", path.display())?;
                for e in errors {
                    write!(f, "\n  {e}")?;
                }
                Ok(())
            }
            ReplayError::NoSegments { dir } => {
                write!(f, "{} holds no journal segments (*.log)", dir.display())
            }
            ReplayError::Journal(e) => e.fmt(f),
            ReplayError::Decode { seq, error } => write!(f, "record {seq}: {error}"),
        }
    }
}

impl std::error::Error for ReplayError {}

impl ReplayError {
    /// An IO error while doing `action` to `path`.
    pub fn io(action: &'static str, path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.to_path_buf();
        move |error| ReplayError::Io {
            action,
            path,
            error,
        }
    }
}
