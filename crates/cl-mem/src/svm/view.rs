//! [`SvmBufferView`]: an SVM allocation seen as a buffer object (`clCreateBuffer` with
//! `CL_MEM_USE_HOST_PTR` on the SVM pointer, PyOpenCL's `SVMPointer.as_buffer`).

use std::marker::PhantomData;
use std::sync::Arc;

use cl_raw::{mem as raw_mem, sys};

use crate::buffer::tracked::enqueue_host;
use crate::buffer::transfer::{host_transfers, Transfer};
use crate::error::{check_range, Error, Result};
use crate::memory::MemFlags;
use crate::raw_handle::{debug_fields, drop_releases, RawHandle};
use crate::runtime::event::Event;
use crate::runtime::kernel::{ArgValue, KeepAlive, KernelArg};
use crate::runtime::queue::Queue;
use crate::runtime::track::{Access, Direction, Read, Write};

use super::core::Core;

/// A buffer object whose storage is an SVM allocation; it borrows the allocation, so it cannot
/// outlive it.
///
/// It deliberately is not a [`crate::Buffer`] (a clone would escape the borrow) and does not
/// implement `MemObject` (a non-blocking command through it would not tell the allocation its
/// queue). What it offers: blocking [`read`](SvmBufferView::read) and
/// [`write`](SvmBufferView::write), and use as a kernel argument, where the kernel keeps the
/// *allocation* alive and reports its queues like an SVM-pointer argument.
///
/// It owns its handle directly rather than through [`crate::Buffer::from_raw`]: the Intel CPU
/// runtime reports an internal `CL_MEM_ASSOCIATED_MEMOBJECT` for such a buffer that
/// `clRetainMemObject` rejects (`CL_INVALID_MEM_OBJECT`).
pub struct SvmBufferView<'a> {
    raw: sys::cl_mem,
    size: usize,
    flags: MemFlags,
    core: Arc<Core>,
    _borrow: PhantomData<&'a ()>,
}

// SAFETY: OpenCL 1.1+ calls are thread-safe ("Multiple Host Threads"); the view only reaches
// blocking transfers and queries through `&self`.
unsafe impl Send for SvmBufferView<'_> {}
// SAFETY: as for `Send`.
unsafe impl Sync for SvmBufferView<'_> {}

/// A buffer over the whole allocation behind `core`, borrowing its owner for `'a`.
pub(crate) fn view_core(core: &Arc<Core>, flags: MemFlags) -> Result<SvmBufferView<'_>> {
    let size = core.size();
    if size == 0 {
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
    // SAFETY: a valid context; USE_HOST_PTR on an SVM pointer with at most its allocated size
    // makes the SVM the buffer's storage (OpenCL 3.0, clCreateBuffer); the view borrows the
    // allocation's owner and kernels holding the buffer also hold the allocation, so the storage
    // outlives every use of the buffer.
    let raw =
        unsafe { raw_mem::create_buffer(core.context().as_raw(), flags.bits(), size, core.ptr()) }
            .map_err(Error::cl("clCreateBuffer"))?;
    Ok(SvmBufferView {
        raw,
        size,
        flags,
        core: Arc::clone(core),
        _borrow: PhantomData,
    })
}

impl SvmBufferView<'_> {
    /// The raw buffer handle (owned by the view; using it past the view is the caller's risk).
    pub fn as_raw(&self) -> sys::cl_mem {
        self.raw
    }

    /// The flags of the buffer (with `USE_HOST_PTR`).
    pub fn flags(&self) -> MemFlags {
        self.flags
    }

    /// What `read` and `write` share once the host bytes are picked: the queue and range checks
    /// of `len` bytes at the view's side of `o` (`o.src_offset` for a read, `o.dst_offset` for a
    /// write), then one blocking `clEnqueueReadBuffer` (`D` = `Read`) or `clEnqueueWriteBuffer`
    /// (`D` = `Write`) through the buffer after `o`'s events.
    ///
    /// # Safety
    ///
    /// `host` is valid for `len` bytes of writes (a read) or reads (a write) during the call,
    /// and nothing else accesses them meanwhile.
    unsafe fn transfer<D: Direction>(
        &self,
        queue: &Queue,
        o: &Transfer<'_>,
        host: D::Host,
        len: usize,
    ) -> Result<Event> {
        let (what, offset, reading) = match D::ACCESS {
            Access::Read => ("SVM buffer view read", o.src_offset, true),
            Access::Write => ("SVM buffer view write", o.dst_offset, false),
        };
        self.flags
            .check_host_access(reading, "an SVM buffer view")?;
        self.core.check_queue(queue)?;
        check_range(what, offset, len, self.size)?;
        // SAFETY: a valid buffer and queue of one context; in bounds (checked); blocking, so the
        // caller's obligation covers `host`.
        unsafe { enqueue_host::<D>(queue, self.raw, None, true, offset, host, len, o.wait) }
    }

    host_transfers! {
        /// Blocking `clEnqueueReadBuffer` through the buffer into `dst`, placed as
        /// [`Buffer::read`](crate::Buffer::read) places it (`o.src_offset` in the view; no
        /// rectangle).
        ///
        /// # Errors
        ///
        /// [`Error::InvalidArgument`] for a queue of another context, a rectangle, or a view
        /// whose flags forbid the host this access (`HOST_NO_ACCESS`, `HOST_WRITE_ONLY` for a
        /// read, `HOST_READ_ONLY` for a write),
        /// [`Error::OutOfBounds`] past the end of either side (checked first); [`Error::Cl`] from
        /// `clEnqueueReadBuffer`.
        read(self, queue, dst, o) {
            o.no_rect("an SVM buffer view read")?;
            let out = o.dst_part(dst.host_slice_mut()?)?;
            // SAFETY: `out` is written only during the blocking call, through our exclusive borrow;
            // it cannot alias the SVM (host access to it needs `&mut` of the array this view
            // borrows).
            unsafe { self.transfer::<Read>(queue, &o, out.as_mut_ptr().cast(), out.len()) }
        }

        /// Blocking `clEnqueueWriteBuffer` of `src` through the buffer, placed as
        /// [`Buffer::write`](crate::Buffer::write) places it.
        ///
        /// # Errors
        ///
        /// As [`SvmBufferView::read`], with `clEnqueueWriteBuffer`.
        write(self, queue, src, o) {
            o.no_rect("an SVM buffer view write")?;
            let data = o.src_part(src.host_slice()?)?;
            // SAFETY: as for `read`; `data` is only read during the blocking call.
            unsafe { self.transfer::<Write>(queue, &o, data.as_ptr().cast(), data.len()) }
        }
    }
}

drop_releases!(Mem: SvmBufferView<'_>);

// SAFETY: a valid buffer handle, retained by the kernel; the kernel also holds the allocation
// behind it (`keep_alive`) and reports each enqueue's queue to it, so the storage outlives
// every command that uses the buffer.
unsafe impl KernelArg for SvmBufferView<'_> {
    fn arg_value(&self) -> ArgValue<'_> {
        ArgValue::MemKeepAlive {
            mem: self.raw,
            keep_alive: KeepAlive::memory(Arc::clone(&self.core) as _),
        }
    }
}

debug_fields!(SvmBufferView<'_>: raw, size, flags);
