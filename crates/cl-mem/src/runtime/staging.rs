//! Pinned staging chunks, cached per context, for staged transfers from pageable host memory
//! (`crate::buffer::staged`).
//!
//! A chunk is an `ALLOC_HOST_PTR` buffer mapped once for reading and writing: host memory the
//! driver can DMA from and to at the link's speed. Pinning is expensive (milliseconds on the NVIDIA
//! driver), so chunks are kept in the context's [`StagingCache`] between transfers. The cache holds
//! raw handles only, not `Context` or `Queue` wrappers, so it creates no reference cycle: it is
//! dropped (unmapping and releasing every chunk) with the last wrapper of its context.

use std::sync::{Mutex, PoisonError};

use cl_raw::object::{self, Object};
use cl_raw::{mem as raw_mem, queue as raw_queue, sys};

use crate::error::{Error, Result};
use crate::raw_handle::release_in_drop;

/// Most bytes of chunks a context keeps between transfers (the default staged transfer holds
/// 8 threads x 2 chunks x 4 MiB = 64 MiB in flight; re-pinning costs milliseconds).
const KEEP_BYTES: usize = 128 << 20;

/// Most chunks a context keeps between transfers.
pub(crate) const KEEP_CHUNKS: usize = 32;

/// One pinned, mapped chunk.
pub(crate) struct PinnedChunk {
    mem: sys::cl_mem,
    /// The queue it was mapped on (one reference held), for the unmap.
    queue: sys::cl_command_queue,
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the handles are thread-safe OpenCL objects; the mapped memory is plain host memory
// owned by this chunk (no other pointer to it exists outside `&mut self` borrows).
unsafe impl Send for PinnedChunk {}

impl PinnedChunk {
    /// A new chunk of `len` bytes in `context`, mapped on `queue` (a queue of `context`). Raw
    /// handles, so that this module needs neither `Context` nor `Queue` (it is part of the
    /// context).
    fn new(
        context: sys::cl_context,
        queue: sys::cl_command_queue,
        len: usize,
    ) -> Result<PinnedChunk> {
        let flags = sys::CL_MEM_READ_WRITE | sys::CL_MEM_ALLOC_HOST_PTR;
        // SAFETY: a valid context; no host pointer; we own the buffer (released on error below or
        // in Drop).
        let mem = unsafe { raw_mem::create_buffer(context, flags, len, std::ptr::null_mut()) }
            .map_err(Error::cl("clCreateBuffer"))?;
        // SAFETY: valid queue and buffer of one context; a blocking map of the whole buffer,
        // used until the unmap in Drop.
        let mapped = unsafe {
            raw_queue::enqueue_map_buffer(
                queue,
                mem,
                true,
                sys::CL_MAP_READ | sys::CL_MAP_WRITE,
                0,
                len,
                &[],
            )
        };
        let (ptr, ev) = match mapped {
            Ok(m) => m,
            Err(e) => {
                // SAFETY: the reference created above.
                let _ = unsafe { object::release(Object::Mem, mem) };
                return Err(Error::cl("clEnqueueMapBuffer")(e));
            }
        };
        // SAFETY: a fresh event reference we own.
        let _ = unsafe { object::release(Object::Event, ev) };
        // SAFETY: a valid queue; the reference is released in Drop.
        if let Err(e) = unsafe { object::retain(Object::Queue, queue) } {
            crate::error::drop_status("clRetainCommandQueue", e);
        }
        Ok(PinnedChunk {
            mem,
            queue,
            ptr: ptr.cast::<u8>(),
            len,
        })
    }

    /// The mapped memory.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` is a live map of `len` bytes, read-write, owned by this chunk; the
        // exclusive borrow of `self` is the only access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// The mapped memory, read-only.
    pub(crate) fn as_slice(&self) -> &[u8] {
        // SAFETY: as `as_mut_slice`, shared.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The mapped pointer, for a transfer command that reads or writes it. The caller keeps the
    /// chunk (and no slice of it) until that command completed.
    pub(crate) fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }
}

impl Drop for PinnedChunk {
    fn drop(&mut self) {
        // SAFETY: the live map of `mem` made on `queue`; nothing uses the pointer any more (the
        // chunk is being dropped and commands using it were waited for by its user).
        match unsafe {
            raw_queue::enqueue_unmap_mem_object(self.queue, self.mem, self.ptr.cast(), &[])
        } {
            Ok(ev) => {
                // SAFETY: a fresh event reference we own.
                let _ = unsafe { object::release(Object::Event, ev) };
            }
            Err(e) => crate::error::drop_status("clEnqueueUnmapMemObject", e),
        }
        // The references this chunk owns; the driver keeps the buffer until the unmap ran.
        release_in_drop(Object::Mem, self.mem);
        release_in_drop(Object::Queue, self.queue);
    }
}

/// A context's idle pinned chunks, and its own in-order queues, two per device, created at first
/// use and released with the cache: the one copies between devices read from
/// (`crate::buffer::between`), and one that only maps new chunks, so that a chunk's blocking map
/// never waits behind gated commands.
#[derive(Default)]
pub(crate) struct StagingCache {
    chunks: Mutex<Vec<PinnedChunk>>,
    queues: Mutex<Vec<(sys::cl_device_id, QueueRole, sys::cl_command_queue)>>,
}

/// What one of the cache's queues is for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum QueueRole {
    /// Reads of copies between devices.
    Reads,
    /// Maps (and unmaps) of new pinned chunks, nothing else.
    Maps,
}

// SAFETY: the queue handles are thread-safe OpenCL objects, only used under the mutex or by the
// driver; the chunks are `Send` and kept under their mutex.
unsafe impl Send for StagingCache {}
// SAFETY: as for `Send`: every field is behind a mutex.
unsafe impl Sync for StagingCache {}

impl Drop for StagingCache {
    fn drop(&mut self) {
        let queues = std::mem::take(
            self.queues
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for (_, _, q) in queues {
            // The reference `queue_for` stored; chunks mapped on it hold their own.
            release_in_drop(Object::Queue, q);
        }
    }
}

impl StagingCache {
    /// `n` chunks of exactly `len` bytes: cached ones first, new ones (mapped on `queue`) for the
    /// rest.
    pub(crate) fn take(
        &self,
        context: sys::cl_context,
        queue: sys::cl_command_queue,
        len: usize,
        n: usize,
    ) -> Result<Vec<PinnedChunk>> {
        let mut out: Vec<PinnedChunk> = {
            let mut c = self.chunks.lock().unwrap_or_else(PoisonError::into_inner);
            let mut taken = Vec::with_capacity(n);
            let mut i = 0;
            while i < c.len() && taken.len() < n {
                if c[i].len == len {
                    taken.push(c.swap_remove(i));
                } else {
                    i += 1;
                }
            }
            taken
        };
        while out.len() < n {
            out.push(PinnedChunk::new(context, queue, len)?);
        }
        Ok(out)
    }

    /// Chunks come back; past [`KEEP_BYTES`] or [`KEEP_CHUNKS`], the oldest are released.
    pub(crate) fn give(&self, chunks: Vec<PinnedChunk>) {
        let excess: Vec<PinnedChunk> = {
            let mut c = self.chunks.lock().unwrap_or_else(PoisonError::into_inner);
            c.extend(chunks);
            let mut total: usize = c.iter().map(|k| k.len).sum();
            let mut extra = 0;
            while (total > KEEP_BYTES || c.len() - extra > KEEP_CHUNKS) && extra < c.len() {
                total -= c[extra].len;
                extra += 1;
            }
            c.drain(..extra).collect()
        };
        drop(excess);
    }

    /// The cache's own queue for `role` on `device` (created by `create` on first use; the cache
    /// keeps the reference). Raw, like the chunks: a `Queue` holds its context, which holds this
    /// cache.
    ///
    /// # Errors
    ///
    /// Whatever `create` returns.
    pub(crate) fn queue_for(
        &self,
        device: sys::cl_device_id,
        role: QueueRole,
        create: impl FnOnce() -> Result<sys::cl_command_queue>,
    ) -> Result<sys::cl_command_queue> {
        let mut qs = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(&(_, _, q)) = qs.iter().find(|(d, r, _)| *d == device && *r == role) {
            return Ok(q);
        }
        let q = create()?;
        qs.push((device, role, q));
        Ok(q)
    }

    /// Chunks kept now (tests).
    pub(crate) fn idle(&self) -> usize {
        self.chunks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}
