//! [`Buffer`]: a linear device allocation. This is the minimal surface that proves the chain end
//! to end (create, info, blocking read and write); sub-buffers, copies, fills, rectangles, maps
//! and non-blocking transfers extend it.

use std::fmt;

use cl_raw::{mem as raw, queue as raw_queue, sys};

use crate::context::Context;
use crate::error::{Error, Result};
use crate::event::{raw_list, Event};
use crate::kernel::{ArgValue, KernelArg};
use crate::memory::{release_in_drop, retain_for_clone, MemFlags, MemObject};
use crate::pod::{slice_as_bytes, slice_as_bytes_mut, Pod};
use crate::queue::Queue;

/// A buffer object. Owns one reference: `Clone` retains (both values name the same memory),
/// `Drop` releases (never panics). Its size and flags are read once, at creation.
pub struct Buffer {
    raw: sys::cl_mem,
    size: usize,
    flags: MemFlags,
}

// SAFETY: OpenCL 1.1+ API calls are thread-safe (OpenCL 3.0 spec, "Multiple Host Threads"); a
// buffer may be used in commands, queried and released from any thread. Data races on the
// contents are the commands' ordering concern, not the handle's.
unsafe impl Send for Buffer {}
// SAFETY: as for `Send`.
unsafe impl Sync for Buffer {}

impl Buffer {
    /// An uninitialised buffer of `size_bytes` bytes.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a zero size, for `USE_HOST_PTR`/`COPY_HOST_PTR` (use
    /// [`Buffer::from_slice`]), or for a size above every device's `CL_DEVICE_MAX_MEM_ALLOC_SIZE`
    /// (all checked first); [`Error::Cl`] from `clCreateBuffer` (`is_out_of_memory()` on
    /// allocation failure).
    pub fn new(context: &Context, flags: MemFlags, size_bytes: usize) -> Result<Buffer> {
        if flags.intersects(MemFlags::HOST_PTR_FLAGS) {
            return Err(Error::InvalidArgument(
                "USE_HOST_PTR and COPY_HOST_PTR need host data: use Buffer::from_slice".into(),
            ));
        }
        check_size(context, size_bytes)?;
        // SAFETY: a valid context; no host pointer and no host-pointer flag; we own the result.
        let raw = unsafe {
            raw::create_buffer(
                context.as_raw(),
                flags.bits(),
                size_bytes,
                std::ptr::null_mut(),
            )
        }
        .map_err(Error::cl("clCreateBuffer"))?;
        Ok(Buffer {
            raw,
            size: size_bytes,
            flags,
        })
    }

    /// A buffer initialised with a copy of `data` (`COPY_HOST_PTR` is added).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for empty data or `USE_HOST_PTR` (borrowed data cannot back a
    /// buffer that may outlive it), and as [`Buffer::new`].
    pub fn from_slice<T: Pod>(context: &Context, flags: MemFlags, data: &[T]) -> Result<Buffer> {
        if flags.contains(MemFlags::USE_HOST_PTR) {
            return Err(Error::InvalidArgument(
                "USE_HOST_PTR cannot borrow a slice: the buffer may outlive it".into(),
            ));
        }
        let bytes = slice_as_bytes(data);
        check_size(context, bytes.len())?;
        let flags = flags | MemFlags::COPY_HOST_PTR;
        // SAFETY: a valid context; COPY_HOST_PTR reads `bytes.len()` bytes during the call only;
        // we own the result.
        let raw = unsafe {
            raw::create_buffer(
                context.as_raw(),
                flags.bits(),
                bytes.len(),
                bytes.as_ptr().cast_mut().cast(),
            )
        }
        .map_err(Error::cl("clCreateBuffer"))?;
        Ok(Buffer {
            raw,
            size: bytes.len(),
            flags,
        })
    }

    /// Adopts one reference to a raw buffer (no retain), reading its size and flags.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetMemObjectInfo`; [`Error::InvalidArgument`] when it is not a
    /// buffer. The reference is released on error.
    ///
    /// # Safety
    ///
    /// 1. `raw` is a valid memory object and the caller gives its reference to the new `Buffer`.
    pub unsafe fn from_raw(raw: sys::cl_mem) -> Result<Buffer> {
        let mut b = Buffer {
            raw,
            size: 0,
            flags: MemFlags::empty(),
        };
        if b.mem_type()? != crate::memory::MemObjectType::Buffer {
            return Err(Error::InvalidArgument(
                "the memory object is not a buffer".into(),
            ));
        }
        b.size = b.mem_size_bytes()?;
        b.flags = b.mem_flags()?;
        Ok(b)
    }

    /// Retains a raw buffer and wraps the new reference.
    ///
    /// # Errors
    ///
    /// As [`Buffer::from_raw`], plus [`Error::Cl`] from `clRetainMemObject`.
    ///
    /// # Safety
    ///
    /// 1. `raw` is a valid memory object.
    pub unsafe fn from_raw_retained(raw: sys::cl_mem) -> Result<Buffer> {
        // SAFETY: obligation 1.
        unsafe { raw::retain(raw) }.map_err(Error::cl("clRetainMemObject"))?;
        // SAFETY: we own the reference just taken.
        unsafe { Buffer::from_raw(raw) }
    }

    /// The raw handle (still owned by `self`).
    pub fn as_raw(&self) -> sys::cl_mem {
        self.raw
    }

    /// Gives the reference away without releasing it.
    pub fn into_raw(self) -> sys::cl_mem {
        let raw = self.raw;
        std::mem::forget(self);
        raw
    }

    /// The size in bytes.
    pub fn size_bytes(&self) -> usize {
        self.size
    }

    /// The flags it was created with (as the driver reports them for adopted handles).
    pub fn flags(&self) -> MemFlags {
        self.flags
    }

    fn check_range(&self, what: &'static str, offset: usize, len: usize) -> Result<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.size => Ok(()),
            _ => Err(Error::OutOfBounds {
                what,
                offset,
                len,
                size: self.size,
            }),
        }
    }

    /// Blocking host-to-device copy of `data` to `offset_bytes`, after `wait`. Empty data is a
    /// no-op returning a marker event.
    ///
    /// # Errors
    ///
    /// [`Error::OutOfBounds`] past the end (checked first); [`Error::Cl`] from
    /// `clEnqueueWriteBuffer`.
    pub fn write<T: Pod>(
        &self,
        queue: &Queue,
        offset_bytes: usize,
        data: &[T],
        wait: &[&Event],
    ) -> Result<Event> {
        self.write_bytes(queue, offset_bytes, slice_as_bytes(data), wait)
    }

    /// Blocking host-to-device copy of raw bytes; see [`Buffer::write`].
    ///
    /// # Errors
    ///
    /// As [`Buffer::write`].
    pub fn write_bytes(
        &self,
        queue: &Queue,
        offset_bytes: usize,
        data: &[u8],
        wait: &[&Event],
    ) -> Result<Event> {
        self.check_range("buffer write", offset_bytes, data.len())?;
        if data.is_empty() {
            return queue.enqueue_marker(wait);
        }
        // SAFETY: valid queue/buffer/events; the write is blocking, so `data` is only read during
        // the call; the range is in bounds; we own the returned event.
        let ev = unsafe {
            raw_queue::enqueue_write_buffer(
                queue.as_raw(),
                self.raw,
                true,
                offset_bytes,
                data.len(),
                data.as_ptr().cast(),
                &raw_list(wait),
            )
        }
        .map_err(Error::cl("clEnqueueWriteBuffer"))?;
        // SAFETY: a fresh reference we own.
        Ok(unsafe { Event::from_raw(ev) })
    }

    /// Blocking device-to-host copy into `out` from `offset_bytes`, after `wait`. Empty `out` is a
    /// no-op returning a marker event.
    ///
    /// # Errors
    ///
    /// [`Error::OutOfBounds`] past the end (checked first); [`Error::Cl`] from
    /// `clEnqueueReadBuffer`.
    pub fn read<T: Pod>(
        &self,
        queue: &Queue,
        offset_bytes: usize,
        out: &mut [T],
        wait: &[&Event],
    ) -> Result<Event> {
        self.read_bytes(queue, offset_bytes, slice_as_bytes_mut(out), wait)
    }

    /// Blocking device-to-host copy into raw bytes; see [`Buffer::read`].
    ///
    /// # Errors
    ///
    /// As [`Buffer::read`].
    pub fn read_bytes(
        &self,
        queue: &Queue,
        offset_bytes: usize,
        out: &mut [u8],
        wait: &[&Event],
    ) -> Result<Event> {
        self.check_range("buffer read", offset_bytes, out.len())?;
        if out.is_empty() {
            return queue.enqueue_marker(wait);
        }
        // SAFETY: valid queue/buffer/events; the read is blocking, so `out` is written only during
        // the call, through our exclusive borrow; the range is in bounds; we own the event.
        let ev = unsafe {
            raw_queue::enqueue_read_buffer(
                queue.as_raw(),
                self.raw,
                true,
                offset_bytes,
                out.len(),
                out.as_mut_ptr().cast(),
                &raw_list(wait),
            )
        }
        .map_err(Error::cl("clEnqueueReadBuffer"))?;
        // SAFETY: a fresh reference we own.
        Ok(unsafe { Event::from_raw(ev) })
    }

    /// Releases the reference now, reporting failure (`Drop` only logs it).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clReleaseMemObject`.
    pub fn release(self) -> Result<()> {
        let raw = self.into_raw();
        // SAFETY: we owned this reference.
        unsafe { raw::release(raw) }.map_err(Error::cl("clReleaseMemObject"))
    }
}

/// Rejects sizes the driver would refuse with `CL_INVALID_BUFFER_SIZE`.
fn check_size(context: &Context, size: usize) -> Result<()> {
    if size == 0 {
        return Err(Error::InvalidArgument(
            "buffer size must be positive".into(),
        ));
    }
    let mut max = 0u64;
    for d in context.devices() {
        max = max.max(d.max_mem_alloc_size()?);
    }
    if size as u64 > max {
        return Err(Error::InvalidArgument(format!(
            "buffer size {size} exceeds CL_DEVICE_MAX_MEM_ALLOC_SIZE ({max}) of every device"
        )));
    }
    Ok(())
}

// SAFETY: `raw` is a valid buffer we hold a reference to for as long as `self` lives.
unsafe impl MemObject for Buffer {
    fn as_raw(&self) -> sys::cl_mem {
        self.raw
    }
}

// SAFETY: a valid buffer handle, kept alive by the kernel (it retains memory arguments).
unsafe impl KernelArg for Buffer {
    fn arg_value(&self) -> ArgValue<'_> {
        ArgValue::Mem(self.raw)
    }
}

impl Clone for Buffer {
    fn clone(&self) -> Buffer {
        retain_for_clone(self.raw);
        Buffer {
            raw: self.raw,
            size: self.size,
            flags: self.flags,
        }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        release_in_drop(self.raw);
    }
}

impl PartialEq for Buffer {
    fn eq(&self, other: &Buffer) -> bool {
        self.raw == other.raw
    }
}
impl Eq for Buffer {}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buffer")
            .field("raw", &self.raw)
            .field("size", &self.size)
            .field("flags", &self.flags)
            .finish()
    }
}
