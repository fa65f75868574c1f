//! What an engine of the distributed system writes to its journal, and its
//! whole state as bytes.
//!
//! A journal event is either one order (`Event::Order`) or a whole state
//! (`Event::State`): a standby that joins a primary receives the primary's
//! state, not its history, and records it as its journal's first event,
//! so its journal replays to the same books. The same bytes are the
//! engine's snapshots. A state is the books' resting orders, the counters
//! and digests, and the ids applied: its size follows what rests in the
//! books and the number of clients, never the number of orders processed.
//!
//! Format (little-endian): a version byte, the counters, the digests, the
//! last order, the resting orders (id, book, side, price, quantity), per
//! client its floor and the sequence numbers applied above it, then the
//! count and digest of the ids applied.

use std::collections::BTreeSet;

use trading_engine::codec::{self, DecodeError, Reader};
use trading_engine::{BookId, Command, NewOrder, OrderKind, Side};

use troupe_cluster::persistence::PersistenceError;

use super::applied::Applied;
use crate::engine_core::{CoreParts, EngineCore};
use crate::topology::BOOKS;

const VERSION: u8 = 1;
const ORDER: u8 = b'O';
const STATE: u8 = b'S';

/// An engine's books and the ids it applied.
pub struct EngineState {
    /// The books, counters and digests.
    pub core: EngineCore,
    /// The ids applied.
    pub applied: Applied,
}

/// One event of an engine's journal.
pub enum Event {
    /// An order, applied on top of what came before.
    Order(NewOrder),
    /// A whole state, replacing what came before.
    State(Box<EngineState>),
}

/// The journal event of `order`, encoded against `core`'s market.
pub fn order_event(order: &NewOrder, core: &EngineCore, out: &mut Vec<u8>) {
    out.clear();
    out.push(ORDER);
    codec::encode(&Command::New(*order), core.market(), out);
}

/// The journal event of a whole state (a catch-up or a snapshot), from its
/// encoding by [`encode`].
pub fn state_event(state: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(state.len() + 1);
    out.push(STATE);
    out.extend_from_slice(state);
    out
}

/// Reads journal events back. It keeps the market an order is decoded
/// against: making one (100 named books) for each event cost more than the
/// rest of a replay.
pub struct EventReader {
    market: trading_engine::Market,
}

impl Default for EventReader {
    fn default() -> Self {
        EventReader {
            market: crate::topology::market(),
        }
    }
}

impl EventReader {
    /// Reads one event.
    pub fn read(&mut self, bytes: &[u8]) -> Result<Event, String> {
        match bytes.split_first() {
            Some((&ORDER, rest)) => match codec::decode(rest, &mut self.market) {
                Ok(Command::New(order)) => Ok(Event::Order(order)),
                other => Err(format!("not an order: {other:?}")),
            },
            Some((&STATE, rest)) => decode(rest).map(|s| Event::State(Box::new(s))),
            Some((tag, _)) => Err(format!("unknown event tag {tag}")),
            None => Err("empty event".into()),
        }
    }

    /// Reads one event of `persistence_id` handed out by a journal's
    /// replay, failing as a replay does.
    pub fn read_stored(
        &mut self,
        persistence_id: &str,
        bytes: &[u8],
    ) -> Result<Event, PersistenceError> {
        self.read(bytes).map_err(|reason| PersistenceError::Decode {
            persistence_id: persistence_id.to_string(),
            what: "event",
            reason,
        })
    }
}

/// `core` and `applied` as bytes.
pub fn encode(core: &EngineCore, applied: &Applied) -> Vec<u8> {
    let parts = core.parts();
    let mut out = Vec::with_capacity(64 + 8 * BOOKS + 33 * parts.resting.len());
    out.push(VERSION);
    for n in [parts.orders, parts.trades, parts.rejected] {
        out.extend_from_slice(&n.to_le_bytes());
    }
    for d in parts.digests {
        out.extend_from_slice(&d.to_le_bytes());
    }
    match parts.last_order {
        Some(id) => {
            out.push(1);
            out.extend_from_slice(&id.to_le_bytes());
        }
        None => out.push(0),
    }
    out.extend_from_slice(&(parts.resting.len() as u64).to_le_bytes());
    for o in &parts.resting {
        out.extend_from_slice(&o.id.to_le_bytes());
        out.extend_from_slice(&o.book.0.to_le_bytes());
        out.push(match o.side {
            Side::Buy => 0,
            Side::Sell => 1,
        });
        out.extend_from_slice(&o.price.to_le_bytes());
        out.extend_from_slice(&o.qty.to_le_bytes());
    }
    let clients: Vec<_> = applied.entries().collect();
    let (count, digest) = applied.digest();
    out.extend_from_slice(&(clients.len() as u32).to_le_bytes());
    for (client, floor, above) in clients {
        out.extend_from_slice(&client.to_le_bytes());
        out.extend_from_slice(&floor.to_le_bytes());
        out.extend_from_slice(&(above.len() as u32).to_le_bytes());
        for s in above {
            out.extend_from_slice(&s.to_le_bytes());
        }
    }
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&digest.to_le_bytes());
    out
}

/// Reads what [`encode`] wrote.
pub fn decode(bytes: &[u8]) -> Result<EngineState, String> {
    read(&mut Reader::new(bytes)).map_err(|e| e.0)
}

fn read(r: &mut Reader<'_>) -> Result<EngineState, DecodeError> {
    let version = r.u8()?;
    if version != VERSION {
        return Err(DecodeError(format!(
            "state version {version}, this build reads {VERSION}"
        )));
    }
    let (orders, trades, rejected) = (r.u64()?, r.u64()?, r.u64()?);
    let mut digests = [0u64; BOOKS];
    for d in &mut digests {
        *d = r.u64()?;
    }
    let last_order = match r.u8()? {
        0 => None,
        _ => Some(r.u64()?),
    };
    let count = r.u64()?;
    // Each resting order takes 29 bytes: a count beyond what is left is a
    // damaged state, not a reason to allocate.
    if count > (r.rest().len() / 29) as u64 {
        return Err(DecodeError(format!(
            "{count} resting orders in {} bytes",
            r.rest().len()
        )));
    }
    let mut resting = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let id = r.u64()?;
        let book = BookId(r.u32()?);
        let side = match r.u8()? {
            0 => Side::Buy,
            1 => Side::Sell,
            s => return Err(DecodeError(format!("side {s}"))),
        };
        resting.push(NewOrder {
            id,
            book,
            side,
            price: r.u64()?,
            qty: r.u64()?,
            kind: OrderKind::Limit,
        });
    }
    let clients = r.u32()?;
    let mut entries = Vec::new();
    for _ in 0..clients {
        let (client, floor, n) = (r.u32()?, r.u32()?, r.u32()?);
        let mut above = BTreeSet::new();
        for _ in 0..n {
            above.insert(r.u32()?);
        }
        entries.push((client, floor, above));
    }
    let ids = (r.u64()?, r.u64()?);
    if !r.rest().is_empty() {
        return Err(DecodeError(format!(
            "{} bytes left over after the state",
            r.rest().len()
        )));
    }
    let core = EngineCore::from_parts(CoreParts {
        orders,
        trades,
        rejected,
        digests,
        last_order,
        resting,
    })
    .map_err(DecodeError)?;
    Ok(EngineState {
        core,
        applied: Applied::from_parts(entries, ids),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{Pattern, Scenario};

    /// Half of a scenario with orders left resting, applied; then the
    /// state through bytes; then the other half on both: equal books,
    /// digests and applied ids.
    #[test]
    fn a_state_read_back_continues_exactly_like_the_original() {
        let scenario = Scenario::new(4, 600)
            .unwrap()
            .with_pattern(Pattern::Resting);
        let orders: Vec<NewOrder> = (0..scenario.orders_per_client())
            .flat_map(|n| (0..4).map(move |c| scenario.order(c, n)))
            .collect();
        let (first, second) = orders.split_at(orders.len() / 2);
        let mut core = EngineCore::new();
        let mut applied = Applied::default();
        for o in first {
            core.process(o);
            applied.insert(o.id);
        }
        // The client settled its first 100 orders: forgotten, still counted.
        applied.settle_below(0, 100);
        assert!(core.summary().resting > 0, "the test needs resting orders");
        let bytes = encode(&core, &applied);
        let event = state_event(&bytes);
        let Ok(Event::State(copy)) = EventReader::default().read(&event) else {
            panic!("not read back as a state");
        };
        let EngineState {
            core: mut copy_core,
            applied: copy_applied,
        } = *copy;
        assert_eq!(copy_core.summary(), core.summary());
        assert_eq!(applied.digest().0, first.len() as u64);
        assert_eq!(copy_applied.digest(), applied.digest());
        for o in &orders {
            assert_eq!(copy_applied.contains(o.id), applied.contains(o.id));
        }
        for o in second {
            core.process(o);
            copy_core.process(o);
        }
        assert_eq!(copy_core.summary(), core.summary());
    }

    #[test]
    fn damaged_states_are_refused_with_a_reason() {
        let bytes = encode(&EngineCore::new(), &Applied::default());
        assert!(decode(&bytes[..bytes.len() - 1]).is_err());
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(&longer).err().unwrap().contains("left over"));
        let mut other = bytes;
        other[0] = 9;
        assert!(decode(&other).err().unwrap().contains("version"));
        assert!(EventReader::default().read(b"X").is_err());
    }
}
