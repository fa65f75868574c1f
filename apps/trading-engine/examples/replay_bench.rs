//! Single-threaded matching speed: a reproducible random stream of limit,
//! immediate-or-cancel, market and cancel commands over ten books, replayed
//! five times; prints commands/s for each run and the median.
//!
//! `cargo run --release -p trading-engine --example replay_bench -- [commands]`

use std::time::Instant;

use trading_engine::stream::random_commands;
use trading_engine::Market;

fn main() {
    let count: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("commands must be a number"))
        .unwrap_or(5_000_000);
    let names: Vec<String> = (1..=10).map(|i| format!("A{i}")).collect();
    let commands = random_commands(&Market::with_books(&names), count, 42);
    let mut rates = Vec::new();
    for run in 0..6 {
        let mut market = Market::with_books(&names);
        let mut trades = 0u64;
        let start = Instant::now();
        for command in &commands {
            market.execute(command, |_| trades += 1);
        }
        let secs = start.elapsed().as_secs_f64();
        let rate = count as f64 / secs;
        let resting: usize = market.books().iter().map(|b| b.resting()).sum();
        println!(
            "run {run}{}: {count} commands in {secs:.3} s = {:.2} M commands/s ({trades} trades, {resting} resting)",
            if run == 0 { " (warm-up)" } else { "" },
            rate / 1e6
        );
        if run > 0 {
            rates.push(rate);
        }
    }
    rates.sort_by(f64::total_cmp);
    println!("median: {:.2} M commands/s", rates[rates.len() / 2] / 1e6);
}
