//! Shared-virtual-memory allocation (OpenCL 2.0; optional in 3.0, see `CL_DEVICE_SVM_CAPABILITIES`).
//! SVM transfers, maps and frees on a queue are in [`crate::queue`] (`enqueue_svm_*`); kernel
//! arguments in [`crate::kernel::set_arg_svm_pointer`].

use std::ffi::c_void;

use crate::fault;
use crate::sys;

/// [`clSVMAlloc`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clSVMAlloc.html)
/// (OpenCL 2.0): `size` bytes with `alignment` (0 = the largest OpenCL type's alignment), or
/// `None` when the driver returns null (the call reports no status: bad flags, too large, no SVM,
/// out of memory all look the same).
///
/// # Safety
///
/// 1. `context` is valid, of an OpenCL 2.0 or newer platform, and some device supports the SVM
///    kind that `flags` asks for.
/// 2. The caller frees the pointer exactly once, with [`free`] or
///    [`crate::queue::enqueue_svm_free`], after every command using it completed.
pub unsafe fn alloc(
    context: sys::cl_context,
    flags: sys::cl_svm_mem_flags,
    size: usize,
    alignment: u32,
) -> Option<*mut c_void> {
    if fault::check("clSVMAlloc").is_err() {
        return None;
    }
    // SAFETY: obligations 1-2.
    let p = unsafe { sys::clSVMAlloc(context, flags, size, alignment) };
    (!p.is_null()).then_some(p)
}

/// [`clSVMFree`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clSVMFree.html)
/// (OpenCL 2.0): frees at once, without waiting for commands that use the memory.
///
/// # Safety
///
/// 1. `context` is valid, of an OpenCL 2.0 or newer platform.
/// 2. `ptr` was returned by [`alloc`] in `context`, is not yet freed, and no enqueued command uses
///    it any more (prefer [`crate::queue::enqueue_svm_free`] otherwise).
pub unsafe fn free(context: sys::cl_context, ptr: *mut c_void) {
    // SAFETY: obligations 1-2.
    unsafe { sys::clSVMFree(context, ptr) }
}
