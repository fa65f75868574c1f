//! An actor that fetches data through an async HTTP client without
//! blocking its dispatcher: each request is a future piped back to the
//! actor as a message (`Context::pipe_to_self`). A local HTTP server, started
//! here on a loopback port, answers; its slow path answers only once the
//! actor, having handled the fast answer, asks for `/release`: the actor
//! keeps handling other messages while a fetch is under way.
//!
//! `cargo run -p troupe --features tokio --example fetch_async`

use std::sync::{mpsc, Arc};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use troupe::{Actor, ActorSystem, Context, Failure, Props};

/// A tiny HTTP/1.0 server: `/slow` answers only once `/release` has been
/// asked for, others at once.
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
            let body = format!("contents of {path}");
            let head = format!("HTTP/1.0 200 OK\r\ncontent-length: {}\r\n\r\n", body.len());
            let _ = conn.write_all((head + &body).as_bytes()).await;
        });
    }
}

/// The async client: one GET, the body as text.
async fn get(addr: std::net::SocketAddr, path: String) -> std::io::Result<String> {
    let mut conn = TcpStream::connect(addr).await?;
    conn.write_all(format!("GET {path} HTTP/1.0\r\n\r\n").as_bytes())
        .await?;
    let mut response = String::new();
    conn.read_to_string(&mut response).await?;
    Ok(response.split("\r\n\r\n").nth(1).unwrap_or("").to_string())
}

enum Msg {
    Fetch(&'static str),
    Fetched(&'static str, Result<std::io::Result<String>, Failure>),
}

struct Fetcher {
    server: std::net::SocketAddr,
    out: mpsc::Sender<String>,
}

impl Actor for Fetcher {
    type Msg = Msg;
    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: Msg) {
        match msg {
            Msg::Fetch(path) => {
                let request = get(self.server, path.to_string());
                ctx.pipe_to_self(request, move |body| Msg::Fetched(path, body));
                self.out.send(format!("asked for {path}")).unwrap();
            }
            Msg::Fetched(path, Ok(Ok(body))) => {
                self.out.send(format!("{path}: {body}")).unwrap();
                // The slow fetch is still pending; only now is it let go.
                if path == "/fast" {
                    ctx.myself().tell(Msg::Fetch("/release"));
                }
            }
            Msg::Fetched(path, Ok(Err(e))) => {
                self.out.send(format!("{path}: I/O error {e}")).unwrap()
            }
            Msg::Fetched(path, Err(panic)) => self.out.send(format!("{path}: {panic}")).unwrap(),
        }
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    let server = listener.local_addr().unwrap();
    runtime.spawn(serve(listener));

    // The actors' futures run on the same runtime as the server.
    let system = ActorSystem::builder()
        .threads(1)
        .async_runtime(runtime.handle().clone())
        .build()
        .unwrap();
    let (out, lines) = mpsc::channel();
    let fetcher = system
        .spawn(Props::new(move || Fetcher {
            server,
            out: out.clone(),
        }))
        .unwrap();
    fetcher.tell(Msg::Fetch("/slow"));
    fetcher.tell(Msg::Fetch("/fast"));
    let events: Vec<String> = (0..6)
        .map(|_| lines.recv_timeout(Duration::from_secs(5)).unwrap())
        .collect();
    for line in &events {
        println!("{line}");
    }
    // The fast answer was handled while the slow fetch was pending (the
    // server holds it until the actor asks for /release): the actor was
    // never blocked by it.
    assert_eq!(events[2], "/fast: contents of /fast");
    assert!(events[4..].contains(&"/slow: contents of /slow".to_string()));

    system.shutdown();
    system.await_termination().unwrap();
}
