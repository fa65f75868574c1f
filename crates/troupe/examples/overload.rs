//! A producer much faster than its consumer, with a bounded mailbox (the
//! producer waits for room) and then with an unbounded one (the queue
//! grows): prints resident memory as the run goes, to show that the bounded
//! mailbox keeps it flat.
//!
//! `cargo run --release -p troupe --example overload -- [seconds per phase]`

use std::time::{Duration, Instant};

use troupe::{Actor, ActorSystem, Context, MailboxConfig, Overflow, Props};

/// A slow consumer: about a microsecond of work per message.
struct Slow {
    sum: u64,
}

impl Actor for Slow {
    type Msg = [u64; 4];

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: [u64; 4]) {
        let until = Instant::now() + Duration::from_micros(1);
        while Instant::now() < until {
            self.sum = self.sum.wrapping_add(msg[0]);
        }
    }
}

fn rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn phase(system: &ActorSystem, bounded: bool, seconds: u64) {
    let props = Props::new(|| Slow { sum: 0 });
    let props = if bounded {
        props.mailbox(MailboxConfig::bounded(10_000, Overflow::Fail))
    } else {
        props
    };
    let consumer = system.spawn(props).expect("spawn");
    let start = Instant::now();
    let mut next_report = Duration::ZERO;
    let mut sent = 0u64;
    while start.elapsed() < Duration::from_secs(seconds) {
        for _ in 0..1_000 {
            let msg = [sent; 4];
            if bounded {
                consumer
                    .send_blocking(msg, Duration::from_secs(10))
                    .expect("room within 10 s");
            } else {
                consumer.tell(msg);
            }
            sent += 1;
        }
        if start.elapsed() >= next_report {
            println!(
                "{:>9} {:>5.1} s: sent {:>11}, queued {:>10}, rss {:>7.1} MB",
                if bounded { "bounded" } else { "unbounded" },
                start.elapsed().as_secs_f64(),
                sent,
                consumer.queued(),
                rss_mb()
            );
            next_report += Duration::from_millis(500);
        }
    }
    system.stop(&consumer);
}

fn main() {
    let seconds = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let system = ActorSystem::builder().build().expect("system");
    phase(&system, true, seconds);
    phase(&system, false, seconds);
    system.shutdown();
    system.await_termination().expect("terminated");
}
