//! The servers over real HTTP: good requests get the primes, bad input gets
//! a 4xx JSON error while the server keeps serving, a panicking worker makes
//! its request a 500 and is restarted, and the blocking server answers the
//! same way.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;

use primes::blocking::BlockingServer;
use primes::service::Service;
use primes::{http, listener};
use troupe::ActorSystem;

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

/// Serves `service` on a runtime of its own; returns the address and a
/// function that shuts it down.
fn serve(service: Service) -> (SocketAddr, impl FnOnce()) {
    let socket = listener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = socket.local_addr().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let done = runtime.spawn(http::serve(socket, Arc::new(service), async {
        let _ = rx.await;
    }));
    let stop = move || {
        let _ = tx.send(());
        runtime.block_on(done).unwrap().unwrap();
    };
    (addr, stop)
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
