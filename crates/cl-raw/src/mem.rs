//! Memory-object entry points shared by buffers, images and pipes (`clCreateBuffer`,
//! sub-buffers, `clGetMemObjectInfo`, retain/release, destructor callbacks).

use std::ffi::c_void;

use crate::error::{check, created, ClError};
use crate::fault;
use crate::{extra, sys};

/// Callback type of [`set_destructor_callback`].
pub(crate) type DestructorCallback = extern "C" fn(memobj: sys::cl_mem, user_data: *mut c_void);

/// [`clCreateBuffer`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clCreateBuffer.html).
///
/// # Errors
///
/// The driver's status (`CL_INVALID_BUFFER_SIZE` for 0 or more than the max allocation,
/// `CL_INVALID_HOST_PTR`, `CL_MEM_OBJECT_ALLOCATION_FAILURE`, ...).
///
/// # Safety
///
/// 1. `context` is valid.
/// 2. `host_ptr` is null unless `flags` has `CL_MEM_USE_HOST_PTR` or `CL_MEM_COPY_HOST_PTR`; with
///    `COPY` it is readable for `size` bytes during the call; with `USE` it stays valid, and is
///    accessed only as the spec allows, until the buffer is destroyed.
/// 3. The caller owns (and must release) the returned buffer.
pub unsafe fn create_buffer(
    context: sys::cl_context,
    flags: sys::cl_mem_flags,
    size: usize,
    host_ptr: *mut c_void,
) -> Result<sys::cl_mem, ClError> {
    fault::check("clCreateBuffer")?;
    // SAFETY: obligations 1-3.
    created(|err| unsafe { sys::clCreateBuffer(context, flags, size, host_ptr, err) })
}

/// [`clCreateBufferWithProperties`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clCreateBufferWithProperties.html)
/// (OpenCL 3.0): as [`create_buffer`] with a 0-terminated `cl_mem_properties` list (empty = none).
///
/// # Errors
///
/// The driver's status; `CL_INVALID_VALUE` for a non-terminated list (checked first).
///
/// # Safety
///
/// 1. `context` is valid and its platform is OpenCL 3.0 or newer (older platforms may hang).
/// 2. and 3. as [`create_buffer`].
pub unsafe fn create_buffer_with_properties(
    context: sys::cl_context,
    properties: &[sys::cl_ulong],
    flags: sys::cl_mem_flags,
    size: usize,
    host_ptr: *mut c_void,
) -> Result<sys::cl_mem, ClError> {
    fault::check("clCreateBufferWithProperties")?;
    let props = crate::properties(properties)?;
    // SAFETY: obligations 1-3; `props` is null or 0-terminated.
    created(|err| unsafe {
        extra::clCreateBufferWithProperties(context, props, flags, size, host_ptr, err)
    })
}

/// [`clCreateSubBuffer`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clCreateSubBuffer.html)
/// (OpenCL 1.1): a view of `size` bytes at `origin` (`CL_BUFFER_CREATE_TYPE_REGION`).
///
/// # Errors
///
/// The driver's status (`CL_MISALIGNED_SUB_BUFFER_OFFSET` when `origin` is not a multiple of the
/// device's `CL_DEVICE_MEM_BASE_ADDR_ALIGN` bits / 8, `CL_INVALID_VALUE` out of bounds, ...).
///
/// # Safety
///
/// 1. `buffer` is a valid buffer that is not itself a sub-buffer.
/// 2. The caller owns (and must release) the returned sub-buffer.
pub unsafe fn create_sub_buffer(
    buffer: sys::cl_mem,
    flags: sys::cl_mem_flags,
    origin: usize,
    size: usize,
) -> Result<sys::cl_mem, ClError> {
    fault::check("clCreateSubBuffer")?;
    let region = sys::cl_buffer_region { origin, size };
    // SAFETY: obligations 1-2; `region` lives for the call.
    created(|err| unsafe {
        sys::clCreateSubBuffer(
            buffer,
            flags,
            sys::CL_BUFFER_CREATE_TYPE_REGION,
            (&region as *const sys::cl_buffer_region).cast(),
            err,
        )
    })
}

/// [`clSetMemObjectDestructorCallback`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clSetMemObjectDestructorCallback.html)
/// (OpenCL 1.1): `pfn_notify(mem, user_data)` runs when the object is destroyed (callbacks run in
/// reverse registration order).
///
/// # Errors
///
/// The driver's status.
///
/// # Safety
///
/// 1. `mem` is a valid memory object.
/// 2. `user_data` stays valid until the callback ran; it may run on any driver thread and must not
///    call OpenCL functions that could block on the object.
pub unsafe fn set_destructor_callback(
    mem: sys::cl_mem,
    pfn_notify: DestructorCallback,
    user_data: *mut c_void,
) -> Result<(), ClError> {
    // SAFETY: obligations 1-2.
    check(unsafe { sys::clSetMemObjectDestructorCallback(mem, Some(pfn_notify), user_data) })
}
