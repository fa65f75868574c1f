//! The servers over real HTTP, each started by `primes::server`: good
//! requests get the primes, bad input gets a 4xx JSON error while the server
//! keeps serving, a panicking worker makes its request a 500 and is
//! restarted, and all three servers answer the same way, keep a connection
//! in step past a request body, and cut off slow heads and idle connections
//! on the same clocks. Shutdown is graceful: the request in flight is
//! answered, new connections are refused.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

#[path = "support/http_get.rs"]
mod http_get;

use http_get::get;
use primes::faults::{Faults, Gate};
use primes::metrics::Cutoff;
use primes::server::{Config, Kind, Server};
use primes::timeouts::Timeouts;

/// How long anything that should happen at once may take before a test
/// fails (a loaded CI machine can stall for seconds, never for this long).
const PATIENCE: Duration = Duration::from_secs(10);

/// The answer to `/primes/17`, the n the gate tests hold.
const FIRST_17: &str = "[2,3,5,7,11,13,17,19,23,29,31,37,41,43,47,53,59]";

/// Reads one response from a keep-alive connection: status, head (lower
/// case) and body (by Content-Length).
fn read_response(s: &mut TcpStream) -> (u16, String, String) {
    read_next_response(s, &mut Vec::new())
}

/// [`read_response`] for one of several answers on a connection: `carry`
/// holds bytes read past the previous answer and keeps those past this one.
fn read_next_response(s: &mut TcpStream, carry: &mut Vec<u8>) -> (u16, String, String) {
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut raw = std::mem::take(carry);
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = s.read(&mut chunk).expect("a response in time");
        assert!(n > 0, "closed before a full head: {raw:?}");
        raw.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(raw[..head_end].to_vec())
        .unwrap()
        .to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .expect("a Content-Length")
        .trim()
        .parse()
        .unwrap();
    while raw.len() < head_end + length {
        let n = s.read(&mut chunk).expect("the body in time");
        assert!(n > 0, "closed before the full body");
        raw.extend_from_slice(&chunk[..n]);
    }
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = String::from_utf8(raw[head_end..head_end + length].to_vec()).unwrap();
    *carry = raw.split_off(head_end + length);
    (status, head, body)
}

/// Waits until the server closes `s` (end of stream or reset), failing
/// after `PATIENCE`; returns when it saw the close.
fn wait_closed(s: &mut TcpStream) -> Instant {
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut buf = [0u8; 512];
    match s.read(&mut buf) {
        Ok(0) => {}
        Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {}
        Ok(n) => panic!("got {:?}", String::from_utf8_lossy(&buf[..n])),
        Err(e) => panic!("still open after {PATIENCE:?}: {e}"),
    }
    Instant::now()
}

/// Starts a server as configured on a free local port, with two HTTP
/// threads (async kinds) and n up to 1,000 unless `config` says otherwise.
fn start(config: Config) -> Server {
    let config = config.http_threads(Some(2)).dispatcher_threads(2);
    Server::start("127.0.0.1:0".parse().unwrap(), &config).unwrap()
}

/// `kind` with n up to 1,000 and two prime workers or blocking threads.
fn small(kind: Kind) -> Config {
    Config::new(kind).max_n(1000).workers(Some(2))
}

/// Connections `server` closed so far for `cutoff`.
fn cutoffs(server: &Server, cutoff: Cutoff) -> u64 {
    server.metrics().cutoffs(cutoff)
}

fn check_answers(addr: SocketAddr) {
    assert_eq!(
        get(addr, "GET", "/primes/5"),
        (200, "[2,3,5,7,11]".to_string())
    );
    for (method, path, status) in [
        ("GET", "/primes/abc", 400),
        ("GET", "/primes/-1", 400),
        ("GET", "/primes/0", 400),
        ("GET", "/primes/1001", 400),
        ("GET", "/unknown", 404),
        ("POST", "/primes/5", 405),
        ("DELETE", "/health", 405),
    ] {
        let (got, body) = get(addr, method, path);
        assert_eq!(got, status, "{method} {path}");
        let json: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert!(json["error"].is_string(), "{method} {path}: {body}");
    }
    let long = format!("/primes/{}", "7".repeat(400));
    assert_eq!(get(addr, "GET", &long).0, 414);
    assert_eq!(get(addr, "GET", "/health").0, 200);
    // Still serving after all that.
    assert_eq!(get(addr, "GET", "/primes/3"), (200, "[2,3,5]".to_string()));
    let (status, metrics) = get(addr, "GET", "/metrics");
    assert_eq!(status, 200);
    assert!(metrics.contains("primes_requests_total"), "{metrics}");
}

#[test]
fn every_server_answers_and_refuses_bad_input_alike() {
    for kind in Kind::ALL {
        let server = start(small(kind));
        check_answers(server.addr());
        server.stop().unwrap();
    }
}

#[test]
fn a_panicking_worker_gives_a_500_and_is_restarted() {
    let faults = Faults {
        panic_on: Some(13),
        ..Faults::default()
    };
    let server = start(small(Kind::Actor).workers(Some(1)).faults(faults));
    let (status, body) = get(server.addr(), "GET", "/primes/13");
    assert_eq!(status, 500, "{body}");
    // The single worker was restarted: the next request is served.
    assert_eq!(
        get(server.addr(), "GET", "/primes/2"),
        (200, "[2,3]".to_string())
    );
    server.stop().unwrap();
}

/// The kinds whose connection clocks the timeout tests check: one async
/// server (the actor-backed one shares its connection code) and the
/// blocking one, which keeps the same timeouts its own way.
const CLOCKED: [Kind; 2] = [Kind::Plain, Kind::Blocking];

#[test]
fn a_slowloris_head_is_cut_off_after_the_header_read_timeout() {
    let timeouts = Timeouts {
        header_read: Duration::from_millis(200),
        idle: Duration::from_secs(60),
    };
    for kind in CLOCKED {
        let server = start(small(kind).timeouts(timeouts));
        let began = Instant::now();
        // One client stops halfway through its head, one never starts one.
        let mut partial = TcpStream::connect(server.addr()).unwrap();
        partial
            .write_all(b"GET /primes/5 HTTP/1.1\r\nHost: t\r\n")
            .unwrap();
        let mut silent = TcpStream::connect(server.addr()).unwrap();
        for s in [&mut partial, &mut silent] {
            let held = wait_closed(s) - began;
            // Each clock starts at its accept, after `began`.
            assert!(
                held >= timeouts.header_read,
                "{kind:?}: cut off after {held:?}"
            );
        }
        // Counted before the close, so seen by now.
        assert_eq!(cutoffs(&server, Cutoff::HeaderRead), 2, "{kind:?}");
        assert_eq!(cutoffs(&server, Cutoff::Idle), 0, "{kind:?}");
        assert_eq!(
            get(server.addr(), "GET", "/primes/3"),
            (200, "[2,3,5]".into())
        );
        server.stop().unwrap();
    }
}

#[test]
fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    // The head allowance is the shorter: a close before the idle timeout
    // would mean the wrong clock ran while the connection sat unused.
    let timeouts = Timeouts {
        header_read: Duration::from_millis(150),
        idle: Duration::from_millis(600),
    };
    for kind in CLOCKED {
        let server = start(small(kind).timeouts(timeouts));
        let mut s = TcpStream::connect(server.addr()).unwrap();
        let sent = Instant::now();
        s.write_all(b"GET /primes/5 HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        let (status, _, body) = read_response(&mut s);
        assert_eq!((status, body.as_str()), (200, "[2,3,5,7,11]"));
        // The idle clock starts when the server answers, after `sent`.
        let idle = wait_closed(&mut s) - sent;
        assert!(idle >= timeouts.idle, "{kind:?}: closed after {idle:?}");
        assert_eq!(cutoffs(&server, Cutoff::Idle), 1, "{kind:?}");
        assert_eq!(cutoffs(&server, Cutoff::HeaderRead), 0, "{kind:?}");
        server.stop().unwrap();
    }
}

#[test]
fn a_client_that_stops_reading_its_answer_is_cut_off_after_the_idle_timeout() {
    let timeouts = Timeouts {
        header_read: Duration::from_secs(60),
        idle: Duration::from_millis(300),
    };
    for kind in CLOCKED {
        let server = start(small(kind).max_n(100_000).timeouts(timeouts));
        // A small receive window, and answers (about 700 KB each) adding up
        // to several times the largest send buffer Linux gives by default
        // (4 MiB), so that the server's writes stall while the client does
        // not read.
        let socket =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        socket.connect(&server.addr().into()).unwrap();
        let mut s: TcpStream = socket.into();
        const PIPELINED: usize = 32;
        s.write_all(&b"GET /primes/100000 HTTP/1.1\r\nHost: t\r\n\r\n".repeat(PIPELINED))
            .unwrap();
        // The server counts the cut-off before it closes the connection.
        let deadline = Instant::now() + PATIENCE;
        while cutoffs(&server, Cutoff::Idle) == 0 {
            assert!(
                Instant::now() < deadline,
                "{kind:?}: the stalled answer was not cut off"
            );
            std::thread::yield_now();
        }
        // What arrives now is part of the answers, then the end.
        s.set_read_timeout(Some(PATIENCE)).unwrap();
        let mut raw = Vec::new();
        match s.read_to_end(&mut raw) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {}
            Err(e) => panic!("{kind:?}: still open: {e}"),
        }
        let text = String::from_utf8_lossy(&raw);
        let (head, _) = text.split_once("\r\n\r\n").expect("a head");
        let length: usize = head
            .to_ascii_lowercase()
            .lines()
            .find_map(|l| {
                l.strip_prefix("content-length:")
                    .map(|v| v.trim().parse().unwrap())
            })
            .expect("a Content-Length");
        // All the answers would be more than their bodies alone.
        assert!(raw.len() < PIPELINED * length, "{} bytes came", raw.len());
        assert_eq!(cutoffs(&server, Cutoff::HeaderRead), 0, "{kind:?}");
        server.stop().unwrap();
    }
}

/// An actor server whose workers hold `/primes/17` at a gate.
fn gated(timeouts: Timeouts) -> (Server, Arc<Gate>) {
    let gate = Arc::new(Gate::default());
    let faults = Faults {
        hold_on: Some((17, gate.clone())),
        ..Faults::default()
    };
    let config = small(Kind::Actor)
        .workers(Some(1))
        .timeouts(timeouts)
        .faults(faults);
    (start(config), gate)
}

#[test]
fn a_request_in_the_handler_is_not_cut_off_by_the_header_read_timeout() {
    let timeouts = Timeouts {
        header_read: Duration::from_millis(200),
        idle: Duration::from_secs(60),
    };
    let (server, gate) = gated(timeouts);
    let mut held = TcpStream::connect(server.addr()).unwrap();
    held.write_all(b"GET /primes/17 HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert!(gate.wait_arrival(PATIENCE), "the request never got in");
    // The clock: a silent connection opened now is cut off a header
    // allowance later at the earliest, so by then the held request has
    // been in the handler for longer than one.
    let mut silent = TcpStream::connect(server.addr()).unwrap();
    wait_closed(&mut silent);
    gate.open();
    let (status, _, body) = read_response(&mut held);
    assert_eq!((status, body.as_str()), (200, FIRST_17));
    assert_eq!(
        cutoffs(&server, Cutoff::HeaderRead),
        1,
        "the silent one only"
    );
    server.stop().unwrap();
}

#[test]
fn shutdown_answers_the_request_in_flight_and_refuses_new_connections() {
    let (mut server, gate) = gated(Timeouts::default());
    let addr = server.addr();
    // Keep-alive asked for: the drain must close the connection anyway.
    let mut held = TcpStream::connect(addr).unwrap();
    held.write_all(b"GET /primes/17 HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert!(gate.wait_arrival(PATIENCE), "the request never got in");
    server.begin_stop();
    // The listener closes as soon as the accept loop sees the shutdown;
    // probe until a connection is refused. (One caught in the accept queue
    // as it closes is reset instead.)
    let deadline = Instant::now() + PATIENCE;
    loop {
        match TcpStream::connect(addr) {
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => break,
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {}
            Err(e) => panic!("connect: {e}"),
            Ok(_) => {}
        }
        assert!(Instant::now() < deadline, "still accepting");
    }
    assert!(
        !server.is_finished(),
        "the server returned with a request in flight"
    );
    gate.open();
    let (status, head, body) = read_response(&mut held);
    assert_eq!((status, body.as_str()), (200, FIRST_17));
    assert!(head.contains("connection: close"), "{head}");
    wait_closed(&mut held);
    server.join().unwrap();
}

#[test]
fn the_blocking_server_stops_without_waiting_out_idle_connections() {
    // The default idle allowance is a minute: the stop must not wait for it.
    let server = start(small(Kind::Blocking));
    let mut idle = TcpStream::connect(server.addr()).unwrap();
    idle.write_all(b"GET /primes/3 HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert_eq!(read_response(&mut idle).0, 200);
    let (stopped, joined) = mpsc::channel();
    std::thread::spawn(move || stopped.send(server.stop()));
    joined
        .recv_timeout(PATIENCE)
        .expect("the stop returns in time")
        .unwrap();
    wait_closed(&mut idle);
}

#[test]
fn a_request_body_on_a_keep_alive_connection_keeps_it_in_step() {
    for kind in Kind::ALL {
        let server = start(small(kind));
        let mut s = TcpStream::connect(server.addr()).unwrap();
        // A body that reads as a request if taken for one.
        s.write_all(
            b"POST /primes/5 HTTP/1.1\r\nHost: t\r\nContent-Length: 14\r\n\r\n\
              GET /nope HTTP\
              GET /primes/3 HTTP/1.1\r\nHost: t\r\n\r\n",
        )
        .unwrap();
        let mut carry = Vec::new();
        assert_eq!(read_next_response(&mut s, &mut carry).0, 405, "{kind:?}");
        let (status, _, body) = read_next_response(&mut s, &mut carry);
        assert_eq!((status, body.as_str()), (200, "[2,3,5]"), "{kind:?}");
        drop(s);
        server.stop().unwrap();
    }
}

#[test]
fn the_blocking_server_refuses_bodies_it_cannot_frame_or_will_not_read_and_bad_heads() {
    let server = start(small(Kind::Blocking));
    for (extra, status) in [
        (&b"Transfer-Encoding: chunked\r\n"[..], 400),
        (b"Content-Length: -1\r\n", 400),
        (b"Content-Length: 3\r\nContent-Length: 4\r\n", 400),
        (b"Content-Length: 1000000\r\n", 413),
        (b"X-Name: \xff\r\n", 400),
    ] {
        let what = String::from_utf8_lossy(extra);
        let mut s = TcpStream::connect(server.addr()).unwrap();
        s.write_all(
            &[
                &b"POST /primes/5 HTTP/1.1\r\nHost: t\r\n"[..],
                extra,
                b"\r\n",
            ]
            .concat(),
        )
        .unwrap();
        let (got, head, _) = read_response(&mut s);
        assert_eq!(got, status, "{what}");
        // What follows cannot be trusted to start a request: closed.
        assert!(head.contains("connection: close"), "{what}: {head}");
        wait_closed(&mut s);
    }
    server.stop().unwrap();
}
