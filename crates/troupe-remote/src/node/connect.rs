//! The async-nats connection options a `RemoteConfig` asks for: auth, TLS,
//! timeouts, and the event callback that counts slow-consumer drops.

use std::sync::Arc;

use async_nats::{ConnectOptions, Event};

use crate::config::{Auth, RemoteConfig};
use crate::dead_letters::{DeadLetterReason, DeadLetters};
use crate::error::RemoteError;

pub(super) async fn connect_options(
    config: &RemoteConfig,
    dead_letters: Arc<DeadLetters>,
) -> Result<ConnectOptions, RemoteError> {
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
    let mut options = options
        .name(format!("troupe-{}", config.node_name))
        .connection_timeout(config.connect_timeout)
        .require_tls(config.tls.required)
        .event_callback(move |event| {
            let dead_letters = dead_letters.clone();
            async move {
                match event {
                    // One event per message the client dropped.
                    Event::SlowConsumer(sid) => dead_letters.record(
                        DeadLetterReason::SlowConsumer,
                        &format!("subscription {sid}"),
                    ),
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
