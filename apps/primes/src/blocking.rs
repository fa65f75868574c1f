//! The blocking baseline: a fixed pool of threads on `std::net`, each
//! accepting a connection and serving it to the end (keep-alive), as a
//! thread-per-request servlet container does. Same routes, validation and
//! answers as the async servers.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::metrics::Metrics;
use crate::route::{route, HttpError, Route};
use crate::sieve::{render_json, PrimeCache};

/// Largest request head accepted; a larger one gets 431.
const MAX_HEAD: usize = 8 * 1024;
/// An idle keep-alive connection is closed after this long.
const IDLE_TIMEOUT: Duration = Duration::from_secs(5);

struct Shared {
    cache: PrimeCache,
    metrics: Metrics,
    max_n: usize,
    stopping: AtomicBool,
}

/// A running blocking server.
pub struct BlockingServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl BlockingServer {
    /// Starts `threads` threads accepting on `listener`.
    pub fn start(listener: TcpListener, threads: usize, max_n: usize) -> io::Result<Self> {
        let addr = listener.local_addr()?;
        let listener = Arc::new(listener);
        let shared = Arc::new(Shared {
            cache: PrimeCache::new(),
            metrics: Metrics::default(),
            max_n,
            stopping: AtomicBool::new(false),
        });
        let mut handles = Vec::with_capacity(threads);
        for i in 0..threads.max(1) {
            let (listener, shared) = (listener.clone(), shared.clone());
            handles.push(
                thread::Builder::new()
                    .name(format!("blocking-{i}"))
                    .stack_size(256 * 1024)
                    .spawn(move || accept_loop(&listener, &shared))?,
            );
        }
        Ok(BlockingServer {
            addr,
            shared,
            threads: handles,
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, lets connections in progress finish, and joins the
    /// threads.
    pub fn stop(self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        // Each thread blocks in `accept`: one connection per thread wakes it.
        for _ in 0..self.threads.len() {
            let _ = TcpStream::connect(self.addr);
        }
        for t in self.threads {
            let _ = t.join();
        }
    }
}

fn accept_loop(listener: &TcpListener, shared: &Shared) {
    while let Ok((stream, _)) = listener.accept() {
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        // A broken connection is the client's problem, not the server's.
        let _ = serve_connection(stream, shared);
    }
}

fn serve_connection(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    stream.set_read_timeout(Some(IDLE_TIMEOUT))?;
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    loop {
        let head = match read_head(&mut reader) {
            Ok(Some(head)) => head,
            Ok(None) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                let err = HttpError {
                    status: 431,
                    message: "request head too large".into(),
                };
                write_answer(
                    &mut writer,
                    err.status,
                    "application/json",
                    &err.body(),
                    true,
                )?;
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        let started = Instant::now();
        let mut parts = head.lines().next().unwrap_or("").split_whitespace();
        let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let close = head.lines().any(|l| {
            l.to_ascii_lowercase().starts_with("connection:")
                && l.to_ascii_lowercase().contains("close")
        });
        let (status, ctype, body) = match route(method, path, shared.max_n) {
            Err(e) => (e.status, "application/json", e.body()),
            Ok(Route::Health) => (200, "application/json", r#"{"status":"ok"}"#.to_string()),
            Ok(Route::Metrics) => (200, "text/plain; version=0.0.4", shared.metrics.render()),
            Ok(Route::Primes(n)) => (
                200,
                "application/json",
                render_json(&shared.cache.first(n)[..n]),
            ),
        };
        shared.metrics.record(status, started.elapsed());
        write_answer(&mut writer, status, ctype, &body, close)?;
        if close {
            return Ok(());
        }
    }
}

/// Reads one request head (up to the blank line); `None` at a clean EOF.
fn read_head(reader: &mut BufReader<TcpStream>) -> io::Result<Option<String>> {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        let n = reader.read_line(&mut line)?;
        if n == 0 {
            return Ok(if head.is_empty() { None } else { Some(head) });
        }
        if head.len() + line.len() > MAX_HEAD {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "head too large"));
        }
        if line == "\r\n" || line == "\n" {
            if head.is_empty() {
                continue;
            }
            return Ok(Some(head));
        }
        head.push_str(&line);
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        414 => "URI Too Long",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        _ => "Error",
    }
}

fn write_answer(
    out: &mut TcpStream,
    status: u16,
    content_type: &str,
    body: &str,
    close: bool,
) -> io::Result<()> {
    let connection = if close { "close" } else { "keep-alive" };
    let response = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: {connection}\r\n\r\n{body}",
        reason(status),
        body.len()
    );
    out.write_all(response.as_bytes())
}
