//! The local journal's in-memory index: per persistence id, the last
//! sequence number, the highest fencing token, the position of its first
//! record, and the appends not yet known to be acknowledged. Rebuilt from
//! the log on open (one pass), kept up to date by every append under the
//! journal's lock.
//!
//! # Rolling back after a repair
//!
//! An append moves its id's entry (sequence number, first position) when
//! it is queued, before the log acknowledges it, so that the next append
//! is checked against it. If the log then fails, its repair cuts every
//! record after the last acknowledged one, and the entries of the ids
//! whose records were cut must go back to what they were before those
//! appends. So each entry keeps, for each of its appends the log may not
//! have acknowledged yet, where the record went and what the entry said
//! before it; records below the log's acknowledged count are forgotten as
//! new appends come. A persistent actor has at most one append in flight,
//! so the first of them is kept inline and the list stays empty (no
//! allocation); a repair takes an entry back to before its first record
//! that was cut.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use troupe_journal::read_from;

use super::record::{self, Body};
use crate::persistence::error::PersistenceError;

/// What the journal knows of one persistence id (module header).
#[derive(Clone, Debug, Default)]
pub(super) struct Entry {
    /// The last event's sequence number (0: none yet), counting appends
    /// queued and not yet acknowledged.
    pub seq_nr: u64,
    /// The highest fencing token seen.
    pub token: u64,
    /// The position of the id's first events record.
    pub first_position: Option<u64>,
    /// The sequence number of the newest snapshot written by this process.
    pub snapshot_seq_nr: u64,
    /// The oldest append not known to be acknowledged, and the later ones.
    unacked: Option<Before>,
    more_unacked: Vec<Before>,
}

/// Where an append's record went, and what its entry said before it.
#[derive(Clone, Copy, Debug)]
struct Before {
    position: u64,
    seq_nr: u64,
    first_position: Option<u64>,
}

impl Entry {
    /// Forgets the appends whose records are below `acknowledged`.
    fn forget_acknowledged(&mut self, acknowledged: u64) {
        while self.unacked.is_some_and(|b| b.position < acknowledged) {
            self.unacked = if self.more_unacked.is_empty() {
                None
            } else {
                Some(self.more_unacked.remove(0))
            };
        }
    }

    /// Records `count` events appended at log position `position`.
    pub fn appended(&mut self, position: u64, count: u64, acknowledged: u64) {
        self.forget_acknowledged(acknowledged);
        let before = Before {
            position,
            seq_nr: self.seq_nr,
            first_position: self.first_position,
        };
        match self.unacked {
            None => self.unacked = Some(before),
            Some(_) => self.more_unacked.push(before),
        }
        self.first_position.get_or_insert(position);
        self.seq_nr += count;
    }

    /// Takes the entry back to before its first record at or above
    /// `acknowledged`, which a repair has cut.
    fn roll_back(&mut self, acknowledged: u64) {
        self.forget_acknowledged(acknowledged);
        if let Some(before) = self.unacked.take() {
            self.seq_nr = before.seq_nr;
            self.first_position = before.first_position;
            self.more_unacked.clear();
        }
    }
}

/// Every id's entry.
pub(super) type Index = Arc<Mutex<HashMap<String, Entry>>>;

pub(super) fn lock(index: &Index) -> MutexGuard<'_, HashMap<String, Entry>> {
    // A panic while holding the lock cannot leave an entry half-updated
    // (each update is a few plain stores), so a poisoned lock is usable.
    index.lock().unwrap_or_else(|e| e.into_inner())
}

/// Takes every entry back to the log's first `acknowledged` records, after
/// a repair cut the rest (module header).
pub(super) fn roll_back(index: &mut HashMap<String, Entry>, acknowledged: u64) {
    for entry in index.values_mut() {
        entry.roll_back(acknowledged);
    }
}

/// Reads the whole log once to rebuild the index (module header of
/// `local.rs`).
pub(super) fn rebuild(log_dir: &Path) -> Result<HashMap<String, Entry>, PersistenceError> {
    let mut index: HashMap<String, Entry> = HashMap::new();
    let mut error = None;
    read_from(log_dir, 0, |r| {
        if error.is_some() {
            return;
        }
        let rec = match record::decode(&r.payload) {
            Ok(rec) => rec,
            Err(e) => {
                error = Some(e);
                return;
            }
        };
        let Ok(id) = std::str::from_utf8(rec.id) else {
            error = Some(PersistenceError::Decode {
                persistence_id: String::from_utf8_lossy(rec.id).into_owned(),
                what: "record",
                reason: "the persistence id is not UTF-8".into(),
            });
            return;
        };
        let entry = match index.get_mut(id) {
            Some(e) => e,
            None => index.entry(id.to_string()).or_default(),
        };
        entry.token = entry.token.max(rec.token);
        if let Body::Events {
            first_seq_nr,
            count,
            ..
        } = rec.body
        {
            entry.seq_nr = first_seq_nr + u64::from(count) - 1;
            entry.first_position.get_or_insert(r.seq);
        }
    })?;
    error.map_or(Ok(index), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_roll_back_returns_to_before_the_first_cut_record() {
        let mut e = Entry::default();
        e.appended(10, 2, 10); // events 1-2 at 10
        e.appended(12, 1, 11); // event 3 at 12; 10 acknowledged
        e.appended(13, 1, 11); // event 4 at 13, pipelined
        assert_eq!(e.seq_nr, 4);
        // The log kept records below 12: events 1-2 stay.
        e.roll_back(12);
        assert_eq!((e.seq_nr, e.first_position), (2, Some(10)));
        // Nothing of it left unacknowledged.
        e.roll_back(0);
        assert_eq!(e.seq_nr, 2);
    }

    #[test]
    fn a_roll_back_of_an_ids_only_records_forgets_its_first_position() {
        let mut e = Entry::default();
        e.appended(5, 3, 5);
        e.roll_back(5);
        assert_eq!((e.seq_nr, e.first_position), (0, None));
    }

    #[test]
    fn acknowledged_appends_are_forgotten_and_never_rolled_back() {
        let mut e = Entry::default();
        e.appended(1, 1, 1);
        e.appended(2, 1, 3); // the first is acknowledged, and so is this one
        e.roll_back(3);
        assert_eq!(e.seq_nr, 2);
        assert!(e.unacked.is_none() && e.more_unacked.is_empty());
    }
}
