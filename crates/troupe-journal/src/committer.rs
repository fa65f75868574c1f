//! Group commit: appenders queue encoded frames and a completion; one writer
//! thread takes the whole queue, writes it with one `write`, makes it
//! durable with one fsync, then completes every append in the batch. While
//! it is busy, new appends gather into the next batch, so the batch grows
//! with the load and the cost of an fsync is shared.

use std::mem;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};

use crate::error::JournalError;
use crate::frame;
use crate::guard::lock;
use crate::tail::Tail;

/// An append's completion.
pub(crate) struct Done(Box<dyn FnOnce(Result<u64, JournalError>) + Send>);

impl Done {
    pub fn new(f: impl FnOnce(Result<u64, JournalError>) + Send + 'static) -> Self {
        Done(Box::new(f))
    }
}

/// Called once every append queued before it has been answered, with
/// `Err` if the journal has failed by then.
pub(crate) type Barrier = Box<dyn FnOnce(Result<(), JournalError>) + Send>;

#[derive(Default)]
struct Batch {
    frames: Vec<u8>,
    ends: Vec<usize>,
    done: Vec<(u64, Done)>,
    barriers: Vec<Barrier>,
}

impl Batch {
    fn is_empty(&self) -> bool {
        self.ends.is_empty() && self.barriers.is_empty()
    }
}

struct Queue {
    batch: Batch,
    next_seq: u64,
    closing: bool,
}

struct Progress {
    /// Every record below this sequence number has been answered.
    answered: u64,
    /// Set once a batch failed: later flushes report it.
    failure: Option<JournalError>,
}

struct Shared {
    queue: Mutex<Queue>,
    work: Condvar,
    progress: Mutex<Progress>,
    answered: Condvar,
}

/// The appenders' handle on the writer thread.
pub(crate) struct Committer {
    shared: Arc<Shared>,
}

/// Starts the writer thread for `tail`, whose next record is `next_seq`.
pub(crate) fn start(
    tail: Arc<Mutex<Tail>>,
    next_seq: u64,
) -> Result<(Committer, JoinHandle<()>), JournalError> {
    let shared = Arc::new(Shared {
        queue: Mutex::new(Queue {
            batch: Batch::default(),
            next_seq,
            closing: false,
        }),
        work: Condvar::new(),
        progress: Mutex::new(Progress {
            answered: next_seq,
            failure: None,
        }),
        answered: Condvar::new(),
    });
    let writer = shared.clone();
    let path = lock(&tail).path.clone();
    let handle = thread::Builder::new()
        .name("troupe-journal-commit".into())
        .spawn(move || run(&writer, &tail))
        .map_err(|e| JournalError::io("start the commit thread for", path, e))?;
    Ok((Committer { shared }, handle))
}

fn run(shared: &Shared, tail: &Mutex<Tail>) {
    let mut batch = Batch::default();
    loop {
        {
            let mut q = lock(&shared.queue);
            while q.batch.is_empty() && !q.closing {
                q = shared.work.wait(q).unwrap_or_else(|e| e.into_inner());
            }
            if q.batch.is_empty() {
                return; // closing, and nothing left to write
            }
            mem::swap(&mut q.batch, &mut batch);
        }
        let result = if batch.ends.is_empty() {
            // Only barriers: they learn whether an earlier batch failed.
            if lock(tail).failed() {
                Err(JournalError::Failed)
            } else {
                Ok(())
            }
        } else {
            let mut t = lock(tail);
            let result = t.write(&batch.frames, &batch.ends).and_then(|()| t.sync());
            if result.is_ok() {
                t.acknowledge();
            }
            result
        };
        let last = batch.done.last().map_or(0, |(seq, _)| seq + 1);
        for (seq, done) in batch.done.drain(..) {
            (done.0)(result.clone().map(|()| seq));
        }
        // After the appends queued before them are answered.
        for barrier in batch.barriers.drain(..) {
            barrier(result.clone());
        }
        batch.frames.clear();
        batch.ends.clear();
        let mut p = lock(&shared.progress);
        p.answered = p.answered.max(last);
        if let Err(e) = result {
            p.failure.get_or_insert(e);
        }
        shared.answered.notify_all();
    }
}

impl Committer {
    /// Queues `payload`; `done` is called after its batch's fsync.
    pub fn append(&self, payload: &[u8], done: Done) {
        let mut q = lock(&self.shared.queue);
        let seq = q.next_seq;
        q.next_seq += 1;
        frame::encode(payload, &mut q.batch.frames);
        let end = q.batch.frames.len();
        q.batch.ends.push(end);
        q.batch.done.push((seq, done));
        let first = q.batch.ends.len() == 1 && q.batch.barriers.is_empty();
        drop(q);
        if first {
            self.shared.work.notify_one();
        }
    }

    /// Queues `barrier`, called once every append queued before it has
    /// been answered (after its batch's fsync, or at once if none is
    /// pending), without writing anything; with the batch's failure, or
    /// `Failed` if an earlier one failed.
    pub fn after_pending(&self, barrier: Barrier) {
        let mut q = lock(&self.shared.queue);
        let first = q.batch.is_empty();
        q.batch.barriers.push(barrier);
        drop(q);
        if first {
            self.shared.work.notify_one();
        }
    }

    /// Queues `payload` and waits for its batch's fsync.
    pub fn append_wait(&self, payload: &[u8]) -> Result<u64, JournalError> {
        let slot = Arc::new((Mutex::new(None), Condvar::new()));
        let answer = slot.clone();
        self.append(
            payload,
            Done::new(move |result| {
                *lock(&answer.0) = Some(result);
                answer.1.notify_one();
            }),
        );
        let mut got = lock(&slot.0);
        loop {
            if let Some(result) = got.take() {
                return result;
            }
            got = slot.1.wait(got).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Waits until every append queued so far has been answered.
    pub fn flush(&self) -> Result<(), JournalError> {
        let target = lock(&self.shared.queue).next_seq;
        let mut p = lock(&self.shared.progress);
        while p.answered < target && p.failure.is_none() {
            p = self
                .shared
                .answered
                .wait(p)
                .unwrap_or_else(|e| e.into_inner());
        }
        match &p.failure {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// The sequence number the next append gets.
    pub fn next_seq(&self) -> u64 {
        lock(&self.shared.queue).next_seq
    }

    /// Lets the writer finish what is queued, then stop.
    pub fn close(&self) {
        lock(&self.shared.queue).closing = true;
        self.shared.work.notify_one();
    }
}
