//! The async-nats connection options a `RemoteConfig` asks for: auth, TLS,
//! timeouts, how soon a lost connection is tried again, and the event
//! callback that counts slow-consumer drops and learns the server's limit
//! again after a reconnect.

use std::sync::Arc;
use std::time::Duration;

use async_nats::{ConnectOptions, Event};

use super::limits::FrameLimit;
use crate::config::{Auth, RemoteConfig};
use crate::dead_letters::{DeadLetterReason, DeadLetters};
use crate::error::RemoteError;

pub(super) async fn connect_options(
    config: &RemoteConfig,
    dead_letters: Arc<DeadLetters>,
    limit: Arc<FrameLimit>,
) -> Result<ConnectOptions, RemoteError> {
    let node = config.node_name.clone();
    let options = match &config.auth {
        Auth::None => ConnectOptions::new(),
        Auth::UserPassword { user, password } => {
            ConnectOptions::with_user_and_password(user.clone(), password.clone())
        }
        Auth::Token(token) => ConnectOptions::with_token(token.clone()),
        Auth::NKey(seed) => ConnectOptions::with_nkey(seed.clone()),
        Auth::CredentialsFile(path) => ConnectOptions::with_credentials_file(path)
            .await
            .map_err(|e| RemoteError::Connect(e.to_string()))?,
    };
    let longest = longest_reconnect_delay(config.heartbeat_timeout);
    let mut options = options
        .name(format!("troupe-{}", config.node_name))
        .connection_timeout(config.connect_timeout)
        .reconnect_delay_callback(move |attempts| reconnect_delay(attempts, longest))
        .require_tls(config.tls.required)
        .event_callback(move |event| {
            let dead_letters = dead_letters.clone();
            let (limit, node) = (limit.clone(), node.clone());
            async move {
                match event {
                    // One event per message the client dropped.
                    Event::SlowConsumer(sid) => dead_letters.record(
                        DeadLetterReason::SlowConsumer,
                        &format!("subscription {sid}"),
                    ),
                    // The new server's max_payload, learned now even if
                    // the writer has nothing to send (it checks too: the
                    // client drops events when they come too fast).
                    Event::Connected => {
                        tracing::info!(event = %Event::Connected, "NATS connection event");
                        tokio::spawn(async move { limit.refresh(&node).await });
                    }
                    other => tracing::info!(event = %other, "NATS connection event"),
                }
            }
        });
    if let Some(roots) = &config.tls.root_certificates {
        options = options.add_root_certificates(roots.clone());
    }
    if let Some((cert, key)) = &config.tls.client_certificate {
        options = options.add_client_certificate(cert.clone(), key.clone());
    }
    Ok(options)
}

/// The longest wait between two attempts to reconnect: a quarter of the
/// heartbeat timeout (async-nats's own is 4 s). After a server restart
/// every node reconnects on its own schedule, and one back more than a
/// heartbeat timeout after the others is declared down by them for good
/// (they hear themselves again, not it: `membership.rs`). Trying at least
/// this often keeps every node back within a fraction of the timeout.
fn longest_reconnect_delay(heartbeat_timeout: Duration) -> Duration {
    (heartbeat_timeout / 4).max(Duration::from_millis(10))
}

/// The wait before reconnect attempt `attempts`: async-nats's schedule (at
/// once twice, then 2, 4, 8, ... ms), up to `longest`.
fn reconnect_delay(attempts: usize, longest: Duration) -> Duration {
    if attempts <= 1 {
        return Duration::ZERO;
    }
    let exponent = u32::try_from(attempts - 1).unwrap_or(u32::MAX).min(63);
    Duration::from_millis(1u64 << exponent).min(longest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconnects_back_off_to_a_quarter_of_the_heartbeat_timeout() {
        let longest = longest_reconnect_delay(Duration::from_secs(1));
        assert_eq!(longest, Duration::from_millis(250));
        let ms = |n| Duration::from_millis(n);
        let waits: Vec<Duration> = (0..12).map(|a| reconnect_delay(a, longest)).collect();
        assert_eq!(
            waits,
            [0, 0, 2, 4, 8, 16, 32, 64, 128, 250, 250, 250].map(ms)
        );
        assert_eq!(reconnect_delay(usize::MAX, longest), longest);
        assert_eq!(longest_reconnect_delay(Duration::ZERO), ms(10));
    }
}
