//! Kernel entry points (create, arguments, info, work-group info).

use std::ffi::{c_void, CStr};

use crate::error::{check, created, ClError};
use crate::fault;
use crate::info::info_fn;
use crate::sys;

/// [`clCreateKernel`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clCreateKernel.html).
///
/// # Errors
///
/// The driver's status (`CL_INVALID_KERNEL_NAME`, `CL_INVALID_PROGRAM_EXECUTABLE` if unbuilt).
///
/// # Safety
///
/// 1. `program` is valid.
/// 2. The caller owns (and must release) the returned kernel.
pub unsafe fn create(program: sys::cl_program, name: &CStr) -> Result<sys::cl_kernel, ClError> {
    fault::check("clCreateKernel")?;
    // SAFETY: obligation 1; `name` is NUL-terminated.
    created(|err| unsafe { sys::clCreateKernel(program, name.as_ptr(), err) })
}

/// [`clSetKernelArg`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clSetKernelArg.html):
/// `size` bytes at `value` (the driver copies them). A null `value` with a non-zero size declares a
/// `__local` argument of `size` bytes; a `cl_mem` argument passes a pointer to the handle.
///
/// # Errors
///
/// The driver's status (`CL_INVALID_ARG_INDEX`, `CL_INVALID_ARG_SIZE`, `CL_INVALID_ARG_VALUE`, ...).
///
/// # Safety
///
/// 1. `kernel` is valid and no other thread uses it during the call (the spec exempts
///    `clSetKernelArg` from thread safety for one kernel object).
/// 2. `value` is null or readable for `size` bytes; for memory-object arguments it points at a
///    valid `cl_mem` (or a null handle) of the kernel's context.
pub unsafe fn set_arg(
    kernel: sys::cl_kernel,
    index: u32,
    size: usize,
    value: *const c_void,
) -> Result<(), ClError> {
    // SAFETY: obligations 1 and 2.
    check(unsafe { sys::clSetKernelArg(kernel, index, size, value) })
}

/// [`clSetKernelArgSVMPointer`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clSetKernelArgSVMPointer.html)
/// (OpenCL 2.0): an SVM pointer (possibly into the middle of an allocation) as a pointer argument.
///
/// # Errors
///
/// The driver's status.
///
/// # Safety
///
/// 1. `kernel` is valid, of an OpenCL 2.0 or newer platform with SVM, and no other thread uses it
///    during the call.
/// 2. `ptr` points into an SVM allocation of the kernel's context that outlives every enqueue of the
///    kernel with this argument.
pub unsafe fn set_arg_svm_pointer(
    kernel: sys::cl_kernel,
    index: u32,
    ptr: *const c_void,
) -> Result<(), ClError> {
    // SAFETY: obligations 1 and 2.
    check(unsafe { sys::clSetKernelArgSVMPointer(kernel, index, ptr) })
}

info_fn! {
    /// [`clGetKernelWorkGroupInfo`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clGetKernelWorkGroupInfo.html).
    ///
    /// # Errors
    ///
    /// The driver's status, or `CL_INVALID_VALUE` when the value does not fit `T`.
    ///
    /// # Safety
    ///
    /// 1. `kernel` is valid and `device` belongs to its context.
    pub unsafe fn get_work_group_info(kernel: sys::cl_kernel, device: sys::cl_device_id, param: sys::cl_kernel_work_group_info) => clGetKernelWorkGroupInfo;
}

info_fn! {
    /// [`clGetKernelArgInfo`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clGetKernelArgInfo.html)
    /// (OpenCL 1.2): needs the program built with `-cl-kernel-arg-info` on some drivers.
    ///
    /// # Errors
    ///
    /// The driver's status (`CL_KERNEL_ARG_INFO_NOT_AVAILABLE`), or `CL_INVALID_VALUE` when the value
    /// does not fit `T`.
    ///
    /// # Safety
    ///
    /// 1. `kernel` is valid, of an OpenCL 1.2 or newer platform.
    pub unsafe fn get_arg_info(kernel: sys::cl_kernel, index: u32, param: sys::cl_kernel_arg_info) => clGetKernelArgInfo;
}
