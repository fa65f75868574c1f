//! A deliberately naive order book to check the real one against: a flat
//! list of resting orders, searched in full for the best counterparty on
//! every fill. Obviously right, hopelessly slow.

use trading_engine::{
    NewOrder, OrderId, OrderKind, Outcome, Price, Qty, Reject, RestingOrder, Side,
};

#[derive(Default)]
pub struct ReferenceBook {
    /// (arrival sequence, order)
    orders: Vec<(u64, RestingOrder)>,
    seq: u64,
}

impl ReferenceBook {
    pub fn place(
        &mut self,
        o: &NewOrder,
        trades: &mut Vec<(OrderId, OrderId, Price, Qty)>,
    ) -> Outcome {
        if o.qty == 0 {
            return Outcome::Rejected(Reject::ZeroQuantity);
        }
        if o.kind != OrderKind::Market && o.price == 0 {
            return Outcome::Rejected(Reject::ZeroPrice);
        }
        if self.orders.iter().any(|(_, r)| r.id == o.id) {
            return Outcome::Rejected(Reject::DuplicateId);
        }
        let mut left = o.qty;
        while left > 0 {
            let best = self
                .orders
                .iter()
                .enumerate()
                .filter(|(_, (_, r))| r.side != o.side)
                .filter(|(_, (_, r))| match (o.kind, o.side) {
                    (OrderKind::Market, _) => true,
                    (_, Side::Buy) => r.price <= o.price,
                    (_, Side::Sell) => r.price >= o.price,
                })
                .min_by_key(|(_, (seq, r))| {
                    let price_rank = match o.side {
                        Side::Buy => r.price as i128,
                        Side::Sell => -(r.price as i128),
                    };
                    (price_rank, *seq)
                })
                .map(|(i, _)| i);
            let Some(i) = best else { break };
            let resting = &mut self.orders[i].1;
            let qty = left.min(resting.qty);
            let (buy, sell) = match o.side {
                Side::Buy => (o.id, resting.id),
                Side::Sell => (resting.id, o.id),
            };
            trades.push((buy, sell, resting.price, qty));
            resting.qty -= qty;
            left -= qty;
            if resting.qty == 0 {
                self.orders.remove(i);
            }
        }
        match o.kind {
            OrderKind::Limit => {
                if left > 0 {
                    self.seq += 1;
                    self.orders.push((
                        self.seq,
                        RestingOrder {
                            id: o.id,
                            side: o.side,
                            price: o.price,
                            qty: left,
                        },
                    ));
                }
                Outcome::Accepted {
                    filled: o.qty - left,
                    resting: left,
                }
            }
            _ => Outcome::Done {
                filled: o.qty - left,
                cancelled: left,
            },
        }
    }

    pub fn cancel(&mut self, id: OrderId) -> Outcome {
        match self.orders.iter().position(|(_, r)| r.id == id) {
            Some(i) => Outcome::Cancelled {
                qty: self.orders.remove(i).1.qty,
            },
            None => Outcome::CancelIgnored,
        }
    }

    /// Resting orders of `side`, best price first, oldest first within a price.
    pub fn orders(&self, side: Side) -> Vec<RestingOrder> {
        let mut v: Vec<_> = self.orders.iter().filter(|(_, r)| r.side == side).collect();
        v.sort_by_key(|(seq, r)| {
            let rank = match side {
                Side::Buy => -(r.price as i128),
                Side::Sell => r.price as i128,
            };
            (rank, *seq)
        });
        v.into_iter().map(|(_, r)| *r).collect()
    }
}
