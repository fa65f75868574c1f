//! The blocking baseline: a fixed pool of threads on `std::net`, each
//! accepting a connection and serving it to the end (keep-alive), as a
//! thread-per-request servlet container does. Same routes, validation,
//! answers and connection timeouts as the async servers.
//!
//! The timeouts are the async servers' ([`Timeouts`]), kept with the
//! socket's own read and write timeouts, re-set before every read to what is
//! left of the phase: a first head must be complete within `header_read` of
//! the accept; between requests a connection may sit `idle`; once a next
//! head's first byte is in, the rest has `header_read`. A write that makes
//! no progress for `idle` (a client that stops reading) ends the connection
//! too. Each cut-off is counted in the metrics, as the async servers do.
//!
//! A request body is read (and dropped: no route takes one) up to
//! [`MAX_BODY`] bytes, so that the connection stays in step for the next
//! request; a larger one gets 413, a body in a transfer coding (chunked)
//! or a malformed `Content-Length` gets 400, and the connection is closed.
//!
//! Stopping: the listener is woken and closed, every open connection's read
//! side is shut (an idle one ends at once; one computing an answer sends it
//! with `Connection: close` and then ends), and [`BlockingServer::join`]
//! waits for the threads.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::metrics::{Cutoff, Metrics};
use crate::route::{route, HttpError, Route};
use crate::sieve::{render_json, PrimeCache};
use crate::timeouts::Timeouts;

/// Largest request head accepted; a larger one gets 431.
const MAX_HEAD: usize = 8 * 1024;
/// Largest request body read (and dropped); a larger one gets 413.
pub const MAX_BODY: usize = 8 * 1024;

struct Shared {
    cache: PrimeCache,
    metrics: Metrics,
    max_n: usize,
    timeouts: Timeouts,
    stopping: AtomicBool,
    /// The open connections (a clone of each socket), so that stopping can
    /// shut their read sides.
    open: Mutex<OpenConnections>,
}

#[derive(Default)]
struct OpenConnections {
    next_id: u64,
    streams: HashMap<u64, TcpStream>,
}

impl Shared {
    fn open(&self) -> MutexGuard<'_, OpenConnections> {
        // Nothing panics while holding the lock; recover the data anyway.
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A running blocking server.
pub struct BlockingServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl BlockingServer {
    /// Starts `threads` threads accepting on `listener`, serving n up to
    /// `max_n` with the connection `timeouts`.
    pub fn start(
        listener: TcpListener,
        threads: usize,
        max_n: usize,
        timeouts: Timeouts,
    ) -> io::Result<Self> {
        let addr = listener.local_addr()?;
        let listener = Arc::new(listener);
        let shared = Arc::new(Shared {
            cache: PrimeCache::new(),
            metrics: Metrics::default(),
            max_n,
            timeouts: timeouts.at_least_a_millisecond(),
            stopping: AtomicBool::new(false),
            open: Mutex::default(),
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

    /// Its request counters.
    pub fn metrics(&self) -> &Metrics {
        &self.shared.metrics
    }

    /// Begins stopping (see the module docs); [`Self::join`] waits for the
    /// end. Idempotent.
    pub fn begin_stop(&self) {
        {
            let open = self.shared.open();
            // Under the lock: a connection registering after this sweep
            // sees the flag (see `Registration::new`).
            if self.shared.stopping.swap(true, Ordering::SeqCst) {
                return;
            }
            for stream in open.streams.values() {
                // Already closed by the client: nothing to wake.
                let _ = stream.shutdown(Shutdown::Read);
            }
        }
        // Each thread blocks in `accept`: one connection per thread wakes
        // it (a thread that is serving takes one when it comes back).
        let mut wake = self.addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
        }
        for _ in 0..self.threads.len() {
            let _ = TcpStream::connect(wake);
        }
    }

    /// Whether every thread has returned.
    pub fn is_finished(&self) -> bool {
        self.threads.iter().all(JoinHandle::is_finished)
    }

    /// Waits for every thread to return (after [`Self::begin_stop`]).
    pub fn join(self) -> io::Result<()> {
        let mut panicked = 0;
        for t in self.threads {
            panicked += usize::from(t.join().is_err());
        }
        match panicked {
            0 => Ok(()),
            n => Err(io::Error::other(format!("{n} server threads panicked"))),
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

/// A connection's entry in [`Shared::open`], removed when dropped.
struct Registration<'a> {
    shared: &'a Shared,
    id: u64,
}

impl<'a> Registration<'a> {
    /// Registers `stream`; `None` if the server is stopping already.
    fn new(stream: &TcpStream, shared: &'a Shared) -> io::Result<Option<Self>> {
        let clone = stream.try_clone()?;
        let mut open = shared.open();
        if shared.stopping.load(Ordering::SeqCst) {
            return Ok(None);
        }
        let id = open.next_id;
        open.next_id += 1;
        open.streams.insert(id, clone);
        Ok(Some(Registration { shared, id }))
    }
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.shared.open().streams.remove(&self.id);
    }
}

/// Why reading a request stopped short of a complete one.
enum Cut {
    /// The client closed the connection (between requests, or mid-head).
    Closed,
    /// A phase ran out of time.
    TimedOut(Cutoff),
    /// The head is larger than [`MAX_HEAD`].
    TooLarge,
    Io(io::Error),
}

impl From<io::Error> for Cut {
    fn from(e: io::Error) -> Self {
        Cut::Io(e)
    }
}

/// The clock of the request being read: its deadline and what running out
/// of it is counted as.
struct Clock {
    deadline: Instant,
    cutoff: Cutoff,
}

fn serve_connection(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    let accepted = Instant::now();
    let timeouts = shared.timeouts;
    stream.set_nodelay(true)?;
    // A write that makes no progress for this long: the client stopped
    // reading its answer.
    stream.set_write_timeout(Some(timeouts.idle))?;
    let Some(_registration) = Registration::new(&stream, shared)? else {
        return Ok(());
    };
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    // The first head's clock starts at the accept.
    let mut clock = Clock {
        deadline: accepted + timeouts.header_read,
        cutoff: Cutoff::HeaderRead,
    };
    loop {
        let head = match read_head(&mut reader, &mut clock, timeouts.header_read) {
            Ok(head) => head,
            Err(Cut::Closed) => return Ok(()),
            Err(Cut::TimedOut(cutoff)) => {
                shared.metrics.record_cutoff(cutoff);
                return Ok(());
            }
            Err(Cut::TooLarge) => {
                let err = HttpError {
                    status: 431,
                    message: "request head too large".into(),
                };
                return refuse(&mut writer, shared, &err);
            }
            Err(Cut::Io(e)) => return Err(e),
        };
        let started = Instant::now();
        let Ok(head) = std::str::from_utf8(&head) else {
            let err = HttpError {
                status: 400,
                message: "request head is not UTF-8".into(),
            };
            return refuse(&mut writer, shared, &err);
        };
        let request = Head::parse(head);
        match request.body_length() {
            Ok(0) => {}
            Ok(length) => match skip_body(&mut reader, length, &clock) {
                Ok(()) => {}
                Err(Cut::TimedOut(cutoff)) => {
                    shared.metrics.record_cutoff(cutoff);
                    return Ok(());
                }
                Err(Cut::Io(e)) => return Err(e),
                Err(Cut::Closed | Cut::TooLarge) => return Ok(()),
            },
            Err(err) => return refuse(&mut writer, shared, &err),
        }
        let (status, ctype, body) = match route(request.method, request.path, shared.max_n) {
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
        let close = request.close || shared.stopping.load(Ordering::SeqCst);
        if let Err(e) = write_answer(&mut writer, status, ctype, &body, close) {
            if is_timeout(&e) {
                shared.metrics.record_cutoff(Cutoff::Idle);
                return Ok(());
            }
            return Err(e);
        }
        if close {
            return Ok(());
        }
        // Between requests: the idle clock, until a next head begins.
        clock = Clock {
            deadline: Instant::now() + timeouts.idle,
            cutoff: Cutoff::Idle,
        };
    }
}

/// Answers `err` with `Connection: close` and ends the connection: what
/// follows on it cannot be trusted to start a request.
fn refuse(writer: &mut TcpStream, shared: &Shared, err: &HttpError) -> io::Result<()> {
    shared.metrics.record(err.status, Duration::ZERO);
    write_answer(writer, err.status, "application/json", &err.body(), true)
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Fills the reader's buffer if it is empty, waiting no later than the
/// clock's deadline; an empty result is the end of the stream.
fn fill<'r>(reader: &'r mut BufReader<TcpStream>, clock: &Clock) -> Result<&'r [u8], Cut> {
    if reader.buffer().is_empty() {
        let left = clock.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Cut::TimedOut(clock.cutoff));
        }
        reader.get_ref().set_read_timeout(Some(left))?;
    }
    match reader.fill_buf() {
        Ok(buf) => Ok(buf),
        Err(e) if is_timeout(&e) => Err(Cut::TimedOut(clock.cutoff)),
        Err(e) => Err(Cut::Io(e)),
    }
}

/// Reads one request head, up to and including its blank line. Empty
/// lines before a head are skipped (RFC 9112, 2.2). The first byte of a
/// head that arrives on the idle clock starts the header-read clock.
fn read_head(
    reader: &mut BufReader<TcpStream>,
    clock: &mut Clock,
    header_read: Duration,
) -> Result<Vec<u8>, Cut> {
    let mut head = Vec::new();
    loop {
        let buf = fill(reader, clock)?;
        if buf.is_empty() {
            return Err(Cut::Closed);
        }
        if clock.cutoff == Cutoff::Idle {
            *clock = Clock {
                deadline: Instant::now() + header_read,
                cutoff: Cutoff::HeaderRead,
            };
        }
        let (take, line_end) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        head.extend_from_slice(&buf[..take]);
        reader.consume(take);
        if head.len() > MAX_HEAD {
            return Err(Cut::TooLarge);
        }
        if !line_end {
            continue;
        }
        if head == b"\r\n" || head == b"\n" {
            head.clear();
        } else if head.ends_with(b"\r\n\r\n") || head.ends_with(b"\n\n") {
            return Ok(head);
        }
    }
}

/// Reads and drops `length` bytes of body, on the head's clock.
fn skip_body(reader: &mut BufReader<TcpStream>, length: usize, clock: &Clock) -> Result<(), Cut> {
    let mut left = length;
    while left > 0 {
        let buf = fill(reader, clock)?;
        if buf.is_empty() {
            return Err(Cut::Closed);
        }
        let take = buf.len().min(left);
        reader.consume(take);
        left -= take;
    }
    Ok(())
}

/// What this server needs from a request head.
struct Head<'h> {
    method: &'h str,
    path: &'h str,
    close: bool,
    content_length: Vec<&'h str>,
    transfer_encoding: bool,
}

impl<'h> Head<'h> {
    fn parse(head: &'h str) -> Self {
        let mut lines = head.lines();
        let mut parts = lines.next().unwrap_or("").split_whitespace();
        let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let mut parsed = Head {
            method,
            path,
            close: false,
            content_length: Vec::new(),
            transfer_encoding: false,
        };
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let (name, value) = (name.trim(), value.trim());
            if name.eq_ignore_ascii_case("connection") {
                parsed.close |= value
                    .split(',')
                    .any(|v| v.trim().eq_ignore_ascii_case("close"));
            } else if name.eq_ignore_ascii_case("content-length") {
                parsed.content_length.push(value);
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                parsed.transfer_encoding = true;
            }
        }
        parsed
    }

    /// The body's length, or the refusal of a body this server does not
    /// take (it cannot tell where such a body ends, or will not read it).
    fn body_length(&self) -> Result<usize, HttpError> {
        let refuse = |status, message: &str| HttpError {
            status,
            message: message.into(),
        };
        if self.transfer_encoding {
            return Err(refuse(
                400,
                "request bodies in a transfer coding are not accepted",
            ));
        }
        let mut length = None;
        for value in &self.content_length {
            // Digits only: `parse` would take a sign.
            let parsed = (!value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()))
                .then(|| value.parse::<usize>().ok())
                .flatten();
            match (parsed, length) {
                (None, _) => return Err(refuse(400, "malformed Content-Length")),
                (Some(n), Some(m)) if n != m => {
                    return Err(refuse(400, "conflicting Content-Length headers"))
                }
                (Some(n), _) => length = Some(n),
            }
        }
        match length.unwrap_or(0) {
            n if n > MAX_BODY => Err(refuse(413, "request body too large")),
            n => Ok(n),
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Content Too Large",
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
