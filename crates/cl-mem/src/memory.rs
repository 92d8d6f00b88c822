//! What every memory object shares: [`MemObject`] (the raw handle plus common queries),
//! [`MemFlags`] and [`MemObjectType`].

use bitflags::bitflags;
use cl_raw::{mem as raw, sys};

use crate::context::Context;
use crate::error::{Error, Result};

bitflags! {
    /// `cl_mem_flags` for buffers and images (SVM has its own flags).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct MemFlags: sys::cl_mem_flags {
        /// `CL_MEM_READ_WRITE` (the default when no access flag is given).
        const READ_WRITE = sys::CL_MEM_READ_WRITE;
        /// `CL_MEM_WRITE_ONLY`: kernels only write.
        const WRITE_ONLY = sys::CL_MEM_WRITE_ONLY;
        /// `CL_MEM_READ_ONLY`: kernels only read.
        const READ_ONLY = sys::CL_MEM_READ_ONLY;
        /// `CL_MEM_USE_HOST_PTR`: the object lives in caller memory.
        const USE_HOST_PTR = sys::CL_MEM_USE_HOST_PTR;
        /// `CL_MEM_ALLOC_HOST_PTR`: host-accessible allocation.
        const ALLOC_HOST_PTR = sys::CL_MEM_ALLOC_HOST_PTR;
        /// `CL_MEM_COPY_HOST_PTR`: initialise from caller memory.
        const COPY_HOST_PTR = sys::CL_MEM_COPY_HOST_PTR;
        /// `CL_MEM_HOST_WRITE_ONLY` (1.2).
        const HOST_WRITE_ONLY = sys::CL_MEM_HOST_WRITE_ONLY;
        /// `CL_MEM_HOST_READ_ONLY` (1.2).
        const HOST_READ_ONLY = sys::CL_MEM_HOST_READ_ONLY;
        /// `CL_MEM_HOST_NO_ACCESS` (1.2).
        const HOST_NO_ACCESS = sys::CL_MEM_HOST_NO_ACCESS;
        /// `CL_MEM_KERNEL_READ_AND_WRITE` (2.0, images).
        const KERNEL_READ_AND_WRITE = sys::CL_MEM_KERNEL_READ_AND_WRITE;
    }
}

impl MemFlags {
    /// The flags that take a host pointer (`USE_HOST_PTR`, `COPY_HOST_PTR`).
    pub const HOST_PTR_FLAGS: MemFlags = MemFlags::USE_HOST_PTR.union(MemFlags::COPY_HOST_PTR);
}

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
    pub fn from_raw(t: sys::cl_mem_object_type) -> MemObjectType {
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

/// Any memory object (buffer, sub-buffer, image, pipe): kernels, migration and the common
/// queries accept `&impl MemObject`.
///
/// # Safety
///
/// 1. [`MemObject::as_raw`] returns a valid `cl_mem` that stays valid (a reference is owned) as
///    long as `self` is alive.
pub unsafe trait MemObject {
    /// The raw handle, owned by `self`.
    fn as_raw(&self) -> sys::cl_mem;

    /// `CL_MEM_TYPE`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetMemObjectInfo`.
    fn mem_type(&self) -> Result<MemObjectType> {
        // SAFETY: a valid object (trait contract); a 1.0 parameter.
        let t = unsafe { raw::get_info(self.as_raw(), sys::CL_MEM_TYPE) }
            .map_err(Error::cl("clGetMemObjectInfo"))?;
        Ok(MemObjectType::from_raw(t))
    }

    /// `CL_MEM_FLAGS` as the driver reports them.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetMemObjectInfo`.
    fn mem_flags(&self) -> Result<MemFlags> {
        // SAFETY: a valid object (trait contract); a 1.0 parameter.
        let f = unsafe { raw::get_info(self.as_raw(), sys::CL_MEM_FLAGS) }
            .map_err(Error::cl("clGetMemObjectInfo"))?;
        Ok(MemFlags::from_bits_retain(f))
    }

    /// `CL_MEM_SIZE`, in bytes.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetMemObjectInfo`.
    fn mem_size_bytes(&self) -> Result<usize> {
        // SAFETY: a valid object (trait contract); a 1.0 parameter.
        unsafe { raw::get_info(self.as_raw(), sys::CL_MEM_SIZE) }
            .map_err(Error::cl("clGetMemObjectInfo"))
    }

    /// `CL_MEM_CONTEXT`, as a new owning [`Context`].
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetMemObjectInfo` or `clRetainContext`.
    fn mem_context(&self) -> Result<Context> {
        // SAFETY: a valid object (trait contract); a 1.0 parameter.
        let ctx: sys::cl_context = unsafe { raw::get_info(self.as_raw(), sys::CL_MEM_CONTEXT) }
            .map_err(Error::cl("clGetMemObjectInfo"))?;
        // SAFETY: the driver returned the object's live context.
        unsafe { Context::from_raw_retained(ctx) }
    }

    /// `CL_MEM_REFERENCE_COUNT` (for tests and leak hunting; racy by nature).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetMemObjectInfo`.
    fn mem_reference_count(&self) -> Result<u32> {
        // SAFETY: a valid object (trait contract); a 1.0 parameter.
        unsafe { raw::get_info(self.as_raw(), sys::CL_MEM_REFERENCE_COUNT) }
            .map_err(Error::cl("clGetMemObjectInfo"))
    }

    /// `CL_MEM_MAP_COUNT` (racy by nature).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetMemObjectInfo`.
    fn mem_map_count(&self) -> Result<u32> {
        // SAFETY: a valid object (trait contract); a 1.0 parameter.
        unsafe { raw::get_info(self.as_raw(), sys::CL_MEM_MAP_COUNT) }
            .map_err(Error::cl("clGetMemObjectInfo"))
    }
}

/// Releases one reference to a memory object from a `Drop`, logging failure.
pub(crate) fn release_in_drop(mem: sys::cl_mem) {
    // SAFETY: callers own one reference to `mem` and give it up here.
    if let Err(e) = unsafe { raw::release(mem) } {
        tracing::warn!(status = %e, "clReleaseMemObject failed in drop");
    }
}

/// Retains one more reference to a memory object for a `Clone`, logging failure.
pub(crate) fn retain_for_clone(mem: sys::cl_mem) {
    // SAFETY: callers hold a valid `mem`.
    if let Err(e) = unsafe { raw::retain(mem) } {
        tracing::error!(status = %e, "clRetainMemObject failed");
    }
}
