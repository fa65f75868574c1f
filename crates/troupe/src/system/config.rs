//! Configuration of an actor system: dispatcher settings, and the parser of
//! the TOML format.
//!
//! The format is documented on
//! [`ActorSystemBuilder`](crate::system::ActorSystemBuilder), where users of
//! the crate see it; this module parses it and validates every value.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::Deserialize;

pub use crate::dispatch::stealing::Stealing;

/// Default messages an actor handles per run before yielding its thread.
pub const DEFAULT_THROUGHPUT: usize = 5;
/// Default backoff rounds an idle worker spins before parking.
pub const DEFAULT_SPIN: u32 = 64;
/// Default scheduler tick.
pub const DEFAULT_SCHEDULER_TICK: std::time::Duration = std::time::Duration::from_millis(1);

/// What kind of threads a dispatcher runs actors on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DispatcherKind {
    /// A work-stealing pool of this many worker threads.
    Pool {
        /// Worker threads.
        threads: usize,
    },
    /// One dedicated thread per actor.
    Pinned,
}

/// Settings of one dispatcher.
///
/// ```
/// use troupe::DispatcherConfig;
/// let fast = DispatcherConfig::pool(1).throughput(1).spin(256);
/// assert_eq!(fast.throughput_budget(), 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DispatcherConfig {
    pub(crate) kind: DispatcherKind,
    pub(crate) throughput: usize,
    pub(crate) spin: u32,
    pub(crate) stealing: Stealing,
}

impl DispatcherConfig {
    /// A work-stealing pool with `threads` workers.
    pub fn pool(threads: usize) -> Self {
        DispatcherConfig {
            kind: DispatcherKind::Pool { threads },
            throughput: DEFAULT_THROUGHPUT,
            spin: DEFAULT_SPIN,
            stealing: Stealing::Adaptive,
        }
    }

    /// A pool with one worker per core.
    pub fn pool_per_core() -> Self {
        Self::pool(std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    /// A thread per actor.
    pub fn pinned() -> Self {
        DispatcherConfig {
            kind: DispatcherKind::Pinned,
            ..Self::pool(1)
        }
    }

    /// Messages per actor per run before yielding the thread (at least 1).
    pub fn throughput(mut self, throughput: usize) -> Self {
        self.throughput = throughput;
        self
    }

    /// Backoff rounds an idle worker spins before it parks.
    pub fn spin(mut self, spin: u32) -> Self {
        self.spin = spin;
        self
    }

    /// When idle workers of a pool take actors from busy ones (see
    /// [`Stealing`]).
    ///
    /// ```
    /// use troupe::{ActorSystem, DispatcherConfig, Stealing};
    ///
    /// let system = ActorSystem::builder()
    ///     .dispatcher("chatty", DispatcherConfig::pool(2).stealing(Stealing::Late))
    ///     .build()
    ///     .unwrap();
    /// assert!(system.dispatcher_stats("chatty").is_some());
    /// system.shutdown();
    /// ```
    pub fn stealing(mut self, stealing: Stealing) -> Self {
        self.stealing = stealing;
        self
    }

    /// The configured throughput budget.
    pub fn throughput_budget(&self) -> usize {
        self.throughput
    }

    /// The configured kind.
    pub fn kind(&self) -> DispatcherKind {
        self.kind
    }

    pub(crate) fn validate(&self, name: &str) -> Result<(), ConfigError> {
        if self.throughput == 0 {
            return Err(ConfigError(format!(
                "dispatchers.{name}.throughput must be at least 1"
            )));
        }
        if let DispatcherKind::Pool { threads: 0 } = self.kind {
            return Err(ConfigError(format!(
                "dispatchers.{name}.threads must be at least 1"
            )));
        }
        Ok(())
    }
}

/// A configuration that cannot be used; the message names the problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub(crate) String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid troupe configuration: {}", self.0)
    }
}

impl std::error::Error for ConfigError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    name: Option<String>,
    scheduler_tick_ms: Option<u64>,
    #[serde(default)]
    dispatchers: BTreeMap<String, FileDispatcher>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDispatcher {
    kind: Option<String>,
    threads: Option<usize>,
    throughput: Option<usize>,
    spin: Option<u32>,
    stealing: Option<String>,
}

/// Parsed file settings: an optional system name and dispatchers.
#[derive(Debug)]
pub(crate) struct Parsed {
    pub(crate) name: Option<String>,
    pub(crate) scheduler_tick: Option<std::time::Duration>,
    pub(crate) dispatchers: Vec<(String, DispatcherConfig)>,
}

/// Parses the TOML format in the module docs.
pub(crate) fn parse(text: &str, origin: &str) -> Result<Parsed, ConfigError> {
    let file: FileConfig =
        toml::from_str(text).map_err(|e| ConfigError(format!("{origin}: {e}")))?;
    let mut dispatchers = Vec::new();
    for (name, d) in file.dispatchers {
        let mut config = match d.kind.as_deref() {
            None | Some("pool") => match d.threads {
                Some(threads) => DispatcherConfig::pool(threads),
                None => DispatcherConfig::pool_per_core(),
            },
            Some("pinned") => {
                if d.threads.is_some() {
                    return Err(ConfigError(format!(
                        "{origin}: dispatchers.{name}.threads does not apply to a pinned dispatcher"
                    )));
                }
                DispatcherConfig::pinned()
            }
            Some(other) => {
                return Err(ConfigError(format!(
                "{origin}: dispatchers.{name}.kind must be \"pool\" or \"pinned\", not {other:?}"
            )))
            }
        };
        if let Some(t) = d.throughput {
            config = config.throughput(t);
        }
        if let Some(s) = d.spin {
            config = config.spin(s);
        }
        if let Some(stealing) = d.stealing.as_deref() {
            config = config.stealing(
                stealing
                    .parse()
                    .map_err(|e| ConfigError(format!("{origin}: dispatchers.{name}.{e}")))?,
            );
        }
        config
            .validate(&name)
            .map_err(|e| ConfigError(format!("{origin}: {}", e.0)))?;
        dispatchers.push((name, config));
    }
    if file.scheduler_tick_ms == Some(0) {
        return Err(ConfigError(format!(
            "{origin}: scheduler_tick_ms must be at least 1"
        )));
    }
    Ok(Parsed {
        name: file.name,
        scheduler_tick: file.scheduler_tick_ms.map(std::time::Duration::from_millis),
        dispatchers,
    })
}

/// Reads and parses a configuration file.
pub(crate) fn load(path: &Path) -> Result<Parsed, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError(format!("cannot read {}: {e}", path.display())))?;
    parse(&text, &path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_pools_and_pinned() {
        let p = parse(
            "name = \"x\"\n[dispatchers.default]\nthreads = 3\nthroughput = 7\n[dispatchers.io]\nkind = \"pinned\"\n",
            "test",
        )
        .unwrap();
        assert_eq!(p.name.as_deref(), Some("x"));
        assert_eq!(p.dispatchers.len(), 2);
        assert_eq!(p.dispatchers[0].1, DispatcherConfig::pool(3).throughput(7));
        assert_eq!(p.dispatchers[1].1.kind, DispatcherKind::Pinned);
    }

    #[test]
    fn rejects_bad_values_with_the_key_named() {
        let e = parse("[dispatchers.default]\nthreads = 0\n", "f.toml").unwrap_err();
        assert!(e.to_string().contains("dispatchers.default.threads"), "{e}");
        let e = parse("[dispatchers.d]\nthroughput = 0\n", "f.toml").unwrap_err();
        assert!(e.to_string().contains("throughput"), "{e}");
        let e = parse("[dispatchers.d]\nkind = \"fast\"\n", "f.toml").unwrap_err();
        assert!(e.to_string().contains("kind"), "{e}");
        let e = parse("[dispatchers.d]\nthreds = 2\n", "f.toml").unwrap_err();
        assert!(e.to_string().contains("threds"), "{e}");
        let e = parse(
            "[dispatchers.d]\nkind = \"pinned\"\nthreads = 2\n",
            "f.toml",
        )
        .unwrap_err();
        assert!(e.to_string().contains("pinned"), "{e}");
        let e = parse("[dispatchers.d]\nstealing = \"lazy\"\n", "f.toml").unwrap_err();
        assert!(e.to_string().contains("dispatchers.d.stealing"), "{e}");
    }

    #[test]
    fn stealing_is_adaptive_unless_the_file_says_otherwise() {
        let p = parse(
            "[dispatchers.a]\nthreads = 2\n\
             [dispatchers.b]\nstealing = \"late\"\n\
             [dispatchers.c]\nstealing = \"eager\"\n\
             [dispatchers.d]\nstealing = \"adaptive\"\n",
            "test",
        )
        .unwrap();
        let got: Vec<_> = p.dispatchers.iter().map(|(_, d)| d.stealing).collect();
        assert_eq!(
            got,
            [
                Stealing::Adaptive,
                Stealing::Late,
                Stealing::Eager,
                Stealing::Adaptive
            ]
        );
    }
}
