//! The one launcher of the primes servers: a [`Kind`] and a [`Config`] go
//! in, a running [`Server`] comes out, with its address, its metrics, a
//! graceful stop and a join. The `primes` binary, the benchmark, the soak
//! and the tests all start their servers here, so that every one of them
//! runs the same server the same way.
//!
//! An async server (actor-backed or plain) runs on a tokio runtime of its
//! own; the actor-backed one also owns its actor system, shut down after
//! the last connection has closed. The blocking server owns its threads.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use troupe::ActorSystem;

use crate::blocking::BlockingServer;
#[cfg(feature = "faults")]
use crate::faults::Faults;
use crate::metrics::Metrics;
use crate::service::{Service, DEFAULT_MAX_N};
use crate::timeouts::Timeouts;
use crate::{http, listener};

/// Which server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// axum on tokio, each request answered by a pool of prime-worker
    /// actors.
    Actor,
    /// axum on tokio, computing in the handler (the no-actor baseline).
    Plain,
    /// A fixed pool of threads on `std::net` (the blocking baseline).
    Blocking,
}

impl Kind {
    /// Every kind, in the order the benchmark reports them.
    pub const ALL: [Kind; 3] = [Kind::Actor, Kind::Plain, Kind::Blocking];

    /// Its name on the command line and in benchmark rows.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Actor => "actor",
            Kind::Plain => "plain",
            Kind::Blocking => "blocking",
        }
    }
}

/// Prime workers of the actor-backed server unless configured.
pub const DEFAULT_ACTOR_WORKERS: usize = 4;
/// Threads of the blocking server unless configured.
pub const DEFAULT_BLOCKING_THREADS: usize = 200;

/// How to run a server: the kind and its settings, each with a default.
#[derive(Clone)]
pub struct Config {
    kind: Kind,
    max_n: usize,
    workers: Option<usize>,
    dispatcher_threads: usize,
    http_threads: Option<usize>,
    timeouts: Timeouts,
    #[cfg(feature = "faults")]
    faults: Faults,
}

impl Config {
    /// A `kind` server with the defaults: n up to
    /// [`DEFAULT_MAX_N`], [`DEFAULT_ACTOR_WORKERS`] or
    /// [`DEFAULT_BLOCKING_THREADS`], one dispatcher thread, a tokio worker
    /// per core and the default [`Timeouts`].
    pub fn new(kind: Kind) -> Self {
        Config {
            kind,
            max_n: DEFAULT_MAX_N,
            workers: None,
            dispatcher_threads: 1,
            http_threads: None,
            timeouts: Timeouts::default(),
            #[cfg(feature = "faults")]
            faults: Faults::default(),
        }
    }

    /// The largest n served; larger ones get 400.
    pub fn max_n(mut self, max_n: usize) -> Self {
        self.max_n = max_n;
        self
    }

    /// Prime workers (actor server) or threads (blocking server); the
    /// plain server has none.
    pub fn workers(mut self, workers: Option<usize>) -> Self {
        self.workers = workers;
        self
    }

    /// Dispatcher threads of the actor system (actor server). The HTTP
    /// runtime has a thread per core already; one dispatcher thread keeps
    /// the two from competing on a small machine. 0: no threads of its
    /// own, the prime workers run as tasks on the HTTP runtime (troupe's
    /// tokio dispatcher), so a request and its answer never change threads.
    pub fn dispatcher_threads(mut self, threads: usize) -> Self {
        self.dispatcher_threads = threads;
        self
    }

    /// tokio worker threads of an async server (`None`: one per core).
    pub fn http_threads(mut self, threads: Option<usize>) -> Self {
        self.http_threads = threads;
        self
    }

    /// The connection timeouts (every kind).
    pub fn timeouts(mut self, timeouts: Timeouts) -> Self {
        self.timeouts = timeouts;
        self
    }

    /// Faults injected into the prime workers (actor server; tests only).
    #[cfg(feature = "faults")]
    pub fn faults(mut self, faults: Faults) -> Self {
        self.faults = faults;
        self
    }

    /// The kind of server.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The dispatcher threads an actor server runs with.
    pub fn dispatcher_thread_count(&self) -> usize {
        self.dispatcher_threads
    }
}

/// A running server (see the module docs).
pub struct Server {
    addr: SocketAddr,
    kind: Kind,
    /// `None` once joined (or dropped).
    inner: Option<Inner>,
}

enum Inner {
    Async {
        runtime: tokio::runtime::Runtime,
        service: Arc<Service>,
        stop: Option<tokio::sync::oneshot::Sender<()>>,
        done: tokio::task::JoinHandle<io::Result<()>>,
        system: Option<ActorSystem>,
    },
    Blocking(BlockingServer),
}

fn other(what: &str, e: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("{what}: {e}"))
}

impl Server {
    /// Binds `addr` (port 0: any free port) and starts the server.
    pub fn start(addr: SocketAddr, config: &Config) -> io::Result<Server> {
        // The recorder must be in place before the first actor registers its
        // runtime metrics, or those would go nowhere.
        crate::metrics::exporter();
        let socket = listener::bind(addr)?;
        let addr = socket.local_addr()?;
        let kind = config.kind;
        let workers = config.workers;
        if kind == Kind::Blocking {
            let threads = workers.unwrap_or(DEFAULT_BLOCKING_THREADS);
            let server = BlockingServer::start(socket, threads, config.max_n, config.timeouts)?;
            return Ok(Server {
                addr,
                kind,
                inner: Some(Inner::Blocking(server)),
            });
        }
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        if let Some(threads) = config.http_threads {
            builder.worker_threads(threads.max(1));
        }
        let runtime = builder.thread_name("primes-http").enable_all().build()?;
        let (system, service) = match kind {
            Kind::Actor => {
                let builder = ActorSystem::builder().name("primes");
                let builder = match config.dispatcher_threads {
                    // The pool's default throughput, so that only where the
                    // actors run differs.
                    0 => builder.tokio_dispatcher(
                        "default",
                        runtime.handle().clone(),
                        troupe::system::DEFAULT_THROUGHPUT,
                    ),
                    threads => builder.threads(threads),
                };
                let system = builder.build().map_err(|e| other("actor system", e))?;
                let workers = workers.unwrap_or(DEFAULT_ACTOR_WORKERS);
                #[cfg(feature = "faults")]
                let service =
                    Service::with_faults(&system, workers, config.max_n, config.faults.clone());
                #[cfg(not(feature = "faults"))]
                let service = Service::with_actors(&system, workers, config.max_n);
                let service = service.map_err(|e| other("prime workers", e))?;
                (Some(system), service)
            }
            Kind::Plain | Kind::Blocking => (None, Service::direct(config.max_n)),
        };
        let service = Arc::new(service);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let shutdown = async {
            // A dropped sender stops the server too.
            let _ = stopped.await;
        };
        let done = runtime.spawn(http::serve(
            socket,
            service.clone(),
            shutdown,
            config.timeouts,
        ));
        Ok(Server {
            addr,
            kind,
            inner: Some(Inner::Async {
                runtime,
                service,
                stop: Some(stop),
                done,
                system,
            }),
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Which server this is.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Its request counters (what `GET /metrics` renders).
    pub fn metrics(&self) -> &Metrics {
        match self.inner.as_ref().expect("running until joined") {
            Inner::Async { service, .. } => &service.metrics,
            Inner::Blocking(server) => server.metrics(),
        }
    }

    /// Begins the graceful stop: new connections are refused, idle ones
    /// closed, and each request in flight is answered (with
    /// `Connection: close`) before its connection closes. Returns at once;
    /// [`Self::join`] waits for the end. Idempotent.
    pub fn begin_stop(&mut self) {
        match self.inner.as_mut() {
            Some(Inner::Async { stop, .. }) => {
                if let Some(stop) = stop.take() {
                    // The server may have returned already (an error).
                    let _ = stop.send(());
                }
            }
            Some(Inner::Blocking(server)) => server.begin_stop(),
            None => {}
        }
    }

    /// Whether the server has returned (stopped, or failed).
    pub fn is_finished(&self) -> bool {
        match self.inner.as_ref() {
            Some(Inner::Async { done, .. }) => done.is_finished(),
            Some(Inner::Blocking(server)) => server.is_finished(),
            None => true,
        }
    }

    /// Waits until the server returns (after [`Self::begin_stop`], or on
    /// its own if it fails), then shuts its actor system down; the server's
    /// error, if it had one.
    pub fn join(mut self) -> io::Result<()> {
        match self.inner.take().expect("joined once") {
            Inner::Blocking(server) => server.join(),
            Inner::Async {
                runtime,
                service: _,
                stop,
                done,
                system,
            } => {
                let served = runtime.block_on(done);
                drop(stop);
                // The actor system ends first: on the tokio dispatcher its
                // actors run on this runtime, which must outlive them.
                let ended = system.map(|system| {
                    system.shutdown();
                    system.await_termination()
                });
                drop(runtime);
                if let Some(ended) = ended {
                    ended.map_err(|e| other("actor system", e))?;
                }
                served.map_err(|e| other("server task", e))?
            }
        }
    }

    /// [`Self::begin_stop`], then [`Self::join`].
    pub fn stop(mut self) -> io::Result<()> {
        self.begin_stop();
        self.join()
    }
}

impl Drop for Server {
    /// A server dropped without [`Server::join`] (a failing test, an early
    /// return) is stopped without waiting: the async runtime and its
    /// connections are dropped, the blocking threads told to end.
    fn drop(&mut self) {
        self.begin_stop();
        if let Some(Inner::Async {
            system: Some(system),
            ..
        }) = self.inner.take()
        {
            system.shutdown();
        }
    }
}
