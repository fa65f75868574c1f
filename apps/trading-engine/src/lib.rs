//! Limit order books with price-time priority, as a pure library: no IO, no
//! threads, no clock. The same commands in the same order always produce the
//! same trades, which is what lets a matching engine rebuild its books by
//! replaying its transaction log.
//!
//! - [`OrderBook`]: one instrument. Best price first, oldest order first
//!   within a price, each execution at the resting order's price; partial
//!   fills; cancel by id; limit, immediate-or-cancel and market orders.
//! - [`Market`]: many books by [`BookId`], with their names.
//! - [`text`]: the line formats of the replay tool (`NEW,...`, `CANCEL,...`
//!   in, `<book>,<buy>,<sell>,<price>,<qty>` out).
//! - [`codec`]: a compact binary form of a command, for transaction logs.
//! - [`stream`]: reproducible random command streams for benchmarks.
//!
//! ```
//! use trading_engine::{Command, Market, NewOrder, OrderKind, Outcome, Side};
//!
//! let mut market = Market::new();
//! let a1 = market.add_book("A1");
//! let order = |id, side, price, qty| {
//!     Command::New(NewOrder { id, book: a1, side, price, qty, kind: OrderKind::Limit })
//! };
//! let mut trades = Vec::new();
//! market.execute(&order(1, Side::Sell, 100, 10), |t| trades.push(t));
//! let outcome = market.execute(&order(2, Side::Buy, 101, 4), |t| trades.push(t));
//!
//! assert_eq!(outcome, Outcome::Accepted { filled: 4, resting: 0 });
//! assert_eq!((trades[0].buy, trades[0].sell, trades[0].price, trades[0].qty), (2, 1, 100, 4));
//! assert_eq!(market.book(a1).unwrap().best_ask(), Some((100, 6)));
//! ```

#![forbid(unsafe_code)]

mod book;
pub mod codec;
mod market;
pub mod stream;
pub mod text;
mod types;

pub use book::{IdHasher, OrderBook, RestingOrder};
pub use market::Market;
pub use types::{
    BookId, Command, NewOrder, OrderId, OrderKind, Outcome, Price, Qty, Reject, Side, Trade,
};
