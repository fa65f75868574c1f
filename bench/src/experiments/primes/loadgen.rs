//! The HTTP load generator: opens C keep-alive connections concurrently for
//! real, sends R requests spread over them, and times each from send (or,
//! open loop, from its intended start) to the last byte of its body.
//!
//! Every response is counted: a non-2xx status, a body that is not the
//! expected JSON, and a connection error are all errors, reported, never
//! dropped. Closed loop: each connection sends its next request when the
//! previous answer is complete. Open loop (`rate`): request `i` is due at
//! `t0 + i / rate` whether or not earlier ones have been answered, and its
//! latency counts from that due time, so a stall shows up in the latency
//! instead of silently lowering the offered rate (no coordinated omission).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// What one round measured.
#[derive(Debug)]
pub struct RoundResult {
    /// Latencies of the answered requests, in microseconds.
    pub latency_us: Histogram<u64>,
    /// Responses with status 2xx and the expected body.
    pub ok: u64,
    /// Non-2xx responses, wrong bodies, and requests lost to connection errors.
    pub errors: u64,
    /// Connections that could not be opened.
    pub connect_errors: u64,
    /// From the first request to the last answer.
    pub elapsed: Duration,
}

/// One round's settings.
#[derive(Clone, Debug)]
pub struct Round {
    /// Server address.
    pub addr: SocketAddr,
    /// Connections opened at once.
    pub connections: usize,
    /// Requests in all.
    pub requests: u64,
    /// The path requested.
    pub path: String,
    /// The body a correct answer has.
    pub expected: Arc<String>,
    /// Open loop at this many requests per second; closed loop when `None`.
    pub rate: Option<f64>,
}

/// Runs a round on the current tokio runtime.
pub async fn run_round(round: &Round) -> RoundResult {
    let mut connects = tokio::task::JoinSet::new();
    for _ in 0..round.connections {
        let addr = round.addr;
        connects.spawn(async move { TcpStream::connect(addr).await });
    }
    let mut streams = Vec::with_capacity(round.connections);
    let mut connect_errors = 0;
    while let Some(joined) = connects.join_next().await {
        match joined {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                streams.push(stream);
            }
            _ => connect_errors += 1,
        }
    }
    let next = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for stream in streams {
        let (round, next) = (round.clone(), next.clone());
        tasks.spawn(async move { drive_connection(stream, &round, &next, start).await });
    }
    let mut result = RoundResult {
        latency_us: new_histogram(),
        ok: 0,
        errors: 0,
        connect_errors,
        elapsed: Duration::ZERO,
    };
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(part) => {
                let _ = result.latency_us.add(&part.latency_us);
                result.ok += part.ok;
                result.errors += part.errors;
            }
            Err(_) => result.errors += 1,
        }
    }
    result.elapsed = start.elapsed();
    // Requests no connection could take (all failed) are errors too.
    let answered = result.ok + result.errors;
    result.errors += round.requests.saturating_sub(answered);
    result
}

fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 600_000_000, 3).expect("valid bounds")
}

async fn drive_connection(
    stream: TcpStream,
    round: &Round,
    next: &AtomicU64,
    start: Instant,
) -> RoundResult {
    let mut part = RoundResult {
        latency_us: new_histogram(),
        ok: 0,
        errors: 0,
        connect_errors: 0,
        elapsed: Duration::ZERO,
    };
    let request = format!("GET {} HTTP/1.1\r\nHost: loadgen\r\n\r\n", round.path);
    let mut conn = Some(BufReader::new(stream));
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= round.requests {
            break;
        }
        let due = round
            .rate
            .map(|rate| start + Duration::from_secs_f64(i as f64 / rate));
        if let Some(due) = due {
            tokio::time::sleep_until(due.into()).await;
        }
        let sent = due.unwrap_or_else(Instant::now);
        if conn.is_none() {
            // The previous answer broke the connection: open a new one.
            match TcpStream::connect(round.addr).await {
                Ok(s) => conn = Some(BufReader::new(s)),
                Err(_) => {
                    part.errors += 1;
                    continue;
                }
            }
        }
        let c = conn.as_mut().expect("connected");
        match exchange(c, request.as_bytes()).await {
            Ok((status, body)) => {
                let _ = part
                    .latency_us
                    .record((sent.elapsed().as_micros() as u64).max(1));
                if (200..300).contains(&status) && body == *round.expected {
                    part.ok += 1;
                } else {
                    part.errors += 1;
                }
            }
            Err(_) => {
                part.errors += 1;
                conn = None;
            }
        }
    }
    part
}

/// Sends one request and reads the whole response: status and body.
async fn exchange(
    conn: &mut BufReader<TcpStream>,
    request: &[u8],
) -> std::io::Result<(u16, String)> {
    conn.get_mut().write_all(request).await?;
    let mut line = String::new();
    if conn.read_line(&mut line).await? == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or(std::io::ErrorKind::InvalidData)?;
    let mut length = 0usize;
    loop {
        line.clear();
        if conn.read_line(&mut line).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value
                    .trim()
                    .parse()
                    .map_err(|_| std::io::ErrorKind::InvalidData)?;
            }
        }
    }
    let mut body = vec![0; length];
    conn.read_exact(&mut body).await?;
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}
