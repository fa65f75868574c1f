//! Transaction logs as an engine sees them: a mode chosen per run, where
//! each engine's log lives, and the completion that must happen once a
//! record is as durable as the mode promises.
//!
//! `append` hands the completion back when the record is already durable
//! enough (log off, or buffered writes), so the common path costs no
//! allocation and no message; only group commit keeps it and fires it from
//! the log's writer thread after the batch's fsync, or fails it (and tells
//! the engine, once) if the batch could not be written.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use troupe::ActorRef;
use troupe_journal::{read_from, Durability, Journal, Options};

use crate::engine_core::EngineCore;
use crate::error::{LogError, ParseError};
use crate::messages::{Armed, DoneMsg, EngineMsg};
use crate::topology::Half;

/// Whether and how engines log orders.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TxLog {
    /// No log.
    Off,
    /// Each order is written to the log before it is acknowledged, left in
    /// OS buffers (no fsync): survives a process crash, not a power cut.
    Buffered,
    /// Each order is acknowledged only after an fsync that covers it; one
    /// writer batches concurrent appends into one fsync.
    GroupCommit,
}

impl TxLog {
    /// Every mode, in report order.
    pub const ALL: [TxLog; 3] = [TxLog::Off, TxLog::Buffered, TxLog::GroupCommit];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            TxLog::Off => "off",
            TxLog::Buffered => "buffered",
            TxLog::GroupCommit => "group-commit",
        }
    }
}

impl fmt::Display for TxLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for TxLog {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, ParseError> {
        TxLog::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| ParseError::new("log mode", s, "off, buffered or group-commit"))
    }
}

/// One engine's log: its mode and directory.
#[derive(Clone, Debug)]
pub struct LogSpec {
    /// The durability mode.
    pub mode: TxLog,
    /// The engine's own log directory (unused when the mode is off).
    pub dir: PathBuf,
}

impl LogSpec {
    /// No log.
    pub fn off() -> Self {
        LogSpec {
            mode: TxLog::Off,
            dir: PathBuf::new(),
        }
    }

    /// The log of engine `engine`'s `half` under `root` (`engine-3-standby`),
    /// or no log if the mode is off or there is no root.
    pub fn for_engine(mode: TxLog, root: Option<&Path>, engine: usize, half: Half) -> Self {
        match root {
            Some(root) if mode != TxLog::Off => LogSpec {
                mode,
                dir: root.join(format!("engine-{engine}-{}", half.name())),
            },
            _ => LogSpec::off(),
        }
    }
}

/// What to do once an order's record is durable.
#[derive(Debug)]
pub enum Done {
    /// Complete a one-way client's token.
    Token(Armed),
    /// Tell an engine (the primary itself, or the primary of a standby).
    Tell {
        /// The engine.
        to: ActorRef<EngineMsg>,
        /// What to tell it.
        msg: DoneMsg,
    },
}

impl Done {
    /// Does it.
    pub fn fire(self) {
        match self {
            Done::Token(token) => token.complete(),
            Done::Tell { to, msg } => to.tell(msg.into_msg()),
        }
    }

    /// The record will never be durable: a one-way client is told its
    /// order failed. A request-reply acknowledgement is just not sent (see
    /// apps/trading/GUARANTEES.md).
    pub fn fail(self) {
        if let Done::Token(token) = self {
            token.fail();
        }
    }
}

/// Who to tell, once, that a group-commit write failed: the engine that
/// owns the log, so it restarts on a fresh open of its log.
#[derive(Clone, Debug)]
pub struct FailureNotice {
    to: ActorRef<EngineMsg>,
    instance: u64,
    sent: Arc<AtomicBool>,
}

impl FailureNotice {
    /// Tells `to` (engine instance `instance`) on the first failure only.
    pub fn new(to: ActorRef<EngineMsg>, instance: u64) -> Self {
        FailureNotice {
            to,
            instance,
            sent: Arc::new(AtomicBool::new(false)),
        }
    }

    fn send(&self) {
        if !self.sent.swap(true, Ordering::Relaxed) {
            self.to.tell(EngineMsg::LogFailed {
                instance: self.instance,
            });
        }
    }
}

/// An open log.
pub enum EngineLog {
    /// Nothing is logged.
    Off,
    /// A journal under the run's mode.
    Journal {
        /// The journal.
        journal: Journal,
        /// Whether appends wait for group commit.
        mode: TxLog,
        /// Who to tell when a group-commit write fails.
        notice: Option<FailureNotice>,
    },
}

impl fmt::Debug for EngineLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineLog::Off => f.write_str("EngineLog::Off"),
            EngineLog::Journal { mode, .. } => write!(f, "EngineLog::Journal({mode})"),
        }
    }
}

impl EngineLog {
    /// Opens the log `spec` describes and replays every order it holds
    /// into `core`, so a restarted engine has its books back.
    pub fn open(spec: &LogSpec, core: &mut EngineCore) -> Result<EngineLog, LogError> {
        let durability = match spec.mode {
            TxLog::Off => return Ok(EngineLog::Off),
            TxLog::Buffered => Durability::None,
            TxLog::GroupCommit => Durability::GroupCommit,
        };
        let journal = Journal::open(
            &spec.dir,
            Options {
                durability,
                ..Options::default()
            },
        )?;
        let mut failure = None;
        read_from(&spec.dir, 0, |record| {
            if failure.is_none() {
                if let Err(error) = core.replay(&record.payload) {
                    failure = Some(LogError::Replay {
                        dir: spec.dir.clone(),
                        seq: record.seq,
                        error,
                    });
                }
            }
        })?;
        if let Some(e) = failure {
            return Err(e);
        }
        Ok(EngineLog::Journal {
            journal,
            mode: spec.mode,
            notice: None,
        })
    }

    /// A failed group-commit write is to be reported to `notice` (a
    /// synchronous failure is returned by `append` instead).
    pub fn notify_failures(&mut self, notice: FailureNotice) {
        if let EngineLog::Journal { notice: n, .. } = self {
            *n = Some(notice);
        }
    }

    /// Appends `record`. `Ok(Some(done))`: durable enough now, the caller
    /// completes; `Ok(None)`: the log fires `done` later (group commit),
    /// or never if the write fails, so the order is never acknowledged.
    pub fn append(&mut self, record: &[u8], done: Done) -> Result<Option<Done>, LogError> {
        match self {
            EngineLog::Off => Ok(Some(done)),
            EngineLog::Journal {
                journal,
                mode: TxLog::GroupCommit,
                notice,
            } => {
                let notice = notice.clone();
                journal.append_with(record, move |result| match result {
                    Ok(_) => done.fire(),
                    Err(_) => {
                        // The order was matched and forwarded already: its
                        // client learns it failed instead of waiting, and the
                        // engine restarts from what its log holds.
                        done.fail();
                        if let Some(notice) = notice {
                            notice.send();
                        }
                    }
                });
                Ok(None)
            }
            EngineLog::Journal { journal, .. } => {
                journal.append(record)?;
                Ok(Some(done))
            }
        }
    }

    /// Appends `record` and returns once it is as durable as the mode
    /// promises (the sync variant's path: the caller's thread waits).
    pub fn append_blocking(&mut self, record: &[u8]) -> Result<(), LogError> {
        match self {
            EngineLog::Off => Ok(()),
            EngineLog::Journal { journal, .. } => Ok(journal.append(record).map(drop)?),
        }
    }
}
