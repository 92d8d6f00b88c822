//! The OpenCL 3.0 and vendor values `cl-sys` 0.4 lacks that only cl-mem reads, each behind a typed
//! method (`Device::numeric_version`, `Device::atomic_memory_capabilities`, `Memory::properties`,
//! ...), so they are not part of any crate's public surface; plus `cl_raw::extra`, re-exported,
//! for the values cl-characterize reads too. One `extra::` path for every such value in cl-mem.
//!
//! Values are copied from the Khronos OpenCL-Headers (v2023.02.06: `CL/cl.h`, `CL/cl_ext.h`).

pub(crate) use cl_raw::extra::*;
use cl_raw::sys;

/// `cl_device_atomic_capabilities` (3.0): bits `CL_DEVICE_ATOMIC_*`.
#[expect(
    non_camel_case_types,
    reason = "the C names of OpenCL types are kept verbatim"
)]
pub(crate) type cl_device_atomic_capabilities = sys::cl_bitfield;

/// `CL_DEVICE_NUMERIC_VERSION` (3.0): `cl_version`.
pub(crate) const CL_DEVICE_NUMERIC_VERSION: sys::cl_uint = 0x105E;
/// `CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES` (3.0): `cl_device_atomic_capabilities`.
pub(crate) const CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES: sys::cl_uint = 0x1063;
/// `CL_DEVICE_ATOMIC_FENCE_CAPABILITIES` (3.0): `cl_device_atomic_capabilities`.
pub(crate) const CL_DEVICE_ATOMIC_FENCE_CAPABILITIES: sys::cl_uint = 0x1064;
/// `CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT` (3.0): `cl_bool`.
pub(crate) const CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT: sys::cl_uint = 0x1065;
/// `CL_DEVICE_OPENCL_C_ALL_VERSIONS` (3.0): `cl_name_version[]`.
pub(crate) const CL_DEVICE_OPENCL_C_ALL_VERSIONS: sys::cl_uint = 0x1066;
/// `CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES` (3.0): `cl_device_device_enqueue_capabilities`.
pub(crate) const CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES: sys::cl_uint = 0x1070;
/// `CL_DEVICE_PIPE_SUPPORT` (3.0): `cl_bool`.
pub(crate) const CL_DEVICE_PIPE_SUPPORT: sys::cl_uint = 0x1071;

/// `CL_DEVICE_ATOMIC_ORDER_RELAXED` (3.0).
pub(crate) const CL_DEVICE_ATOMIC_ORDER_RELAXED: sys::cl_bitfield = 1 << 0;
/// `CL_DEVICE_ATOMIC_ORDER_ACQ_REL` (3.0).
pub(crate) const CL_DEVICE_ATOMIC_ORDER_ACQ_REL: sys::cl_bitfield = 1 << 1;
/// `CL_DEVICE_ATOMIC_ORDER_SEQ_CST` (3.0).
pub(crate) const CL_DEVICE_ATOMIC_ORDER_SEQ_CST: sys::cl_bitfield = 1 << 2;
/// `CL_DEVICE_ATOMIC_SCOPE_WORK_ITEM` (3.0).
pub(crate) const CL_DEVICE_ATOMIC_SCOPE_WORK_ITEM: sys::cl_bitfield = 1 << 3;
/// `CL_DEVICE_ATOMIC_SCOPE_WORK_GROUP` (3.0).
pub(crate) const CL_DEVICE_ATOMIC_SCOPE_WORK_GROUP: sys::cl_bitfield = 1 << 4;
/// `CL_DEVICE_ATOMIC_SCOPE_DEVICE` (3.0).
pub(crate) const CL_DEVICE_ATOMIC_SCOPE_DEVICE: sys::cl_bitfield = 1 << 5;
/// `CL_DEVICE_ATOMIC_SCOPE_ALL_DEVICES` (3.0).
pub(crate) const CL_DEVICE_ATOMIC_SCOPE_ALL_DEVICES: sys::cl_bitfield = 1 << 6;

/// `CL_MEM_PROPERTIES` (3.0): `clGetMemObjectInfo`, `cl_mem_properties[]`.
pub(crate) const CL_MEM_PROPERTIES: sys::cl_uint = 0x110A;
/// `CL_PIPE_PROPERTIES` (3.0): `clGetPipeInfo`, `cl_pipe_properties[]`.
pub(crate) const CL_PIPE_PROPERTIES: sys::cl_uint = 0x1122;
/// `CL_SAMPLER_PROPERTIES` (3.0): `clGetSamplerInfo`, `cl_sampler_properties[]`.
pub(crate) const CL_SAMPLER_PROPERTIES: sys::cl_uint = 0x1158;

/// `CL_DEVICE_SIMD_PER_COMPUTE_UNIT_AMD` (`cl_amd_device_attribute_query`): `cl_uint`.
pub(crate) const CL_DEVICE_SIMD_PER_COMPUTE_UNIT_AMD: sys::cl_uint = 0x4040;

// cl-sys agrees where both define a value: the 3.0 device queries follow its last 2.1 one.
const _: () =
    assert!(sys::CL_DEVICE_SUB_GROUP_INDEPENDENT_FORWARD_PROGRESS + 1 == CL_DEVICE_NUMERIC_VERSION);
