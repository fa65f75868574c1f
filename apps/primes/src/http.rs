//! The async servers (actor-backed and plain): an axum router on hyper
//! HTTP/1 connections on tokio, every request handled by one fallback that
//! calls `Service::handle`, so routing and validation are the crate's own
//! (see `route.rs`).
//!
//! The accept loop is ours rather than `axum::serve`'s, which sets neither a
//! header-read nor an idle timeout (a slowloris client or an abandoned
//! keep-alive connection was held forever) nor `TCP_NODELAY`: each accepted
//! socket gets `TCP_NODELAY` and the timeouts of `timeouts.rs`, and shutdown
//! drains the connections through `drain.rs`. Each connection is hyper's
//! `http1::Connection`, without hyper-util's version-sniffing builder that
//! `axum::serve` uses: that costs about 5 KiB more per open connection
//! (170 against 120 MiB with 10,000 keep-alive connections) and was no
//! faster in the benchmark.

use std::convert::Infallible;
use std::future::{poll_fn, Future};
use std::io;
use std::net::TcpListener as StdListener;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, Method, Request, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::service::{TowerToHyperService, TowerToHyperServiceFuture};

use crate::drain::{Connections, Registration};
use crate::service::{Answer, Service, REQUEST_TIMEOUT};
use crate::timeouts::{TimedIo, Timeouts};

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
fn app(service: Arc<Service>) -> Router {
    Router::new().fallback(fallback).with_state(service)
}

/// Serves on `listener` with the connection `timeouts` until `shutdown`
/// completes, then finishes the requests in flight (graceful shutdown).
/// Must run inside a tokio runtime; started by `server.rs`.
///
/// When `shutdown` completes the listener is closed at once (new
/// connections are refused), idle connections are closed, and each
/// connection with a request in flight answers it (with `connection: close`)
/// and closes; this returns when all have. A connection halfway through its
/// first head keeps the drain waiting for at most the header-read timeout.
pub(crate) async fn serve(
    listener: StdListener,
    service: Arc<Service>,
    shutdown: impl Future<Output = ()> + Send + 'static,
    timeouts: Timeouts,
) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let app = TowerToHyperService::new(app(service.clone()));
    let mut http = http1::Builder::new();
    // The heads are timed by `TimedIo` (see `timeouts.rs` for why not by
    // hyper); without a timer hyper would only log that its default is off.
    http.header_read_timeout(None);
    let connections = Arc::new(Connections::default());
    let mut shutdown = pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            biased;
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            // That connection is gone already; the listener is fine.
            Err(e) if is_connection_error(&e) => continue,
            Err(e) => {
                // Out of file descriptors, most likely: retrying at once
                // would spin until connections close, so pause (and still
                // listen for shutdown). Said on stderr, as the server's other
                // messages are: nothing here installs a tracing subscriber.
                eprintln!("primes: accept failed: {e}");
                tokio::select! {
                    biased;
                    () = &mut shutdown => break,
                    () = tokio::time::sleep(ACCEPT_BACKOFF) => continue,
                }
            }
        };
        // An answer is one small write; Nagle's algorithm would hold the
        // next one back until the client's delayed ACK (pipelining).
        // Failing to set it costs latency, not correctness.
        let _ = stream.set_nodelay(true);
        let started = Arc::new(AtomicBool::new(false));
        let io = TimedIo::new(stream, timeouts, started.clone(), service.clone());
        let io = TokioIo::new(io);
        let service = Tracked {
            app: app.clone(),
            started,
        };
        let conn = http.serve_connection(io, service);
        tokio::spawn(drive(conn, connections.register()));
    }
    // Tell the connections before closing the listener, so that once new
    // connections are refused every connection has been told.
    connections.stop_all();
    drop(listener);
    connections.all_closed().await;
    Ok(())
}

/// How long the accept loop pauses after an error of the listener itself.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Errors of one incoming connection rather than of the listener.
fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::Interrupted
    )
}

/// The router as hyper calls it, telling the connection's [`TimedIo`] that
/// a request head is complete (hyper hands over requests only then).
#[derive(Clone)]
struct Tracked {
    app: TowerToHyperService<Router>,
    started: Arc<AtomicBool>,
}

impl hyper::service::Service<Request<Incoming>> for Tracked {
    type Response = Response;
    type Error = Infallible;
    type Future = TowerToHyperServiceFuture<Router, Request<Incoming>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        self.started.store(true, Ordering::Relaxed);
        hyper::service::Service::call(&self.app, request)
    }
}

/// Runs one connection until it closes, or, once the server stops, until
/// its request in flight (if any) is answered.
async fn drive(conn: http1::Connection<TokioIo<TimedIo>, Tracked>, mut registration: Registration) {
    let mut conn = pin!(conn);
    let mut stopping = false;
    // Connection errors (timeouts, resets, bad heads) end that connection
    // and concern no one else.
    let _ = poll_fn(|cx| {
        // Before the connection, so that an answer written after the stop
        // says `connection: close`.
        if !stopping && registration.stop_requested(cx) {
            stopping = true;
            conn.as_mut().graceful_shutdown();
        }
        conn.as_mut().poll(cx)
    })
    .await;
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
