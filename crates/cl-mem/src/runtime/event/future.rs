//! Awaiting commands from async Rust: [`EventFuture`], from [`Event::wait_async`] and
//! [`UserEvent::wait_async`](crate::UserEvent::wait_async) (non-blocking transfers,
//! [`crate::Pending`], are `IntoFuture`).
//!
//! The design (how the future is woken, why `wait_async` borrows, PoCL's missing callback) is
//! documented on [`EventFuture`], where users see it too.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::runtime::event::{Event, EventStatus};

/// What the driver callback (or a host-side wake) and the future share.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Set once the event finished (callback ran, or the host set a user event's status).
    finished: bool,
    /// An error status the callback was called with (kept because a driver might report the
    /// error only there).
    failed: Option<cl_raw::ClError>,
    /// The waker of the last poll.
    waker: Option<Waker>,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    // A panic while holding this lock cannot leave `State` inconsistent (plain stores).
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    /// Records that the event finished and wakes the task: the callback's whole work (no user
    /// code, nothing that blocks; the waker is woken outside the lock).
    pub(crate) fn finish(&self, status: Option<EventStatus>) {
        let waker = {
            let mut s = lock(&self.state);
            s.finished = true;
            if let Some(EventStatus::Error(e)) = status {
                s.failed = Some(e);
            }
            s.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// The futures awaiting one user event through [`crate::UserEvent::wait_async`], woken by its
/// `set_complete` / `set_error` (see [`EventFuture`]: PoCL's missing callback).
#[derive(Debug, Default)]
pub(crate) struct Waiters {
    list: Mutex<Vec<Weak<Shared>>>,
}

impl Waiters {
    fn push(&self, shared: &Arc<Shared>) {
        let mut list = self.list.lock().unwrap_or_else(PoisonError::into_inner);
        // Futures dropped before the event finished leave dead entries: prune them here, so the
        // list stays as long as the number of live futures.
        list.retain(|w| w.strong_count() > 0);
        list.push(Arc::downgrade(shared));
    }

    /// Wakes every registered future (after the status was set).
    pub(crate) fn wake_all(&self) {
        let list = std::mem::take(&mut *self.list.lock().unwrap_or_else(PoisonError::into_inner));
        for shared in list.iter().filter_map(Weak::upgrade) {
            shared.finish(None);
        }
    }
}

/// Futures waiting on PoCL, checked by one watcher thread: PoCL never calls the `CL_COMPLETE`
/// callback of a command that terminated abnormally (a user event set to an error, and a command
/// whose wait-list event failed after it was enqueued: its status reads an error, no callback
/// comes), so a future woken only by the callback would hang there for good.
#[derive(Default)]
struct Watch {
    list: Mutex<Vec<(Event, Weak<Shared>)>>,
    more: Condvar,
}

static WATCH: OnceLock<Watch> = OnceLock::new();

/// How often the watcher reads the status of the futures it watches.
const WATCH_PERIOD: Duration = Duration::from_millis(2);

/// Whether `event` belongs to a PoCL platform (whose failure callbacks never come).
fn needs_watch(event: &Event) -> bool {
    event
        .context()
        .is_ok_and(|c| crate::runtime::quirks::quirks(&c.platform()).failed_events_need_polling)
}

/// Adds a waiting future to the watcher (started on first use; if the OS refuses the thread the
/// future relies on the callback alone, as on other drivers).
fn watch(event: &Event, shared: &Arc<Shared>) {
    static STARTED: OnceLock<bool> = OnceLock::new();
    let w = WATCH.get_or_init(Watch::default);
    let started = *STARTED.get_or_init(|| {
        std::thread::Builder::new()
            .name("cl-mem-pocl-watch".into())
            .spawn(watch_loop)
            .map_err(|e| tracing::warn!("the PoCL future watcher could not start: {e}"))
            .is_ok()
    });
    if started {
        w.list
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((event.clone(), Arc::downgrade(shared)));
        w.more.notify_one();
    }
}

/// The watcher: every [`WATCH_PERIOD`] while futures wait, wakes those whose command finished
/// (the future reads the status itself) and forgets those dropped; sleeps while none waits.
fn watch_loop() {
    let w = WATCH.get_or_init(Watch::default);
    loop {
        let entries = {
            let mut list = w.list.lock().unwrap_or_else(PoisonError::into_inner);
            while list.is_empty() {
                list = w.more.wait(list).unwrap_or_else(PoisonError::into_inner);
            }
            std::mem::take(&mut *list)
        };
        let mut keep = Vec::with_capacity(entries.len());
        for (event, weak) in entries {
            let Some(shared) = weak.upgrade() else {
                continue; // the future went
            };
            if matches!(
                event.status(),
                Ok(EventStatus::Queued | EventStatus::Submitted | EventStatus::Running)
            ) && !lock(&shared.state).finished
            {
                keep.push((event, weak));
            } else {
                shared.finish(None);
            }
        }
        if !keep.is_empty() {
            w.list
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .extend(keep);
        }
        std::thread::sleep(WATCH_PERIOD);
    }
}

/// A future that resolves when an event's command has finished: `Ok(())` on `CL_COMPLETE`,
/// [`Error::CommandFailed`] with the status when it terminated abnormally.
///
/// Made by [`Event::wait_async`]. Holds its own event reference, so it is `'static`, `Send` and
/// `Sync`. Polling it after it resolved reads the status again.
///
/// # How it works
///
/// The first poll reads the event's status (`clGetEventInfo`): a finished event resolves at once
/// and costs no callback. Otherwise the future stores the task's [`Waker`] in a small shared state
/// (a `Mutex<Option<Waker>>` and a "finished" flag: the std form of an `AtomicWaker`), registers
/// *one* `CL_COMPLETE` callback through [`Event::on`]. A future of a non-blocking
/// transfer ([`crate::Pending`]) holds the transfer's queue and flushes it at the first poll
/// that has to wait (`clWaitForEvents` flushes implicitly; a callback does not, and a driver may
/// keep an unflushed command on the host forever). A plain [`Event::wait_async`] knows no queue
/// it may safely touch (the event's `CL_EVENT_COMMAND_QUEUE` handle may belong to a queue the
/// caller already dropped): flush the queue ([`crate::Queue::flush`]) before awaiting a command
/// that may still be queued. Later polls only replace the
/// stored waker. The callback runs on cl-mem's callback worker (the driver's thread only hands it
/// over, [`Event::on`]) and does nothing but set the flag and wake. No
/// thread polls (except on PoCL, below), and nothing depends on an async runtime: any executor works (tokio, smol, a
/// hand-written `block_on`).
///
/// The result is read with `clGetEventInfo` in `poll`, not taken from the callback's argument:
/// NVIDIA's driver calls the callback with `CL_COMPLETE` for a user event set to an error
/// (docs/DEVICES.md, `nvidia-user-event-error-callback`), while the event's status reads the error.
/// A negative status becomes [`Error::CommandFailed`] with that status.
///
/// # `wait_async(&self)`, not `impl IntoFuture for Event`
///
/// Events are shared: the same event goes into the wait lists of later commands, is profiled after
/// it completed, or is awaited by several tasks. `wait_async` borrows it (the future holds its own
/// reference, so it is `'static` and `Send`) and sits next to the blocking [`Event::wait`]. An
/// `IntoFuture` impl would consume the event for `ev.await` and hide that awaiting registers a
/// driver callback. [`crate::Pending`] is different: its `wait(self)` already consumes it to hand
/// the host memory back, so it is `IntoFuture` (`pending.await` yields what `wait()` yields).
///
/// # Failed commands on PoCL
///
/// PoCL never calls the `CL_COMPLETE` callback of a user event set to an error status, nor of a
/// command that failed because an event of its wait list failed after it was enqueued
/// (docs/DEVICES.md, `pocl-user-event-error-callback`), so a future woken only by the callback
/// would hang there. [`UserEvent::wait_async`](crate::UserEvent::wait_async) also registers the
/// future with the user event itself, and `set_complete` / `set_error` wake it after setting the
/// status; and on PoCL every future that has to wait is also watched by one process-wide thread
/// that reads the waiting events' status every 2 ms while any waits.
///
/// A future of an event that never completes (a user event dropped without a status) never
/// resolves; dropping the future is fine at any time (the callback then wakes nobody).
#[must_use = "futures do nothing unless awaited or polled"]
#[derive(Debug)]
pub struct EventFuture {
    event: Event,
    shared: Option<Arc<Shared>>,
    waiters: Option<Arc<Waiters>>,
}

impl EventFuture {
    pub(crate) fn new(event: Event, waiters: Option<Arc<Waiters>>) -> EventFuture {
        EventFuture {
            event,
            shared: None,
            waiters,
        }
    }

    /// The event it waits for.
    pub(crate) fn event(&self) -> &Event {
        &self.event
    }
}

/// `Some(result)` when the status is final.
fn final_status(event: &Event) -> Option<Result<()>> {
    match event.status() {
        Ok(EventStatus::Complete) => Some(Ok(())),
        Ok(EventStatus::Error(status)) => Some(Err(Error::CommandFailed { status })),
        Ok(_) => None,
        Err(e) => Some(Err(e)),
    }
}

impl Future for EventFuture {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        // `EventFuture` is `Unpin` (no field is pinned).
        let this = self.get_mut();
        if let Some(shared) = &this.shared {
            let mut s = lock(&shared.state);
            if !s.finished {
                // Re-register on each poll: the task may have moved to another waker.
                match &s.waker {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => s.waker = Some(cx.waker().clone()),
                }
                return Poll::Pending;
            }
            let failed = s.failed;
            drop(s);
            return Poll::Ready(match (failed, final_status(&this.event)) {
                (_, Some(Err(e))) => Err(e),
                (Some(status), _) => Err(Error::CommandFailed { status }),
                // The callback ran for CL_COMPLETE (or the host set the user event): complete
                // even if a driver's status query lags behind.
                (None, _) => Ok(()),
            });
        }

        // First poll: an event that already finished costs no callback.
        let status = match this.event.status() {
            Ok(s) => s,
            Err(e) => return Poll::Ready(Err(e)),
        };
        match status {
            EventStatus::Complete => return Poll::Ready(Ok(())),
            EventStatus::Error(status) => return Poll::Ready(Err(Error::CommandFailed { status })),
            _ => {}
        }
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                waker: Some(cx.waker().clone()),
                ..State::default()
            }),
        });
        if let Some(waiters) = &this.waiters {
            waiters.push(&shared);
            // A `set_*` between the status read above and the push woke the list without us:
            // the status it set is visible now.
            if let Some(r) = final_status(&this.event) {
                return Poll::Ready(r);
            }
        }
        let in_callback = Arc::clone(&shared);
        // The callback only records and wakes (never blocks, never runs user code). On an event
        // that completed meanwhile the driver calls it at once, which wakes this task again.
        if let Err(e) = this
            .event
            .on_complete(move |status| in_callback.finish(Some(status)))
        {
            return Poll::Ready(Err(e));
        }
        if needs_watch(&this.event) {
            watch(&this.event, &shared);
        }
        this.shared = Some(shared);
        Poll::Pending
    }
}

impl Drop for EventFuture {
    fn drop(&mut self) {
        // The callback may still run later: let it wake nobody.
        if let Some(shared) = &self.shared {
            drop(lock(&shared.state).waker.take());
        }
    }
}

impl Event {
    /// A future that resolves when the command finished: the async form of [`Event::wait`].
    ///
    /// Woken by a `CL_COMPLETE` callback (registered on the first poll that finds the command
    /// unfinished; see [`EventFuture`] for the design). Works with any executor.
    ///
    /// # Errors
    ///
    /// The future resolves to [`Error::CommandFailed`] when the command terminated abnormally (a
    /// negative status), and to [`Error::Cl`] when `clGetEventInfo`, `clSetEventCallback` or
    /// `clFlush` fails.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(queue: &cl_mem::Queue) -> cl_mem::Result<()> {
    /// let marker = queue.enqueue_marker(&[])?;
    /// queue.flush()?; // a callback does not submit the command
    /// marker.wait_async().await?;
    /// # Ok(()) }
    /// ```
    pub fn wait_async(&self) -> EventFuture {
        EventFuture::new(self.clone(), None)
    }
}
