//! What can go wrong with a persistent actor, each named so that its
//! owner can act on it: the journal's own errors (IO, corruption, a
//! directory another writer holds), a fenced writer, an event or a state
//! that does not serialise, a damaged snapshot or record.

use std::fmt;
use std::path::PathBuf;

use troupe_journal::JournalError;

/// A persistence failure. Every one is reported to the actor's
/// [`PersistentActor::failed`](super::PersistentActor::failed) hook and
/// counted in the journal's [`Counters`](super::Counters); none is
/// swallowed.
#[derive(Debug, Clone)]
pub enum PersistenceError {
    /// The journal's log failed: an IO error (full disk, permissions), a
    /// damaged record in the middle of the log, a directory another process
    /// has open. The journal refuses every later append after a failed
    /// write; reopen it to recover (the torn tail is truncated then).
    Journal(JournalError),
    /// A newer activation of the same persistence id holds a higher token:
    /// this one must not write again. Its append was refused, nothing of it
    /// reached the log, and the actor stops.
    Fenced {
        /// The persistence id.
        persistence_id: String,
        /// The token this activation appended with.
        token: u64,
        /// The highest token the journal has seen for the id.
        highest: u64,
    },
    /// An append did not continue the id's sequence: the journal holds a
    /// different last event than this activation recovered. Only a second
    /// writer with the same token can cause it; the append is refused.
    SequenceMismatch {
        /// The persistence id.
        persistence_id: String,
        /// The sequence number the append started at.
        expected: u64,
        /// The one the journal would have given it.
        actual: u64,
    },
    /// An event or a state could not be encoded; nothing was written and
    /// the command that produced it got no reply.
    Serialize {
        /// The persistence id.
        persistence_id: String,
        /// "event" or "snapshot".
        what: &'static str,
        /// The encoder's message.
        reason: String,
    },
    /// A stored event, record or snapshot could not be decoded: the bytes
    /// passed their checksum, so the type changed incompatibly or the data
    /// was written by something else. Recovery stops rather than skip it.
    Decode {
        /// The persistence id.
        persistence_id: String,
        /// What was being decoded ("event", "snapshot", "record").
        what: &'static str,
        /// The decoder's message.
        reason: String,
    },
    /// A snapshot file is damaged (wrong magic, length or checksum).
    /// Snapshots are written by rename, so a crash cannot tear one: this is
    /// damage to the disk or a file written by something else. Remove the
    /// file to recover from the journal alone (events are never deleted).
    CorruptSnapshot {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Writing or reading a snapshot file failed.
    SnapshotIo {
        /// What was being done.
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error's message.
        reason: String,
    },
    /// The JetStream journal's NATS operation failed (no answer after its
    /// retries, no JetStream, a stream that cannot be made).
    JetStream {
        /// What was being done.
        op: &'static str,
        /// The NATS client's message.
        reason: String,
    },
    /// The persistence id is empty or longer than
    /// [`MAX_ID_BYTES`](crate::MAX_ID_BYTES) (255 bytes).
    InvalidId {
        /// The id, cut to 100 characters.
        persistence_id: String,
    },
    /// A write is larger than the journal takes in one record: the local
    /// journal's limit is [`troupe_journal::MAX_RECORD`] (64 MiB) for the
    /// events of one command and 4 GiB for a snapshot; the JetStream
    /// journal's is the server's `max_payload` (1 MB by default, learned
    /// from the server when the client connects). It was refused before
    /// anything was written or sent: nothing of it is stored. It is a
    /// rejection ([`is_rejection`](Self::is_rejection)): the command whose
    /// events were this large is rejected and the actor goes on with the
    /// state it had; a refused snapshot only makes the next recovery replay
    /// more events.
    TooLarge {
        /// The persistence id.
        persistence_id: String,
        /// What was too large ("event record", "snapshot").
        what: &'static str,
        /// Its size as it would have been written, in bytes.
        size: usize,
        /// The most the journal takes, in bytes.
        limit: usize,
    },
    /// The id's snapshot is ahead of its journal: it includes events the
    /// journal no longer holds (the journal lost its end: a log cut, or
    /// restored from an older copy). Recovery stops rather than serve a
    /// state the journal cannot continue. Restore the journal; or remove
    /// the snapshot, and the id recovers what the journal holds (the
    /// events after it are lost).
    SnapshotAhead {
        /// The persistence id.
        persistence_id: String,
        /// Where the snapshot is (its file).
        snapshot: String,
        /// The last event the snapshot includes.
        snapshot_seq_nr: u64,
        /// The last event of the id in the journal.
        journal_seq_nr: u64,
    },
}

impl PersistenceError {
    /// Whether this refused a write before anything of it was stored,
    /// leaving the journal and the actor's state as they were (an event or
    /// state that does not serialise, or is too large): the command is
    /// *rejected* and the actor goes on. Every other error is a *failure*
    /// (the journal could not write or read, or the activation was fenced
    /// or out of sequence): the actor stops, since what is stored may no
    /// longer match its state.
    pub fn is_rejection(&self) -> bool {
        matches!(
            self,
            PersistenceError::Serialize { .. } | PersistenceError::TooLarge { .. }
        )
    }
}

impl From<JournalError> for PersistenceError {
    fn from(e: JournalError) -> Self {
        PersistenceError::Journal(e)
    }
}

impl fmt::Display for PersistenceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PersistenceError::Journal(e) => write!(f, "persistence: {e}"),
            PersistenceError::Fenced {
                persistence_id,
                token,
                highest,
            } => write!(
                f,
                "persistence: {persistence_id} is fenced: this activation's token {token} \
                 is below {highest}, held by a newer activation; it stops without writing"
            ),
            PersistenceError::SequenceMismatch {
                persistence_id,
                expected,
                actual,
            } => write!(
                f,
                "persistence: {persistence_id}: append at sequence number {expected}, \
                 but the journal is at {actual} (a second writer with the same token?)"
            ),
            PersistenceError::Serialize {
                persistence_id,
                what,
                reason,
            } => write!(
                f,
                "persistence: {persistence_id}: the {what} could not be serialised: {reason}"
            ),
            PersistenceError::Decode {
                persistence_id,
                what,
                reason,
            } => write!(
                f,
                "persistence: {persistence_id}: a stored {what} could not be decoded: {reason}"
            ),
            PersistenceError::CorruptSnapshot { path, reason } => {
                write!(
                    f,
                    "persistence: snapshot {} is damaged: {reason}",
                    path.display()
                )
            }
            PersistenceError::SnapshotIo { op, path, reason } => {
                write!(
                    f,
                    "persistence: {op} snapshot {} failed: {reason}",
                    path.display()
                )
            }
            PersistenceError::JetStream { op, reason } => {
                write!(f, "persistence: JetStream journal: {op} failed: {reason}")
            }
            PersistenceError::InvalidId { persistence_id } => write!(
                f,
                "persistence: invalid persistence id {persistence_id:?} \
                 (it must be 1 to {} bytes)",
                crate::MAX_ID_BYTES
            ),
            PersistenceError::TooLarge {
                persistence_id,
                what,
                size,
                limit,
            } => write!(
                f,
                "persistence: {persistence_id}: the {what} is {size} bytes, over the \
                 {limit} bytes the journal takes in one record (for the JetStream journal, \
                 the NATS server's max_payload); nothing was written. Make it smaller \
                 (fewer or smaller events per command, a smaller state), or raise the \
                 server's max_payload"
            ),
            PersistenceError::SnapshotAhead {
                persistence_id,
                snapshot,
                snapshot_seq_nr,
                journal_seq_nr,
            } => write!(
                f,
                "persistence: {persistence_id}: the snapshot {snapshot} includes events up to \
                 {snapshot_seq_nr}, but the journal's last event of the id is \
                 {journal_seq_nr}: the journal lost events (cut, or restored from an older \
                 copy). Restore the journal, or remove the snapshot to recover the id from the \
                 journal alone (events {} to {snapshot_seq_nr} are then lost)",
                journal_seq_nr + 1
            ),
        }
    }
}

impl std::error::Error for PersistenceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PersistenceError::Journal(e) => Some(e),
            _ => None,
        }
    }
}
