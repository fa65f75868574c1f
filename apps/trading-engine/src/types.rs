//! The vocabulary of matching: order ids, books, sides, prices, commands in
//! and trades and outcomes out. Plain data, cheap to copy.

use std::fmt;

/// An order's identity, chosen by whoever submits it. Unique among the
/// orders resting in one book; a new order that reuses a resting order's id
/// is rejected.
pub type OrderId = u64;

/// A price in ticks (an integer: no floating point in matching).
pub type Price = u64;

/// A quantity in lots.
pub type Qty = u64;

/// A dense index of an order book within a [`Market`](crate::Market).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BookId(pub u32);

/// Which side of the book an order is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// A bid: wants to buy at the price or lower.
    Buy,
    /// An ask: wants to sell at the price or higher.
    Sell,
}

impl Side {
    /// The side an order of this side trades against.
    pub fn opposite(self) -> Side {
        match self {
            Side::Buy => Side::Sell,
            Side::Sell => Side::Buy,
        }
    }
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Buy => "BUY",
            Side::Sell => "SELL",
        })
    }
}

/// How a new order treats the part that does not trade at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum OrderKind {
    /// Trades what it can up to its price, rests the remainder.
    #[default]
    Limit,
    /// Trades what it can up to its price, cancels the remainder.
    ImmediateOrCancel,
    /// Trades what it can at any price, cancels the remainder. Its price is
    /// ignored.
    Market,
}

/// A new order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NewOrder {
    /// The order's id.
    pub id: OrderId,
    /// The book it is for.
    pub book: BookId,
    /// Buy or sell.
    pub side: Side,
    /// Limit price in ticks (ignored for [`OrderKind::Market`]).
    pub price: Price,
    /// Quantity in lots; must be positive.
    pub qty: Qty,
    /// Limit, immediate-or-cancel or market.
    pub kind: OrderKind,
}

/// One instruction to a market.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Command {
    /// Place an order.
    New(NewOrder),
    /// Cancel the resting order `id` in `book`.
    Cancel {
        /// The order to cancel.
        id: OrderId,
        /// The book it rests in.
        book: BookId,
    },
}

impl Command {
    /// The book the command is for.
    pub fn book(&self) -> BookId {
        match self {
            Command::New(order) => order.book,
            Command::Cancel { book, .. } => *book,
        }
    }
}

/// An execution: `qty` lots changed hands at the resting order's `price`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Trade {
    /// The book it happened in.
    pub book: BookId,
    /// The buying order.
    pub buy: OrderId,
    /// The selling order.
    pub sell: OrderId,
    /// The execution price: the price of the order that was resting.
    pub price: Price,
    /// Lots traded.
    pub qty: Qty,
}

/// Why a command was refused. A refused command changes nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reject {
    /// A new order with quantity zero.
    ZeroQuantity,
    /// A limit or immediate-or-cancel order with price zero.
    ZeroPrice,
    /// A new order whose id is already resting in the book.
    DuplicateId,
    /// A command for a book the market does not have.
    UnknownBook,
}

impl fmt::Display for Reject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Reject::ZeroQuantity => "quantity is zero",
            Reject::ZeroPrice => "price is zero",
            Reject::DuplicateId => "an order with this id is already resting",
            Reject::UnknownBook => "no such book",
        })
    }
}

/// What a command did (the trades are reported separately, as they happen).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The new order traded `filled` lots and rests with `resting` lots.
    Accepted {
        /// Lots traded at once.
        filled: Qty,
        /// Lots left resting in the book (0: fully filled).
        resting: Qty,
    },
    /// The immediate-or-cancel or market order traded `filled` lots and the
    /// remaining `cancelled` lots were dropped.
    Done {
        /// Lots traded.
        filled: Qty,
        /// Lots that found no counterparty and were dropped.
        cancelled: Qty,
    },
    /// The resting order was removed with `qty` lots left.
    Cancelled {
        /// Lots that were still resting.
        qty: Qty,
    },
    /// A cancel for an order that is not resting (unknown, or already
    /// filled or cancelled): nothing changed.
    CancelIgnored,
    /// The command was refused and nothing changed.
    Rejected(Reject),
}
