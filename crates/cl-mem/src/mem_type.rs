//! [`MemObjectType`]: what `CL_MEM_TYPE` says an object is. A leaf module: kernels (runtime) and
//! memory objects both name it.

use cl_raw::sys;

/// `CL_MEM_TYPE`.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemObjectType {
    /// `CL_MEM_OBJECT_BUFFER`.
    Buffer,
    /// `CL_MEM_OBJECT_IMAGE1D`.
    Image1d,
    /// `CL_MEM_OBJECT_IMAGE1D_BUFFER`.
    Image1dBuffer,
    /// `CL_MEM_OBJECT_IMAGE1D_ARRAY`.
    Image1dArray,
    /// `CL_MEM_OBJECT_IMAGE2D`.
    Image2d,
    /// `CL_MEM_OBJECT_IMAGE2D_ARRAY`.
    Image2dArray,
    /// `CL_MEM_OBJECT_IMAGE3D`.
    Image3d,
    /// `CL_MEM_OBJECT_PIPE`.
    Pipe,
    /// A value this crate does not know.
    Other(u32),
}

impl MemObjectType {
    /// Decodes a raw `cl_mem_object_type`.
    pub(crate) fn from_raw(t: sys::cl_mem_object_type) -> MemObjectType {
        match t {
            sys::CL_MEM_OBJECT_BUFFER => MemObjectType::Buffer,
            sys::CL_MEM_OBJECT_IMAGE1D => MemObjectType::Image1d,
            sys::CL_MEM_OBJECT_IMAGE1D_BUFFER => MemObjectType::Image1dBuffer,
            sys::CL_MEM_OBJECT_IMAGE1D_ARRAY => MemObjectType::Image1dArray,
            sys::CL_MEM_OBJECT_IMAGE2D => MemObjectType::Image2d,
            sys::CL_MEM_OBJECT_IMAGE2D_ARRAY => MemObjectType::Image2dArray,
            sys::CL_MEM_OBJECT_IMAGE3D => MemObjectType::Image3d,
            sys::CL_MEM_OBJECT_PIPE => MemObjectType::Pipe,
            other => MemObjectType::Other(other),
        }
    }
}
