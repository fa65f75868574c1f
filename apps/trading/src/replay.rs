//! The replay tool's work: match a command file deterministically on one
//! thread and write its trades, or rebuild books from a transaction log.
//!
//! A command file is parsed completely before anything is matched, and the
//! trades are written to a temporary file renamed into place at the end: a
//! malformed line leaves no books touched and no trade file behind.

use std::fmt;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use trading_engine::text::{parse_commands, write_trade};
use trading_engine::{Command, Market, Outcome};

use crate::error::ReplayError;

/// What a replay did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplaySummary {
    /// Commands applied.
    pub commands: u64,
    /// New orders among them.
    pub new_orders: u64,
    /// Cancels among them.
    pub cancels: u64,
    /// Cancels of orders that were not resting (unknown or already done).
    pub cancels_ignored: u64,
    /// Commands refused (zero quantity, duplicate id, ...).
    pub rejected: u64,
    /// Trades executed.
    pub trades: u64,
    /// Lots traded.
    pub volume: u64,
    /// Books seen.
    pub books: usize,
    /// Orders resting at the end.
    pub resting: u64,
    /// Time spent matching (parsing and writing excluded).
    pub matching: Duration,
}

impl fmt::Display for ReplaySummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rate = self.commands as f64 / self.matching.as_secs_f64().max(1e-9);
        writeln!(f, "commands:        {}", self.commands)?;
        writeln!(f, "  new orders:    {}", self.new_orders)?;
        writeln!(
            f,
            "  cancels:       {} ({} ignored)",
            self.cancels, self.cancels_ignored
        )?;
        writeln!(f, "  rejected:      {}", self.rejected)?;
        writeln!(f, "trades:          {} ({} lots)", self.trades, self.volume)?;
        writeln!(f, "books:           {}", self.books)?;
        writeln!(f, "resting orders:  {}", self.resting)?;
        write!(
            f,
            "matching time:   {:.3} s ({:.2} M commands/s)",
            self.matching.as_secs_f64(),
            rate / 1e6
        )
    }
}

/// Applies `command` to `market`, counting into `summary` and passing each
/// trade to `on_trade`.
pub fn apply(
    market: &mut Market,
    command: &Command,
    summary: &mut ReplaySummary,
    mut on_trade: impl FnMut(&Market, trading_engine::Trade),
) {
    let mut trades = Vec::new();
    let outcome = market.execute(command, |t| trades.push(t));
    summary.commands += 1;
    match command {
        Command::New(_) => summary.new_orders += 1,
        Command::Cancel { .. } => summary.cancels += 1,
    }
    match outcome {
        Outcome::CancelIgnored => summary.cancels_ignored += 1,
        Outcome::Rejected(_) => summary.rejected += 1,
        _ => {}
    }
    for trade in trades {
        summary.trades += 1;
        summary.volume += trade.qty;
        on_trade(market, trade);
    }
}

/// Fills in the end-of-replay fields.
pub fn finish(market: &Market, summary: &mut ReplaySummary) {
    summary.books = market.books().len();
    summary.resting = market.books().iter().map(|b| b.resting() as u64).sum();
}

/// Matches the commands in `orders` and writes the trades to `trades_out`.
///
/// # Errors
///
/// If a file cannot be read or written, or any line is malformed (every
/// malformed line up to 20 is listed, with its number); nothing is written
/// then.
pub fn replay_file(orders: &Path, trades_out: &Path) -> Result<ReplaySummary, ReplayError> {
    let text = fs::read_to_string(orders).map_err(ReplayError::io("read", orders))?;
    let commands = parse_commands(&text, 20).map_err(|errors| ReplayError::Malformed {
        path: orders.to_path_buf(),
        errors,
    })?;
    let mut market = Market::new();
    let commands: Vec<Command> = commands.iter().map(|c| c.resolve(&mut market)).collect();
    drop(text);

    let tmp = trades_out.with_extension("partial");
    let file = File::create(&tmp).map_err(ReplayError::io("create", &tmp))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let mut summary = ReplaySummary::default();
    let mut line = String::with_capacity(64);
    let mut write_error = None;
    let mut matching = Duration::ZERO;
    // Match in chunks and write between them, so the matching time excludes
    // formatting and IO without holding every trade in memory.
    let mut trades = Vec::with_capacity(64 * 1024);
    for chunk in commands.chunks(64 * 1024) {
        let start = Instant::now();
        for command in chunk {
            apply(&mut market, command, &mut summary, |_, t| trades.push(t));
        }
        matching += start.elapsed();
        for trade in trades.drain(..) {
            line.clear();
            write_trade(&trade, &market, &mut line);
            if let Err(e) = out.write_all(line.as_bytes()) {
                write_error.get_or_insert(e);
            }
        }
    }
    summary.matching = matching;
    finish(&market, &mut summary);
    let flushed = out.flush().and_then(|()| out.get_ref().sync_all());
    if let Some(e) = write_error.or(flushed.err()) {
        let _ = fs::remove_file(&tmp);
        return Err(ReplayError::io("write", &tmp)(e));
    }
    fs::rename(&tmp, trades_out).map_err(|error| ReplayError::Move {
        from: tmp.clone(),
        to: trades_out.to_path_buf(),
        error,
    })?;
    Ok(summary)
}

/// Rebuilds books from the transaction log in `dir` (one engine's log) by
/// matching every logged command again, in log order. Reading does not
/// modify the log: a torn tail is left for the owner to truncate.
///
/// # Errors
///
/// If `dir` holds no log, a record is damaged (the error names the
/// segment and offset), or a record is not an encoded command.
pub fn replay_journal(dir: &Path) -> Result<(Market, ReplaySummary), ReplayError> {
    let has_segments = fs::read_dir(dir)
        .map_err(ReplayError::io("read", dir))?
        .flatten()
        .any(|e| e.file_name().to_string_lossy().ends_with(".log"));
    if !has_segments {
        return Err(ReplayError::NoSegments {
            dir: dir.to_path_buf(),
        });
    }
    let mut market = Market::new();
    let mut summary = ReplaySummary::default();
    let mut failure = None;
    let start = Instant::now();
    troupe_journal::read_from(dir, 0, |record| {
        if failure.is_some() {
            return;
        }
        match trading_engine::codec::decode(&record.payload, &mut market) {
            Ok(command) => apply(&mut market, &command, &mut summary, |_, _| {}),
            Err(error) => {
                failure = Some(ReplayError::Decode {
                    seq: record.seq,
                    error,
                })
            }
        }
    })
    .map_err(ReplayError::Journal)?;
    if let Some(e) = failure {
        return Err(e);
    }
    summary.matching = start.elapsed();
    finish(&market, &mut summary);
    Ok((market, summary))
}

/// One line per book with resting orders: best bid and ask with their sizes.
pub fn describe_books(market: &Market) -> String {
    let mut out = String::new();
    for book in market.books().iter().filter(|b| b.resting() > 0) {
        let side = |best: Option<(u64, u64)>| {
            best.map_or("-".to_string(), |(price, qty)| format!("{qty} @ {price}"))
        };
        out.push_str(&format!(
            "  {:<8} bid {:<16} ask {:<16} resting {}\n",
            market.name(book.id()),
            side(book.best_bid()),
            side(book.best_ask()),
            book.resting()
        ));
    }
    out
}

/// Writes `count` random commands over `books` books (named `B1`, `B2`,
/// ...) to `path`, reproducibly from `seed`.
///
/// # Errors
///
/// If the file cannot be written.
pub fn generate_file(
    path: &Path,
    count: usize,
    books: usize,
    seed: u64,
) -> Result<(), ReplayError> {
    let market = Market::with_books((1..=books.max(1)).map(|i| format!("B{i}")));
    let commands = trading_engine::stream::random_commands(&market, count, seed);
    let file = File::create(path).map_err(ReplayError::io("create", path))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let mut line = String::with_capacity(64);
    for command in &commands {
        line.clear();
        trading_engine::text::write_command(command, &market, &mut line);
        out.write_all(line.as_bytes())
            .map_err(ReplayError::io("write", path))?;
    }
    out.flush().map_err(ReplayError::io("write", path))
}
