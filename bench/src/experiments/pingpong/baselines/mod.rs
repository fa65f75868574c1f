//! Workloads without actors: the hand-written concurrent code each experiment
//! is measured against, because every original experiment's real question was what the
//! actor model costs compared with doing it by hand.

pub mod busy_spin;
pub mod tokio_mpsc;
