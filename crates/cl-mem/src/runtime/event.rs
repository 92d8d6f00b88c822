//! [`Event`]: completion of an enqueued command; [`UserEvent`]: one the host completes.

use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Arc;

use cl_raw::object::Object;
use cl_raw::{event as raw, sys, ClError};
use smallvec::SmallVec;

use crate::error::{Error, Result};
use crate::raw_handle::{self, eq_by_handle, release_in_drop, retain_for_clone, RawHandle};
use crate::runtime::context::Context;
use crate::runtime::worker::Place;
pub(crate) mod future;

use self::future::{EventFuture, Waiters};

/// `CL_EVENT_COMMAND_EXECUTION_STATUS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventStatus {
    /// `CL_QUEUED`.
    Queued,
    /// `CL_SUBMITTED`.
    Submitted,
    /// `CL_RUNNING`.
    Running,
    /// `CL_COMPLETE`.
    Complete,
    /// The command was abnormally terminated with this (negative) status.
    Error(ClError),
}

impl EventStatus {
    /// Decodes a raw execution status.
    pub(crate) fn from_raw(status: sys::cl_int) -> EventStatus {
        match status {
            s if s == sys::CL_COMPLETE as sys::cl_int => EventStatus::Complete,
            s if s == sys::CL_RUNNING as sys::cl_int => EventStatus::Running,
            s if s == sys::CL_SUBMITTED as sys::cl_int => EventStatus::Submitted,
            s if s == sys::CL_QUEUED as sys::cl_int => EventStatus::Queued,
            s => EventStatus::Error(ClError::from_code(s)),
        }
    }
}

/// The states a callback can be registered for (`clSetEventCallback`'s
/// `command_exec_callback_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallbackOn {
    /// `CL_SUBMITTED`.
    Submitted,
    /// `CL_RUNNING`.
    Running,
    /// `CL_COMPLETE` (also fires, with an error status, when the command fails).
    Complete,
}

/// Device timestamps of a command in nanoseconds (`clGetEventProfilingInfo`); needs a queue
/// created with `QueueProperties::PROFILING_ENABLE` and a completed command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProfilingTimes {
    /// `CL_PROFILING_COMMAND_QUEUED`.
    pub queued: u64,
    /// `CL_PROFILING_COMMAND_SUBMIT`.
    pub submitted: u64,
    /// `CL_PROFILING_COMMAND_START`.
    pub started: u64,
    /// `CL_PROFILING_COMMAND_END`.
    pub ended: u64,
}

/// An OpenCL event. Owns one reference: `Clone` retains, `Drop` releases (never panics).
pub struct Event {
    raw: sys::cl_event,
    /// `CL_EVENT_CONTEXT`, read on first use (null until then): wait lists are checked against
    /// the queue's context on every enqueue, and an event's context never changes.
    context: AtomicPtr<c_void>,
}

// SAFETY: OpenCL 1.1+ API calls are thread-safe (OpenCL 3.0 spec, "Multiple Host Threads"); an
// event may be waited on, queried and released from any thread.
unsafe impl Send for Event {}
// SAFETY: as for `Send`.
unsafe impl Sync for Event {}

/// Raw handles of a wait list, without allocating for short lists.
pub(crate) fn raw_list(events: &[&Event]) -> SmallVec<[sys::cl_event; 8]> {
    events.iter().map(|e| e.raw).collect()
}

/// Raw handles of a wait list for a command on `queue`, after checking that every event belongs
/// to the queue's context (the driver's answer to a foreign event is `CL_INVALID_CONTEXT` on most
/// runtimes, but Oclgrind 21.10 accepts a user event of another context and then waits forever)
/// and that none has failed: the spec fails such a command
/// (`CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST`), but PoCL 3.1 never completes a command
/// enqueued after an already failed event (its waits hang) and the Intel runtime runs a blocking
/// one as a success that moved nothing; so the command is refused here, with that status. One
/// status read per wait-list event (none for an empty list).
pub(crate) fn checked_list(
    queue: &crate::runtime::queue::Queue,
    events: &[&Event],
) -> Result<SmallVec<[sys::cl_event; 8]>> {
    let ctx = queue.context().as_raw();
    for (i, e) in events.iter().enumerate() {
        if e.context_raw()? != ctx {
            return Err(Error::InvalidArgument(format!(
                "wait-list event {i} belongs to another context than the queue"
            )));
        }
        if let EventStatus::Error(status) = e.status()? {
            tracing::debug!("wait-list event {i} failed with {status}: command refused");
            return Err(Error::Cl {
                call: "clEnqueue* (a wait-list event failed)",
                status: ClError::ExecStatusErrorForEventsInWaitList,
            });
        }
    }
    Ok(raw_list(events))
}

type BoxedCallback = Box<dyn FnOnce(EventStatus) + Send + 'static>;

/// What `Event::on` leaks for its trampoline: where to run the closure, and the closure.
type Registered = (Place, BoxedCallback);

extern "C" fn trampoline(_event: sys::cl_event, status: sys::cl_int, user_data: *mut c_void) {
    // SAFETY: `user_data` is the `Box<Registered>` leaked by `Event::on`; the driver calls each
    // registered callback exactly once, so it is reclaimed exactly once.
    let (place, callback) = *unsafe { Box::from_raw(user_data.cast::<Registered>()) };
    let status = EventStatus::from_raw(status);
    // Not here (but on Oclgrind): what the closure drops or calls may block, and a driver thread
    // must not (issue 29). A panic is contained, never unwound into the driver.
    place.run(move || callback(status));
}

impl Event {
    /// Adopts one reference to a raw event (no retain): [`RawHandle::from_raw`] without the
    /// `Result` (it cannot fail), for this crate's enqueues. Outside the crate that is the form.
    ///
    /// # Safety
    ///
    /// 1. `raw` is a valid event and the caller gives its reference to the new `Event`.
    pub(crate) unsafe fn from_raw(raw: sys::cl_event) -> Event {
        crate::runtime::live::event_added();
        Event {
            raw,
            context: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// The event of an enqueue: its failure as [`Error::Cl`] of `call`, else the returned
    /// reference adopted ([`Event::from_raw`]).
    ///
    /// # Safety
    ///
    /// 1. An `Ok` holds a fresh event reference the caller owns (what every `clEnqueue*` returns).
    #[inline]
    pub(crate) unsafe fn adopt(
        enqueued: std::result::Result<sys::cl_event, ClError>,
        call: &'static str,
    ) -> Result<Event> {
        let raw = enqueued.map_err(Error::cl(call))?;
        // SAFETY: obligation 1.
        Ok(unsafe { Event::from_raw(raw) })
    }

    /// `clGetEventInfo` of `param`.
    ///
    /// # Safety
    ///
    /// `param` is an OpenCL 1.1 event parameter (every platform knows those) whose value is a `T`.
    unsafe fn info<T: cl_raw::InfoValue>(&self, param: u32) -> Result<T> {
        // SAFETY: a valid event; the caller's obligation for `param`.
        unsafe { raw_handle::get_info(Object::Event, self.raw, param) }
    }

    /// `CL_EVENT_CONTEXT` as a raw handle (not retained), cached after the first query.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetEventInfo`.
    pub(crate) fn context_raw(&self) -> Result<sys::cl_context> {
        let cached = self.context.load(Ordering::Relaxed);
        if !cached.is_null() {
            return Ok(cached.cast());
        }
        // SAFETY: a 1.1 event parameter whose value is a cl_context.
        let ctx: sys::cl_context = unsafe { self.info(sys::CL_EVENT_CONTEXT) }?;
        self.context.store(ctx.cast(), Ordering::Relaxed);
        Ok(ctx)
    }

    /// Blocks until the command completed.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clWaitForEvents` (`CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST` when
    /// the command failed).
    pub fn wait(&self) -> Result<()> {
        // SAFETY: a valid event.
        unsafe { raw::wait_for_events(&[self.raw]) }.map_err(Error::cl("clWaitForEvents"))
    }

    /// `self`, once finished, where `blocking`: a blocking enqueue returns `CL_SUCCESS` also when
    /// a command of its wait list failed and it transferred nothing (PoCL, the Intel CPU runtime;
    /// Intel even reports the command `CL_COMPLETE`), and only `clWaitForEvents` reports that.
    pub(crate) fn finished_if(self, blocking: bool) -> Result<Event> {
        if blocking {
            self.wait()?;
        }
        Ok(self)
    }

    /// Blocks until every event completed; an empty list returns at once.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clWaitForEvents` (`CL_INVALID_CONTEXT` for events of several
    /// contexts).
    pub(crate) fn wait_for_all(events: &[&Event]) -> Result<()> {
        let list = raw_list(events);
        // SAFETY: valid events.
        unsafe { raw::wait_for_events(&list) }.map_err(Error::cl("clWaitForEvents"))
    }

    /// The execution status.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetEventInfo`.
    pub fn status(&self) -> Result<EventStatus> {
        // SAFETY: a 1.1 event parameter whose value is a cl_int.
        let s: sys::cl_int = unsafe { self.info(sys::CL_EVENT_COMMAND_EXECUTION_STATUS) }?;
        Ok(EventStatus::from_raw(s))
    }

    /// `CL_EVENT_COMMAND_QUEUE` as a raw handle (null for a user event); compare with
    /// [`crate::Queue::as_raw`].
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetEventInfo`.
    pub fn command_queue_raw(&self) -> Result<sys::cl_command_queue> {
        // SAFETY: a 1.1 event parameter whose value is a cl_command_queue.
        unsafe { self.info(sys::CL_EVENT_COMMAND_QUEUE) }
    }

    /// `CL_EVENT_CONTEXT`, as a new owning [`Context`].
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetEventInfo` or `clRetainContext`.
    pub fn context(&self) -> Result<Context> {
        let ctx = self.context_raw()?;
        // SAFETY: the driver returned the event's live context; we retain it for the wrapper.
        unsafe { Context::from_raw_retained(ctx) }
    }

    /// `CL_EVENT_COMMAND_TYPE` (`CL_COMMAND_NDRANGE_KERNEL`, `CL_COMMAND_USER`, ...).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetEventInfo`.
    pub fn command_type(&self) -> Result<sys::cl_command_type> {
        // SAFETY: a 1.1 event parameter whose value is a cl_command_type.
        unsafe { self.info(sys::CL_EVENT_COMMAND_TYPE) }
    }

    /// All four profiling timestamps.
    ///
    /// Driver quirk: Oclgrind 21.10 also answers for queues without profiling, with four equal
    /// timestamps (docs/DEVICES.md).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetEventProfilingInfo`: `CL_PROFILING_INFO_NOT_AVAILABLE` when the
    /// queue was not created for profiling, for user events, or before completion.
    pub fn profiling(&self) -> Result<ProfilingTimes> {
        let get = |param| {
            // SAFETY: a valid event.
            unsafe { raw::get_profiling_info(self.raw, param) }
                .map_err(Error::cl("clGetEventProfilingInfo"))
        };
        Ok(ProfilingTimes {
            queued: get(sys::CL_PROFILING_COMMAND_QUEUED)?,
            submitted: get(sys::CL_PROFILING_COMMAND_SUBMIT)?,
            started: get(sys::CL_PROFILING_COMMAND_START)?,
            ended: get(sys::CL_PROFILING_COMMAND_END)?,
        })
    }

    /// Runs `callback` once the command reaches `on` (or fails), on cl-mem's callback worker
    /// thread, never on a driver thread or inside the call that completed the event.
    ///
    /// The closure gets the status that triggered it. It may drop any object and call any
    /// function, blocking ones included (the driver's own callback only hands it to the worker:
    /// a blocking call on a driver thread is undefined and hangs the Intel CPU runtime). Closures
    /// run one at a time, in the order the driver called them, so one that waits for
    /// something the host does later delays every callback until then (a future's wake-up too).
    /// A panic inside it is caught and logged.
    ///
    /// Driver quirk: on Oclgrind, which runs commands and callbacks on the thread of the API
    /// call that runs the queue (blocking there is fine) and is not thread-safe, the closure runs
    /// where the driver calls it: a second thread calling Oclgrind crashed it
    /// (docs/DEVICES.md#oclgrind-threads-release).
    ///
    /// Driver quirk: PoCL 3.1 never runs a `CL_COMPLETE` callback of a user event that is set to
    /// an error status (the spec says it runs on abnormal termination too; docs/DEVICES.md).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clSetEventCallback` (the closure is dropped then).
    pub fn on(
        &self,
        on: CallbackOn,
        callback: impl FnOnce(EventStatus) + Send + 'static,
    ) -> Result<()> {
        let kind = match on {
            CallbackOn::Submitted => sys::CL_SUBMITTED,
            CallbackOn::Running => sys::CL_RUNNING,
            CallbackOn::Complete => sys::CL_COMPLETE,
        } as sys::cl_int;
        let place = self.context_raw().map_or(Place::Worker, Place::for_context);
        let boxed: Box<Registered> = Box::new((place, Box::new(callback)));
        let user_data = Box::into_raw(boxed).cast::<c_void>();
        // SAFETY: a valid event; `user_data` stays valid until `trampoline` reclaims it, which the
        // driver calls exactly once; the trampoline never unwinds.
        match unsafe { raw::set_callback(self.raw, kind, trampoline, user_data) } {
            Ok(()) => Ok(()),
            Err(e) => {
                // SAFETY: registration failed, so the driver will never call the trampoline: the
                // box is still ours.
                drop(unsafe { Box::from_raw(user_data.cast::<Registered>()) });
                Err(Error::cl("clSetEventCallback")(e))
            }
        }
    }

    /// [`Event::on`] with [`CallbackOn::Complete`].
    pub(crate) fn on_complete(
        &self,
        callback: impl FnOnce(EventStatus) + Send + 'static,
    ) -> Result<()> {
        self.on(CallbackOn::Complete, callback)
    }
}

// SAFETY: `as_raw` is the handle this wrapper owns one reference to while it lives, of the kind
// `object()` names; `into_raw` gives that reference away and forgets the wrapper.
unsafe impl crate::raw_handle::RawHandle for Event {
    crate::raw_handle::raw_handle_field!(Event: sys::cl_event);

    /// Gives the reference away without releasing it.
    fn into_raw(self) -> sys::cl_event {
        crate::runtime::live::event_removed();
        let raw = self.raw;
        std::mem::forget(self);
        raw
    }

    /// Adopts one reference to a raw event (no retain); never fails.
    ///
    /// # Safety
    ///
    /// 1. `raw` is a valid event and the caller gives its reference to the new `Event`.
    unsafe fn from_raw(raw: sys::cl_event) -> Result<Event> {
        // SAFETY: obligation 1 (the crate's infallible form of this function).
        Ok(unsafe { Event::from_raw(raw) })
    }
}

impl Clone for Event {
    fn clone(&self) -> Event {
        retain_for_clone(Object::Event, self.raw);
        crate::runtime::live::event_added();
        Event {
            raw: self.raw,
            context: AtomicPtr::new(self.context.load(Ordering::Relaxed)),
        }
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        crate::runtime::live::event_removed();
        release_in_drop(Object::Event, self.raw);
    }
}

eq_by_handle!(raw: Event);

crate::raw_handle::debug_fields!(Event: raw);

/// A user event (OpenCL 1.1): commands can wait on it until the host completes it.
///
/// Derefs to [`Event`]. Completing it twice is `CL_INVALID_OPERATION` from the driver. A user
/// event dropped without a status leaves commands waiting on it blocked forever; set one first.
#[derive(Clone, Debug)]
pub struct UserEvent {
    event: Event,
    /// Futures from [`UserEvent::wait_async`], woken by `set_complete` / `set_error` (shared by
    /// clones; see [`EventFuture`] for why the callback alone is not enough on PoCL).
    waiters: Arc<Waiters>,
}

eq_by_handle!(event: UserEvent);

impl UserEvent {
    /// A new user event in `context`, status `CL_SUBMITTED`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clCreateUserEvent`.
    pub fn new(context: &Context) -> Result<UserEvent> {
        // SAFETY: a valid context; an `Ok` is a fresh reference we own.
        let event = unsafe {
            Event::adopt(
                raw::create_user_event(context.as_raw()),
                "clCreateUserEvent",
            )
        }?;
        Ok(UserEvent {
            event,
            waiters: Arc::default(),
        })
    }

    /// Marks it `CL_COMPLETE`, releasing commands that wait on it.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clSetUserEventStatus` (`CL_INVALID_OPERATION` if already set).
    pub fn set_complete(&self) -> Result<()> {
        // SAFETY: a valid user event.
        unsafe { raw::set_user_event_status(self.event.raw, sys::CL_COMPLETE as sys::cl_int) }
            .map_err(Error::cl("clSetUserEventStatus"))?;
        self.waiters.wake_all();
        Ok(())
    }

    /// Marks it failed with `status` (must be a negative OpenCL status); commands waiting on it
    /// fail too.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for `ClError::Unknown` codes that are not negative (checked
    /// first); [`Error::Cl`] from `clSetUserEventStatus`.
    pub fn set_error(&self, status: ClError) -> Result<()> {
        let code = status.code();
        if code >= 0 {
            return Err(Error::InvalidArgument(format!(
                "a user event error status must be negative, got {code}"
            )));
        }
        // SAFETY: a valid user event; a negative status.
        unsafe { raw::set_user_event_status(self.event.raw, code) }
            .map_err(Error::cl("clSetUserEventStatus"))?;
        self.waiters.wake_all();
        Ok(())
    }

    /// A future that resolves when the status is set: `Ok(())` after
    /// [`set_complete`](Self::set_complete), [`Error::CommandFailed`] after
    /// [`set_error`](Self::set_error).
    ///
    /// Besides the `CL_COMPLETE` callback of [`Event::wait_async`], the future is woken by
    /// `set_complete` / `set_error` on this user event or a clone of it, so it resolves on PoCL too,
    /// which never calls the callback of a user event set to an error (docs/DEVICES.md).
    pub fn wait_async(&self) -> EventFuture {
        EventFuture::new(self.event.clone(), Some(Arc::clone(&self.waiters)))
    }
}

impl std::ops::Deref for UserEvent {
    type Target = Event;
    fn deref(&self) -> &Event {
        &self.event
    }
}

impl AsRef<Event> for UserEvent {
    fn as_ref(&self) -> &Event {
        &self.event
    }
}
