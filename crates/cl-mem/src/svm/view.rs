//! [`SvmBufferView`]: an SVM allocation seen as a buffer object (`clCreateBuffer` with
//! `CL_MEM_USE_HOST_PTR` on the SVM pointer, PyOpenCL's `SVMPointer.as_buffer`).

use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use cl_raw::{mem as raw_mem, sys};

use crate::buffer::Buffer;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::kernel::{ArgValue, KernelArg};
use crate::memory::MemFlags;
use crate::pod::Pod;
use crate::queue::Queue;

use super::core::Core;
use super::{Grain, SvmArray};

/// A buffer object whose storage is an SVM allocation; it borrows the allocation, so it cannot
/// outlive it.
///
/// It deliberately does not hand out the inner [`Buffer`] (a clone would escape the borrow) nor
/// implement `MemObject` (a non-blocking command through it would not tell the allocation its
/// queue). What it offers: blocking [`read`](SvmBufferView::read) and
/// [`write`](SvmBufferView::write), and use as a kernel argument, where the kernel keeps the
/// *allocation* alive and reports its queues like an SVM-pointer argument.
pub struct SvmBufferView<'a> {
    buffer: Buffer,
    core: Arc<Core>,
    _borrow: PhantomData<&'a ()>,
}

impl<T: Pod, G: Grain> SvmArray<T, G> {
    /// A buffer object over the whole allocation (PyOpenCL's `as_buffer`: flags default to
    /// `READ_WRITE`; `USE_HOST_PTR` is always added).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an empty allocation (buffers cannot be empty), for
    /// `COPY_HOST_PTR`/`ALLOC_HOST_PTR` (checked first); [`Error::Cl`] from `clCreateBuffer`.
    pub fn as_buffer(&self, flags: MemFlags) -> Result<SvmBufferView<'_>> {
        if self.is_empty() || self.size_bytes() == 0 {
            return Err(Error::InvalidArgument(
                "an empty SVM allocation cannot back a buffer".into(),
            ));
        }
        if flags.intersects(MemFlags::COPY_HOST_PTR | MemFlags::ALLOC_HOST_PTR) {
            return Err(Error::InvalidArgument(
                "an SVM buffer view uses the SVM memory (USE_HOST_PTR): COPY_HOST_PTR and \
                 ALLOC_HOST_PTR are invalid"
                    .into(),
            ));
        }
        let flags = if flags.intersects(MemFlags::READ_ONLY | MemFlags::WRITE_ONLY) {
            flags
        } else {
            flags | MemFlags::READ_WRITE
        } | MemFlags::USE_HOST_PTR;
        let context = self.core.context();
        // SAFETY: a valid context; USE_HOST_PTR on an SVM pointer with at most its allocated
        // size makes the SVM the buffer's storage (OpenCL 3.0, clCreateBuffer); the view borrows
        // the allocation and kernels holding the buffer also hold the allocation, so the storage
        // outlives every use of the buffer.
        let raw = unsafe {
            raw_mem::create_buffer(
                context.as_raw(),
                flags.bits(),
                self.size_bytes(),
                self.core.ptr(),
            )
        }
        .map_err(Error::cl("clCreateBuffer"))?;
        // SAFETY: a fresh buffer reference we own.
        let buffer = unsafe { Buffer::from_raw(raw) }?;
        Ok(SvmBufferView {
            buffer,
            core: Arc::clone(&self.core),
            _borrow: PhantomData,
        })
    }
}

impl SvmBufferView<'_> {
    /// The raw buffer handle (owned by the view; using it past the view is the caller's risk).
    pub fn as_raw(&self) -> sys::cl_mem {
        self.buffer.as_raw()
    }

    /// The size in bytes.
    pub fn size_bytes(&self) -> usize {
        self.buffer.size_bytes()
    }

    /// The flags of the buffer (with `USE_HOST_PTR`).
    pub fn flags(&self) -> MemFlags {
        self.buffer.flags()
    }

    /// Blocking `clEnqueueReadBuffer` through the buffer (see [`Buffer::read`]).
    ///
    /// # Errors
    ///
    /// As [`Buffer::read`], plus [`Error::InvalidArgument`] for a queue of another context.
    pub fn read<T: Pod>(
        &self,
        queue: &Queue,
        offset_bytes: usize,
        out: &mut [T],
        wait: &[&Event],
    ) -> Result<Event> {
        self.core.check_queue(queue)?;
        self.buffer.read(queue, offset_bytes, out, wait)
    }

    /// Blocking `clEnqueueWriteBuffer` through the buffer (see [`Buffer::write`]).
    ///
    /// # Errors
    ///
    /// As [`SvmBufferView::read`].
    pub fn write<T: Pod>(
        &self,
        queue: &Queue,
        offset_bytes: usize,
        data: &[T],
        wait: &[&Event],
    ) -> Result<Event> {
        self.core.check_queue(queue)?;
        self.buffer.write(queue, offset_bytes, data, wait)
    }
}

// SAFETY: a valid buffer handle, retained by the kernel; the kernel also holds the allocation
// behind it (`keep_alive`) and reports each enqueue's queue to it, so the storage outlives
// every command that uses the buffer.
unsafe impl KernelArg for SvmBufferView<'_> {
    fn arg_value(&self) -> ArgValue<'_> {
        ArgValue::MemKeepAlive {
            mem: self.buffer.as_raw(),
            keep_alive: Arc::clone(&self.core) as Arc<dyn Any + Send + Sync>,
        }
    }
}

impl fmt::Debug for SvmBufferView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SvmBufferView")
            .field("buffer", &self.buffer)
            .finish()
    }
}
