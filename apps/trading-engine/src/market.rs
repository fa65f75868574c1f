//! A market: many order books addressed by [`BookId`], with the names they
//! were created under. Commands are routed to their book; the market adds no
//! state of its own beyond the name table.

use std::collections::HashMap;

use crate::book::OrderBook;
use crate::types::{BookId, Command, Outcome, Reject, Trade};

/// A set of order books and their names.
#[derive(Debug, Default)]
pub struct Market {
    books: Vec<OrderBook>,
    names: Vec<String>,
    by_name: HashMap<String, BookId>,
}

impl Market {
    /// A market with no books.
    pub fn new() -> Self {
        Market::default()
    }

    /// A market with a book for each name, in order (ids 0, 1, ...).
    pub fn with_books<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> Self {
        let mut market = Market::new();
        for name in names {
            market.add_book(name.as_ref());
        }
        market
    }

    /// The id of the book named `name`, creating an empty book if there is
    /// none yet.
    pub fn add_book(&mut self, name: &str) -> BookId {
        if let Some(&id) = self.by_name.get(name) {
            return id;
        }
        let id = BookId(u32::try_from(self.books.len()).expect("fewer than 2^32 books"));
        self.books.push(OrderBook::new(id));
        self.names.push(name.to_string());
        self.by_name.insert(name.to_string(), id);
        id
    }

    /// The id of the book named `name`, if the market has it.
    pub fn book_id(&self, name: &str) -> Option<BookId> {
        self.by_name.get(name).copied()
    }

    /// The name of book `id`.
    ///
    /// # Panics
    ///
    /// If the market has no book `id`.
    pub fn name(&self, id: BookId) -> &str {
        &self.names[id.0 as usize]
    }

    /// Book `id`, if the market has it.
    pub fn book(&self, id: BookId) -> Option<&OrderBook> {
        self.books.get(id.0 as usize)
    }

    /// Every book, in id order.
    pub fn books(&self) -> &[OrderBook] {
        &self.books
    }

    /// Applies one command, reporting trades to `on_trade` as they happen.
    pub fn execute(&mut self, command: &Command, mut on_trade: impl FnMut(Trade)) -> Outcome {
        let Some(book) = self.books.get_mut(command.book().0 as usize) else {
            return Outcome::Rejected(Reject::UnknownBook);
        };
        match command {
            Command::New(order) => book.place(order, &mut on_trade),
            Command::Cancel { id, .. } => book.cancel(*id),
        }
    }
}
