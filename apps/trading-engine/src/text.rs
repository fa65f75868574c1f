//! The text formats of the replay tool.
//!
//! Commands, one per line:
//!
//! ```text
//! NEW,<order_id>,<book>,<BUY|SELL>,<price>,<qty>[,<LIMIT|IOC|MARKET>]
//! CANCEL,<order_id>,<book>
//! ```
//!
//! Empty lines and lines starting with `#` are skipped. Trades, one per
//! line in execution order: `<book>,<buy_order_id>,<sell_order_id>,<price>,<qty>`.
//!
//! A file is parsed completely before anything is applied, so a malformed
//! line leaves the market untouched: [`parse_commands`] returns either every
//! command or every error (each with its 1-based line number).

use std::fmt::{self, Write};

use crate::market::Market;
use crate::types::{Command, NewOrder, OrderId, OrderKind, Price, Qty, Side, Trade};

/// The longest book name accepted (it must fit the binary codec's length byte).
pub const MAX_BOOK_NAME: usize = 64;

/// A line that is not a valid command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

/// A command as written, with its book still a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextCommand<'a> {
    /// `NEW,...`
    New {
        /// Order id.
        id: OrderId,
        /// Book name.
        book: &'a str,
        /// Side.
        side: Side,
        /// Limit price.
        price: Price,
        /// Quantity.
        qty: Qty,
        /// Order kind (`LIMIT` when the field is absent).
        kind: OrderKind,
    },
    /// `CANCEL,...`
    Cancel {
        /// Order id.
        id: OrderId,
        /// Book name.
        book: &'a str,
    },
}

impl TextCommand<'_> {
    /// The command on `market`, adding the book if it is new.
    pub fn resolve(&self, market: &mut Market) -> Command {
        match *self {
            TextCommand::New {
                id,
                book,
                side,
                price,
                qty,
                kind,
            } => Command::New(NewOrder {
                id,
                book: market.add_book(book),
                side,
                price,
                qty,
                kind,
            }),
            TextCommand::Cancel { id, book } => Command::Cancel {
                id,
                book: market.add_book(book),
            },
        }
    }
}

/// Parses one line. `Ok(None)` for blank and comment lines.
pub fn parse_line(line: &str) -> Result<Option<TextCommand<'_>>, String> {
    let line = line.trim_end_matches(['\r', '\n']);
    if line.trim().is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let fields: Vec<&str> = line.split(',').collect();
    match fields[0] {
        "NEW" => {
            if !(6..=7).contains(&fields.len()) {
                return Err(format!(
                    "NEW takes 5 or 6 fields (order_id,book,side,price,qty[,kind]), found {}",
                    fields.len() - 1
                ));
            }
            let kind = match fields.get(6) {
                None | Some(&"LIMIT") => OrderKind::Limit,
                Some(&"IOC") => OrderKind::ImmediateOrCancel,
                Some(&"MARKET") => OrderKind::Market,
                Some(other) => {
                    return Err(format!(
                        "order kind must be LIMIT, IOC or MARKET, found {other:?}"
                    ))
                }
            };
            let side = match fields[3] {
                "BUY" => Side::Buy,
                "SELL" => Side::Sell,
                other => return Err(format!("side must be BUY or SELL, found {other:?}")),
            };
            let qty = number(fields[5], "quantity")?;
            if qty == 0 {
                return Err("quantity must be positive".into());
            }
            let price = number(fields[4], "price")?;
            if price == 0 && kind != OrderKind::Market {
                return Err("price must be positive".into());
            }
            Ok(Some(TextCommand::New {
                id: number(fields[1], "order id")?,
                book: book_name(fields[2])?,
                side,
                price,
                qty,
                kind,
            }))
        }
        "CANCEL" => {
            if fields.len() != 3 {
                return Err(format!(
                    "CANCEL takes 2 fields (order_id,book), found {}",
                    fields.len() - 1
                ));
            }
            Ok(Some(TextCommand::Cancel {
                id: number(fields[1], "order id")?,
                book: book_name(fields[2])?,
            }))
        }
        other => Err(format!(
            "unknown command {other:?} (expected NEW or CANCEL)"
        )),
    }
}

fn number(field: &str, what: &str) -> Result<u64, String> {
    if field.is_empty() || !field.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "{what} must be a non-negative integer, found {field:?}"
        ));
    }
    field
        .parse()
        .map_err(|_| format!("{what} is out of range, found {field:?}"))
}

fn book_name(field: &str) -> Result<&str, String> {
    if field.is_empty() || field.len() > MAX_BOOK_NAME {
        return Err(format!(
            "book name must be 1 to {MAX_BOOK_NAME} bytes, found {field:?}"
        ));
    }
    if field.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "book name must not contain spaces, found {field:?}"
        ));
    }
    Ok(field)
}

/// Parses a whole command file. Either every line is valid and the commands
/// come back in order, or the errors do (at most `max_errors` of them, in
/// line order) and nothing was touched.
pub fn parse_commands(
    text: &str,
    max_errors: usize,
) -> Result<Vec<TextCommand<'_>>, Vec<ParseError>> {
    let mut commands = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in text.lines().enumerate() {
        match parse_line(line) {
            Ok(Some(command)) => commands.push(command),
            Ok(None) => {}
            Err(message) => {
                if errors.len() < max_errors {
                    errors.push(ParseError {
                        line: i + 1,
                        message,
                    });
                }
            }
        }
    }
    if errors.is_empty() {
        Ok(commands)
    } else {
        Err(errors)
    }
}

/// Appends `command` as a line (with its newline) to `out`.
pub fn write_command(command: &Command, market: &Market, out: &mut String) {
    match command {
        Command::New(o) => {
            let side = o.side;
            let _ = write!(
                out,
                "NEW,{},{},{side},{},{}",
                o.id,
                market.name(o.book),
                o.price,
                o.qty
            );
            match o.kind {
                OrderKind::Limit => {}
                OrderKind::ImmediateOrCancel => out.push_str(",IOC"),
                OrderKind::Market => out.push_str(",MARKET"),
            }
            out.push('\n');
        }
        Command::Cancel { id, book } => {
            let _ = writeln!(out, "CANCEL,{id},{}", market.name(*book));
        }
    }
}

/// Appends `trade` as a line (with its newline) to `out`.
pub fn write_trade(trade: &Trade, market: &Market, out: &mut String) {
    let _ = writeln!(
        out,
        "{},{},{},{},{}",
        market.name(trade.book),
        trade.buy,
        trade.sell,
        trade.price,
        trade.qty
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_commands_and_kinds() {
        assert_eq!(
            parse_line("NEW,7,A1,BUY,100,5").unwrap(),
            Some(TextCommand::New {
                id: 7,
                book: "A1",
                side: Side::Buy,
                price: 100,
                qty: 5,
                kind: OrderKind::Limit
            })
        );
        assert!(matches!(
            parse_line("NEW,7,A1,SELL,0,5,MARKET").unwrap(),
            Some(TextCommand::New {
                kind: OrderKind::Market,
                ..
            })
        ));
        assert_eq!(
            parse_line("CANCEL,7,A1\r").unwrap(),
            Some(TextCommand::Cancel { id: 7, book: "A1" })
        );
        assert_eq!(parse_line("# comment").unwrap(), None);
        assert_eq!(parse_line("").unwrap(), None);
    }

    #[test]
    fn rejects_malformed_lines_with_a_reason() {
        for (line, needle) in [
            ("NEW,1,A1,BUY,100", "5 or 6 fields"),
            ("NEW,x,A1,BUY,100,5", "order id"),
            ("NEW,1,A1,HOLD,100,5", "BUY or SELL"),
            ("NEW,1,A1,BUY,-1,5", "price"),
            ("NEW,1,A1,BUY,100,0", "positive"),
            ("NEW,1,A1,BUY,0,5", "price must be positive"),
            ("NEW,1,,BUY,100,5", "book name"),
            ("NEW,1,A1,BUY,100,5,FOK", "LIMIT, IOC or MARKET"),
            ("NEW,1,A1,BUY,99999999999999999999,5", "out of range"),
            ("CANCEL,1", "2 fields"),
            ("MODIFY,1,A1", "unknown command"),
        ] {
            let err = parse_line(line).unwrap_err();
            assert!(err.contains(needle), "{line}: {err}");
        }
    }

    #[test]
    fn a_file_with_a_bad_line_yields_only_errors() {
        let text = "NEW,1,A1,BUY,100,5\nNEW,2,A1,SELL\nCANCEL,1,A1\nbad\n";
        let errors = parse_commands(text, 10).unwrap_err();
        assert_eq!(
            errors.iter().map(|e| e.line).collect::<Vec<_>>(),
            vec![2, 4]
        );
        assert_eq!(parse_commands(text, 1).unwrap_err().len(), 1);
    }
}
