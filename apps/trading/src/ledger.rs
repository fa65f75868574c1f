//! An engine's books together with its log: match an order, encode it,
//! append it. The one place that does this, for the engine actor (whose
//! completion may be deferred to the log's writer) and for the locked
//! variant (whose client thread waits for the log).

use trading_engine::{codec, Command, NewOrder};

use crate::engine_core::EngineCore;
use crate::error::LogError;
use crate::txlog::{Done, EngineLog, FailureNotice, LogSpec};

/// Books, counters and the log they are written to.
#[derive(Debug)]
pub struct Ledger {
    core: EngineCore,
    log: EngineLog,
    record: Vec<u8>,
    fail_next_append: bool,
}

impl Ledger {
    /// Opens the log `spec` describes and replays it into fresh books.
    pub fn open(spec: &LogSpec) -> Result<Self, LogError> {
        let mut core = EngineCore::new();
        let log = EngineLog::open(spec, &mut core)?;
        Ok(Ledger {
            core,
            log,
            record: Vec::with_capacity(64),
            fail_next_append: false,
        })
    }

    /// Books with no log (before an engine actor has opened its own).
    pub fn unopened() -> Self {
        Ledger {
            core: EngineCore::new(),
            log: EngineLog::Off,
            record: Vec::with_capacity(64),
            fail_next_append: false,
        }
    }

    /// A failed group-commit write is to be reported to `notice`.
    pub fn notify_failures(&mut self, notice: FailureNotice) {
        self.log.notify_failures(notice);
    }

    /// The books and counters.
    pub fn core(&self) -> &EngineCore {
        &self.core
    }

    /// The next append fails with [`LogError::Injected`] after the order
    /// is matched (so it is in memory and not in the log).
    pub fn fail_next_append(&mut self) {
        self.fail_next_append = true;
    }

    /// Matches `order` and appends its record. `Ok(Some(done))`: durable
    /// enough now, the caller completes; `Ok(None)`: the log fires `done`
    /// later (group commit). On `Err` the order is in the books but not in
    /// the log: the caller must not acknowledge it, and must rebuild the
    /// books from the log before going on.
    pub fn process(&mut self, order: &NewOrder, done: Done) -> Result<Option<Done>, LogError> {
        self.match_and_encode(order)?;
        self.log.append(&self.record, done)
    }

    /// Matches `order` and appends its record, returning once it is as
    /// durable as the mode promises (the caller's thread waits).
    pub fn process_blocking(&mut self, order: &NewOrder) -> Result<(), LogError> {
        self.match_and_encode(order)?;
        self.log.append_blocking(&self.record)
    }

    fn match_and_encode(&mut self, order: &NewOrder) -> Result<(), LogError> {
        self.core.process(order);
        if std::mem::take(&mut self.fail_next_append) {
            return Err(LogError::Injected);
        }
        self.record.clear();
        codec::encode(&Command::New(*order), self.core.market(), &mut self.record);
        Ok(())
    }
}
