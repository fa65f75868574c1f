//! What the cross-process tests and their node processes
//! (`troupe-shard-node`, `troupe-singleton-node`) must agree on: the
//! entity's message, the node's configuration, the region's settings, and
//! how a node process reports a line. Only with the `testing`
//! feature, which only this crate's tests turn on.

use std::time::Duration;

use troupe::ReplyTo;
use troupe_remote::RemoteConfig;

use crate::sharding::ShardingSettings;

/// Asks an entity where it runs: its node's name and its fencing token.
#[derive(serde::Serialize, serde::Deserialize)]
pub enum Where {
    /// The question.
    Ask(ReplyTo<(String, u64)>),
}

impl troupe_remote::RemoteMessage for Where {
    const TAG: &'static str = "troupe-cluster.test.ShardWhere";
}

/// A node that is declared down 1 s after its last heartbeat (every
/// 100 ms).
pub fn config(url: &str, node: &str) -> RemoteConfig {
    let mut config = RemoteConfig::new(url, node);
    config.heartbeat_interval = Duration::from_millis(100);
    config.heartbeat_timeout = Duration::from_secs(1);
    config
}

/// The entity type `probe`: 12 shards, no passivation, no rebalancing.
pub fn probe_settings() -> ShardingSettings {
    let mut settings = ShardingSettings::new("probe");
    settings.shards = 12;
    settings.passivate_after = None;
    settings.rebalance_interval = None;
    settings
}

/// Prints `line` on stdout at once (the test reads it line by line).
pub fn say(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}
