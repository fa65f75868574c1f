//! The launched cluster's NATS server as the trading cluster's
//! acknowledgement needs it, and the broker restart the fault loop injects.
//!
//! **What an acknowledgement needs of the server.** Who may acknowledge is
//! decided by compare-and-set on the lease bucket (`lease.rs`): a standby
//! takes a lease over, a primary renews it to go on alone, each from the
//! revision it last saw. If the server acknowledged such a write and then
//! lost it, the key would go back to an older revision: the node whose
//! write was acknowledged serves as the lease's owner while the bucket
//! names another, and a compare-and-set from the older revision would
//! succeed a second time, so two primaries could both acknowledge. So the
//! bucket's writes must outlive whatever the server can suffer:
//!
//! - a SIGKILL of the server process (what `scripts/trading_broker_loop.sh`
//!   does): with one server the bucket has one copy, and nats-server writes
//!   a single-copy stream's message into its file before it acknowledges
//!   it (only the fsync is periodic, every `sync_interval`, 2 minutes by
//!   default), so the write is in the operating system's hands and a
//!   killed process loses nothing;
//! - a crash of the server's machine (power, kernel): the writes since the
//!   last fsync are gone. The launcher's single server therefore runs with
//!   `sync_interval: always` ([`ServerConfig`]): every write is synced
//!   before it is acknowledged. The bucket sees a handful of writes a run
//!   (one per lease created, taken over or renewed), so this costs nothing
//!   measurable; the orders themselves never touch JetStream;
//! - with three servers (`--servers 3`), the bucket has three copies and a
//!   write is acknowledged once a majority holds it: losing one server,
//!   its host included, loses nothing (`kill_host`). Those servers keep
//!   their default sync, so a crash of every machine at once within the
//!   sync interval could still lose a lease write.
//!
//! The orders' own durability is the engines' logs' (`--txlog`), not the
//! server's. A restart of the server drops the messages it held and those
//! sent to a node that has not reconnected yet: the nodes declare nobody
//! down for it (troupe-remote hears its own heartbeats), the clients resend,
//! and the engines find a `Replicate` lost in it as a gap (`engine.rs`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{interrupt, unix_ns, Cluster};

/// A configuration file for the launcher's nats-server (JetStream syncs
/// every write before acknowledging it, so that a lease write survives a
/// crash of the server's machine: apps/trading/GUARANTEES.md, a broker
/// restart), in a
/// temporary directory removed when dropped. The launcher keeps it until
/// its server is gone: a restart reads it again.
pub struct ServerConfig {
    dir: PathBuf,
    file: PathBuf,
}

/// What the file says: JetStream syncs every write before acknowledging it
/// (see the module docs). Everything else comes from the command line.
const CONFIG: &str = "# Written by `trading cluster`: every JetStream write (the lease\n\
                      # bucket's) is synced to disk before it is acknowledged.\n\
                      jetstream {\n  sync_interval: always\n}\n";

impl ServerConfig {
    /// Writes the file into a fresh temporary directory.
    pub fn write() -> Result<ServerConfig, String> {
        let dir =
            std::env::temp_dir().join(format!("trading-nats-{}-{}", std::process::id(), unix_ns()));
        let file = dir.join("nats-server.conf");
        std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(&file, CONFIG))
            .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
        Ok(ServerConfig { dir, file })
    }

    /// The file, for nats-server's `-c`.
    pub fn path(&self) -> &Path {
        &self.file
    }
}

impl Drop for ServerConfig {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Cluster {
    /// SIGKILLs the NATS server (every node's connection drops) and starts
    /// it again on the same port, with the same options and JetStream store,
    /// `outage` later (zero: at once), and waits until it is ready. One
    /// server only: with several, a lost server is `kill_host`.
    pub fn restart_broker(&mut self, outage: Duration) -> Result<(), String> {
        let [server] = self.servers.as_mut_slice() else {
            return Err(format!(
                "a broker restart is of the cluster's one NATS server; this cluster has {}",
                self.servers.len()
            ));
        };
        server.stop();
        self.broker_killed_at_ns = Some(unix_ns());
        // The fault's own length, not a wait for an outcome.
        interrupt::sleep(outage)?;
        server.restart()?;
        self.broker_restarted_at_ns = Some(unix_ns());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_file_asks_for_a_sync_of_every_write_and_goes_with_its_owner() {
        let config = ServerConfig::write().unwrap();
        let text = std::fs::read_to_string(config.path()).unwrap();
        assert!(text.contains("sync_interval: always"), "{text}");
        let dir = config.dir.clone();
        drop(config);
        assert!(!dir.exists());
    }
}
