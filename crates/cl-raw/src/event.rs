//! Event entry points (wait, info, profiling, user events, callbacks).

use std::ffi::c_void;

use crate::error::{check, created, ClError};
use crate::fault;
use crate::info::query;
use crate::{count, sys};

/// Callback type of [`set_callback`]: `(event, execution_status, user_data)`.
pub(crate) type EventCallback =
    extern "C" fn(event: sys::cl_event, status: sys::cl_int, user_data: *mut c_void);

/// [`clWaitForEvents`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clWaitForEvents.html):
/// blocks until every event completed. An empty list returns at once without calling the driver
/// (the C call rejects it with `CL_INVALID_VALUE`).
///
/// # Errors
///
/// The driver's status (`CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST` when one failed).
///
/// # Safety
///
/// 1. Every event is valid and all share one context.
pub unsafe fn wait_for_events(events: &[sys::cl_event]) -> Result<(), ClError> {
    if events.is_empty() {
        return Ok(());
    }
    // SAFETY: obligation 1; the list is non-empty.
    check(unsafe { sys::clWaitForEvents(count(events.len())?, events.as_ptr()) })
}

/// [`clGetEventProfilingInfo`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clGetEventProfilingInfo.html):
/// a device timestamp in nanoseconds.
///
/// # Errors
///
/// The driver's status (`CL_PROFILING_INFO_NOT_AVAILABLE` without a profiling queue, for user
/// events, or before completion).
///
/// # Safety
///
/// 1. `event` is a valid event.
pub unsafe fn get_profiling_info(
    event: sys::cl_event,
    param: sys::cl_profiling_info,
) -> Result<u64, ClError> {
    // SAFETY: the closure forwards to clGetEventProfilingInfo with a valid handle.
    unsafe {
        query(|size, value, ret| sys::clGetEventProfilingInfo(event, param, size, value, ret))
    }
}

/// [`clCreateUserEvent`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clCreateUserEvent.html)
/// (OpenCL 1.1): an event the host completes with [`set_user_event_status`].
///
/// # Errors
///
/// The driver's status.
///
/// # Safety
///
/// 1. `context` is a valid context.
/// 2. The caller owns (and must release) the returned event, and must set its status before
///    anything that waits on it can finish.
pub unsafe fn create_user_event(context: sys::cl_context) -> Result<sys::cl_event, ClError> {
    fault::check("clCreateUserEvent")?;
    // SAFETY: obligation 1.
    created(|err| unsafe { sys::clCreateUserEvent(context, err) })
}

/// [`clSetUserEventStatus`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clSetUserEventStatus.html)
/// (OpenCL 1.1): `CL_COMPLETE` or a negative error status; only once.
///
/// # Errors
///
/// The driver's status (`CL_INVALID_OPERATION` when set twice).
///
/// # Safety
///
/// 1. `event` is a valid user event.
pub unsafe fn set_user_event_status(
    event: sys::cl_event,
    status: sys::cl_int,
) -> Result<(), ClError> {
    // SAFETY: obligation 1.
    check(unsafe { sys::clSetUserEventStatus(event, status) })
}

/// [`clSetEventCallback`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clSetEventCallback.html)
/// (OpenCL 1.1): `pfn_notify` runs once the event reaches `callback_type` (`CL_SUBMITTED`,
/// `CL_RUNNING` or `CL_COMPLETE`) or fails.
///
/// # Errors
///
/// The driver's status.
///
/// # Safety
///
/// 1. `event` is a valid event.
/// 2. `user_data` stays valid until the callback ran; the callback may run on any driver thread and
///    must not block or call blocking OpenCL functions.
pub unsafe fn set_callback(
    event: sys::cl_event,
    callback_type: sys::cl_int,
    pfn_notify: EventCallback,
    user_data: *mut c_void,
) -> Result<(), ClError> {
    fault::check("clSetEventCallback")?;
    // SAFETY: obligations 1 and 2.
    check(unsafe { sys::clSetEventCallback(event, callback_type, Some(pfn_notify), user_data) })
}
