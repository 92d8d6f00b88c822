//! Device entry points (`clGetDeviceIDs`, `clGetDeviceInfo`, sub-devices).

use crate::error::ClError;
use crate::fault;
use crate::info::{info_fn, query_list};
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
    // SAFETY: a count-then-fill list call on a valid platform (obligation 1).
    let ids = unsafe {
        query_list(std::ptr::null_mut, |n, ids, ret| {
            sys::clGetDeviceIDs(platform, device_type, n, ids, ret)
        })
    };
    match ids {
        Err(ClError::DeviceNotFound) => Ok(Vec::new()),
        ids => ids,
    }
}

info_fn! {
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
    pub unsafe fn get_info(device: sys::cl_device_id, param: sys::cl_device_info) => clGetDeviceInfo;
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
    // SAFETY: a count-then-fill list call; `properties` is 0-terminated (checked above).
    unsafe {
        query_list(std::ptr::null_mut, |n, ids, ret| {
            sys::clCreateSubDevices(device, properties.as_ptr(), n, ids, ret)
        })
    }
}
