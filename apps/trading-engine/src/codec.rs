//! A compact binary form of a [`Command`], for transaction logs: the book
//! travels by name, so a log can be replayed into a fresh [`Market`] whose
//! book ids were assigned in a different order.
//!
//! Layout (little-endian): `tag:u8` (1 new, 2 cancel), then for a new order
//! `kind:u8 side:u8 id:u64 price:u64 qty:u64`, for a cancel `id:u64`, then
//! `name_len:u8 name`.

use std::fmt;

use crate::market::Market;
use crate::types::{Command, NewOrder, OrderKind, Side};

const NEW: u8 = 1;
const CANCEL: u8 = 2;

/// A record that is not a command this codec wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not an encoded command: {}", self.0)
    }
}

impl std::error::Error for DecodeError {}

/// Appends the encoding of `command` (a command on `market`) to `out`.
///
/// # Panics
///
/// If the book's name is longer than 255 bytes.
pub fn encode(command: &Command, market: &Market, out: &mut Vec<u8>) {
    let name = market.name(command.book()).as_bytes();
    let name_len = u8::try_from(name.len()).expect("book names fit in 255 bytes");
    match command {
        Command::New(o) => {
            out.push(NEW);
            out.push(match o.kind {
                OrderKind::Limit => 0,
                OrderKind::ImmediateOrCancel => 1,
                OrderKind::Market => 2,
            });
            out.push(match o.side {
                Side::Buy => 0,
                Side::Sell => 1,
            });
            out.extend_from_slice(&o.id.to_le_bytes());
            out.extend_from_slice(&o.price.to_le_bytes());
            out.extend_from_slice(&o.qty.to_le_bytes());
        }
        Command::Cancel { id, .. } => {
            out.push(CANCEL);
            out.extend_from_slice(&id.to_le_bytes());
        }
    }
    out.push(name_len);
    out.extend_from_slice(name);
}

/// Decodes one command, adding its book to `market` if it is new.
pub fn decode(bytes: &[u8], market: &mut Market) -> Result<Command, DecodeError> {
    let mut r = Reader(bytes);
    let command = match r.u8()? {
        NEW => {
            let kind = match r.u8()? {
                0 => OrderKind::Limit,
                1 => OrderKind::ImmediateOrCancel,
                2 => OrderKind::Market,
                k => return Err(DecodeError(format!("unknown order kind {k}"))),
            };
            let side = match r.u8()? {
                0 => Side::Buy,
                1 => Side::Sell,
                s => return Err(DecodeError(format!("unknown side {s}"))),
            };
            let (id, price, qty) = (r.u64()?, r.u64()?, r.u64()?);
            let book = market.add_book(r.name()?);
            Command::New(NewOrder {
                id,
                book,
                side,
                price,
                qty,
                kind,
            })
        }
        CANCEL => {
            let id = r.u64()?;
            Command::Cancel {
                id,
                book: market.add_book(r.name()?),
            }
        }
        tag => return Err(DecodeError(format!("unknown tag {tag}"))),
    };
    if !r.0.is_empty() {
        return Err(DecodeError(format!("{} trailing bytes", r.0.len())));
    }
    Ok(command)
}

/// Reads little-endian fields off the front of a byte slice, failing on
/// a slice that ends early: this codec's reader, and that of other formats
/// built beside it (the distributed engines' states).
pub struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    /// A reader of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Reader(bytes)
    }

    /// The bytes not read yet.
    pub fn rest(&self) -> &'a [u8] {
        self.0
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.0.len() < n {
            return Err(DecodeError(format!(
                "truncated: wanted {n} more bytes, {} left",
                self.0.len()
            )));
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Ok(head)
    }

    /// The next byte.
    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }

    /// The next four bytes as a `u32`.
    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        let bytes = self.take(4)?;
        Ok(u32::from_le_bytes(bytes.try_into().expect("4 bytes")))
    }

    /// The next eight bytes as a `u64`.
    pub fn u64(&mut self) -> Result<u64, DecodeError> {
        let bytes = self.take(8)?;
        Ok(u64::from_le_bytes(bytes.try_into().expect("8 bytes")))
    }

    fn name(&mut self) -> Result<&'a str, DecodeError> {
        let len = self.u8()? as usize;
        let bytes = self.take(len)?;
        let name =
            std::str::from_utf8(bytes).map_err(|_| DecodeError("book name is not UTF-8".into()))?;
        if name.is_empty() {
            return Err(DecodeError("empty book name".into()));
        }
        Ok(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_shape() {
        let mut market = Market::with_books(["A1", "LONGER-NAME"]);
        let commands = [
            Command::New(NewOrder {
                id: u64::MAX,
                book: market.book_id("A1").unwrap(),
                side: Side::Sell,
                price: 99,
                qty: 1000,
                kind: OrderKind::ImmediateOrCancel,
            }),
            Command::Cancel {
                id: 3,
                book: market.book_id("LONGER-NAME").unwrap(),
            },
        ];
        for command in commands {
            let mut buf = Vec::new();
            encode(&command, &market, &mut buf);
            assert_eq!(decode(&buf, &mut market).unwrap(), command);
            for cut in 0..buf.len() {
                assert!(decode(&buf[..cut], &mut market).is_err(), "cut at {cut}");
            }
        }
    }

    #[test]
    fn decoding_into_a_fresh_market_adds_books_by_name() {
        let source = Market::with_books(["X", "Y"]);
        let command = Command::Cancel {
            id: 1,
            book: source.book_id("Y").unwrap(),
        };
        let mut buf = Vec::new();
        encode(&command, &source, &mut buf);
        let mut fresh = Market::new();
        let decoded = decode(&buf, &mut fresh).unwrap();
        assert_eq!(fresh.name(decoded.book()), "Y");
    }
}
