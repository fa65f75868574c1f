//! [`Sleep`]: a future that completes at a deadline of the system's
//! scheduler (`AsyncContext::sleep`), so that a manual clock moves it and
//! no async runtime is needed.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::scheduler::{Cancellable, Scheduler};

/// Completes at a deadline of the system's clock (see
/// [`AsyncContext::sleep`](super::AsyncContext::sleep)). Dropping it
/// cancels its timer.
#[must_use = "a Sleep does nothing unless awaited"]
pub struct Sleep {
    scheduler: Scheduler,
    deadline: Instant,
    shared: Arc<Mutex<Shared>>,
    /// The scheduler entry, made on the first poll.
    timer: Option<Cancellable>,
}

/// What the timer and the future share.
#[derive(Default)]
struct Shared {
    fired: bool,
    waker: Option<Waker>,
}

impl Sleep {
    pub(crate) fn new(scheduler: Scheduler, duration: Duration) -> Self {
        let deadline = scheduler.now() + duration;
        Sleep {
            scheduler,
            deadline,
            shared: Arc::default(),
            timer: None,
        }
    }

    /// When it completes, on the scheduler's clock.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        {
            let mut shared = this.shared.lock().unwrap_or_else(|e| e.into_inner());
            if shared.fired {
                return Poll::Ready(());
            }
            shared.waker = Some(cx.waker().clone());
        }
        if this.timer.is_none() {
            if this.scheduler.now() >= this.deadline {
                return Poll::Ready(());
            }
            let shared = this.shared.clone();
            this.timer = Some(this.scheduler.run_at(this.deadline, move || {
                let waker = {
                    let mut shared = shared.lock().unwrap_or_else(|e| e.into_inner());
                    shared.fired = true;
                    shared.waker.take()
                };
                if let Some(waker) = waker {
                    waker.wake();
                }
            }));
        }
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some(timer) = self.timer.take() {
            timer.cancel();
        }
    }
}

impl std::fmt::Debug for Sleep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}
