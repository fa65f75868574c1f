//! The servers over real HTTP: good requests get the primes, bad input gets
//! a 4xx JSON error while the server keeps serving, a panicking worker makes
//! its request a 500 and is restarted, and the blocking server answers the
//! same way. The async servers cut off slow heads and idle connections on
//! their own clocks, and shut down gracefully: the request in flight is
//! answered, new connections are refused.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use primes::blocking::BlockingServer;
use primes::metrics::Cutoff;
use primes::service::{Faults, Gate, Service};
use primes::timeouts::Timeouts;
use primes::{http, listener};
use troupe::ActorSystem;

/// How long anything that should happen at once may take before a test
/// fails (a loaded CI machine can stall for seconds, never for this long).
const PATIENCE: Duration = Duration::from_secs(10);

/// The answer to `/primes/17`, the n the gate tests hold.
const FIRST_17: &str = "[2,3,5,7,11,13,17,19,23,29,31,37,41,43,47,53,59]";

/// One request on a fresh connection; returns status and body.
fn get(addr: SocketAddr, method: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let status = raw.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = raw
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// Reads one response from a keep-alive connection: status, head (lower
/// case) and body (by Content-Length).
fn read_response(s: &mut TcpStream) -> (u16, String, String) {
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut raw = Vec::new();
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

/// An async server on a runtime of its own.
struct Server {
    addr: SocketAddr,
    service: Arc<Service>,
    runtime: tokio::runtime::Runtime,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<io::Result<()>>,
}

impl Server {
    fn start(service: Service, timeouts: Timeouts) -> Self {
        let socket = listener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = socket.local_addr().unwrap();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let shutdown = async {
            let _ = rx.await;
        };
        let service = Arc::new(service);
        let done = runtime.spawn(http::serve_with(
            socket,
            service.clone(),
            shutdown,
            timeouts,
        ));
        Server {
            addr,
            service,
            runtime,
            stop: Some(tx),
            done,
        }
    }

    /// Connections closed so far for `cutoff`.
    fn cutoffs(&self, cutoff: Cutoff) -> u64 {
        self.service.metrics.cutoffs(cutoff)
    }

    fn begin_shutdown(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }

    /// Shuts down and waits for the server to return.
    fn stop(mut self) {
        self.begin_shutdown();
        let done = self.done;
        self.runtime
            .block_on(async { tokio::time::timeout(PATIENCE, done).await })
            .expect("the server exits in time")
            .unwrap()
            .unwrap();
    }
}

/// Serves `service` with the default timeouts; returns the address and a
/// function that shuts it down.
fn serve(service: Service) -> (SocketAddr, impl FnOnce()) {
    let server = Server::start(service, Timeouts::default());
    (server.addr, move || server.stop())
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
fn the_actor_server_answers_and_refuses_bad_input() {
    let system = ActorSystem::builder().threads(2).build().unwrap();
    let (addr, stop) = serve(Service::with_actors(&system, 2, 1000, None).unwrap());
    check_answers(addr);
    stop();
    system.shutdown();
    system.await_termination().unwrap();
}

#[test]
fn a_panicking_worker_gives_a_500_and_is_restarted() {
    let system = ActorSystem::builder().threads(2).build().unwrap();
    let (addr, stop) = serve(Service::with_actors(&system, 1, 1000, Some(13)).unwrap());
    let (status, body) = get(addr, "GET", "/primes/13");
    assert_eq!(status, 500, "{body}");
    // The single worker was restarted: the next request is served.
    assert_eq!(get(addr, "GET", "/primes/2"), (200, "[2,3]".to_string()));
    stop();
    system.shutdown();
    system.await_termination().unwrap();
}

#[test]
fn the_plain_and_blocking_servers_answer_the_same() {
    let (addr, stop) = serve(Service::direct(1000));
    check_answers(addr);
    stop();
    let socket = listener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let server = BlockingServer::start(socket, 4, 1000).unwrap();
    check_answers(server.addr());
    server.stop();
}

#[test]
fn a_slowloris_head_is_cut_off_after_the_header_read_timeout() {
    let timeouts = Timeouts {
        header_read: Duration::from_millis(200),
        idle: Duration::from_secs(60),
    };
    let server = Server::start(Service::direct(1000), timeouts);
    let began = Instant::now();
    // One client stops halfway through its head, one never starts one.
    let mut partial = TcpStream::connect(server.addr).unwrap();
    partial
        .write_all(b"GET /primes/5 HTTP/1.1\r\nHost: t\r\n")
        .unwrap();
    let mut silent = TcpStream::connect(server.addr).unwrap();
    for s in [&mut partial, &mut silent] {
        let held = wait_closed(s) - began;
        // Each clock starts at its accept, after `began`.
        assert!(held >= timeouts.header_read, "cut off after {held:?}");
    }
    // Counted before the close, so seen by now.
    assert_eq!(server.cutoffs(Cutoff::HeaderRead), 2);
    assert_eq!(server.cutoffs(Cutoff::Idle), 0);
    assert_eq!(
        get(server.addr, "GET", "/primes/3"),
        (200, "[2,3,5]".into())
    );
    server.stop();
}

#[test]
fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    // The head allowance is the shorter: a close before the idle timeout
    // would mean the wrong clock ran while the connection sat unused.
    let timeouts = Timeouts {
        header_read: Duration::from_millis(150),
        idle: Duration::from_millis(600),
    };
    let server = Server::start(Service::direct(1000), timeouts);
    let mut s = TcpStream::connect(server.addr).unwrap();
    let sent = Instant::now();
    s.write_all(b"GET /primes/5 HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let (status, _, body) = read_response(&mut s);
    assert_eq!((status, body.as_str()), (200, "[2,3,5,7,11]"));
    // The idle clock starts when the server answers, after `sent`.
    let idle = wait_closed(&mut s) - sent;
    assert!(idle >= timeouts.idle, "closed after {idle:?}");
    assert_eq!(server.cutoffs(Cutoff::Idle), 1);
    assert_eq!(server.cutoffs(Cutoff::HeaderRead), 0);
    server.stop();
}

#[test]
fn a_client_that_stops_reading_its_answer_is_cut_off_after_the_idle_timeout() {
    let timeouts = Timeouts {
        header_read: Duration::from_secs(60),
        idle: Duration::from_millis(300),
    };
    let server = Server::start(Service::direct(100_000), timeouts);
    // A small receive window, and answers (about 700 KB each) adding up to
    // several times the largest send buffer Linux gives by default (4 MiB),
    // so that the server's writes stall while the client does not read.
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket.connect(&server.addr.into()).unwrap();
    let mut s: TcpStream = socket.into();
    const PIPELINED: usize = 32;
    s.write_all(&b"GET /primes/100000 HTTP/1.1\r\nHost: t\r\n\r\n".repeat(PIPELINED))
        .unwrap();
    // The server counts the cut-off before it closes the connection.
    let deadline = Instant::now() + PATIENCE;
    while server.cutoffs(Cutoff::Idle) == 0 {
        assert!(
            Instant::now() < deadline,
            "the stalled answer was not cut off"
        );
        std::thread::yield_now();
    }
    // What arrives now is part of the answers, then the end.
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut raw = Vec::new();
    match s.read_to_end(&mut raw) {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {}
        Err(e) => panic!("still open: {e}"),
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
    assert_eq!(server.cutoffs(Cutoff::HeaderRead), 0);
    server.stop();
}

#[test]
fn a_request_in_the_handler_is_not_cut_off_by_the_header_read_timeout() {
    let system = ActorSystem::builder().threads(2).build().unwrap();
    let gate = Arc::new(Gate::default());
    let faults = Faults {
        hold_on: Some((17, gate.clone())),
        ..Faults::default()
    };
    let timeouts = Timeouts {
        header_read: Duration::from_millis(200),
        idle: Duration::from_secs(60),
    };
    let service = Service::with_faulty_actors(&system, 1, 1000, faults).unwrap();
    let server = Server::start(service, timeouts);
    let mut held = TcpStream::connect(server.addr).unwrap();
    held.write_all(b"GET /primes/17 HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert!(gate.wait_arrival(PATIENCE), "the request never got in");
    // The clock: a silent connection opened now is cut off a header
    // allowance later at the earliest, so by then the held request has
    // been in the handler for longer than one.
    let mut silent = TcpStream::connect(server.addr).unwrap();
    wait_closed(&mut silent);
    gate.open();
    let (status, _, body) = read_response(&mut held);
    assert_eq!((status, body.as_str()), (200, FIRST_17));
    assert_eq!(server.cutoffs(Cutoff::HeaderRead), 1, "the silent one only");
    server.stop();
    system.shutdown();
    system.await_termination().unwrap();
}

#[test]
fn shutdown_answers_the_request_in_flight_and_refuses_new_connections() {
    let system = ActorSystem::builder().threads(2).build().unwrap();
    let gate = Arc::new(Gate::default());
    let faults = Faults {
        hold_on: Some((17, gate.clone())),
        ..Faults::default()
    };
    let service = Service::with_faulty_actors(&system, 1, 1000, faults).unwrap();
    let mut server = Server::start(service, Timeouts::default());
    let addr = server.addr;
    // Keep-alive asked for: the drain must close the connection anyway.
    let mut held = TcpStream::connect(addr).unwrap();
    held.write_all(b"GET /primes/17 HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert!(gate.wait_arrival(PATIENCE), "the request never got in");
    server.begin_shutdown();
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
        !server.done.is_finished(),
        "the server returned with a request in flight"
    );
    gate.open();
    let (status, head, body) = read_response(&mut held);
    assert_eq!((status, body.as_str()), (200, FIRST_17));
    assert!(head.contains("connection: close"), "{head}");
    wait_closed(&mut held);
    server.stop();
    system.shutdown();
    system.await_termination().unwrap();
}
