//! Retain, release and `clGet*Info` of the reference-counted OpenCL objects, written once for
//! every kind of object.
//!
//! `cl-sys` declares every handle as `*mut c_void`, so a handle cannot say which kind of object it
//! is: the caller names it with an [`Object`]. The functions are `#[inline]` and the kind is a
//! constant at every call site, so the `match` folds away and each call is the one C call.
//! Platforms and devices are not here: platforms have no reference count, root devices ignore
//! retain/release, and this workspace never releases a sub-device; their queries are
//! [`crate::platform::get_info`] and [`crate::device::get_info`]. Images and pipes are memory
//! objects ([`Object::Mem`]); their own queries are [`crate::image::get_info`] and
//! [`crate::pipe::get_info`].

use crate::error::{check, ClError};
use crate::info::{query, InfoValue};
use crate::sys;

/// The kind of a reference-counted OpenCL object, which picks the C function each call below
/// makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Object {
    /// `cl_mem` (buffers, images, pipes): `clRetainMemObject`, `clReleaseMemObject`,
    /// `clGetMemObjectInfo`.
    Mem,
    /// `cl_context`: `clRetainContext`, `clReleaseContext`, `clGetContextInfo`.
    Context,
    /// `cl_command_queue`: `clRetainCommandQueue`, `clReleaseCommandQueue`,
    /// `clGetCommandQueueInfo`.
    Queue,
    /// `cl_event`: `clRetainEvent`, `clReleaseEvent`, `clGetEventInfo`.
    Event,
    /// `cl_program`: `clRetainProgram`, `clReleaseProgram`, `clGetProgramInfo`.
    Program,
    /// `cl_kernel`: `clRetainKernel`, `clReleaseKernel`, `clGetKernelInfo`.
    Kernel,
    /// `cl_sampler`: `clRetainSampler`, `clReleaseSampler`, `clGetSamplerInfo`.
    Sampler,
}

/// `clRetain*` ([`clRetainMemObject`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clRetainMemObject.html),
/// ...): one more reference to `handle`, of the kind `object`.
///
/// # Errors
///
/// The driver's status.
///
/// # Safety
///
/// 1. `handle` is a valid object of the kind `object`.
#[inline]
pub unsafe fn retain(object: Object, handle: *mut std::ffi::c_void) -> Result<(), ClError> {
    // SAFETY: obligation 1: the C function of the handle's kind.
    check(unsafe {
        match object {
            Object::Mem => sys::clRetainMemObject(handle),
            Object::Context => sys::clRetainContext(handle),
            Object::Queue => sys::clRetainCommandQueue(handle),
            Object::Event => sys::clRetainEvent(handle),
            Object::Program => sys::clRetainProgram(handle),
            Object::Kernel => sys::clRetainKernel(handle),
            Object::Sampler => sys::clRetainSampler(handle),
        }
    })
}

/// `clRelease*` ([`clReleaseMemObject`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clReleaseMemObject.html),
/// ...): gives up one reference to `handle`, of the kind `object`.
///
/// # Errors
///
/// The driver's status.
///
/// # Safety
///
/// 1. `handle` is a valid object of the kind `object` and the caller gives up one reference it
///    owns.
#[inline]
pub unsafe fn release(object: Object, handle: *mut std::ffi::c_void) -> Result<(), ClError> {
    // SAFETY: obligation 1: the C function of the handle's kind.
    check(unsafe {
        match object {
            Object::Mem => sys::clReleaseMemObject(handle),
            Object::Context => sys::clReleaseContext(handle),
            Object::Queue => sys::clReleaseCommandQueue(handle),
            Object::Event => sys::clReleaseEvent(handle),
            Object::Program => sys::clReleaseProgram(handle),
            Object::Kernel => sys::clReleaseKernel(handle),
            Object::Sampler => sys::clReleaseSampler(handle),
        }
    })
}

/// `clGet*Info` ([`clGetMemObjectInfo`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clGetMemObjectInfo.html),
/// [`clGetEventInfo`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clGetEventInfo.html),
/// ...): one parameter of `handle`, of the kind `object`, decoded as `T` (see [`crate::info`]).
///
/// # Errors
///
/// The driver's status, or `CL_INVALID_VALUE` when the value does not fit `T`.
///
/// # Safety
///
/// 1. `handle` is a valid object of the kind `object`.
/// 2. `param` is a parameter of that kind's query that exists on the object's platform version
///    (`CL_PROGRAM_BINARIES` needs caller-provided buffers: use
///    [`crate::program::get_binaries`]).
#[inline]
pub unsafe fn get_info<T: InfoValue>(
    object: Object,
    handle: *mut std::ffi::c_void,
    param: sys::cl_uint,
) -> Result<T, ClError> {
    // SAFETY: the closure forwards to the query of the handle's kind (obligations 1 and 2).
    unsafe {
        query(|size, value, ret| match object {
            Object::Mem => sys::clGetMemObjectInfo(handle, param, size, value, ret),
            Object::Context => sys::clGetContextInfo(handle, param, size, value, ret),
            Object::Queue => sys::clGetCommandQueueInfo(handle, param, size, value, ret),
            Object::Event => sys::clGetEventInfo(handle, param, size, value, ret),
            Object::Program => sys::clGetProgramInfo(handle, param, size, value, ret),
            Object::Kernel => sys::clGetKernelInfo(handle, param, size, value, ret),
            Object::Sampler => sys::clGetSamplerInfo(handle, param, size, value, ret),
        })
    }
}
