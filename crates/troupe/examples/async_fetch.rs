//! An async actor (`AsyncActor`) whose handler awaits an HTTP call, written
//! the way an async actor library's handler is: `client.get(path).await`
//! inside `receive`, with the actor's state updated after the await. The
//! actor handles one request at a time, in order, and its dispatcher
//! thread is free while a call is under way: the server here answers
//! `/slow` only after another actor on the same one-thread pool has asked
//! it for `/release`.
//!
//! The server is a tiny HTTP/1.0 server on a loopback port, on the
//! system's tokio runtime, so that the example needs nothing beyond tokio.
//!
//! `cargo run -p troupe --features tokio --example async_fetch`

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use troupe::prelude::*;

/// A tiny HTTP/1.0 server: `/slow` answers once `/release` has been asked
/// for, any other path at once with its own name.
async fn serve(listener: TcpListener) {
    let released = Arc::new(Notify::new());
    while let Ok((mut conn, _)) = listener.accept().await {
        let released = released.clone();
        tokio::spawn(async move {
            let mut request = [0u8; 1024];
            let n = conn.read(&mut request).await.unwrap_or(0);
            let path = String::from_utf8_lossy(&request[..n])
                .split(' ')
                .nth(1)
                .unwrap_or("/")
                .to_string();
            match path.as_str() {
                "/slow" => released.notified().await,
                "/release" => released.notify_one(),
                _ => {}
            }
            let reply = format!("HTTP/1.0 200 OK\r\n\r\nanswer to {path}");
            let _ = conn.write_all(reply.as_bytes()).await;
        });
    }
}

/// A minimal async HTTP client: what a real client's `get` looks like.
async fn get(addr: std::net::SocketAddr, path: &str) -> std::io::Result<String> {
    let mut conn = TcpStream::connect(addr).await?;
    conn.write_all(format!("GET {path} HTTP/1.0\r\n\r\n").as_bytes())
        .await?;
    let mut response = String::new();
    conn.read_to_string(&mut response).await?;
    Ok(response
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_string())
}

enum Msg {
    /// Fetch `path` and answer with the body.
    Fetch(&'static str, ReplyTo<String>),
    /// How many fetches succeeded.
    Count(ReplyTo<u32>),
}

struct Fetcher {
    server: std::net::SocketAddr,
    fetched: u32,
}

impl AsyncActor for Fetcher {
    type Msg = Msg;

    async fn receive(&mut self, _ctx: &mut AsyncContext<Self>, msg: Msg) {
        match msg {
            Msg::Fetch(path, reply) => match get(self.server, path).await {
                Ok(body) => {
                    self.fetched += 1;
                    reply.reply(body);
                }
                Err(error) => eprintln!("fetching {path} failed: {error}"),
            },
            Msg::Count(reply) => {
                reply.reply(self.fetched);
            }
        }
    }
}

fn main() {
    // One dispatcher thread: the release below can only get through if
    // the fetcher's pending handler does not hold it.
    let system = ActorSystem::builder().threads(1).build().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    let server = listener.local_addr().unwrap();
    runtime.spawn(serve(listener));

    let fetcher = system
        .spawn(Props::new_async(move || Fetcher { server, fetched: 0 }))
        .unwrap();
    let releaser = system
        .spawn(Props::new_async(move || Fetcher { server, fetched: 0 }))
        .unwrap();
    let timeout = Duration::from_secs(10);

    let slow = fetcher.ask(|r| Msg::Fetch("/slow", r), timeout);
    let next = fetcher.ask(|r| Msg::Fetch("/next", r), timeout);
    let released = releaser.ask(|r| Msg::Fetch("/release", r), timeout);
    println!("{}", released.wait().unwrap());
    // In order: `/next` was not taken before `/slow` had its answer.
    println!("{}", slow.wait().unwrap());
    println!("{}", next.wait().unwrap());
    let count = fetcher.ask(Msg::Count, timeout).wait().unwrap();
    println!("the fetcher made {count} fetches");
    assert_eq!(count, 2);

    system.shutdown();
    system.await_termination().unwrap();
}
