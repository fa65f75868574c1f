//! The HTTP load generator: opens C keep-alive connections concurrently for
//! real, sends R requests spread over them, and times each from send (or,
//! open loop, from its intended start) to the last byte of its body.
//!
//! Every response is counted: a non-2xx status, a body that is not the
//! expected JSON, and a connection error are all errors, reported, never
//! dropped, and never timed (a quick refusal is not a fast answer). Bodies
//! are framed by `Content-Length` or chunked transfer encoding. Closed loop: each connection sends its next request when the
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
    /// Latencies of the correctly answered requests, in microseconds.
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
                if (200..300).contains(&status) && body == *round.expected {
                    let _ = part
                        .latency_us
                        .record((sent.elapsed().as_micros() as u64).max(1));
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

/// Sends one request and reads the whole response: status and body. The
/// body is framed by `Content-Length` or by chunked transfer encoding
/// (the two framings an HTTP/1.1 server answers a GET with on a keep-alive
/// connection).
async fn exchange(
    conn: &mut BufReader<TcpStream>,
    request: &[u8],
) -> std::io::Result<(u16, String)> {
    conn.get_mut().write_all(request).await?;
    let mut line = String::new();
    read_line(conn, &mut line).await?;
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or(std::io::ErrorKind::InvalidData)?;
    let mut length = 0usize;
    let mut chunked = false;
    loop {
        read_line(conn, &mut line).await?;
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
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                // Chunked is always the last coding when present.
                chunked = value
                    .rsplit(',')
                    .next()
                    .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"));
            }
        }
    }
    // Transfer-Encoding overrides Content-Length (RFC 9112, 6.3).
    let body = if chunked {
        read_chunked(conn, &mut line).await?
    } else {
        let mut body = vec![0; length];
        conn.read_exact(&mut body).await?;
        body
    };
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

/// Reads one line into `line` (cleared first); end of stream is an error.
async fn read_line(conn: &mut BufReader<TcpStream>, line: &mut String) -> std::io::Result<()> {
    line.clear();
    if conn.read_line(line).await? == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    Ok(())
}

/// Reads a chunked body: chunks of `<hex size>[;extensions]` then the
/// data and CRLF, up to the zero-size chunk, then trailer lines up to an
/// empty one (discarded).
async fn read_chunked(
    conn: &mut BufReader<TcpStream>,
    line: &mut String,
) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        read_line(conn, line).await?;
        let size = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size, 16).map_err(|_| std::io::ErrorKind::InvalidData)?;
        if size == 0 {
            break;
        }
        let start = body.len();
        body.resize(start + size, 0);
        conn.read_exact(&mut body[start..]).await?;
        let mut crlf = [0u8; 2];
        conn.read_exact(&mut crlf).await?;
        if crlf != *b"\r\n" {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
    }
    loop {
        read_line(conn, line).await?;
        if line.trim_end().is_empty() {
            return Ok(body);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    /// A server that answers every request on a keep-alive connection with
    /// `body` in chunked encoding: split in two chunks (one with a chunk
    /// extension), then the last chunk and a trailer.
    async fn chunked_server(body: &'static str) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut conn = BufReader::new(stream);
                    let mut line = String::new();
                    loop {
                        // Read one head.
                        loop {
                            line.clear();
                            if conn.read_line(&mut line).await.unwrap_or(0) == 0 {
                                return;
                            }
                            if line == "\r\n" {
                                break;
                            }
                        }
                        let (a, b) = body.split_at(body.len() / 2);
                        let answer = format!(
                            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
                             {:x};note=1\r\n{a}\r\n{:X}\r\n{b}\r\n0\r\nX-Trailer: t\r\n\r\n",
                            a.len(),
                            b.len()
                        );
                        if conn.get_mut().write_all(answer.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        addr
    }

    #[tokio::test]
    async fn chunked_answers_are_read_and_checked() {
        const BODY: &str = "[2,3,5,7,11,13,17,19,23,29,31,37,41,43,47,53,59]";
        let round = Round {
            addr: chunked_server(BODY).await,
            connections: 2,
            requests: 20,
            path: "/primes/17".into(),
            expected: Arc::new(BODY.to_string()),
            rate: None,
        };
        let result = run_round(&round).await;
        assert_eq!((result.ok, result.errors), (20, 0));
        // A wrong body in chunks is still caught.
        let wrong = Round {
            expected: Arc::new("[2]".into()),
            ..round
        };
        let result = run_round(&wrong).await;
        assert_eq!((result.ok, result.errors), (0, 20));
    }
}
