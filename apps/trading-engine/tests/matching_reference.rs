//! Property tests: random command streams run through the real market and a
//! naive reference must give the same outcomes, the same trades in the same
//! order and the same final books; after every command the book is not
//! crossed and quantity is conserved.

mod support {
    pub mod reference;
}

use proptest::prelude::*;
use support::reference::ReferenceBook;
use trading_engine::{BookId, Command, Market, NewOrder, OrderKind, Outcome, Side};

const BOOKS: u32 = 3;

fn command() -> impl Strategy<Value = Command> {
    let kind = prop_oneof![
        8 => Just(OrderKind::Limit),
        1 => Just(OrderKind::ImmediateOrCancel),
        1 => Just(OrderKind::Market),
    ];
    let new = (
        1u64..60,
        0..BOOKS,
        any::<bool>(),
        95u64..106,
        0u64..25,
        kind,
    )
        .prop_map(|(id, book, buy, price, qty, kind)| {
            Command::New(NewOrder {
                id,
                book: BookId(book),
                side: if buy { Side::Buy } else { Side::Sell },
                price,
                qty,
                kind,
            })
        });
    let cancel = (1u64..60, 0..BOOKS).prop_map(|(id, book)| Command::Cancel {
        id,
        book: BookId(book),
    });
    prop_oneof![3 => new, 1 => cancel]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn matches_the_reference(commands in prop::collection::vec(command(), 1..300)) {
        let mut market = Market::with_books(["A", "B", "C"]);
        let mut reference: Vec<ReferenceBook> = (0..BOOKS).map(|_| ReferenceBook::default()).collect();
        let (mut lots_in, mut lots_traded, mut lots_dropped) = (0u64, 0u64, 0u64);
        for command in &commands {
            let mut trades = Vec::new();
            let outcome = market.execute(command, |t| trades.push(t));
            let book = command.book();
            let mut want_trades = Vec::new();
            let want = match command {
                Command::New(o) => reference[book.0 as usize].place(o, &mut want_trades),
                Command::Cancel { id, .. } => reference[book.0 as usize].cancel(*id),
            };
            prop_assert_eq!(outcome, want);
            let got: Vec<_> = trades.iter().map(|t| (t.buy, t.sell, t.price, t.qty)).collect();
            prop_assert_eq!(got, want_trades);
            prop_assert!(trades.iter().all(|t| t.book == book && t.qty > 0));

            if let (Command::New(o), Outcome::Accepted { .. } | Outcome::Done { .. }) =
                (command, outcome)
            {
                lots_in += o.qty;
            }
            match outcome {
                Outcome::Done { cancelled, .. } => lots_dropped += cancelled,
                Outcome::Cancelled { qty } => lots_dropped += qty,
                _ => {}
            }
            lots_traded += trades.iter().map(|t| t.qty).sum::<u64>();

            let real = market.book(book).unwrap();
            if let (Some((bid, _)), Some((ask, _))) = (real.best_bid(), real.best_ask()) {
                prop_assert!(bid < ask, "crossed book: bid {} ask {}", bid, ask);
            }
            let resting: u64 = market
                .books()
                .iter()
                .flat_map(|b| [b.orders(Side::Buy), b.orders(Side::Sell)])
                .flatten()
                .map(|o| o.qty)
                .sum();
            prop_assert_eq!(lots_in, 2 * lots_traded + resting + lots_dropped);
        }
        for (i, reference) in reference.iter().enumerate() {
            let real = market.book(BookId(i as u32)).unwrap();
            for side in [Side::Buy, Side::Sell] {
                prop_assert_eq!(real.orders(side), reference.orders(side));
            }
            prop_assert_eq!(real.resting(), reference.orders(Side::Buy).len() + reference.orders(Side::Sell).len());
        }
    }
}
