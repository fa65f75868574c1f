//! Header-read and idle timeouts for the async servers' connections.
//!
//! hyper can time a request head itself (`header_read_timeout`), but its
//! clock starts as soon as it waits for a head, so on a keep-alive connection
//! the quiet time before the next request counts against it: one timer cannot
//! both cut a slowloris head after 10 s and let a keep-alive connection sit
//! unused for a minute. So the timing is done here, in `TimedIo`, a wrapper
//! around the socket that sees every read and write and is told by the
//! service when hyper hands it a parsed request. A connection is always in
//! one of three phases:
//!
//! - **head**: from the accept, or from the first byte of a next request, a
//!   complete head must arrive within [`Timeouts::header_read`];
//! - **busy**: a request is in the handler; no limit here, the handler has
//!   its own (`REQUEST_TIMEOUT`);
//! - **idle**: the response is going or has gone out and no next request has
//!   begun; the connection is closed after [`Timeouts::idle`] without
//!   progress, which also covers a client that stops reading its response.
//!
//! A connection cut off is counted in the service's metrics
//! (`primes_connections_timed_out_total`).
//!
//! The deadline is checked when a read or write would block, and after a
//! write (which is what sets the timer for a client that then goes quiet).
//! The one timer of a connection is re-armed lazily: it may fire early, and
//! is then set again, but never fires late. So a request costs two clock
//! reads, a poll of the timer and no timer operation (moving a tokio timer
//! to an earlier deadline takes the timer driver's lock).

use std::future::Future;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};

use crate::metrics::Cutoff;
use crate::service::Service;

/// How long a client may take to send a request head, counted from the
/// accept or from the head's first byte. Ample for any real client on any
/// link (a head is a few hundred bytes); a slowloris client holds a
/// connection no longer than this.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a keep-alive connection may sit without a request (or a
/// response without being read) before it is closed: long enough for a
/// client that pauses between bursts to keep its connection, short enough
/// that abandoned connections do not pile up.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// A zero timeout would make the lazy re-arming spin; this is the floor.
const MIN_TIMEOUT: Duration = Duration::from_millis(1);

/// The connection timeouts of the async servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Allowance for a complete request head (see the module docs).
    pub header_read: Duration,
    /// Allowance for a connection with no request in progress.
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            header_read: DEFAULT_HEADER_READ_TIMEOUT,
            idle: DEFAULT_IDLE_TIMEOUT,
        }
    }
}

/// Where a connection is (see the module docs).
#[derive(Debug, Clone, Copy)]
enum Phase {
    Head {
        since: Instant,
    },
    /// `pipelined`: bytes of a next request arrived meanwhile.
    Busy {
        pipelined: bool,
    },
    Idle {
        since: Instant,
    },
}

/// A socket that fails its pending read or write with `TimedOut` once the
/// connection's phase has lasted too long; hyper then drops the connection.
pub(crate) struct TimedIo {
    stream: TcpStream,
    timeouts: Timeouts,
    phase: Phase,
    /// Set by the service when hyper hands it a request, so the head is
    /// complete; taken (cleared) here. Same task, so `Relaxed` suffices.
    request_started: Arc<AtomicBool>,
    /// A write would have blocked since the last one that made progress.
    write_blocked: bool,
    /// Armed at or before the current phase's deadline, never after it.
    timer: Pin<Box<Sleep>>,
    /// Where cut-offs are counted.
    service: Arc<Service>,
    /// Set once a timeout has struck: the connection is done for, and is
    /// counted once.
    cut_off: Option<Cutoff>,
}

impl TimedIo {
    /// Wraps a just-accepted `stream`: the first head's clock starts now.
    pub(crate) fn new(
        stream: TcpStream,
        timeouts: Timeouts,
        request_started: Arc<AtomicBool>,
        service: Arc<Service>,
    ) -> Self {
        let timeouts = Timeouts {
            header_read: timeouts.header_read.max(MIN_TIMEOUT),
            idle: timeouts.idle.max(MIN_TIMEOUT),
        };
        let now = Instant::now();
        TimedIo {
            stream,
            timeouts,
            phase: Phase::Head { since: now },
            request_started,
            write_blocked: false,
            timer: Box::pin(tokio::time::sleep_until(now + timeouts.header_read)),
            service,
            cut_off: None,
        }
    }

    /// Takes in the service's news that a head was complete.
    fn sync(&mut self) {
        if self.request_started.load(Ordering::Relaxed) {
            self.request_started.store(false, Ordering::Relaxed);
            self.phase = Phase::Busy { pipelined: false };
        }
    }

    fn after_read(&mut self, bytes: usize) {
        if bytes == 0 {
            return;
        }
        match &mut self.phase {
            Phase::Idle { .. } => {
                self.phase = Phase::Head {
                    since: Instant::now(),
                }
            }
            Phase::Busy { pipelined } => *pipelined = true,
            Phase::Head { .. } => {}
        }
    }

    /// hyper writes only once the handler is done (or to refuse a bad
    /// head), so the first write attempt ends the busy phase, whether or not
    /// the socket takes the bytes.
    fn before_write(&mut self) {
        self.sync();
        if let Phase::Busy { pipelined } = self.phase {
            let since = Instant::now();
            // Part of a next head may already be here: its clock runs.
            self.phase = if pipelined {
                Phase::Head { since }
            } else {
                Phase::Idle { since }
            };
            self.write_blocked = false;
        }
    }

    /// A write that follows a blocked one restarts the phase's clock: the
    /// client is reading, slowly, and that is progress.
    fn after_write(&mut self, bytes: usize) {
        if bytes == 0 || !self.write_blocked {
            return;
        }
        self.write_blocked = false;
        match &mut self.phase {
            Phase::Head { since } | Phase::Idle { since } => *since = Instant::now(),
            Phase::Busy { .. } => {}
        }
    }

    /// Whether the current phase has run out; if not, the task is woken by
    /// its deadline at the latest.
    fn expired(&mut self, cx: &mut Context<'_>) -> Option<io::Error> {
        if let Some(cutoff) = self.cut_off {
            return Some(cutoff_error(cutoff));
        }
        let (deadline, cutoff) = match self.phase {
            Phase::Busy { .. } => return None,
            Phase::Head { since } => (since + self.timeouts.header_read, Cutoff::HeaderRead),
            Phase::Idle { since } => (since + self.timeouts.idle, Cutoff::Idle),
        };
        if self.timer.deadline() > deadline {
            self.timer.as_mut().reset(deadline);
        }
        while self.timer.as_mut().poll(cx).is_ready() {
            if self.timer.deadline() >= deadline {
                self.cut_off = Some(cutoff);
                self.service.metrics.record_cutoff(cutoff);
                return Some(cutoff_error(cutoff));
            }
            // Fired early (armed for an earlier phase): set it again, but no
            // further ahead than one head's allowance, so that the next head
            // (usually soon) finds it early enough already.
            let next = deadline.min(Instant::now() + self.timeouts.header_read);
            self.timer.as_mut().reset(next);
        }
        None
    }
}

fn cutoff_error(cutoff: Cutoff) -> io::Error {
    let what = match cutoff {
        Cutoff::HeaderRead => "header read timeout",
        Cutoff::Idle => "idle timeout",
    };
    io::Error::new(io::ErrorKind::TimedOut, what)
}

impl AsyncRead for TimedIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.sync();
        let before = buf.filled().len();
        match Pin::new(&mut this.stream).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                this.after_read(buf.filled().len() - before);
                Poll::Ready(Ok(()))
            }
            Poll::Pending => match this.expired(cx) {
                Some(e) => Poll::Ready(Err(e)),
                None => Poll::Pending,
            },
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
        }
    }
}

impl TimedIo {
    fn finish_write(
        &mut self,
        cx: &mut Context<'_>,
        r: Poll<io::Result<usize>>,
    ) -> Poll<io::Result<usize>> {
        match r {
            Poll::Ready(Ok(n)) => {
                self.after_write(n);
                // hyper may not read again until the socket wakes it, and an
                // idle client never will: the timer must be set to wake it
                // now. Already run out (a head phase kept through the
                // write): wake at once so the read reports it.
                if self.expired(cx).is_some() {
                    cx.waker().wake_by_ref();
                }
                Poll::Ready(Ok(n))
            }
            Poll::Pending => {
                self.write_blocked = true;
                match self.expired(cx) {
                    Some(e) => Poll::Ready(Err(e)),
                    None => Poll::Pending,
                }
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
        }
    }
}

impl AsyncWrite for TimedIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.before_write();
        let r = Pin::new(&mut this.stream).poll_write(cx, buf);
        this.finish_write(cx, r)
    }

    // hyper sends head and body in one vectored write when the socket
    // supports it, as a TcpStream does.
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.before_write();
        let r = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        this.finish_write(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}
