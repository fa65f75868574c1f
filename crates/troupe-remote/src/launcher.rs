//! A nats-server child process on loopback ports, for tools that run a
//! NATS cluster of their own on one machine (a launcher of a distributed
//! application, a benchmark). Feature `launcher`; not needed to use NATS.
//!
//! [`find_binary`] finds the server (a path given, `NATS_SERVER`, or
//! `nats-server` on `PATH`); [`NatsServer::launch`] starts it on a free
//! loopback port with JetStream in a temporary directory, waits until it
//! reports ready (reading its log, with a deadline), and kills it on drop.
//! [`NatsServer::launch_cluster`] starts several, joined as one NATS
//! cluster by routes on loopback ports, each killable on its own.

use std::io::{BufRead, BufReader};
use std::net::{IpAddr, Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// How long a started server may take to report ready.
const READY_DEADLINE: Duration = Duration::from_secs(20);

/// The nats-server to run: `explicit` if given, else the `NATS_SERVER`
/// environment variable, else `nats-server` on `PATH`. The error says how
/// to get one: the repository's `scripts/nats-server.sh` installs the
/// version troupe is tested with and prints its path.
pub fn find_binary(explicit: Option<&Path>) -> Result<PathBuf, String> {
    let given = explicit
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("NATS_SERVER").map(PathBuf::from));
    if let Some(path) = given {
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("no nats-server at {}", path.display()))
        };
    }
    // A server on PATH: the first directory that holds one.
    let on_path = std::env::var_os("PATH").and_then(|dirs| {
        std::env::split_paths(&dirs)
            .map(|dir| dir.join("nats-server"))
            .find(|candidate| candidate.is_file())
    });
    on_path.ok_or_else(|| {
        "no nats-server: pass its path (--nats-server PATH), set NATS_SERVER, or put \
         nats-server on PATH. From a troupe checkout, scripts/nats-server.sh installs the \
         pinned version (with Go) and prints its path: \
         NATS_SERVER=$(scripts/nats-server.sh)"
            .to_string()
    })
}

/// A nats-server child process on a loopback port, killed on drop.
pub struct NatsServer {
    /// `None` between [`stop`](NatsServer::stop) and
    /// [`restart`](NatsServer::restart).
    child: Option<Child>,
    /// The address it listens on (loopback unless `launch_on` said).
    host: IpAddr,
    port: u16,
    log: Arc<Mutex<Vec<String>>>,
    binary: PathBuf,
    extra: Vec<String>,
    /// JetStream's store, kept across restarts.
    dir: tempfile::TempDir,
}

/// What became of one launch.
enum Launch {
    Ready(Child, Arc<Mutex<Vec<String>>>),
    /// It exited before it was ready (its log).
    Exited(String),
}

impl NatsServer {
    /// Starts `binary` (see [`find_binary`]) with JetStream and extra
    /// command-line options (e.g. `["--user", "u", "--pass", "p"]`).
    pub fn launch(binary: &Path, extra: &[&str]) -> Result<NatsServer, String> {
        Self::launch_on(binary, IpAddr::V4(Ipv4Addr::LOCALHOST), extra)
    }

    /// [`launch`](NatsServer::launch) listening on `host` instead of
    /// loopback: an address of this machine that processes in other
    /// network namespaces reach (a bridge's, for a partition test). The
    /// port is one free on loopback, retried if taken on `host`.
    pub fn launch_on(binary: &Path, host: IpAddr, extra: &[&str]) -> Result<NatsServer, String> {
        let binary = binary.to_path_buf();
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let dir = tempfile::tempdir().map_err(|e| format!("temp dir: {e}"))?;
        let mut last = String::new();
        // A free port can be taken between our probe and the server's bind:
        // then the server exits, and we try another.
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map_err(|e| format!("no free port: {e}"))?
                .port();
            match launch(&binary, host, port, dir.path(), &extra)? {
                Launch::Ready(child, log) => {
                    return Ok(NatsServer {
                        child: Some(child),
                        host,
                        port,
                        log,
                        binary,
                        extra,
                        dir,
                    })
                }
                Launch::Exited(log) => last = log,
            }
        }
        Err(format!("nats-server did not start; its last log:\n{last}"))
    }

    /// Starts `n` servers joined as one NATS cluster named `troupe-test`:
    /// each listens for clients on its own free port and for routes on
    /// another, routes to every other one, and runs JetStream (clustered,
    /// so streams and key-value buckets can have up to `n` replicas) in its
    /// own store. Clients learn the other servers' URLs from the one they
    /// connect to, so they fail over without being told. Returns once every
    /// server reports ready (the routes connect right after).
    pub fn launch_cluster(binary: &Path, n: usize) -> Result<Vec<NatsServer>, String> {
        let route_ports: Vec<u16> = (0..n)
            .map(|_| {
                TcpListener::bind("127.0.0.1:0")
                    .and_then(|l| l.local_addr())
                    .map(|a| a.port())
                    .map_err(|e| format!("no free port: {e}"))
            })
            .collect::<Result<_, _>>()?;
        let route = |port: u16| format!("nats-route://127.0.0.1:{port}");
        (0..n)
            .map(|i| {
                let routes: Vec<String> = route_ports
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .map(|(_, p)| route(*p))
                    .collect();
                let name = format!("nats-{i}");
                let listen = format!("nats://127.0.0.1:{}", route_ports[i]);
                let routes = routes.join(",");
                NatsServer::launch(
                    binary,
                    &[
                        "--server_name",
                        &name,
                        "--cluster_name",
                        "troupe-test",
                        "--cluster",
                        &listen,
                        "--routes",
                        &routes,
                    ],
                )
            })
            .collect()
    }

    /// Kills the server (SIGKILL) and reaps it: its clients see the
    /// connection drop. [`restart`](NatsServer::restart) brings it back.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port with the same options and
    /// JetStream store (stopping it first if it runs), and waits until it
    /// is ready.
    pub fn restart(&mut self) -> Result<(), String> {
        self.stop();
        match launch(
            &self.binary,
            self.host,
            self.port,
            self.dir.path(),
            &self.extra,
        )? {
            Launch::Ready(child, log) => {
                self.child = Some(child);
                self.log = log;
                Ok(())
            }
            Launch::Exited(log) => Err(format!(
                "nats-server did not restart on port {}; its log:\n{log}",
                self.port
            )),
        }
    }

    /// `nats://127.0.0.1:<port>` (the host it listens on).
    pub fn url(&self) -> String {
        format!("nats://{}:{}", self.host, self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// What the server has logged so far.
    pub fn log_text(&self) -> String {
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .join("\n")
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts nats-server on `host:port` and waits until its log says it is
/// ready.
fn launch(
    binary: &Path,
    host: IpAddr,
    port: u16,
    dir: &Path,
    extra: &[String],
) -> Result<Launch, String> {
    let mut child = Command::new(binary)
        .args([
            "-a",
            &host.to_string(),
            "-p",
            &port.to_string(),
            "-js",
            "-sd",
        ])
        .arg(dir)
        .args(extra)
        // nats-server's scheduler spins on a small machine; one OS thread
        // for Go code is plenty for tests.
        .env("GOMAXPROCS", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
    let stderr = child.stderr.take().expect("stderr is piped");
    let log = Arc::new(Mutex::new(Vec::new()));
    let (ready_tx, ready_rx) = mpsc::channel();
    let lines = log.clone();
    // Reads the log for the ready line, then keeps draining it (a full
    // pipe would stall the server).
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("Server is ready") {
                let _ = ready_tx.send(());
            }
            let mut lines = lines.lock().unwrap_or_else(|e| e.into_inner());
            if lines.len() < 1000 {
                lines.push(line);
            }
        }
    });
    let text =
        |log: &Arc<Mutex<Vec<String>>>| log.lock().unwrap_or_else(|e| e.into_inner()).join("\n");
    let outcome = ready_rx.recv_timeout(READY_DEADLINE);
    match outcome {
        Ok(()) => match TcpStream::connect((host, port)) {
            Ok(_) => Ok(Launch::Ready(child, log)),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(format!("nats-server is ready but refuses connections: {e}"))
            }
        },
        // The log closed: the server exited.
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            let _ = child.wait();
            Ok(Launch::Exited(text(&log)))
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(format!(
                "nats-server not ready after {READY_DEADLINE:?}; its log:\n{}",
                text(&log)
            ))
        }
    }
}
