//! [`Buffer`]: a linear device allocation (PyOpenCL's `Buffer`), its creation forms, sub-buffers
//! and the blocking byte transfers. Copies, rectangles and non-blocking transfers live in
//! `transfer.rs`, fills in `fill.rs`, maps in `map.rs`; they are all methods of [`Buffer`].
//!
//! # Creation forms
//!
//! | form | flags | host memory |
//! | --- | --- | --- |
//! | [`Buffer::new`] | any but `USE_`/`COPY_HOST_PTR` | none (uninitialised) |
//! | [`Buffer::new`] | with `ALLOC_HOST_PTR` | allocated by the driver, host-reachable (pinned); see also [`crate::PinnedMemory`] |
//! | [`Buffer::from_slice`] | adds `COPY_HOST_PTR` | copied during the call |
//! | [`Buffer::use_host_memory`] | adds `USE_HOST_PTR` | moved into the buffer, freed by the driver's destructor callback |
//!
//! **Why `USE_HOST_PTR` takes owned memory, not a borrow.** The driver may use the host memory as
//! the buffer's storage until the `cl_mem` is destroyed, which is later than the drop of our
//! last `Buffer` whenever a kernel holds it as an argument (kernels retain their memory
//! arguments) or a command is still queued. A borrow `&'a mut [T]` cannot express "until the
//! driver destroys the object", and `mem::forget` would end it early anyway, so the memory is
//! moved in ([`HostMemory`]: `Vec<T>`, `Box<[T]>`, `&'static mut [T]`) and dropped by
//! `clSetMemObjectDestructorCallback`, which the spec defines as the point where the host memory
//! may be reused.
//!
//! **Sub-buffers** are [`Buffer`]s too (as in PyOpenCL). Each keeps its root buffer alive (an
//! `Arc` of it), so a sub-buffer can never outlive the memory it views, whatever the driver does;
//! a sub-buffer of a sub-buffer is created from the root with the offsets added (OpenCL refuses
//! sub-buffers of sub-buffers).

#[cfg(feature = "ndarray")]
pub(crate) mod array;
pub(crate) mod between;
pub(crate) mod fill;
pub(crate) mod host;
pub(crate) mod map;
pub(crate) mod rect;
pub(crate) mod staged;
pub(crate) mod tracked;
pub(crate) mod transfer;

use std::any::Any;
use std::ffi::c_void;
use std::fmt;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use crate::raw_handle::{clone_retains, release_in_drop};
use cl_raw::object::{self, Object};
use cl_raw::{mem as raw, sys, Version};

use self::transfer::HostMemory;
use crate::error::{Error, Result};
use crate::memory::{self, MemFlags, MemObjectType, Memory};
use crate::pod::{slice_as_bytes, Pod};
use crate::raw_handle::RawHandle;
use crate::runtime::context::Context;
use crate::runtime::event::Event;
use crate::runtime::queue::Queue;
use crate::runtime::track::{Access, Direction, Tracked};
use crate::runtime::worker::Place;

/// A buffer object. Owns one reference: `Clone` retains (both values name the same memory),
/// `Drop` releases (never panics). Equality and hashing are by handle (PyOpenCL's `__eq__` and
/// `__hash__` on `int_ptr`). Its size, flags and context are read once, at creation.
pub struct Buffer {
    raw: sys::cl_mem,
    size: usize,
    /// What the buffer's clones share and no transfer's fast path reads, behind one pointer: a
    /// `Buffer` is four words, so a pooled buffer's handle is copied inline, not through
    /// `memcpy` (issue 12; `buffer_is_four_words` below).
    info: Arc<BufferInfo>,
    /// The command and map record this buffer shares with its root, sub-buffers and clones.
    tracked: Arc<Tracked>,
    /// Counts this wrapper in [`crate::live_objects`].
    live: crate::runtime::live::Live<{ crate::runtime::live::MEM }>,
}

/// The part of a [`Buffer`] its clones share (immutable after creation).
struct BufferInfo {
    flags: MemFlags,
    context: Context,
    /// The root buffer of a sub-buffer, kept alive as long as the sub-buffer.
    parent: Option<Arc<Buffer>>,
    /// The byte offset in the root buffer (0 for a root buffer).
    origin: usize,
    /// `CL_MEM_HOST_PTR` (null unless `USE_HOST_PTR`).
    host_ptr: *mut u8,
}

// SAFETY: `host_ptr` is only an address (read through `Buffer::host_slice`'s own checks); the
// other fields are `Send + Sync`.
unsafe impl Send for BufferInfo {}
// SAFETY: as for `Send`; nothing in it is mutable.
unsafe impl Sync for BufferInfo {}

// SAFETY: OpenCL 1.1+ API calls are thread-safe (OpenCL 3.0 spec, "Multiple Host Threads"); a
// buffer may be used in commands, queried and released from any thread. `host_ptr` is only an
// address; dereferencing it is behind `unsafe fn host_slice`. Data races on the contents are
// the commands' ordering concern, not the handle's.
unsafe impl Send for Buffer {}
// SAFETY: as for `Send`.
unsafe impl Sync for Buffer {}

/// The destructor-callback payload of a `USE_HOST_PTR` buffer: where to drop it, and the host
/// memory it owns.
type HostOwner = (Place, Box<dyn Any + Send>);

extern "C" fn free_host_memory(_mem: sys::cl_mem, user_data: *mut c_void) {
    // SAFETY: `user_data` is the `Box<HostOwner>` leaked by `Buffer::use_host_memory`; the driver
    // calls a destructor callback exactly once, after it stopped using the host memory.
    let (place, owner) = *unsafe { Box::from_raw(user_data.cast::<HostOwner>()) };
    // Its drop may block (`PinnedMemory` unmaps and waits): not on the driver's thread.
    place.run(move || drop(owner));
}

/// Hands `owner` to the driver's destructor callback of the new memory object `raw`: it is
/// dropped (on the callback worker, never the driver's thread) once the driver destroyed the
/// object, which the spec defines as the point where what backs it may be reused.
///
/// # Errors
///
/// [`Error::Cl`] from `clSetMemObjectDestructorCallback`; then `raw`'s reference is released and
/// `owner` leaked (the driver may still use what it keeps alive).
pub(crate) fn drop_when_destroyed(
    raw: sys::cl_mem,
    context: &Context,
    owner: Box<dyn Any + Send>,
) -> Result<()> {
    let place = Place::for_platform(context.platform());
    let owner: Box<HostOwner> = Box::new((place, owner));
    let user_data = Box::into_raw(owner);
    // SAFETY: a valid buffer; `user_data` is a leaked box reclaimed exactly once by
    // `free_host_memory`, which drops it where `place` says.
    let registered =
        unsafe { raw::set_destructor_callback(raw, free_host_memory, user_data.cast()) };
    if let Err(e) = registered {
        // The driver may still use the memory: leak it (safe) rather than free it.
        release_in_drop(Object::Mem, raw);
        return Err(Error::cl("clSetMemObjectDestructorCallback")(e));
    }
    Ok(())
}

impl Buffer {
    /// An uninitialised buffer of `size_bytes` bytes.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a zero size, for `USE_HOST_PTR`/`COPY_HOST_PTR` (use
    /// [`Buffer::from_slice`] or [`Buffer::use_host_memory`]), or for a size above every device's
    /// `CL_DEVICE_MAX_MEM_ALLOC_SIZE` (all checked first); [`Error::Cl`] from `clCreateBuffer`
    /// (`is_out_of_memory()` on allocation failure).
    pub fn new(context: &Context, flags: MemFlags, size_bytes: usize) -> Result<Buffer> {
        flags.check()?;
        if flags.intersects(MemFlags::HOST_PTR_FLAGS) {
            return Err(Error::InvalidArgument(
                "USE_HOST_PTR and COPY_HOST_PTR need host data: use Buffer::from_slice or Buffer::use_host_memory".into(),
            ));
        }
        let _span = tracing::debug_span!("cl_mem::alloc", kind = "buffer", bytes = size_bytes, flags = ?flags, context = ?context.as_raw()).entered();
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
        Ok(Buffer::root(
            raw,
            size_bytes,
            flags,
            context,
            std::ptr::null_mut(),
        ))
    }

    /// A buffer initialised with a copy of `data` (`COPY_HOST_PTR` is added).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for empty data or `USE_HOST_PTR` (borrowed data cannot back a
    /// buffer that may outlive it: use [`Buffer::use_host_memory`]), and as [`Buffer::new`].
    pub fn from_slice<T: Pod>(context: &Context, flags: MemFlags, data: &[T]) -> Result<Buffer> {
        if flags.contains(MemFlags::USE_HOST_PTR) {
            return Err(Error::InvalidArgument(
                "USE_HOST_PTR cannot borrow a slice: the buffer may outlive it".into(),
            ));
        }
        let flags = flags | MemFlags::COPY_HOST_PTR;
        flags.check()?;
        let bytes = slice_as_bytes(data);
        check_size(context, bytes.len())?;
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
        Ok(Buffer::root(
            raw,
            bytes.len(),
            flags,
            context,
            std::ptr::null_mut(),
        ))
    }

    /// A buffer over host memory it owns for its whole life (`USE_HOST_PTR` is added): `host`
    /// (a `Vec<T>`, `Box<[T]>` or `&'static mut [T]` of [`Pod`] values) is moved in and dropped
    /// by the driver's destructor callback once the `cl_mem` is destroyed, so it can be neither
    /// freed nor moved while any command, kernel or clone may use it. Its current contents are
    /// the buffer's initial contents.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for empty memory or `COPY_HOST_PTR`/`ALLOC_HOST_PTR` in
    /// `flags`, and as [`Buffer::new`]; [`Error::Cl`] from `clCreateBuffer` or
    /// `clSetMemObjectDestructorCallback` (then the host memory is leaked, not freed: the driver
    /// may still hold it).
    pub fn use_host_memory<H: HostMemory>(
        context: &Context,
        flags: MemFlags,
        mut host: H,
    ) -> Result<Buffer> {
        if flags.intersects(MemFlags::COPY_HOST_PTR | MemFlags::ALLOC_HOST_PTR) {
            return Err(Error::InvalidArgument(
                "use_host_memory cannot be combined with COPY_HOST_PTR or ALLOC_HOST_PTR".into(),
            ));
        }
        let bytes = host.host_bytes_mut();
        let (ptr, len) = (bytes.as_mut_ptr(), bytes.len());
        check_size(context, len)?;
        let flags = flags | MemFlags::USE_HOST_PTR;
        flags.check()?;
        // SAFETY: a valid context; `ptr` is valid for `len` bytes and stays valid, unmoved, until
        // the destructor callback drops `host` (HostMemory contract: moving `host` does not move
        // its bytes); nothing else accesses it (we own `host`); we own the result.
        let raw = unsafe { raw::create_buffer(context.as_raw(), flags.bits(), len, ptr.cast()) }
            .map_err(Error::cl("clCreateBuffer"))?;
        drop_when_destroyed(raw, context, Box::new(host))?;
        Ok(Buffer::root(raw, len, flags, context, ptr))
    }

    fn root(
        raw: sys::cl_mem,
        size: usize,
        flags: MemFlags,
        context: &Context,
        host_ptr: *mut u8,
    ) -> Buffer {
        Buffer::root_tracked(
            raw,
            size,
            flags,
            context,
            host_ptr,
            Tracked::new_root(raw, size),
        )
    }

    /// A new root buffer with its command record made by the caller (external memory).
    pub(crate) fn root_tracked(
        raw: sys::cl_mem,
        size: usize,
        flags: MemFlags,
        context: &Context,
        host_ptr: *mut u8,
        tracked: Arc<Tracked>,
    ) -> Buffer {
        Buffer {
            live: crate::runtime::live::Live::new(),
            raw,
            size,
            info: Arc::new(BufferInfo {
                flags,
                context: context.clone(),
                parent: None,
                origin: 0,
                host_ptr,
            }),
            tracked,
        }
    }

    /// The size in bytes.
    pub fn size_bytes(&self) -> usize {
        self.size
    }

    /// How many whole `T`s fit (`size_bytes() / size_of::<T>()`; 0 for zero-sized `T`).
    pub(crate) fn len_of<T: Pod>(&self) -> usize {
        self.size.checked_div(std::mem::size_of::<T>()).unwrap_or(0)
    }

    /// The flags as created (as the driver reports them for adopted handles and sub-buffers).
    pub fn flags(&self) -> MemFlags {
        self.info.flags
    }

    /// The context the buffer belongs to.
    pub fn context(&self) -> &Context {
        &self.info.context
    }

    /// The root buffer of a sub-buffer (`None` for a root buffer).
    pub fn parent(&self) -> Option<&Buffer> {
        self.info.parent.as_deref()
    }

    /// The byte offset in the root buffer (0 for a root buffer; `CL_MEM_OFFSET`).
    pub(crate) fn origin_bytes(&self) -> usize {
        self.info.origin
    }

    /// The host memory of a `USE_HOST_PTR` buffer (or a sub-buffer of one) as `T`s, bound to
    /// the borrow of `self`: PyOpenCL's `get_host_array`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the buffer has no host memory (not `USE_HOST_PTR`) or its
    /// size is not a multiple of `size_of::<T>()`; [`Error::Misaligned`] when the memory is not
    /// aligned for `T`.
    ///
    /// # Safety
    ///
    /// 1. No command that writes the buffer runs, and no map of it is open, while the slice
    ///    lives (the driver may write the host memory at any time while such a command runs).
    /// 2. The caller synchronised the host memory with the device as the spec requires for
    ///    `USE_HOST_PTR` (e.g. waited for a blocking read or a map/unmap of the range).
    pub unsafe fn host_slice<T: Pod>(&self) -> Result<&[T]> {
        if self.info.host_ptr.is_null() {
            return Err(Error::InvalidArgument(
                "only a USE_HOST_PTR buffer has host memory".into(),
            ));
        }
        let n = std::mem::size_of::<T>();
        if n == 0 || !self.size.is_multiple_of(n) {
            return Err(Error::InvalidArgument(format!(
                "a buffer of {} bytes is not a whole number of {n}-byte elements",
                self.size
            )));
        }
        crate::error::check_aligned_ptr::<T>("host memory", self.info.host_ptr.cast())?;
        // SAFETY: the host memory is owned by the buffer (moved in by `use_host_memory`, or the
        // adopter's promise) and lives while `self` does; it holds `size` initialised bytes,
        // aligned for `T`, and `T: Pod` accepts any bytes; obligations 1-2 exclude writers.
        Ok(unsafe { std::slice::from_raw_parts(self.info.host_ptr.cast::<T>(), self.size / n) })
    }

    /// The buffer's view of its allocation's command record.
    pub(crate) fn tracked(&self) -> &Tracked {
        &self.tracked
    }

    /// The same, shared.
    pub(crate) fn tracked_arc(&self) -> Arc<Tracked> {
        Arc::clone(&self.tracked)
    }

    /// Host maps of this buffer's allocation (root, sub-buffers, images from it) open now.
    pub fn live_maps(&self) -> usize {
        self.tracked.live_maps()
    }

    /// True when this handle is the only way to start work on the buffer's memory: no clone of
    /// it, no other buffer, sub-buffer, image or [`crate::Memory`] of the same allocation exists,
    /// no kernel argument slot holds any of them and no reference was given away with
    /// `into_raw`. Commands already enqueued do not count: the command record orders new work
    /// after them. Always false for a sub-buffer (its root is another handle).
    ///
    /// A memory pool hands a block's buffer to a new owner only when this holds (cl-pool's
    /// `PooledBuffer`): a clone, a sub-buffer or a kernel argument keeps the memory from the
    /// next owner. A few loads, no lock.
    #[inline]
    pub fn is_unique(&self) -> bool {
        Tracked::is_sole_handle(&self.tracked)
    }

    /// Commands on this buffer's allocation that may still run, as recorded for ordering
    /// (at most a write and a read per in-order queue; pruned as they complete).
    pub fn recorded_commands(&self) -> usize {
        self.tracked.recorded_commands()
    }

    /// Checks that `queue` belongs to the buffer's context (else the driver's
    /// `CL_INVALID_CONTEXT`).
    pub(crate) fn check_queue(&self, queue: &Queue) -> Result<()> {
        if queue.context().as_raw() == self.info.context.as_raw() {
            Ok(())
        } else {
            Err(Error::InvalidArgument(
                "the queue and the buffer belong to different contexts".into(),
            ))
        }
    }

    pub(crate) fn check_range(&self, what: &'static str, offset: usize, len: usize) -> Result<()> {
        crate::error::check_range(what, offset, len, self.size)
    }

    /// A sub-buffer of `size_bytes` bytes at `origin_bytes` (`clCreateSubBuffer` with
    /// `CL_BUFFER_CREATE_TYPE_REGION`): PyOpenCL's `get_sub_region(origin, size, flags)`.
    ///
    /// `flags` may hold access flags (`READ_WRITE`, `READ_ONLY`, `WRITE_ONLY`) and host access
    /// flags; whatever it leaves out is inherited from the parent. The parent's host-pointer
    /// flags are inherited by the driver and never passed (PyOpenCL passes them and the driver
    /// refuses). A sub-buffer of a sub-buffer is created from the root with the origins added.
    ///
    /// # Errors
    ///
    /// Checked before the call: [`Error::InvalidArgument`] for a zero size, host-pointer flags
    /// in `flags`, or access flags that contradict the parent's (a read-only view of a
    /// write-only buffer, ...); [`Error::OutOfBounds`] past the end; [`Error::Misaligned`] when
    /// the absolute origin is not a multiple of `CL_DEVICE_MEM_BASE_ADDR_ALIGN` (reported in
    /// bits, checked in bytes) of any device of the context; [`Error::Unsupported`] below
    /// OpenCL 1.1. Then [`Error::Cl`] from `clCreateSubBuffer`.
    pub fn sub_buffer(
        &self,
        origin_bytes: usize,
        size_bytes: usize,
        flags: MemFlags,
    ) -> Result<Buffer> {
        self.info
            .context
            .require_platform_version(Version::V1_1, "clCreateSubBuffer")?;
        if size_bytes == 0 {
            return Err(Error::InvalidArgument(
                "sub-buffer size must be positive".into(),
            ));
        }
        self.check_range("sub-buffer", origin_bytes, size_bytes)?;
        let host = MemFlags::HOST_PTR_FLAGS | MemFlags::ALLOC_HOST_PTR;
        if flags.intersects(host) {
            return Err(Error::InvalidArgument(
                "a sub-buffer inherits USE_HOST_PTR, ALLOC_HOST_PTR and COPY_HOST_PTR; they cannot be given".into(),
            ));
        }
        check_sub_buffer_flags(self.info.flags, flags)?;
        // Sub-buffers are created from the root, so the driver would inherit the *root's* flags:
        // what `flags` leaves out must come from `self` (a sub-buffer of a HOST_READ_ONLY
        // sub-buffer of a READ_WRITE root stays HOST_READ_ONLY).
        let flags = inherit_sub_buffer_flags(self.info.flags, flags);
        let origin = self.info.origin + origin_bytes;
        // The spec's creation rule: aligned for at least one device of the context (each
        // command then checks its own queue's device: `Tracked::check_origin`).
        let (align, _) = self.origin_alignments();
        if !origin.is_multiple_of(align) {
            return Err(Error::Misaligned {
                what: "sub-buffer origin",
                value: origin,
                alignment: align,
            });
        }
        let root: Arc<Buffer> = match &self.info.parent {
            Some(p) => Arc::clone(p),
            None => Arc::new(self.clone()),
        };
        // SAFETY: `root` is a valid buffer that is not a sub-buffer; the region is in bounds
        // and aligned (checked above); we own the result.
        let raw = unsafe { raw::create_sub_buffer(root.raw, flags.bits(), origin, size_bytes) }
            .map_err(Error::cl("clCreateSubBuffer"))?;
        // SAFETY: a valid object we own; its flags are what the driver derived.
        let real_flags =
            unsafe { object::get_info::<sys::cl_mem_flags>(Object::Mem, raw, sys::CL_MEM_FLAGS) }
                .map(MemFlags::from_bits_retain)
                .unwrap_or(self.info.flags);
        let host_ptr = if root.info.host_ptr.is_null() {
            std::ptr::null_mut()
        } else {
            root.info.host_ptr.wrapping_add(origin)
        };
        Ok(Buffer {
            live: crate::runtime::live::Live::new(),
            raw,
            size: size_bytes,
            tracked: root.tracked.view(origin, size_bytes),
            info: Arc::new(BufferInfo {
                flags: real_flags,
                context: self.info.context.clone(),
                parent: Some(root),
                origin,
                host_ptr,
            }),
        })
    }

    /// The alignment, in bytes, of a sub-buffer's origin in its root buffer
    /// (`CL_DEVICE_MEM_BASE_ADDR_ALIGN`, reported in bits): what PyOpenCL's `test_sub_buffers`
    /// rounds its start to. 128 bytes on the CPU runtimes here, 512 on the H100. In a context of
    /// several devices, the largest of theirs (they are powers of two, so a multiple of each): a
    /// sub-buffer at a multiple of it is usable on every device's queue, where one aligned only
    /// for the least strict device is refused on the others' (`Error::Misaligned`).
    ///
    /// ```no_run
    /// # fn f(buf: &cl_mem::Buffer) -> cl_mem::Result<()> {
    /// let align = buf.sub_buffer_alignment()?;
    /// let start = 1000 / align * align; // rounded down, as PyOpenCL's test does
    /// let sub = buf.sub_buffer_range(start..start + 256)?;
    /// # drop(sub); Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// None today: each device's alignment is read when its `Device` is made (the `Result` stays
    /// for callers written against the earlier per-call query).
    pub fn sub_buffer_alignment(&self) -> Result<usize> {
        Ok(self.origin_alignments().1)
    }

    /// The least and the most strict sub-buffer origin alignment of the context's devices.
    fn origin_alignments(&self) -> (usize, usize) {
        let (mut least, mut most) = (usize::MAX, 1);
        for d in self.info.context.devices() {
            let a = d.base_addr_align().max(1);
            least = least.min(a);
            most = most.max(a);
        }
        (least, most)
    }

    /// A sub-buffer over a Rust range of bytes (`buf.sub_buffer_range(128..256)`,
    /// `buf.sub_buffer_range(..64)`), inheriting every flag: PyOpenCL's `buf[start:stop]`
    /// (without its negative indices and silent clipping: an out-of-range end is an error).
    ///
    /// # Errors
    ///
    /// As [`Buffer::sub_buffer`]; an empty or reversed range is [`Error::InvalidArgument`].
    pub fn sub_buffer_range(&self, range: impl RangeBounds<usize>) -> Result<Buffer> {
        let (start, end) = resolve_range(range, self.size)?;
        self.sub_buffer(start, end - start, MemFlags::empty())
    }

    /// The checks (before the driver) of a host transfer of `len` bytes at `offset`
    /// (`reading`: device to host): the range, the queue's context, the host-access flags.
    pub(crate) fn check_host_bytes(
        &self,
        queue: &Queue,
        offset: usize,
        len: usize,
        reading: bool,
    ) -> Result<()> {
        let what = if reading {
            "buffer read"
        } else {
            "buffer write"
        };
        self.check_range(what, offset, len)?;
        self.check_queue(queue)?;
        self.info.flags.check_host_access(reading, "a buffer")
    }

    /// One `clEnqueueReadBuffer` (`D` = `Read`) or `clEnqueueWriteBuffer` (`D` = `Write`) of
    /// `len` bytes between `host` and `offset_bytes`, checked here: the plain path of a blocking
    /// transfer, and the non-blocking `enqueue_read`/`enqueue_write`, which refuse 0 bytes (after
    /// the other checks; a blocking transfer of 0 bytes is a marker).
    ///
    /// # Safety
    ///
    /// `host` is valid for `len` bytes of writes (a read) or reads (a write), and nothing else
    /// accesses them (a write only needs them not written) until the command completes (when
    /// `blocking`: until this call returns).
    pub(crate) unsafe fn enqueue_bytes<D: Direction>(
        &self,
        queue: &Queue,
        blocking: bool,
        offset_bytes: usize,
        host: D::Host,
        len: usize,
        wait: &[&Event],
    ) -> Result<Event> {
        self.check_host_bytes(queue, offset_bytes, len, D::ACCESS == Access::Read)?;
        if !blocking && len == 0 {
            return Err(Error::InvalidArgument("a transfer of 0 bytes".into()));
        }
        // SAFETY: valid queue/buffer/events of one context; the range is in bounds (checked);
        // the caller's obligation covers `host`.
        unsafe {
            tracked::enqueue_host::<D>(
                queue,
                self.raw,
                Some(&self.tracked),
                blocking,
                offset_bytes,
                host,
                len,
                wait,
            )
        }
    }

    /// The whole buffer read into a new vector, after every command enqueued before on
    /// `queue` (in-order queues order it; use [`Buffer::read`] for a wait list or a part).
    /// Trailing bytes that do not fill a `T` are not read.
    ///
    /// ```ignore
    /// let out: Vec<f32> = c.to_vec(&queue)?;
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Buffer::read`].
    pub fn to_vec<T: Pod>(&self, queue: &Queue) -> Result<Vec<T>> {
        self.read_vec_of(queue, self.len_of::<T>())
    }

    /// The first `len` values of type `T` read into a new vector (no wait list); see
    /// [`Buffer::to_vec`]. (A pooled block reads its requested bytes with it, not its bin's.)
    ///
    /// # Errors
    ///
    /// [`Error::OutOfBounds`] when `len` values do not fit, and as [`Buffer::read`].
    pub fn read_vec_of<T: Pod>(&self, queue: &Queue, len: usize) -> Result<Vec<T>> {
        // Checked before the vector is allocated: a huge `len` is an error, not an abort.
        let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{len} values of {} bytes overflow usize",
                std::mem::size_of::<T>()
            ))
        })?;
        self.check_range("vector read", 0, bytes)?;
        // SAFETY: `Pod` promises every bit pattern, all-zero included, is a valid `T`.
        let zero: T = unsafe { std::mem::zeroed() };
        let mut out = vec![zero; len];
        self.read(queue, &mut out[..], &[])?;
        Ok(out)
    }
}

// SAFETY: `as_raw` is the handle this wrapper owns one reference to while it lives, of the kind
// `object()` names; `into_raw` gives that reference away and forgets the wrapper.
unsafe impl crate::raw_handle::RawHandle for Buffer {
    crate::memory::tracked_mem!(raw_handle);

    /// Adopts one reference to a raw buffer (no retain), reading its size, flags, context and,
    /// for a sub-buffer, its parent and offset: `Buffer.from_int_ptr(ptr, retain=False)`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetMemObjectInfo`; [`Error::InvalidArgument`] when it is not a
    /// buffer. The reference is released on error.
    ///
    /// # Safety
    ///
    /// 1. `raw` is a valid memory object and the caller gives its reference to the new `Buffer`.
    /// 2. Whatever backs the object stays valid while it lives: the host memory of a
    ///    `CL_MEM_USE_HOST_PTR` buffer, the SVM allocation of a buffer made over SVM (the
    ///    `Buffer` may outlive the wrapper it came from).
    /// 3. As obligation 3 of [`crate::Memory::from_raw`]: the command record (shared with this
    ///    crate's other wrappers of the same memory) does not see commands and maps made
    ///    outside this crate.
    unsafe fn from_raw(raw: sys::cl_mem) -> Result<Buffer> {
        // SAFETY: obligation 1: the reference is ours to wrap (and to release on error).
        let mem = unsafe { crate::memory::Memory::adopt_untracked(raw) };
        if memory::mem_type(raw)? != MemObjectType::Buffer {
            return Err(Error::InvalidArgument(
                "the memory object is not a buffer".into(),
            ));
        }
        let size = memory::query(raw, sys::CL_MEM_SIZE)?;
        let flags = MemFlags::from_bits_retain(memory::query(raw, sys::CL_MEM_FLAGS)?);
        let context = memory::mem_context(raw)?;
        let host_ptr = memory::query::<*mut c_void>(raw, sys::CL_MEM_HOST_PTR)?.cast::<u8>();
        let (parent, origin, tracked) = match memory::mem_associated_object(raw)? {
            Some(p) => {
                let origin = memory::query(raw, sys::CL_MEM_OFFSET)?;
                let parent = p.into_buffer().map_err(|_| {
                    Error::InvalidArgument("a sub-buffer's parent is not a buffer".into())
                })?;
                let tracked = parent.tracked.view(origin, size);
                (Some(Arc::new(parent)), origin, tracked)
            }
            None => (None, 0, Tracked::adopt_root(raw, size)),
        };
        Ok(Buffer {
            live: crate::runtime::live::Live::new(),
            raw: mem.into_raw(),
            size,
            info: Arc::new(BufferInfo {
                flags,
                context,
                parent,
                origin,
                host_ptr,
            }),
            tracked,
        })
    }
}

/// Something that is a buffer for transfers and copies: [`Buffer`] itself (sub-buffers too), and
/// types that own or borrow one (a pool's blocks and slices). [`enqueue_copy`](crate::enqueue_copy)
/// take any of them; methods of [`Buffer`] reach them through `Deref`.
/// Kernel arguments take them through [`AsKernelArg`](crate::AsKernelArg).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a buffer",
    label = "expected a buffer here",
    note = "pass `&Buffer` (a sub-buffer is a `Buffer`), a pool block (`&PoolBlock<_>`, `&PooledSlice`), or implement `AsBuffer` for a type that holds a `Buffer`",
    note = "`enqueue_copy` needs a device side: host-to-host copies are not transfers (use `copy_from_slice`); the supported pairs are the implementors of `CopyPair`"
)]
pub trait AsBuffer {
    /// The buffer.
    fn as_buffer(&self) -> &Buffer;
}

impl AsBuffer for Buffer {
    fn as_buffer(&self) -> &Buffer {
        self
    }
}

/// Resolves a byte or element range against `len`; empty, reversed and out-of-range ranges are
/// errors.
pub(crate) fn resolve_range(range: impl RangeBounds<usize>, len: usize) -> Result<(usize, usize)> {
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.checked_add(1).ok_or_else(|| overflow("range start"))?,
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1).ok_or_else(|| overflow("range end"))?,
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    if end <= start {
        return Err(Error::InvalidArgument(format!(
            "range {start}..{end} is empty or reversed"
        )));
    }
    if end > len {
        return Err(Error::OutOfBounds {
            what: "range",
            offset: start,
            len: end - start,
            size: len,
        });
    }
    Ok((start, end))
}

fn overflow(what: &str) -> Error {
    Error::InvalidArgument(format!("{what} overflows usize"))
}

/// The access-flag rules of `clCreateSubBuffer` (OpenCL 3.0 §5.2.1), checked before the call.
fn check_sub_buffer_flags(parent: MemFlags, wanted: MemFlags) -> Result<()> {
    let bad = |msg: &str| Err(Error::InvalidArgument(format!("sub-buffer flags: {msg}")));
    let access = MemFlags::READ_WRITE | MemFlags::READ_ONLY | MemFlags::WRITE_ONLY;
    if (wanted & access).bits().count_ones() > 1 {
        return bad("at most one of READ_WRITE, READ_ONLY, WRITE_ONLY");
    }
    if parent.contains(MemFlags::WRITE_ONLY)
        && wanted.intersects(MemFlags::READ_WRITE | MemFlags::READ_ONLY)
    {
        return bad("the parent is WRITE_ONLY");
    }
    if parent.contains(MemFlags::READ_ONLY)
        && wanted.intersects(MemFlags::READ_WRITE | MemFlags::WRITE_ONLY)
    {
        return bad("the parent is READ_ONLY");
    }
    let host = MemFlags::HOST_READ_ONLY | MemFlags::HOST_WRITE_ONLY | MemFlags::HOST_NO_ACCESS;
    if (wanted & host).bits().count_ones() > 1 {
        return bad("at most one of HOST_READ_ONLY, HOST_WRITE_ONLY, HOST_NO_ACCESS");
    }
    if parent.contains(MemFlags::HOST_WRITE_ONLY) && wanted.contains(MemFlags::HOST_READ_ONLY) {
        return bad("the parent is HOST_WRITE_ONLY");
    }
    if parent.contains(MemFlags::HOST_READ_ONLY) && wanted.contains(MemFlags::HOST_WRITE_ONLY) {
        return bad("the parent is HOST_READ_ONLY");
    }
    if parent.contains(MemFlags::HOST_NO_ACCESS)
        && wanted.intersects(MemFlags::HOST_READ_ONLY | MemFlags::HOST_WRITE_ONLY)
    {
        return bad("the parent is HOST_NO_ACCESS");
    }
    let known = access | host;
    if !(wanted - known).is_empty() {
        return bad("only access and host-access flags may be given");
    }
    Ok(())
}

/// `wanted` with the access and host-access flags it leaves out taken from `parent`.
fn inherit_sub_buffer_flags(parent: MemFlags, wanted: MemFlags) -> MemFlags {
    let access = MemFlags::READ_WRITE | MemFlags::READ_ONLY | MemFlags::WRITE_ONLY;
    let host = MemFlags::HOST_READ_ONLY | MemFlags::HOST_WRITE_ONLY | MemFlags::HOST_NO_ACCESS;
    let mut flags = wanted;
    if !wanted.intersects(access) {
        flags |= parent & access;
    }
    if !wanted.intersects(host) {
        flags |= parent & host;
    }
    flags
}

/// Rejects sizes the driver would refuse with `CL_INVALID_BUFFER_SIZE`.
pub(crate) fn check_size(context: &Context, size: usize) -> Result<()> {
    if size == 0 {
        return Err(Error::InvalidArgument(
            "buffer size must be positive".into(),
        ));
    }
    context.check_alloc_size("buffer", size)
}

crate::memory::tracked_mem!(Buffer {
    info,
    tracked,
    live
});
clone_retains!(Mem: Buffer { size, info, tracked, live });

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Buffer");
        d.field("raw", &self.raw)
            .field("size", &self.size)
            .field("flags", &self.info.flags);
        if self.info.parent.is_some() {
            d.field("origin", &self.info.origin);
        }
        d.finish()
    }
}

// A `Memory` narrows to a buffer and a buffer widens to one here, where buffers are known:
// memory.rs sits below the memory kinds and names none of them.
impl TryFrom<Memory> for Buffer {
    type Error = Memory;

    /// The memory object as a buffer when `CL_MEM_TYPE` says it is one, or back unchanged (no
    /// reference is lost either way; `Err` too when its type cannot be read).
    fn try_from(mem: Memory) -> std::result::Result<Buffer, Memory> {
        mem.into_buffer()
    }
}

impl Memory {
    /// [`Buffer::try_from`], named for the crate's own callers.
    pub(crate) fn into_buffer(self) -> std::result::Result<Buffer, Memory> {
        match crate::memory::mem_type(self.as_raw()) {
            Ok(MemObjectType::Buffer) => {
                let raw = self.as_raw();
                // SAFETY: a valid buffer; we take one more reference for the buffer and drop
                // `self`'s when this function returns, so the count is unchanged.
                match unsafe { Buffer::from_raw_retained(raw) } {
                    Ok(b) => Ok(b),
                    Err(_) => Err(self),
                }
            }
            _ => Err(self),
        }
    }
}

impl From<Buffer> for Memory {
    fn from(b: Buffer) -> Memory {
        let tracked = b.tracked_arc();
        Memory::with_record(b.into_raw_only(), tracked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pooled buffer's handle (cl-pool's `PooledBuffer`: the buffer, its queue list and four
    /// words of bookkeeping) is moved on every pool hit and return; at 88 bytes the buffer made
    /// the handle 152 and each move a `memcpy` call (issue 12). Four words keep it inline.
    #[test]
    fn buffer_is_four_words() {
        assert_eq!(
            std::mem::size_of::<Buffer>(),
            4 * std::mem::size_of::<usize>()
        );
    }

    #[test]
    fn ranges_resolve_like_rust_slices() {
        assert_eq!(resolve_range(.., 10).unwrap(), (0, 10));
        assert_eq!(resolve_range(2..=3, 10).unwrap(), (2, 4));
        assert_eq!(resolve_range(4.., 10).unwrap(), (4, 10));
        assert!(matches!(
            resolve_range(3..3, 10),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            resolve_range(5..11, 10),
            Err(Error::OutOfBounds {
                offset: 5,
                len: 6,
                size: 10,
                ..
            })
        ));
        assert!(resolve_range(..=usize::MAX, 10).is_err());
    }

    #[test]
    fn sub_buffer_flag_rules() {
        let rw = MemFlags::READ_WRITE;
        assert!(check_sub_buffer_flags(rw, MemFlags::empty()).is_ok());
        assert!(check_sub_buffer_flags(rw, MemFlags::READ_ONLY).is_ok());
        assert!(check_sub_buffer_flags(MemFlags::WRITE_ONLY, MemFlags::READ_ONLY).is_err());
        assert!(check_sub_buffer_flags(MemFlags::READ_ONLY, MemFlags::READ_WRITE).is_err());
        assert!(check_sub_buffer_flags(rw, MemFlags::READ_ONLY | MemFlags::WRITE_ONLY).is_err());
        assert!(
            check_sub_buffer_flags(MemFlags::HOST_NO_ACCESS, MemFlags::HOST_READ_ONLY).is_err()
        );
        assert!(
            check_sub_buffer_flags(MemFlags::HOST_WRITE_ONLY, MemFlags::HOST_READ_ONLY).is_err()
        );
        assert!(check_sub_buffer_flags(rw, MemFlags::KERNEL_READ_AND_WRITE).is_err());
    }
}
