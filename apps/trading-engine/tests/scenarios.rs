//! Data-driven matching tests: every `scenarios/*.scn` file lists commands,
//! the trades they must produce in order, and the books they must leave.
//! One helper checks them all; a new case is a new file.
//!
//! File format: sections introduced by `commands:`, `trades:` and `book:`.
//! Commands and trades use the replay tool's line formats; book lines are
//! `<book>,<BUY|SELL>,<order_id>,<price>,<qty>` listing every resting order,
//! books in order of first use, bids best first, then asks best first.
//! Lines starting with `#` are comments.

use std::fs;
use std::path::Path;

use trading_engine::text::{parse_commands, write_trade};
use trading_engine::{Market, Side};

fn sections(text: &str) -> (String, Vec<String>, Vec<String>) {
    let (mut commands, mut trades, mut book) = (String::new(), Vec::new(), Vec::new());
    let mut current = "";
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match line {
            "commands:" | "trades:" | "book:" => current = line,
            _ => match current {
                "commands:" => {
                    commands.push_str(line);
                    commands.push('\n');
                }
                "trades:" => trades.push(line.to_string()),
                "book:" => book.push(line.to_string()),
                _ => panic!("line outside a section: {line}"),
            },
        }
    }
    (commands, trades, book)
}

fn check(path: &Path) {
    let text = fs::read_to_string(path).unwrap();
    let (commands, want_trades, want_book) = sections(&text);
    let commands = parse_commands(&commands, 10).unwrap_or_else(|e| panic!("{e:?}"));
    let mut market = Market::new();
    let mut got_trades = Vec::new();
    for command in &commands {
        let command = command.resolve(&mut market);
        let mut trades = Vec::new();
        market.execute(&command, |t| trades.push(t));
        for trade in trades {
            let mut line = String::new();
            write_trade(&trade, &market, &mut line);
            got_trades.push(line.trim_end().to_string());
        }
    }
    let mut got_book = Vec::new();
    for book in market.books() {
        for side in [Side::Buy, Side::Sell] {
            for o in book.orders(side) {
                got_book.push(format!(
                    "{},{},{},{},{}",
                    market.name(book.id()),
                    side,
                    o.id,
                    o.price,
                    o.qty
                ));
            }
        }
    }
    let name = path.file_name().unwrap().to_string_lossy();
    assert_eq!(got_trades, want_trades, "{name}: trades");
    assert_eq!(got_book, want_book, "{name}: final book");
}

#[test]
fn every_scenario_file_matches() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios");
    let mut files: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "scn"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 8,
        "expected the scenario files in {}",
        dir.display()
    );
    for file in files {
        check(&file);
    }
}
