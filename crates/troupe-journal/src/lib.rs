//! A durable append-only log of byte records, for actors that persist
//! events and replay them when they restart (the trading system's matching
//! engines log every order before they acknowledge it).
//!
//! # On disk
//!
//! A journal is a directory of **segments**, `<first record's sequence
//! number, 20 digits>.log`. A segment is a header, a run of **frames**, and
//! (once it is closed) a seal:
//!
//! ```text
//! header: "TJNL" | version: u32 LE (1) | base: u64 LE | crc: u32 LE
//! frame:  len: u32 LE | crc: u32 LE | payload: len bytes
//! seal:   0xFFFF_FFFF: u32 LE | crc: u32 LE | next: u64 LE
//! ```
//!
//! All integers are little-endian and every `crc` is a CRC-32C: of the
//! header's first 16 bytes; of a frame's four length bytes followed by its
//! payload; of the seal's marker followed by `next`. `base` is the
//! segment's first record (it must match the file name). Records are
//! numbered from 0 across segments; a segment is closed and a new one
//! started when it reaches [`Options::segment_bytes`]. The new segment is
//! created whole (written under a temporary name, then renamed), then the
//! old one gets its seal, which names the record the new one starts at.
//!
//! # Durability
//!
//! Chosen per journal ([`Durability`]): `None` (one `write` per append, no
//! fsync), `GroupCommit` (a writer thread batches appends and acknowledges
//! them after one fsync per batch), `SyncEach` (an fsync per append).
//!
//! # A failed write
//!
//! A write, fsync or rotation that fails (a full disk, an IO error) is
//! reported to its append, and the journal refuses every later one, so
//! nothing is acknowledged behind a partial record. [`Journal::repair`]
//! recovers in place: the log is cut back to its last acknowledged record
//! (which needs no free space) and appends go on, so a failed append is
//! never in the log. Reopening recovers too.
//!
//! # Recovery
//!
//! [`Journal::open`] checks every segment. A torn tail (the last segment
//! ends inside a record, or in bytes that never became a record, with no
//! valid record anywhere after them) is truncated to the last good record:
//! those bytes were never acknowledged. A bad record anywhere else, or one
//! with a valid record (or seal) at any byte after it, is damage: the open
//! fails with [`JournalError::Corrupt`], naming the segment and the byte
//! offset. So is a missing segment, noticed from what the others say:
//!
//! - a first segment that does not start at record 0 (the log is never cut
//!   at its front): the segments before it were deleted;
//! - a segment that does not start where the one before it ends;
//! - a sealed last segment: the segment its seal names was deleted;
//! - a segment without a valid header: emptied, cut, or not a segment;
//! - a segment without a seal followed by one holding records: it was cut.
//!
//! Nothing is ever skipped silently. What the log alone cannot tell from a
//! crash: the last segment cut at a record boundary (or its records all
//! removed, header kept), and the whole directory emptied. Both look like
//! a crash before those records were appended; only something outside the
//! log (what was acknowledged to whom) can tell them apart.
//!
//! One crash window is not damage: a rotation interrupted after it created
//! the new segment but before it sealed the old one leaves an unsealed
//! segment followed by an empty one. Opening accepts that and writes the
//! missing seal.
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
