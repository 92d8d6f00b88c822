//! The OpenCL 3.0 values `cl-sys` 0.4 lacks that only cl-mem reads, each behind a typed method
//! (`Pipe::properties`, `Sampler::properties`, ...), so they are not part of any crate's public
//! surface; plus `cl_raw::extra`, re-exported, for the values users pass to `Device::info` and
//! cl-characterize reads. One `extra::` path for every such value in cl-mem.
//!
//! Values are copied from the Khronos OpenCL-Headers (v2023.02.06: `CL/cl.h`, `CL/cl_ext.h`).

pub(crate) use cl_raw::extra::*;
use cl_raw::sys;

/// `CL_MEM_PROPERTIES` (3.0): `clGetMemObjectInfo`, `cl_mem_properties[]`.
pub(crate) const CL_MEM_PROPERTIES: sys::cl_uint = 0x110A;
/// `CL_PIPE_PROPERTIES` (3.0): `clGetPipeInfo`, `cl_pipe_properties[]`.
pub(crate) const CL_PIPE_PROPERTIES: sys::cl_uint = 0x1122;
/// `CL_SAMPLER_PROPERTIES` (3.0): `clGetSamplerInfo`, `cl_sampler_properties[]`.
pub(crate) const CL_SAMPLER_PROPERTIES: sys::cl_uint = 0x1158;
