//! What `cl-sys` 0.4 lacks and more than one crate of this workspace (or a wrapper here) needs:
//! the OpenCL 3.0 entry points and types the wrappers use, the 3.0 device queries `Device::info`
//! takes in place of a getter of its own, and the vendor device-attribute constants both `cl-mem`
//! and `cl-characterize` read. A value only `cl-mem` reads behind a typed method lives in `cl-mem`
//! (its `runtime/extra.rs`); other values of the Khronos headers are not copied here: pass them
//! to `Device::info` (or [`crate::device::get_info`]) as literals.
//!
//! Values are copied from the Khronos OpenCL-Headers (v2023.02.06: `CL/cl.h`, `CL/cl_ext.h`) and
//! checked against the current Khronos `cl_ext.h`. The entry points are declared against the ICD
//! loader (`libOpenCL`), which exports every 3.0 symbol since ocl-icd 2.3 / the Khronos loader
//! v2020.
//!
//! **Version gating.** The loader exports these symbols whatever the platform's version, but the
//! call is dispatched to the platform: calling a 3.0 entry point on a 1.2 platform is undefined
//! (Oclgrind 21.10 hangs). Each function below states the version it needs; its wrapper
//! ([`crate::context::set_destructor_callback`], [`crate::mem::create_buffer_with_properties`])
//! carries it as a `# Safety` obligation and `cl-mem` checks it before calling.
//!
//! `clGetExtensionFunctionAddress` in `cl-sys` is declared without a return type; use
//! [`crate::platform::get_extension_function_address`] (the `ForPlatform` variant, 1.2) instead.

#![expect(
    non_camel_case_types,
    reason = "the C names of OpenCL types are kept verbatim"
)]

use std::ffi::{c_char, c_void};

use crate::sys::{cl_bitfield, cl_context, cl_int, cl_mem, cl_mem_flags, cl_uint, cl_ulong};

// ---------------------------------------------------------------------------------------------
// Types (cl.h, OpenCL 3.0)
// ---------------------------------------------------------------------------------------------

/// `cl_mem_properties` (3.0): the 0-terminated key/value list of `clCreateBufferWithProperties`
/// (external memory imports are its one use here).
pub(crate) type cl_mem_properties = cl_ulong;

/// `CL_NAME_VERSION_MAX_NAME_SIZE` (3.0): the size of [`cl_name_version::name`].
pub(crate) const CL_NAME_VERSION_MAX_NAME_SIZE: usize = 64;

/// `cl_name_version` (3.0): an extension, IL or OpenCL C version with its name.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cl_name_version {
    /// Packed `cl_version` (`CL_MAKE_VERSION`), see [`crate::Version::from_cl_version`].
    pub version: cl_uint,
    /// NUL-terminated name.
    pub name: [c_char; CL_NAME_VERSION_MAX_NAME_SIZE],
}

/// Callback type of [`clSetContextDestructorCallback`].
pub(crate) type ContextDestructorCallback =
    extern "C" fn(context: cl_context, user_data: *mut c_void);

// ---------------------------------------------------------------------------------------------
// Constants (cl.h, OpenCL 3.0)
// ---------------------------------------------------------------------------------------------

/// `cl_device_atomic_capabilities` (3.0): bits `CL_DEVICE_ATOMIC_*`.
#[expect(
    non_camel_case_types,
    reason = "the C names of OpenCL types are kept verbatim"
)]
pub type cl_device_atomic_capabilities = cl_bitfield;

/// `CL_DEVICE_NUMERIC_VERSION` (3.0): `cl_version`.
pub const CL_DEVICE_NUMERIC_VERSION: cl_uint = 0x105E;
/// `CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES` (3.0): `cl_device_atomic_capabilities`.
pub const CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES: cl_uint = 0x1063;
/// `CL_DEVICE_ATOMIC_FENCE_CAPABILITIES` (3.0): `cl_device_atomic_capabilities`.
pub const CL_DEVICE_ATOMIC_FENCE_CAPABILITIES: cl_uint = 0x1064;
/// `CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT` (3.0): `cl_bool`.
pub const CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT: cl_uint = 0x1065;
/// `CL_DEVICE_OPENCL_C_ALL_VERSIONS` (3.0): `cl_name_version[]`.
pub const CL_DEVICE_OPENCL_C_ALL_VERSIONS: cl_uint = 0x1066;
/// `CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES` (3.0): `cl_device_device_enqueue_capabilities`.
pub const CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES: cl_uint = 0x1070;
/// `CL_DEVICE_PIPE_SUPPORT` (3.0): `cl_bool`.
pub const CL_DEVICE_PIPE_SUPPORT: cl_uint = 0x1071;

/// `CL_DEVICE_ATOMIC_ORDER_RELAXED` (3.0).
pub const CL_DEVICE_ATOMIC_ORDER_RELAXED: cl_bitfield = 1 << 0;
/// `CL_DEVICE_ATOMIC_ORDER_ACQ_REL` (3.0).
pub const CL_DEVICE_ATOMIC_ORDER_ACQ_REL: cl_bitfield = 1 << 1;
/// `CL_DEVICE_ATOMIC_ORDER_SEQ_CST` (3.0).
pub const CL_DEVICE_ATOMIC_ORDER_SEQ_CST: cl_bitfield = 1 << 2;
/// `CL_DEVICE_ATOMIC_SCOPE_WORK_ITEM` (3.0).
pub const CL_DEVICE_ATOMIC_SCOPE_WORK_ITEM: cl_bitfield = 1 << 3;
/// `CL_DEVICE_ATOMIC_SCOPE_WORK_GROUP` (3.0).
pub const CL_DEVICE_ATOMIC_SCOPE_WORK_GROUP: cl_bitfield = 1 << 4;
/// `CL_DEVICE_ATOMIC_SCOPE_DEVICE` (3.0).
pub const CL_DEVICE_ATOMIC_SCOPE_DEVICE: cl_bitfield = 1 << 5;
/// `CL_DEVICE_ATOMIC_SCOPE_ALL_DEVICES` (3.0).
pub const CL_DEVICE_ATOMIC_SCOPE_ALL_DEVICES: cl_bitfield = 1 << 6;

/// `CL_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE` (3.0): `size_t`.
pub const CL_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE: cl_uint = 0x1067;

// ---------------------------------------------------------------------------------------------
// Vendor device attributes (cl_ext.h). Query only when the device lists the extension.
// ---------------------------------------------------------------------------------------------

/// `CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV` (`cl_nv_device_attribute_query`): `cl_uint`.
pub const CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV: cl_uint = 0x4000;
/// `CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV` (`cl_nv_device_attribute_query`): `cl_uint`.
pub const CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV: cl_uint = 0x4001;
/// `CL_DEVICE_WARP_SIZE_NV` (`cl_nv_device_attribute_query`): `cl_uint`.
pub const CL_DEVICE_WARP_SIZE_NV: cl_uint = 0x4003;

/// `CL_DEVICE_SIMD_PER_COMPUTE_UNIT_AMD` (`cl_amd_device_attribute_query`): `cl_uint`.
pub const CL_DEVICE_SIMD_PER_COMPUTE_UNIT_AMD: cl_uint = 0x4040;

/// `CL_DEVICE_SIMD_WIDTH_AMD` (`cl_amd_device_attribute_query`): `cl_uint`.
pub const CL_DEVICE_SIMD_WIDTH_AMD: cl_uint = 0x4041;
/// `CL_DEVICE_WAVEFRONT_WIDTH_AMD` (`cl_amd_device_attribute_query`): `cl_uint`.
pub const CL_DEVICE_WAVEFRONT_WIDTH_AMD: cl_uint = 0x4043;
/// `CL_DEVICE_LOCAL_MEM_BANKS_AMD` (`cl_amd_device_attribute_query`): `cl_uint`.
pub const CL_DEVICE_LOCAL_MEM_BANKS_AMD: cl_uint = 0x4048;

/// `CL_DEVICE_SUB_GROUP_SIZES_INTEL` (`cl_intel_required_subgroup_size`): `size_t[]`.
pub const CL_DEVICE_SUB_GROUP_SIZES_INTEL: cl_uint = 0x4108;

// ---------------------------------------------------------------------------------------------
// Entry points cl-sys 0.4 does not declare
// ---------------------------------------------------------------------------------------------

#[cfg_attr(target_os = "macos", link(name = "OpenCL", kind = "framework"))]
#[cfg_attr(not(target_os = "macos"), link(name = "OpenCL"))]
extern "system" {
    /// `clCreateBufferWithProperties` (OpenCL 3.0). Undefined on older platforms: gate first;
    /// called through [`crate::mem::create_buffer_with_properties`].
    pub(crate) fn clCreateBufferWithProperties(
        context: cl_context,
        properties: *const cl_mem_properties,
        flags: cl_mem_flags,
        size: usize,
        host_ptr: *mut c_void,
        errcode_ret: *mut cl_int,
    ) -> cl_mem;

    /// `clSetContextDestructorCallback` (OpenCL 3.0). Undefined on older platforms: gate first.
    pub(crate) fn clSetContextDestructorCallback(
        context: cl_context,
        pfn_notify: Option<ContextDestructorCallback>,
        user_data: *mut c_void,
    ) -> cl_int;
}

// cl-sys agrees where both define a value: the 3.0 device queries follow its last 2.1 one.
const _: () = assert!(
    crate::sys::CL_DEVICE_SUB_GROUP_INDEPENDENT_FORWARD_PROGRESS + 1 == CL_DEVICE_NUMERIC_VERSION
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_version_has_the_c_layout() {
        assert_eq!(std::mem::size_of::<cl_name_version>(), 4 + 64);
        assert_eq!(std::mem::align_of::<cl_name_version>(), 4);
    }

    #[test]
    fn constants_match_the_khronos_headers() {
        // Spot checks against CL/cl.h and CL/cl_ext.h (OpenCL-Headers v2023.02.06).
        assert_eq!(CL_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE, 0x1067);
        assert_eq!(CL_DEVICE_WARP_SIZE_NV, 0x4003);
        assert_eq!(CL_DEVICE_WAVEFRONT_WIDTH_AMD, 0x4043);
        assert_eq!(CL_DEVICE_SUB_GROUP_SIZES_INTEL, 0x4108);
    }
}
