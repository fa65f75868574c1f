//! A durable append-only log of byte records, for actors that persist
//! events and replay them when they restart (the trading system's matching
//! engines log every order before they acknowledge it).
//!
//! # On disk
//!
//! A journal is a directory of **segments**, `<first record's sequence
//! number, 20 digits>.log`. A segment is a run of **frames**:
//!
//! ```text
//! len: u32 LE | crc: u32 LE | payload: len bytes
//! ```
//!
//! `crc` is the CRC-32C of the four length bytes followed by the payload.
//! Records are numbered from 0 across segments; a segment is closed and a
//! new one started when it reaches [`Options::segment_bytes`].
//!
//! # Durability
//!
//! Chosen per journal ([`Durability`]): `None` (one `write` per append, no
//! fsync), `GroupCommit` (a writer thread batches appends and acknowledges
//! them after one fsync per batch), `SyncEach` (an fsync per append).
//!
//! # Recovery
//!
//! [`Journal::open`] checks every segment. A torn tail (the last segment
//! ends inside a record, or in bytes that never became a record, with no
//! valid record anywhere after them) is truncated to the last good record:
//! those bytes were never acknowledged. A bad record anywhere else, or one
//! with a valid record at any byte after it, is damage: the open fails with
//! [`JournalError::Corrupt`], naming the segment and the byte offset.
//! Nothing is ever skipped silently.
//!
//! ```
//! use troupe_journal::{read_from, Durability, Journal, Options};
//!
//! let dir = std::env::temp_dir().join(format!("journal-doc-{}", std::process::id()));
//! # let _ = std::fs::remove_dir_all(&dir);
//! let options = Options { durability: Durability::GroupCommit, ..Options::default() };
//! {
//!     let journal = Journal::open(&dir, options).unwrap();
//!     assert_eq!(journal.append(b"first").unwrap(), 0);
//!     journal.append_with(b"second", |result| assert_eq!(result.unwrap(), 1));
//! } // dropping the journal finishes the pending batch
//!
//! let mut replayed = Vec::new();
//! read_from(&dir, 0, |record| replayed.push(record.payload)).unwrap();
//! assert_eq!(replayed, [b"first".to_vec(), b"second".to_vec()]);
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```

#![forbid(unsafe_code)]

mod committer;
mod error;
mod frame;
mod guard;
mod journal;
mod reader;
mod scan;
mod segment;
mod tail;

pub use error::JournalError;
pub use frame::MAX_RECORD;
pub use journal::{Durability, Journal, Options};
pub use reader::{read_from, Record};
