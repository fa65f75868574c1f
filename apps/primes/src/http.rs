//! The async servers (actor-backed and plain): axum over hyper on tokio,
//! every request handled by one fallback that calls `Service::handle`, so
//! routing and validation are the crate's own (see `route.rs`).

use std::future::Future;
use std::io;
use std::net::TcpListener as StdListener;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;

use crate::service::{Answer, Service, REQUEST_TIMEOUT};

async fn fallback(State(service): State<Arc<Service>>, method: Method, uri: Uri) -> Response {
    // Every request has a deadline, whatever it waits for.
    let answer =
        match tokio::time::timeout(REQUEST_TIMEOUT, service.handle(method.as_str(), uri.path()))
            .await
        {
            Ok(answer) => answer,
            Err(_) => Answer {
                status: 503,
                body: r#"{"error":"the request timed out"}"#.to_string(),
                content_type: "application/json",
            },
        };
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        [(header::CONTENT_TYPE, answer.content_type)],
        answer.body,
    )
        .into_response()
}

/// The axum application for `service`.
pub fn app(service: Arc<Service>) -> Router {
    Router::new().fallback(fallback).with_state(service)
}

/// Serves on `listener` until `shutdown` completes, then finishes the
/// requests in flight (graceful shutdown). Must run inside a tokio runtime.
pub async fn serve(
    listener: StdListener,
    service: Arc<Service>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    axum::serve(listener, app(service))
        .with_graceful_shutdown(shutdown)
        .await
}

/// Completes on SIGINT or SIGTERM.
pub async fn termination_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}
