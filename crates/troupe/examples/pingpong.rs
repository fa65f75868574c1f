//! Two actors bounce a counter back and forth; prints ns per one-way hop.
//!
//! `cargo run --release -p troupe --example pingpong -- [hops] [threads] [throughput]`
//!
//! With `PINGPONG_SUBSCRIBER=registry`, a `tracing` registry is installed
//! first, so that with the `tracing-spans` feature every hop opens and
//! enters a span: the feature's cost per message with spans recorded.
//! With `PINGPONG_RECORDER=prometheus`, a Prometheus recorder is installed,
//! so that with the `metrics` feature every hop records into it.

use std::sync::mpsc;
use std::time::Instant;

use troupe::prelude::*;

enum Ball {
    Peer(ActorRef<Ball>),
    Serve(u64),
    Hit(u64),
}

struct Player {
    peer: Option<ActorRef<Ball>>,
    done: mpsc::Sender<u64>,
}

impl Actor for Player {
    type Msg = Ball;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: Ball) {
        match msg {
            Ball::Peer(peer) => self.peer = Some(peer),
            Ball::Serve(n) => self.peer.as_ref().expect("peer set").tell(Ball::Hit(n)),
            Ball::Hit(0) => {
                let _ = self.done.send(0);
            }
            Ball::Hit(n) => self.peer.as_ref().expect("started").tell(Ball::Hit(n - 1)),
        }
    }
}

fn main() {
    if std::env::var("PINGPONG_SUBSCRIBER").as_deref() == Ok("registry") {
        tracing::subscriber::set_global_default(tracing_subscriber::registry())
            .expect("the first subscriber");
    }
    if std::env::var("PINGPONG_RECORDER").as_deref() == Ok("prometheus") {
        metrics_exporter_prometheus::PrometheusBuilder::new()
            .install_recorder()
            .expect("the first recorder");
    }
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a number"))
        .collect();
    let hops = args.first().copied().unwrap_or(10_000_000);
    let threads = args.get(1).copied().unwrap_or(1) as usize;
    let throughput = args.get(2).copied().unwrap_or(5) as usize;
    let system = ActorSystem::builder()
        .threads(threads)
        .throughput(throughput)
        .build()
        .expect("system");
    let (tx, rx) = mpsc::channel();
    let spawn_player = || {
        let tx = tx.clone();
        system
            .spawn(Props::new(move || Player {
                peer: None,
                done: tx.clone(),
            }))
            .expect("spawn")
    };
    let (a, b) = (spawn_player(), spawn_player());
    a.tell(Ball::Peer(b.clone()));
    b.tell(Ball::Peer(a.clone()));
    let started = Instant::now();
    a.tell(Ball::Serve(hops));
    rx.recv().expect("finished");
    let elapsed = started.elapsed();
    println!(
        "{hops} hops, {threads} threads, throughput {throughput}: {:.1} ns/hop",
        elapsed.as_nanos() as f64 / hops as f64
    );
    system.shutdown();
    system.await_termination().expect("terminated");
}
