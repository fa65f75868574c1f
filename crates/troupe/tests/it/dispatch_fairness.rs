//! Fairness of the pool dispatcher: actors that keep each other busy on a
//! worker (each send lands in that worker's LIFO slot or local queue) must
//! not starve work sent from outside the pool, which goes to the shared
//! injector queue. On a one-worker pool, two actors bouncing a message
//! forever leave the worker never idle; an actor messaged from a plain
//! thread must still run.

use crate::probe::{terminate, Probe, ProbeRef};
use troupe::{Actor, ActorRef, ActorSystem, Context, Props};

/// Bounces a ball to its partner until told to stop.
struct Bouncer {
    partner: Option<ActorRef<Ball>>,
}

enum Ball {
    Partner(ActorRef<Ball>),
    Hit,
    Stop,
}

impl Actor for Bouncer {
    type Msg = Ball;

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: Ball) {
        match msg {
            Ball::Partner(p) => self.partner = Some(p),
            Ball::Hit => {
                if let Some(p) = &self.partner {
                    p.tell(Ball::Hit);
                }
            }
            Ball::Stop => ctx.stop(),
        }
    }
}

struct Reporter(ProbeRef<u32>);

impl Actor for Reporter {
    type Msg = u32;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, n: u32) {
        self.0.send(n);
    }
}

#[test]
fn outside_sends_run_while_two_actors_keep_a_worker_busy() {
    for throughput in [1, 100] {
        let system = ActorSystem::builder()
            .threads(1)
            .throughput(throughput)
            .build()
            .unwrap();
        let a = system
            .spawn(Props::new(|| Bouncer { partner: None }))
            .unwrap();
        let b = system
            .spawn(Props::new(|| Bouncer { partner: None }))
            .unwrap();
        a.tell(Ball::Partner(b.clone()));
        b.tell(Ball::Partner(a.clone()));
        // Several balls in flight, so the worker's local queue never drains.
        for _ in 0..4 {
            a.tell(Ball::Hit);
        }
        let probe = Probe::new("reporter");
        let sender = probe.sender();
        let reporter = system
            .spawn(Props::new(move || Reporter(sender.clone())))
            .unwrap();
        for n in 0..3 {
            reporter.tell(n);
            assert_eq!(probe.expect(), n, "throughput {throughput}");
        }
        a.tell(Ball::Stop);
        b.tell(Ball::Stop);
        terminate(&system);
    }
}
