//! Program entry points (create from source, build, info, build info).

use std::ffi::{c_char, c_void, CStr};

use crate::error::{check, created, ClError};
use crate::fault;
use crate::info::info_fn;
use crate::{count, sys};

/// Callback type of [`build`]'s `pfn_notify`.
pub(crate) type BuildCallback = extern "C" fn(program: sys::cl_program, user_data: *mut c_void);

/// [`clCreateProgramWithSource`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clCreateProgramWithSource.html):
/// a program from OpenCL C source (the strings are concatenated; lengths are passed, so no NUL is
/// needed).
///
/// # Errors
///
/// The driver's status; `CL_INVALID_VALUE` for no strings (checked first).
///
/// # Safety
///
/// 1. `context` is a valid context.
/// 2. The caller owns (and must release) the returned program.
pub unsafe fn create_with_source(
    context: sys::cl_context,
    sources: &[&str],
) -> Result<sys::cl_program, ClError> {
    fault::check("clCreateProgramWithSource")?;
    if sources.is_empty() {
        return Err(ClError::InvalidValue);
    }
    let ptrs: Vec<*const c_char> = sources.iter().map(|s| s.as_ptr().cast()).collect();
    let lens: Vec<usize> = sources.iter().map(|s| s.len()).collect();
    let n = count(ptrs.len())?;
    // SAFETY: obligation 1; `ptrs`/`lens` describe live strings for the duration of the call.
    created(|err| unsafe {
        sys::clCreateProgramWithSource(context, n, ptrs.as_ptr(), lens.as_ptr(), err)
    })
}

/// [`clBuildProgram`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clBuildProgram.html):
/// compiles and links for `devices` (empty = every device of the program's context). Blocking
/// when `pfn_notify` is `None`.
///
/// # Errors
///
/// The driver's status (`CL_BUILD_PROGRAM_FAILURE`: read `CL_PROGRAM_BUILD_LOG`).
///
/// # Safety
///
/// 1. `program` is valid and every device belongs to its context.
/// 2. `pfn_notify`/`user_data`, when given, stay valid until the callback ran.
pub unsafe fn build(
    program: sys::cl_program,
    devices: &[sys::cl_device_id],
    options: &CStr,
    pfn_notify: Option<BuildCallback>,
    user_data: *mut c_void,
) -> Result<(), ClError> {
    fault::check("clBuildProgram")?;
    let list = crate::or_null(devices);
    // SAFETY: obligations 1-2; `options` is NUL-terminated.
    check(unsafe {
        sys::clBuildProgram(
            program,
            count(devices.len())?,
            list,
            options.as_ptr(),
            pfn_notify,
            user_data,
        )
    })
}

/// [`clGetProgramInfo`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clGetProgramInfo.html)
/// with `CL_PROGRAM_BINARIES`: each device's binary, into buffers of the given sizes (the
/// program's `CL_PROGRAM_BINARY_SIZES`, in its device order; a size of 0 gives an empty binary).
///
/// # Errors
///
/// The driver's status.
///
/// # Safety
///
/// 1. `program` is valid and `sizes` holds, in order, the binary size of each of its devices.
pub unsafe fn get_binaries(
    program: sys::cl_program,
    sizes: &[usize],
) -> Result<Vec<Vec<u8>>, ClError> {
    let mut binaries: Vec<Vec<u8>> = sizes.iter().map(|&n| vec![0u8; n]).collect();
    let mut pointers: Vec<*mut u8> = binaries
        .iter_mut()
        .map(|b| {
            if b.is_empty() {
                std::ptr::null_mut()
            } else {
                b.as_mut_ptr()
            }
        })
        .collect();
    // SAFETY: obligation 1; one pointer per device, each to a buffer of that device's binary size
    // (null where the size is 0, which the spec allows), written during the call only.
    check(unsafe {
        sys::clGetProgramInfo(
            program,
            sys::CL_PROGRAM_BINARIES,
            std::mem::size_of_val(pointers.as_slice()),
            pointers.as_mut_ptr().cast::<c_void>(),
            std::ptr::null_mut(),
        )
    })?;
    Ok(binaries)
}

info_fn! {
    /// [`clGetProgramBuildInfo`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clGetProgramBuildInfo.html):
    /// build status, options or log for one device.
    ///
    /// # Errors
    ///
    /// The driver's status, or `CL_INVALID_VALUE` when the value does not fit `T`.
    ///
    /// # Safety
    ///
    /// 1. `program` is valid and `device` belongs to its context.
    pub unsafe fn get_build_info(program: sys::cl_program, device: sys::cl_device_id, param: sys::cl_program_build_info) => clGetProgramBuildInfo;
}
