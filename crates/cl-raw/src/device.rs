//! Device entry points (`clGetDeviceIDs`, `clGetDeviceInfo`, sub-devices).

use crate::error::{check, ClError};
use crate::fault;
use crate::info::{query, InfoValue};
use crate::sys;

/// [`clGetDeviceIDs`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clGetDeviceIDs.html):
/// the devices of `platform` matching `device_type` (`CL_DEVICE_TYPE_ALL` for all).
///
/// A platform without matching devices gives an empty list, not `CL_DEVICE_NOT_FOUND`.
///
/// # Errors
///
/// The driver's status other than `CL_DEVICE_NOT_FOUND`.
///
/// # Safety
///
/// 1. `platform` is a platform id returned by [`crate::platform::get_ids`].
pub unsafe fn get_ids(
    platform: sys::cl_platform_id,
    device_type: sys::cl_device_type,
) -> Result<Vec<sys::cl_device_id>, ClError> {
    let mut n: sys::cl_uint = 0;
    // SAFETY: a count query on a valid platform (obligation 1).
    let status =
        unsafe { sys::clGetDeviceIDs(platform, device_type, 0, std::ptr::null_mut(), &mut n) };
    if status == sys::CL_DEVICE_NOT_FOUND {
        return Ok(Vec::new());
    }
    check(status)?;
    let mut ids = vec![std::ptr::null_mut(); n as usize];
    if n > 0 {
        // SAFETY: `ids` has room for exactly `n` handles.
        check(unsafe { sys::clGetDeviceIDs(platform, device_type, n, ids.as_mut_ptr(), &mut n) })?;
        ids.truncate(n as usize);
    }
    Ok(ids)
}

/// [`clGetDeviceInfo`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clGetDeviceInfo.html):
/// one device parameter, decoded as `T`.
///
/// # Errors
///
/// The driver's status, or `CL_INVALID_VALUE` when the value does not fit `T`.
///
/// # Safety
///
/// 1. `device` is a valid device id.
/// 2. `param` exists on the device's version, and a vendor parameter (`0x4000`..) only on a device
///    that lists its extension: some drivers misbehave on unknown parameters.
pub unsafe fn get_info<T: InfoValue>(
    device: sys::cl_device_id,
    param: sys::cl_device_info,
) -> Result<T, ClError> {
    // SAFETY: the closure forwards to clGetDeviceInfo with the caller's valid handle.
    unsafe { query(|size, value, ret| sys::clGetDeviceInfo(device, param, size, value, ret)) }
}

/// [`clCreateSubDevices`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clCreateSubDevices.html)
/// (OpenCL 1.2): partitions `device`; `properties` must end with 0.
///
/// # Errors
///
/// The driver's status; `CL_INVALID_VALUE` when `properties` is not 0-terminated.
///
/// # Safety
///
/// 1. `device` is a valid device id of an OpenCL 1.2 or newer platform.
/// 2. The caller owns (and must release) one reference to each returned sub-device.
pub unsafe fn create_sub_devices(
    device: sys::cl_device_id,
    properties: &[sys::cl_device_partition_property],
) -> Result<Vec<sys::cl_device_id>, ClError> {
    fault::check("clCreateSubDevices")?;
    if properties.last() != Some(&0) {
        return Err(ClError::InvalidValue);
    }
    let mut n: sys::cl_uint = 0;
    // SAFETY: count query; `properties` is 0-terminated (checked above).
    check(unsafe {
        sys::clCreateSubDevices(device, properties.as_ptr(), 0, std::ptr::null_mut(), &mut n)
    })?;
    let mut ids = vec![std::ptr::null_mut(); n as usize];
    // SAFETY: `ids` has room for `n` handles.
    check(unsafe {
        sys::clCreateSubDevices(
            device,
            properties.as_ptr(),
            n,
            ids.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    })?;
    Ok(ids)
}
