//! Pipe entry points (OpenCL 2.0; optional in 3.0, see `CL_DEVICE_PIPE_SUPPORT`). Retain/release
//! are the memory-object ones ([`crate::object`] with `Object::Mem`).

use crate::error::{created, ClError};
use crate::fault;
use crate::info::info_fn;
use crate::sys;

/// [`clCreatePipe`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clCreatePipe.html)
/// (OpenCL 2.0): `max_packets` packets of `packet_size` bytes. `properties` is empty or
/// 0-terminated (3.0 defines none).
///
/// # Errors
///
/// The driver's status (`CL_INVALID_PIPE_SIZE`, `CL_INVALID_OPERATION` without pipe support);
/// `CL_INVALID_VALUE` for a non-terminated list (checked first).
///
/// # Safety
///
/// 1. `context` is valid, of an OpenCL 2.0 or newer platform.
/// 2. The caller owns (and must release, with [`crate::object::release`] and `Object::Mem`) the returned pipe.
pub unsafe fn create(
    context: sys::cl_context,
    flags: sys::cl_mem_flags,
    packet_size: u32,
    max_packets: u32,
    properties: &[sys::cl_pipe_properties],
) -> Result<sys::cl_mem, ClError> {
    fault::check("clCreatePipe")?;
    let props = crate::properties(properties)?;
    // SAFETY: obligations 1-2; `props` is null or 0-terminated.
    created(|err| unsafe {
        sys::clCreatePipe(context, flags, packet_size, max_packets, props, err)
    })
}

info_fn! {
    /// [`clGetPipeInfo`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clGetPipeInfo.html)
    /// (OpenCL 2.0).
    ///
    /// # Errors
    ///
    /// The driver's status, or `CL_INVALID_VALUE` when the value does not fit `T`.
    ///
    /// # Safety
    ///
    /// 1. `pipe` is a valid pipe, of an OpenCL 2.0 or newer platform.
    pub unsafe fn get_info(pipe: sys::cl_mem, param: sys::cl_pipe_info) => clGetPipeInfo;
}
