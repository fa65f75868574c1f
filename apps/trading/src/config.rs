//! What one run is: the variant (how clients, receivers and engines talk),
//! the scenario, the log mode and where logs go.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use crate::error::ParseError;
use crate::topology::Scenario;
use crate::txlog::TxLog;

/// How clients, receivers and engines talk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// Locks and direct calls on the clients' threads (`variants/locked.rs`).
    Sync,
    /// Actors; the primary replies once both engines are done.
    RequestReply,
    /// Actors; fire-and-forget sends and a completion token.
    OneWay,
}

impl Variant {
    /// Every variant, in report order.
    pub const ALL: [Variant; 3] = [Variant::Sync, Variant::RequestReply, Variant::OneWay];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Sync => "sync",
            Variant::RequestReply => "request-reply",
            Variant::OneWay => "one-way",
        }
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Variant {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, ParseError> {
        Variant::ALL
            .into_iter()
            .find(|v| v.name() == s)
            .ok_or_else(|| ParseError::new("variant", s, "sync, request-reply or one-way"))
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// The variant.
    pub variant: Variant,
    /// Clients, loops and the pattern of the bids.
    pub scenario: Scenario,
    /// Whether and how engines log.
    pub txlog: TxLog,
    /// Where engines keep their logs (one directory per engine below it);
    /// must be given when the log is on.
    pub log_root: Option<PathBuf>,
    /// Dispatcher threads for the actor variants.
    pub threads: usize,
    /// How their idle dispatcher threads take work from busy ones.
    pub stealing: troupe::Stealing,
    /// Orders each client keeps in flight (actor variants; 1: one at a
    /// time, the original's closed loop).
    pub window: usize,
    /// Give up (and report) if the clients are not done by then.
    pub timeout: Duration,
}
