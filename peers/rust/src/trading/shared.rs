//! What every library's trading actors share and no library does for them:
//! the scenario's orders, an engine's books and counters (matched by the
//! `trading-engine` crate, the one troupe's engines use), the standby's
//! digests that make it checkable as a replica, the primary's queue of
//! orders waiting for their standby, the one-way completion token, and a
//! client's bookkeeping. The actors around them (who sends what to whom,
//! with which library call) live in the library modules.

use std::collections::VecDeque;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

use trading_engine::{BookId, Command, Market, NewOrder, OrderKind, Outcome, Side, Trade};

/// Matching engines, one per book letter, each a primary and a standby.
pub const ENGINES: usize = 10;
/// Order receivers; client `i` uses receiver `i mod 10`.
pub const RECEIVERS: usize = 10;
/// Books per engine (`A1..A10` on engine 0, ...).
pub const BOOKS_PER_ENGINE: usize = 10;
/// Books in the market.
pub const BOOKS: usize = ENGINES * BOOKS_PER_ENGINE;
/// Orders in one client loop: 15 asks, then 15 bids on the same books.
pub const LOOP: usize = 30;
/// The volume of every order of the seed scenario.
const VOLUME: u64 = 1000;

/// The `n`th order (0-based) of client `client` in the seed scenario, the
/// same order troupe's `trading::Scenario::order` and the Pekko peer make:
/// books `A1..A5, B1..B5, C1..C5`, book `X<i>` at price `100 - i`, asks
/// then bids of 1000 lots, so every bid fills one resting ask whatever the
/// interleaving of the clients and every book ends empty.
pub fn scenario_order(client: usize, n: usize) -> NewOrder {
    let position = n % LOOP;
    let side = if position < LOOP / 2 {
        Side::Sell
    } else {
        Side::Buy
    };
    let slot = position % (LOOP / 2);
    let (letter, number) = (slot / 5, slot % 5 + 1);
    NewOrder {
        id: ((client as u64) << 32) | n as u64,
        book: BookId((letter * BOOKS_PER_ENGINE + number - 1) as u32),
        side,
        price: 100 - number as u64,
        qty: VOLUME,
        kind: OrderKind::Limit,
    }
}

/// The name of book `b` (`A1` is book 0, `J10` book 99), as troupe's.
fn book_name(b: usize) -> String {
    let letter = (b'A' + (b / BOOKS_PER_ENGINE) as u8) as char;
    format!("{letter}{}", b % BOOKS_PER_ENGINE + 1)
}

/// The engine that owns `book`.
pub fn engine_of(book: BookId) -> usize {
    book.0 as usize / BOOKS_PER_ENGINE
}

/// A market with all 100 books, named as troupe's (`A1` is book 0).
fn market() -> Market {
    Market::with_books((0..BOOKS).map(book_name))
}

/// Folds `word` into a book's digest: order-sensitive, so a standby that
/// processed its primary's orders in another order has other digests even
/// where the counts and the (empty) books agree.
fn fold(digest: u64, word: u64) -> u64 {
    (digest.rotate_left(27) ^ word).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

fn fold_order(digest: u64, o: &NewOrder) -> u64 {
    let side = u64::from(o.side == Side::Sell);
    [0x4f52_4400 | side, o.id, o.price, o.qty]
        .into_iter()
        .fold(digest, fold)
}

fn fold_trade(digest: u64, t: &Trade) -> u64 {
    [0x5452_4144, t.buy, t.sell, t.price, t.qty]
        .into_iter()
        .fold(digest, fold)
}

/// What an engine did, for the checks after a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    /// Orders processed.
    pub orders: u64,
    /// Trades made.
    pub trades: u64,
    /// Orders the books refused.
    pub rejected: u64,
    /// Orders resting at the end.
    pub resting: u64,
    /// A hash of every resting order, in priority order.
    pub fingerprint: u64,
    /// Per book, the digest of its orders and trades in processing order.
    pub digests: Vec<u64>,
    /// Acknowledgements from the standby for no pending order, or out of
    /// sequence (request-reply; always 0 on a standby).
    pub stray_acks: u64,
}

impl Summary {
    /// Why `standby` is not this primary's replica, or `None`.
    pub fn differs(&self, standby: &Summary) -> Option<String> {
        let counts = |s: &Summary| (s.orders, s.trades, s.rejected, s.resting);
        if counts(self) != counts(standby) {
            return Some(format!(
                "standby (orders, trades, rejected, resting) {:?} differ from the primary's {:?}",
                counts(standby),
                counts(self)
            ));
        }
        let books: Vec<String> = (0..BOOKS)
            .filter(|&b| self.digests.get(b) != standby.digests.get(b))
            .map(book_name)
            .collect();
        if !books.is_empty() {
            return Some(format!(
                "the standby processed other orders or made other trades than the primary in books {}",
                books.join(", ")
            ));
        }
        (self.fingerprint != standby.fingerprint)
            .then(|| "the standby's resting orders differ from the primary's".to_string())
    }
}

/// One engine's state, primary or standby: the books, the counters, and
/// (a primary in request-reply) the orders waiting for the standby's
/// acknowledgement, each with its client `C` (the library's reference).
pub struct Engine<C> {
    market: Market,
    orders: u64,
    trades: u64,
    rejected: u64,
    digests: Vec<u64>,
    pending: VecDeque<(C, u64)>,
    next_seq: u64,
    first_pending: u64,
    stray_acks: u64,
    /// `--fault reorder-standby` on this engine: it swaps the first two
    /// orders of one book it is given (see [`Engine::replicate`]).
    reorder: bool,
    held: Option<NewOrder>,
}

impl<C> Engine<C> {
    /// An engine with empty books; `reorder`: the fault above.
    pub fn new(reorder: bool) -> Self {
        Engine {
            market: market(),
            orders: 0,
            trades: 0,
            rejected: 0,
            digests: vec![0; BOOKS],
            pending: VecDeque::new(),
            next_seq: 0,
            first_pending: 0,
            stray_acks: 0,
            reorder,
            held: None,
        }
    }

    /// Matches one order.
    pub fn process(&mut self, o: &NewOrder) {
        let book = o.book.0 as usize;
        let mut digest = fold_order(self.digests[book], o);
        let mut trades = 0;
        let outcome = self.market.execute(&Command::New(*o), |t| {
            digest = fold_trade(digest, &t);
            trades += 1;
        });
        self.digests[book] = digest;
        self.orders += 1;
        self.trades += trades;
        if matches!(outcome, Outcome::Rejected(_)) {
            self.rejected += 1;
        }
    }

    /// A standby's processing of a replicated order: [`Engine::process`],
    /// except under the fault, which holds the first order back and
    /// processes it after the next order of its book (the check must then
    /// see a standby that is not a replica).
    pub fn replicate(&mut self, o: &NewOrder) {
        if !self.reorder {
            return self.process(o);
        }
        match self.held.take() {
            None => self.held = Some(*o),
            Some(h) if h.book == o.book => {
                self.process(o);
                self.process(&h);
                self.reorder = false;
            }
            Some(h) => {
                self.held = Some(h);
                self.process(o);
            }
        }
    }

    /// A primary keeps the order `id` of `client` until its standby has
    /// acknowledged it; the sequence number to send the standby.
    pub fn hold(&mut self, client: C, id: u64) -> u64 {
        self.pending.push_back((client, id));
        self.next_seq += 1;
        self.next_seq - 1
    }

    /// The standby acknowledged `seq`: the client to answer and its order,
    /// or `None` (counted) for an acknowledgement out of sequence. The
    /// standby's mailbox is FIFO from its primary, so acknowledgements
    /// come in sequence order.
    pub fn acked(&mut self, seq: u64) -> Option<(C, u64)> {
        if seq != self.first_pending {
            self.stray_acks += 1;
            return None;
        }
        let done = self.pending.pop_front();
        if done.is_some() {
            self.first_pending += 1;
        } else {
            self.stray_acks += 1;
        }
        done
    }

    /// The counters, the books' fingerprint and digests.
    pub fn summary(&self) -> Summary {
        let mut hasher = DefaultHasher::new();
        let mut resting = 0;
        for book in self.market.books() {
            for side in [Side::Buy, Side::Sell] {
                for order in book.orders(side) {
                    (book.id(), order).hash(&mut hasher);
                    resting += 1;
                }
            }
        }
        Summary {
            orders: self.orders,
            trades: self.trades,
            rejected: self.rejected,
            resting,
            fingerprint: hasher.finish(),
            digests: self.digests.clone(),
            stray_acks: self.stray_acks + self.pending.len() as u64,
        }
    }
}

/// One-way: primary and standby each complete the client's token; the
/// second tells the client. A client has one order in flight, so it keeps
/// one token and re-arms it for each order, as the Pekko peer does.
pub struct Token<C> {
    left: AtomicU32,
    id: AtomicU64,
    /// Who to tell.
    pub client: C,
}

impl<C> Token<C> {
    /// A token that will tell `client`.
    pub fn new(client: C) -> Self {
        Token {
            left: AtomicU32::new(0),
            id: AtomicU64::new(0),
            client,
        }
    }

    /// Expects two completions of order `id`. Only the client calls it,
    /// with no order in flight; the send carrying the token publishes it.
    pub fn arm(&self, id: u64) {
        self.id.store(id, Ordering::Relaxed);
        self.left.store(2, Ordering::Relaxed);
    }

    /// One party is done: the order's id when it was the second (the
    /// caller tells the client), else `None`. A completion of a token
    /// that is not armed is answered as one too many (`Some` of an id the
    /// client is not waiting for, which it counts), never dropped.
    pub fn complete(&self) -> Option<u64> {
        let id = self.id.load(Ordering::Relaxed);
        match self.left.fetch_sub(1, Ordering::AcqRel) {
            2 => None,
            _ => Some(id),
        }
    }
}

/// A client's bookkeeping: its orders, the one in flight, the latency of
/// each answered order and the answers it did not expect.
pub struct ClientBook {
    index: usize,
    total: usize,
    sent: usize,
    in_flight: Option<(u64, Instant)>,
    latencies_ns: Vec<u64>,
    unexpected: u64,
}

/// What a client does after an answer.
pub enum Next {
    /// Send this order.
    Send(NewOrder),
    /// Its last order was answered.
    Finished,
    /// Nothing: the answer was not for the order in flight (counted).
    Ignore,
}

impl ClientBook {
    /// Client `index` of a run with `total` orders per client.
    pub fn new(index: usize, total: usize) -> Self {
        ClientBook {
            index,
            total,
            sent: 0,
            in_flight: None,
            latencies_ns: Vec::with_capacity(total),
            unexpected: 0,
        }
    }

    /// The first order.
    pub fn start(&mut self) -> NewOrder {
        self.send()
    }

    fn send(&mut self) -> NewOrder {
        let o = scenario_order(self.index, self.sent);
        self.sent += 1;
        self.in_flight = Some((o.id, Instant::now()));
        o
    }

    /// Order `id` was answered.
    pub fn answered(&mut self, id: u64) -> Next {
        match self.in_flight {
            Some((expected, at)) if expected == id => {
                self.latencies_ns.push(at.elapsed().as_nanos() as u64);
                self.in_flight = None;
                if self.sent < self.total {
                    Next::Send(self.send())
                } else {
                    Next::Finished
                }
            }
            _ => {
                self.unexpected += 1;
                Next::Ignore
            }
        }
    }

    /// What it saw: every answered order's latency, and the answers it did
    /// not expect.
    pub fn report(&mut self) -> ClientReport {
        ClientReport {
            latencies_ns: std::mem::take(&mut self.latencies_ns),
            unexpected: self.unexpected,
        }
    }

    /// Orders answered so far.
    pub fn answered_count(&self) -> usize {
        self.latencies_ns.len()
    }
}

/// A client's results, asked for after the run.
#[derive(Debug, Default)]
pub struct ClientReport {
    /// Latency of every answered order, send to answer, in ns.
    pub latencies_ns: Vec<u64>,
    /// Answers for an order that was not in flight: a doubled answer.
    pub unexpected: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scenario_matches_every_ask_and_a_swapped_standby_is_caught() {
        // Two clients' first loops, interleaved, on one engine pair.
        let orders: Vec<NewOrder> = (0..LOOP)
            .flat_map(|n| [scenario_order(0, n), scenario_order(1, n)])
            .collect();
        let (mut primary, mut standby, mut swapped) = (
            Engine::<()>::new(false),
            Engine::<()>::new(false),
            Engine::<()>::new(true),
        );
        for o in &orders {
            primary.process(o);
            standby.replicate(o);
            swapped.replicate(o);
        }
        let p = primary.summary();
        assert_eq!((p.orders, p.trades, p.resting), (60, 30, 0));
        assert_eq!(p.differs(&standby.summary()), None);
        let why = p.differs(&swapped.summary()).expect("not a replica");
        assert!(why.ends_with("books A1"), "{why}");
    }

    #[test]
    fn a_token_tells_on_the_second_completion_and_a_third_is_an_extra_answer() {
        let token = Token::new(());
        token.arm(7);
        assert_eq!(token.complete(), None);
        assert_eq!(token.complete(), Some(7));
        let mut client = ClientBook::new(0, 1);
        let first = client.start();
        assert!(matches!(client.answered(first.id), Next::Finished));
        assert!(matches!(client.answered(first.id), Next::Ignore));
        let report = client.report();
        assert_eq!((report.latencies_ns.len(), report.unexpected), (1, 1));
    }

    #[test]
    fn acknowledgements_answer_pending_orders_in_sequence() {
        let mut e = Engine::<&str>::new(false);
        assert_eq!(e.hold("a", 1), 0);
        assert_eq!(e.hold("b", 2), 1);
        assert_eq!(e.acked(1), None);
        assert_eq!(e.acked(0), Some(("a", 1)));
        assert_eq!(e.acked(1), Some(("b", 2)));
        assert_eq!(e.summary().stray_acks, 1);
    }
}
