//! What `cl-sys` 0.4 lacks: OpenCL 2.2/3.0 types, constants and entry points, and the vendor
//! device-attribute constants.
//!
//! Values are copied from the Khronos OpenCL-Headers (v2023.02.06: `CL/cl.h`, `CL/cl_ext.h`) and
//! checked against the current Khronos `cl_ext.h`. The entry points are declared against the ICD
//! loader (`libOpenCL`), which exports every 3.0 symbol since ocl-icd 2.3 / the Khronos loader
//! v2020.
//!
//! **Version gating.** The loader exports these symbols whatever the platform's version, but the
//! call is dispatched to the platform: calling a 3.0 entry point on a 1.2 platform is undefined
//! (Oclgrind 21.10 hangs). Each function below states the version it needs; the wrappers in
//! [`crate::mem`], [`crate::image`] and [`crate::context`] carry it as a `# Safety` obligation and
//! `cl-mem` checks it before calling.
//!
//! `clGetExtensionFunctionAddress` in `cl-sys` is declared without a return type; use
//! [`crate::platform::get_extension_function_address`] (the `ForPlatform` variant, 1.2) instead.

#![expect(
    non_camel_case_types,
    reason = "the C names of OpenCL types are kept verbatim"
)]

use std::ffi::{c_char, c_void};

use crate::sys::{
    cl_bitfield, cl_context, cl_image_desc, cl_image_format, cl_int, cl_mem, cl_mem_flags, cl_uint,
    cl_ulong,
};

// ---------------------------------------------------------------------------------------------
// Types (cl.h, OpenCL 3.0)
// ---------------------------------------------------------------------------------------------

/// `cl_properties` (3.0): the element type of 3.0 property lists.
pub type cl_properties = cl_ulong;
/// `cl_mem_properties` (3.0): properties for `clCreateBufferWithProperties`.
pub type cl_mem_properties = cl_properties;
/// `cl_version` (3.0): a packed version, see [`crate::Version::from_cl_version`].
pub type cl_version = cl_uint;
/// `cl_device_atomic_capabilities` (3.0): bits `CL_DEVICE_ATOMIC_*`.
pub type cl_device_atomic_capabilities = cl_bitfield;
/// `cl_device_device_enqueue_capabilities` (3.0): bits `CL_DEVICE_QUEUE_*`.
pub type cl_device_device_enqueue_capabilities = cl_bitfield;
/// `cl_khronos_vendor_id` (3.0).
pub type cl_khronos_vendor_id = cl_uint;

/// `CL_NAME_VERSION_MAX_NAME_SIZE` (3.0): the size of [`cl_name_version::name`].
pub const CL_NAME_VERSION_MAX_NAME_SIZE: usize = 64;

/// `cl_name_version` (3.0): an extension, IL or OpenCL C version with its name.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cl_name_version {
    /// Packed version (`CL_MAKE_VERSION`).
    pub version: cl_version,
    /// NUL-terminated name.
    pub name: [c_char; CL_NAME_VERSION_MAX_NAME_SIZE],
}

/// Callback type of [`clSetContextDestructorCallback`].
pub type ContextDestructorCallback = extern "C" fn(context: cl_context, user_data: *mut c_void);

// ---------------------------------------------------------------------------------------------
// Constants (cl.h, OpenCL 2.1/2.2/3.0)
// ---------------------------------------------------------------------------------------------

/// `CL_INVALID_SPEC_ID` (2.2).
pub const CL_INVALID_SPEC_ID: cl_int = -71;
/// `CL_MAX_SIZE_RESTRICTION_EXCEEDED` (2.2).
pub const CL_MAX_SIZE_RESTRICTION_EXCEEDED: cl_int = -72;

/// `CL_PLATFORM_NUMERIC_VERSION` (3.0): `cl_version`.
pub const CL_PLATFORM_NUMERIC_VERSION: cl_uint = 0x0906;
/// `CL_PLATFORM_EXTENSIONS_WITH_VERSION` (3.0): `cl_name_version[]`.
pub const CL_PLATFORM_EXTENSIONS_WITH_VERSION: cl_uint = 0x0907;

/// `CL_DEVICE_NUMERIC_VERSION` (3.0): `cl_version`.
pub const CL_DEVICE_NUMERIC_VERSION: cl_uint = 0x105E;
/// `CL_DEVICE_EXTENSIONS_WITH_VERSION` (3.0): `cl_name_version[]`.
pub const CL_DEVICE_EXTENSIONS_WITH_VERSION: cl_uint = 0x1060;
/// `CL_DEVICE_ILS_WITH_VERSION` (3.0): `cl_name_version[]`.
pub const CL_DEVICE_ILS_WITH_VERSION: cl_uint = 0x1061;
/// `CL_DEVICE_BUILT_IN_KERNELS_WITH_VERSION` (3.0): `cl_name_version[]`.
pub const CL_DEVICE_BUILT_IN_KERNELS_WITH_VERSION: cl_uint = 0x1062;
/// `CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES` (3.0): `cl_device_atomic_capabilities`.
pub const CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES: cl_uint = 0x1063;
/// `CL_DEVICE_ATOMIC_FENCE_CAPABILITIES` (3.0): `cl_device_atomic_capabilities`.
pub const CL_DEVICE_ATOMIC_FENCE_CAPABILITIES: cl_uint = 0x1064;
/// `CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT` (3.0): `cl_bool`.
pub const CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT: cl_uint = 0x1065;
/// `CL_DEVICE_OPENCL_C_ALL_VERSIONS` (3.0): `cl_name_version[]`.
pub const CL_DEVICE_OPENCL_C_ALL_VERSIONS: cl_uint = 0x1066;
/// `CL_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE` (3.0): `size_t`.
pub const CL_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE: cl_uint = 0x1067;
/// `CL_DEVICE_WORK_GROUP_COLLECTIVE_FUNCTIONS_SUPPORT` (3.0): `cl_bool`.
pub const CL_DEVICE_WORK_GROUP_COLLECTIVE_FUNCTIONS_SUPPORT: cl_uint = 0x1068;
/// `CL_DEVICE_GENERIC_ADDRESS_SPACE_SUPPORT` (3.0): `cl_bool`.
pub const CL_DEVICE_GENERIC_ADDRESS_SPACE_SUPPORT: cl_uint = 0x1069;
/// `CL_DEVICE_OPENCL_C_FEATURES` (3.0): `cl_name_version[]`.
pub const CL_DEVICE_OPENCL_C_FEATURES: cl_uint = 0x106F;
/// `CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES` (3.0): `cl_device_device_enqueue_capabilities`.
pub const CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES: cl_uint = 0x1070;
/// `CL_DEVICE_PIPE_SUPPORT` (3.0): `cl_bool`.
pub const CL_DEVICE_PIPE_SUPPORT: cl_uint = 0x1071;
/// `CL_DEVICE_LATEST_CONFORMANCE_VERSION_PASSED` (3.0): string.
pub const CL_DEVICE_LATEST_CONFORMANCE_VERSION_PASSED: cl_uint = 0x1072;

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
/// `CL_DEVICE_QUEUE_SUPPORTED` (3.0).
pub const CL_DEVICE_QUEUE_SUPPORTED: cl_bitfield = 1 << 0;
/// `CL_DEVICE_QUEUE_REPLACEABLE_DEFAULT` (3.0).
pub const CL_DEVICE_QUEUE_REPLACEABLE_DEFAULT: cl_bitfield = 1 << 1;

/// `CL_QUEUE_PROPERTIES_ARRAY` (3.0): `clGetCommandQueueInfo`, `cl_queue_properties[]`.
pub const CL_QUEUE_PROPERTIES_ARRAY: cl_uint = 0x1098;
/// `CL_MEM_PROPERTIES` (3.0): `clGetMemObjectInfo`, `cl_mem_properties[]`.
pub const CL_MEM_PROPERTIES: cl_uint = 0x110A;
/// `CL_PIPE_PROPERTIES` (3.0): `clGetPipeInfo`, `cl_pipe_properties[]`.
pub const CL_PIPE_PROPERTIES: cl_uint = 0x1122;
/// `CL_SAMPLER_PROPERTIES` (3.0): `clGetSamplerInfo`, `cl_sampler_properties[]`.
pub const CL_SAMPLER_PROPERTIES: cl_uint = 0x1158;
/// `CL_PROGRAM_SCOPE_GLOBAL_CTORS_PRESENT` (2.2).
pub const CL_PROGRAM_SCOPE_GLOBAL_CTORS_PRESENT: cl_uint = 0x116A;
/// `CL_PROGRAM_SCOPE_GLOBAL_DTORS_PRESENT` (2.2).
pub const CL_PROGRAM_SCOPE_GLOBAL_DTORS_PRESENT: cl_uint = 0x116B;
/// `CL_COMMAND_SVM_MIGRATE_MEM` (2.1): `cl_command_type`.
pub const CL_COMMAND_SVM_MIGRATE_MEM: cl_uint = 0x120E;
/// `CL_KHRONOS_VENDOR_ID_CODEPLAY` (3.0).
pub const CL_KHRONOS_VENDOR_ID_CODEPLAY: cl_khronos_vendor_id = 0x10004;

// ---------------------------------------------------------------------------------------------
// Vendor device attributes (cl_ext.h). Query only when the device lists the extension.
// ---------------------------------------------------------------------------------------------

/// `CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV` (`cl_nv_device_attribute_query`): `cl_uint`.
pub const CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV: cl_uint = 0x4000;
/// `CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV` (`cl_nv_device_attribute_query`): `cl_uint`.
pub const CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV: cl_uint = 0x4001;
/// `CL_DEVICE_REGISTERS_PER_BLOCK_NV` (`cl_nv_device_attribute_query`): `cl_uint`.
pub const CL_DEVICE_REGISTERS_PER_BLOCK_NV: cl_uint = 0x4002;
/// `CL_DEVICE_WARP_SIZE_NV` (`cl_nv_device_attribute_query`): `cl_uint`.
pub const CL_DEVICE_WARP_SIZE_NV: cl_uint = 0x4003;
/// `CL_DEVICE_GPU_OVERLAP_NV` (`cl_nv_device_attribute_query`): `cl_bool`.
pub const CL_DEVICE_GPU_OVERLAP_NV: cl_uint = 0x4004;
/// `CL_DEVICE_KERNEL_EXEC_TIMEOUT_NV` (`cl_nv_device_attribute_query`): `cl_bool`.
pub const CL_DEVICE_KERNEL_EXEC_TIMEOUT_NV: cl_uint = 0x4005;
/// `CL_DEVICE_INTEGRATED_MEMORY_NV` (`cl_nv_device_attribute_query`): `cl_bool`.
pub const CL_DEVICE_INTEGRATED_MEMORY_NV: cl_uint = 0x4006;

/// `CL_DEVICE_PROFILING_TIMER_OFFSET_AMD` (`cl_amd_device_attribute_query`): `cl_ulong`.
pub const CL_DEVICE_PROFILING_TIMER_OFFSET_AMD: cl_uint = 0x4036;
/// `CL_DEVICE_TOPOLOGY_AMD` (`cl_amd_device_attribute_query`): `cl_device_topology_amd`.
pub const CL_DEVICE_TOPOLOGY_AMD: cl_uint = 0x4037;
/// `CL_DEVICE_BOARD_NAME_AMD` (`cl_amd_device_attribute_query`): string.
pub const CL_DEVICE_BOARD_NAME_AMD: cl_uint = 0x4038;
/// `CL_DEVICE_GLOBAL_FREE_MEMORY_AMD` (`cl_amd_device_attribute_query`): `size_t[]` (KiB).
pub const CL_DEVICE_GLOBAL_FREE_MEMORY_AMD: cl_uint = 0x4039;
/// `CL_DEVICE_SIMD_PER_COMPUTE_UNIT_AMD` (`cl_amd_device_attribute_query`): `cl_uint`.
pub const CL_DEVICE_SIMD_PER_COMPUTE_UNIT_AMD: cl_uint = 0x4040;
/// `CL_DEVICE_SIMD_WIDTH_AMD` (`cl_amd_device_attribute_query`): `cl_uint`.
pub const CL_DEVICE_SIMD_WIDTH_AMD: cl_uint = 0x4041;
/// `CL_DEVICE_SIMD_INSTRUCTION_WIDTH_AMD` (`cl_amd_device_attribute_query`): `cl_uint`.
pub const CL_DEVICE_SIMD_INSTRUCTION_WIDTH_AMD: cl_uint = 0x4042;
/// `CL_DEVICE_WAVEFRONT_WIDTH_AMD` (`cl_amd_device_attribute_query`): `cl_uint`.
pub const CL_DEVICE_WAVEFRONT_WIDTH_AMD: cl_uint = 0x4043;
/// `CL_DEVICE_GLOBAL_MEM_CHANNELS_AMD` (`cl_amd_device_attribute_query`): `cl_uint`.
pub const CL_DEVICE_GLOBAL_MEM_CHANNELS_AMD: cl_uint = 0x4044;
/// `CL_DEVICE_GLOBAL_MEM_CHANNEL_BANKS_AMD` (`cl_amd_device_attribute_query`): `cl_uint`.
pub const CL_DEVICE_GLOBAL_MEM_CHANNEL_BANKS_AMD: cl_uint = 0x4045;
/// `CL_DEVICE_GLOBAL_MEM_CHANNEL_BANK_WIDTH_AMD` (`cl_amd_device_attribute_query`): `cl_uint`.
pub const CL_DEVICE_GLOBAL_MEM_CHANNEL_BANK_WIDTH_AMD: cl_uint = 0x4046;
/// `CL_DEVICE_LOCAL_MEM_SIZE_PER_COMPUTE_UNIT_AMD` (`cl_amd_device_attribute_query`): `cl_uint`.
pub const CL_DEVICE_LOCAL_MEM_SIZE_PER_COMPUTE_UNIT_AMD: cl_uint = 0x4047;
/// `CL_DEVICE_LOCAL_MEM_BANKS_AMD` (`cl_amd_device_attribute_query`): `cl_uint`.
pub const CL_DEVICE_LOCAL_MEM_BANKS_AMD: cl_uint = 0x4048;
/// `CL_DEVICE_THREAD_TRACE_SUPPORTED_AMD` (`cl_amd_device_attribute_query`): `cl_bool`.
pub const CL_DEVICE_THREAD_TRACE_SUPPORTED_AMD: cl_uint = 0x4049;
/// `CL_DEVICE_GFXIP_MAJOR_AMD` (`cl_amd_device_attribute_query`): `cl_uint`.
pub const CL_DEVICE_GFXIP_MAJOR_AMD: cl_uint = 0x404A;
/// `CL_DEVICE_GFXIP_MINOR_AMD` (`cl_amd_device_attribute_query`): `cl_uint`.
pub const CL_DEVICE_GFXIP_MINOR_AMD: cl_uint = 0x404B;
/// `CL_DEVICE_AVAILABLE_ASYNC_QUEUES_AMD` (`cl_amd_device_attribute_query`): `cl_uint`.
pub const CL_DEVICE_AVAILABLE_ASYNC_QUEUES_AMD: cl_uint = 0x404C;
/// `CL_DEVICE_PREFERRED_WORK_GROUP_SIZE_AMD` (`cl_amd_device_attribute_query`): `size_t`.
pub const CL_DEVICE_PREFERRED_WORK_GROUP_SIZE_AMD: cl_uint = 0x4030;
/// `CL_DEVICE_MAX_WORK_GROUP_SIZE_AMD` (`cl_amd_device_attribute_query`): `size_t`.
pub const CL_DEVICE_MAX_WORK_GROUP_SIZE_AMD: cl_uint = 0x4031;
/// `CL_DEVICE_PREFERRED_CONSTANT_BUFFER_SIZE_AMD` (`cl_amd_device_attribute_query`): `size_t`.
pub const CL_DEVICE_PREFERRED_CONSTANT_BUFFER_SIZE_AMD: cl_uint = 0x4033;
/// `CL_DEVICE_PCIE_ID_AMD` (`cl_amd_device_attribute_query`): `cl_uint`.
pub const CL_DEVICE_PCIE_ID_AMD: cl_uint = 0x4034;

/// `CL_DEVICE_SUB_GROUP_SIZES_INTEL` (`cl_intel_required_subgroup_size`): `size_t[]`.
pub const CL_DEVICE_SUB_GROUP_SIZES_INTEL: cl_uint = 0x4108;
/// `CL_KERNEL_SPILL_MEM_SIZE_INTEL` (`cl_intel_required_subgroup_size`): `cl_ulong`.
pub const CL_KERNEL_SPILL_MEM_SIZE_INTEL: cl_uint = 0x4109;
/// `CL_KERNEL_COMPILE_SUB_GROUP_SIZE_INTEL` (`cl_intel_required_subgroup_size`): `size_t`.
pub const CL_KERNEL_COMPILE_SUB_GROUP_SIZE_INTEL: cl_uint = 0x410A;
/// `CL_DEVICE_PCI_BUS_INFO_KHR` (`cl_khr_pci_bus_info`).
pub const CL_DEVICE_PCI_BUS_INFO_KHR: cl_uint = 0x410F;

// ---------------------------------------------------------------------------------------------
// Entry points cl-sys 0.4 does not declare
// ---------------------------------------------------------------------------------------------

#[cfg_attr(target_os = "macos", link(name = "OpenCL", kind = "framework"))]
#[cfg_attr(not(target_os = "macos"), link(name = "OpenCL"))]
extern "system" {
    /// `clCreateBufferWithProperties` (OpenCL 3.0). Undefined on older platforms: gate first.
    pub fn clCreateBufferWithProperties(
        context: cl_context,
        properties: *const cl_mem_properties,
        flags: cl_mem_flags,
        size: usize,
        host_ptr: *mut c_void,
        errcode_ret: *mut cl_int,
    ) -> cl_mem;

    /// `clCreateImageWithProperties` (OpenCL 3.0). Undefined on older platforms: gate first.
    pub fn clCreateImageWithProperties(
        context: cl_context,
        properties: *const cl_mem_properties,
        flags: cl_mem_flags,
        image_format: *const cl_image_format,
        image_desc: *const cl_image_desc,
        host_ptr: *mut c_void,
        errcode_ret: *mut cl_int,
    ) -> cl_mem;

    /// `clSetContextDestructorCallback` (OpenCL 3.0). Undefined on older platforms: gate first.
    pub fn clSetContextDestructorCallback(
        context: cl_context,
        pfn_notify: Option<ContextDestructorCallback>,
        user_data: *mut c_void,
    ) -> cl_int;

    /// `clUnloadPlatformCompiler` (OpenCL 1.2).
    pub fn clUnloadPlatformCompiler(platform: crate::sys::cl_platform_id) -> cl_int;
}

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
        assert_eq!(CL_DEVICE_NUMERIC_VERSION, 0x105E);
        assert_eq!(CL_DEVICE_PIPE_SUPPORT, 0x1071);
        assert_eq!(CL_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE, 0x1067);
        assert_eq!(CL_DEVICE_WARP_SIZE_NV, 0x4003);
        assert_eq!(CL_DEVICE_WAVEFRONT_WIDTH_AMD, 0x4043);
        assert_eq!(CL_DEVICE_SUB_GROUP_SIZES_INTEL, 0x4108);
        // cl-sys agrees where both define a value.
        assert_eq!(
            crate::sys::CL_DEVICE_SUB_GROUP_INDEPENDENT_FORWARD_PROGRESS + 1,
            CL_DEVICE_NUMERIC_VERSION
        );
    }
}
