//! The service logic shared by the async servers: route the request, then
//! answer it from the actor pool (`Backend::Actors`) or directly
//! (`Backend::Direct`, the plain-handler baseline), and count it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use troupe::prelude::*;
use troupe::{Router, Routing};

use crate::faults::Faults;
use crate::metrics::Metrics;
use crate::route::{route, HttpError, Route};
use crate::sieve::{render_json, PrimeCache};

/// How long an answer may take before the request fails with 503.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// The default largest n served.
pub const DEFAULT_MAX_N: usize = 100_000;

/// A request for the first `n` primes, answered with their JSON array.
pub enum WorkerMsg {
    /// Compute and reply.
    First {
        /// How many primes.
        n: usize,
        /// Where the JSON goes.
        reply: ReplyTo<String>,
    },
}

/// A prime worker: answers from the shared cache (unless a test injected a
/// fault for its n: see `faults.rs`).
pub struct PrimeWorker {
    cache: Arc<PrimeCache>,
    faults: Faults,
}

impl Actor for PrimeWorker {
    type Msg = WorkerMsg;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: WorkerMsg) {
        let WorkerMsg::First { n, reply } = msg;
        self.faults.before_answer(n);
        let primes = self.cache.first(n);
        reply.reply(render_json(&primes[..n]));
    }
}

/// Where answers come from.
pub enum Backend {
    /// A round-robin pool of prime workers, asked per request.
    Actors(Router<WorkerMsg>),
    /// Computed in the handler (the plain baseline).
    Direct(Arc<PrimeCache>),
}

/// Everything a request handler needs.
pub struct Service {
    backend: Backend,
    max_n: usize,
    /// Request counters for `/metrics`.
    pub metrics: Metrics,
}

/// An answer: status, JSON (or Prometheus text) body, and its content type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// The body.
    pub body: String,
    /// Its media type.
    pub content_type: &'static str,
}

impl Answer {
    fn json(status: u16, body: String) -> Self {
        Answer {
            status,
            body,
            content_type: "application/json",
        }
    }

    fn error(e: &HttpError) -> Self {
        Answer::json(e.status, e.body())
    }
}

impl Service {
    /// A service answering from a pool of `workers` prime actors.
    pub fn with_actors(
        system: &ActorSystem,
        workers: usize,
        max_n: usize,
    ) -> Result<Self, troupe::SpawnError> {
        Self::with_faulty_actors(system, workers, max_n, Faults::default())
    }

    /// [`Service::with_actors`] with the faults a test injects.
    #[cfg(feature = "faults")]
    pub fn with_faults(
        system: &ActorSystem,
        workers: usize,
        max_n: usize,
        faults: Faults,
    ) -> Result<Self, troupe::SpawnError> {
        Self::with_faulty_actors(system, workers, max_n, faults)
    }

    fn with_faulty_actors(
        system: &ActorSystem,
        workers: usize,
        max_n: usize,
        faults: Faults,
    ) -> Result<Self, troupe::SpawnError> {
        let cache = Arc::new(PrimeCache::new());
        let props = Props::new(move || PrimeWorker {
            cache: cache.clone(),
            faults: faults.clone(),
        })
        .name("prime-worker")
        .supervisor(SupervisorStrategy::restart());
        let router = Router::pool(system, workers, props, Routing::RoundRobin)?;
        Ok(Service {
            backend: Backend::Actors(router),
            max_n,
            metrics: Metrics::default(),
        })
    }

    /// A service answering in the handler itself.
    pub fn direct(max_n: usize) -> Self {
        Service {
            backend: Backend::Direct(Arc::new(PrimeCache::new())),
            max_n,
            metrics: Metrics::default(),
        }
    }

    /// The largest n served.
    pub fn max_n(&self) -> usize {
        self.max_n
    }

    /// Answers one request.
    pub async fn handle(&self, method: &str, path: &str) -> Answer {
        let started = Instant::now();
        let answer = match route(method, path, self.max_n) {
            Err(e) => Answer::error(&e),
            Ok(Route::Health) => Answer::json(200, r#"{"status":"ok"}"#.to_string()),
            Ok(Route::Metrics) => Answer {
                status: 200,
                body: self.metrics.render(),
                content_type: "text/plain; version=0.0.4",
            },
            Ok(Route::Primes(n)) => self.primes(n).await,
        };
        self.metrics.record(answer.status, started.elapsed());
        answer
    }

    async fn primes(&self, n: usize) -> Answer {
        match &self.backend {
            Backend::Direct(cache) => Answer::json(200, render_json(&cache.first(n)[..n])),
            Backend::Actors(router) => {
                let worker = router.next_routee().expect("round-robin routing");
                // Sent inside the request's span, so that with message spans
                // on the worker's handling is a child of the request.
                let ask = {
                    let span = tracing::info_span!("request", n);
                    let _entered = span.enter();
                    worker.ask(|reply| WorkerMsg::First { n, reply }, REQUEST_TIMEOUT)
                };
                match ask.await {
                    Ok(json) => Answer::json(200, json),
                    Err(AskError::Timeout { .. }) => Answer::error(&HttpError {
                        status: 503,
                        message: "the computation timed out".into(),
                    }),
                    Err(e) => Answer::error(&HttpError {
                        status: 500,
                        message: format!("the worker failed: {e}"),
                    }),
                }
            }
        }
    }
}
