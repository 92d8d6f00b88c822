//! [`PinnedMemory`]: pinned (page-locked, driver-allocated) host memory as a first-class type.
//!
//! An `ALLOC_HOST_PTR` buffer mapped once for reading and writing and kept mapped: the mapped
//! pointer is host memory the driver can DMA from and to without staging, so transfers from and
//! to it run at the bus's full rate (on NVIDIA, pinned copies reach several times the
//! bandwidth of pageable ones). It dereferences to `[T]`, is a source or destination of
//! blocking transfers ([`crate::enqueue_copy`]) and, being owned host memory
//! ([`crate::HostMemory`]), of non-blocking ones ([`crate::Buffer::enqueue_write`],
//! [`crate::Buffer::enqueue_read`]).
//!
//! The backing buffer is not handed out for kernels: a kernel writing it while the host holds
//! the slice would race. `Drop` unmaps (on the queue it was mapped with) and releases;
//! forgetting it leaks the buffer, which keeps the memory valid.

use std::ops::{Deref, DerefMut};

use cl_raw::queue as raw_queue;

use crate::buffer::transfer::HostMemory;
use crate::buffer::Buffer;
use crate::error::{Error, Result};
use crate::memory::MemFlags;
use crate::pod::{slice_as_bytes, slice_as_bytes_mut, Pod};
use crate::raw_handle::RawHandle;
use crate::runtime::queue::Queue;

/// Pinned host memory holding `len` values of `T`, zero-initialised; see the module
/// documentation.
pub struct PinnedMemory<T: Pod> {
    buffer: Buffer,
    queue: Queue,
    ptr: *mut T,
    len: usize,
}

// SAFETY: the mapped memory is ordinary host memory reachable from any thread; `T: Pod` is
// `Send + Sync`; the buffer and queue handles are thread-safe (OpenCL 1.1+ "Multiple Host
// Threads").
unsafe impl<T: Pod> Send for PinnedMemory<T> {}
// SAFETY: `&PinnedMemory` only gives `&[T]`.
unsafe impl<T: Pod> Sync for PinnedMemory<T> {}

impl<T: Pod> PinnedMemory<T> {
    /// `len` zeroed values in pinned memory of the queue's context, mapped on `queue`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for `len == 0`, a zero-sized `T` or a byte size that overflows;
    /// as [`Buffer::new`]; [`Error::Cl`] from `clEnqueueMapBuffer`; [`Error::Misaligned`] when
    /// the driver's pointer is not aligned for `T`.
    pub fn new(queue: &Queue, len: usize) -> Result<PinnedMemory<T>> {
        let n = std::mem::size_of::<T>();
        let bytes = len.checked_mul(n).filter(|&b| b > 0).ok_or_else(|| {
            Error::InvalidArgument(format!("pinned memory of {len} elements of {n} bytes"))
        })?;
        let buffer = Buffer::new(
            queue.context(),
            MemFlags::READ_WRITE | MemFlags::ALLOC_HOST_PTR,
            bytes,
        )?;
        // SAFETY: valid queue and buffer of one context; blocking map of the whole buffer; the
        // pointer is used only while the map is open (until `Drop` unmaps).
        let (ptr, ev) = unsafe {
            raw_queue::enqueue_map_buffer(
                queue.as_raw(),
                buffer.as_raw(),
                true,
                cl_raw::sys::CL_MAP_READ | cl_raw::sys::CL_MAP_WRITE,
                0,
                bytes,
                &[],
            )
        }
        .map_err(Error::cl("clEnqueueMapBuffer"))?;
        // SAFETY: a fresh reference we own; dropping it releases it.
        drop(unsafe { crate::runtime::event::Event::from_raw(ev) });
        let this = PinnedMemory {
            buffer,
            queue: queue.clone(),
            ptr: ptr.cast::<T>(),
            len,
        };
        // On error `this` unmaps when dropped.
        crate::error::check_aligned_ptr::<T>("pinned memory", ptr)?;
        // SAFETY: the map completed (blocking) and covers `bytes` writable bytes; zeroing them
        // makes every `T: Pod` valid and initialised before any slice is formed.
        unsafe { std::ptr::write_bytes(ptr.cast::<u8>(), 0, bytes) };
        Ok(this)
    }

    /// The backing `ALLOC_HOST_PTR` buffer.
    ///
    /// # Safety
    ///
    /// 1. No command that writes the buffer (a kernel, a transfer into it) runs while a slice of
    ///    `self` is alive, and the host does not touch the slice while a command reading the
    ///    buffer runs: the buffer stays mapped for the life of `self`, which OpenCL leaves
    ///    undefined for such commands.
    pub unsafe fn buffer(&self) -> &Buffer {
        &self.buffer
    }
}

impl<T: Pod> Deref for PinnedMemory<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: the mapped region holds `len` initialised, aligned `T`s and stays mapped while
        // `self` lives; no command touches it (the buffer is not handed out safely).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl<T: Pod> DerefMut for PinnedMemory<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as for `Deref`; `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

// SAFETY: the mapped pointer does not change when `self` moves and stays valid until `Drop`
// unmaps; nothing else accesses it; any bytes written leave `T: Pod` values valid.
unsafe impl<T: Pod> HostMemory for PinnedMemory<T> {
    fn host_bytes(&self) -> &[u8] {
        slice_as_bytes(self)
    }
    fn host_bytes_mut(&mut self) -> &mut [u8] {
        slice_as_bytes_mut(self)
    }
}

impl<T: Pod> Drop for PinnedMemory<T> {
    fn drop(&mut self) {
        // SAFETY: `ptr` is the open map of `buffer` on `queue`; no slice outlives `self`.
        let r = unsafe {
            raw_queue::enqueue_unmap_mem_object(
                self.queue.as_raw(),
                self.buffer.as_raw(),
                self.ptr.cast(),
                &[],
            )
        };
        match r {
            Ok(ev) => {
                // SAFETY: a fresh reference we own.
                let ev = unsafe { crate::runtime::event::Event::from_raw(ev) };
                if let Err(e) = ev.wait() {
                    tracing::warn!(error = %e, "unmapping pinned memory failed");
                }
            }
            Err(e) => crate::error::drop_status("clEnqueueUnmapMemObject", e),
        }
    }
}

crate::raw_handle::debug_fields!(PinnedMemory<T: Pod>: ptr, len);
