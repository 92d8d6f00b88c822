//! Platform entry points (`clGetPlatformIDs`, `clGetPlatformInfo`, ...).

use std::ffi::{c_void, CStr};

use crate::error::ClError;
use crate::info::{info_fn, query_list};
use crate::sys;

/// [`clGetPlatformIDs`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clGetPlatformIDs.html):
/// every platform the ICD loader knows.
///
/// # Errors
///
/// The loader's status; the ocl-icd and Khronos loaders return `CL_PLATFORM_NOT_FOUND_KHR` when no
/// ICD is registered.
pub fn get_ids() -> Result<Vec<sys::cl_platform_id>, ClError> {
    // SAFETY: a count-then-fill list call: null or `n`-entry output, `n` a live out-parameter.
    unsafe {
        query_list(std::ptr::null_mut, |n, ids, ret| {
            sys::clGetPlatformIDs(n, ids, ret)
        })
    }
}

info_fn! {
    /// [`clGetPlatformInfo`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clGetPlatformInfo.html):
    /// one platform parameter, decoded as `T` (see [`crate::info`]).
    ///
    /// # Errors
    ///
    /// The driver's status, or `CL_INVALID_VALUE` when the value does not fit `T`.
    ///
    /// # Safety
    ///
    /// 1. `platform` is a platform id returned by [`get_ids`].
    /// 2. `param` exists on the platform's version (3.0 queries such as
    ///    `CL_PLATFORM_NUMERIC_VERSION` only on 3.0 platforms).
    pub unsafe fn get_info(platform: sys::cl_platform_id, param: sys::cl_platform_info) => clGetPlatformInfo;
}

/// [`clGetExtensionFunctionAddressForPlatform`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clGetExtensionFunctionAddressForPlatform.html)
/// (OpenCL 1.2): the address of an extension function, or `None` when the platform has none.
///
/// Use this, not `cl-sys`'s `clGetExtensionFunctionAddress`, which is declared without a return
/// type.
///
/// # Safety
///
/// 1. `platform` is a platform id returned by [`get_ids`], of an OpenCL 1.2 or newer platform.
/// 2. The caller transmutes the address only to the exact signature the extension specifies.
pub unsafe fn get_extension_function_address(
    platform: sys::cl_platform_id,
    name: &CStr,
) -> Option<*mut c_void> {
    // SAFETY: valid platform (obligation 1) and a NUL-terminated name.
    let p = unsafe { sys::clGetExtensionFunctionAddressForPlatform(platform, name.as_ptr()) };
    (!p.is_null()).then_some(p)
}
