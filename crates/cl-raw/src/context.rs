//! Context entry points (`clCreateContext`, `clGetContextInfo`, retain/release, callbacks).

use std::ffi::{c_char, c_void};

use crate::error::{check, created, ClError};
use crate::fault;
use crate::{count, sys};

/// Callback type of `clCreateContext`'s `pfn_notify` (error reports from the driver).
pub(crate) type NotifyCallback = extern "C" fn(
    errinfo: *const c_char,
    private_info: *const c_void,
    cb: usize,
    user_data: *mut c_void,
);

/// [`clCreateContext`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clCreateContext.html):
/// a context over `devices`. `properties` is empty or a 0-terminated property list.
///
/// # Errors
///
/// The driver's status; `CL_INVALID_VALUE` for an empty device list or a non-terminated property
/// list (checked before the call).
///
/// # Safety
///
/// 1. Every device id is valid and all belong to one platform.
/// 2. `pfn_notify`, when given, may be called from any driver thread until the context is
///    destroyed, with `user_data`; both must stay valid that long.
/// 3. The caller owns (and must release) the returned context.
pub unsafe fn create(
    properties: &[sys::cl_context_properties],
    devices: &[sys::cl_device_id],
    pfn_notify: Option<NotifyCallback>,
    user_data: *mut c_void,
) -> Result<sys::cl_context, ClError> {
    fault::check("clCreateContext")?;
    if devices.is_empty() {
        return Err(ClError::InvalidValue);
    }
    let props = crate::properties(properties)?;
    let n = count(devices.len())?;
    // SAFETY: valid devices (1), terminated properties, callback contract (2).
    created(|err| unsafe {
        sys::clCreateContext(props, n, devices.as_ptr(), pfn_notify, user_data, err)
    })
}

/// [`clSetContextDestructorCallback`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clSetContextDestructorCallback.html)
/// (OpenCL 3.0): `pfn_notify(context, user_data)` runs when the context is destroyed.
///
/// # Errors
///
/// The driver's status.
///
/// # Safety
///
/// 1. `context` is a valid context of an OpenCL 3.0 platform (older platforms may hang).
/// 2. `user_data` stays valid until the callback has run; the callback may run on any thread.
pub unsafe fn set_destructor_callback(
    context: sys::cl_context,
    pfn_notify: crate::extra::ContextDestructorCallback,
    user_data: *mut c_void,
) -> Result<(), ClError> {
    // SAFETY: obligations 1 and 2.
    check(unsafe {
        crate::extra::clSetContextDestructorCallback(context, Some(pfn_notify), user_data)
    })
}
