//! [`SvmArray`]: an owned, typed SVM allocation, and the `svm_empty` family.

use std::ffi::c_void;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::pod::Pod;
use crate::raw_handle::RawHandle;
use crate::runtime::event::{Event, EventStatus};
use crate::runtime::kernel::{ArgValue, KeepAlive, KernelArg};
use crate::runtime::queue::Queue;

use super::core::{exclusive, require_in_order, require_svm, sealed, Core};
use super::SvmPointer;
use super::{Coarse, DeviceGrain, Fine, Grain, HostAccessible, SvmMemFlags, SvmOptions, System};

/// An owned SVM allocation of `len` values of `T`, of grain `G` ([`Coarse`] by default).
///
/// Bound to an in-order queue from creation; dropping it frees the memory with
/// `clEnqueueSVMFree` on that queue after every command that used it (see the
/// [module docs](crate::svm)). Not `Clone`: it owns the memory. A kernel that has it as an
/// argument keeps the memory alive (the free waits until the kernel drops or the argument is
/// replaced).
///
/// Host access: maps for every grain ([`SvmArray::map`], [`SvmArray::with_map`]),
/// plus [`SvmArray::as_slice`] / [`SvmArray::as_mut_slice`] for [`Fine`] and [`System`].
pub struct SvmArray<T: Pod, G: Grain = Coarse> {
    pub(crate) core: Arc<Core>,
    len: usize,
    _marker: PhantomData<(T, G)>,
}

/// Untyped SVM bytes: PyOpenCL's `SVMAllocation`.
pub type SvmAllocation<G = Coarse> = SvmArray<u8, G>;

impl<T: Pod, G: DeviceGrain> SvmArray<T, G> {
    /// `len` uninitialised (driver-provided) values, read-write, aligned to `size_of::<T>()`,
    /// bound to `queue`.
    ///
    /// # Errors
    ///
    /// As [`svm_empty`].
    pub fn new(queue: &Queue, len: usize) -> Result<Self> {
        SvmArray::with_options(queue, len, SvmOptions::default())
    }

    /// [`svm_empty`]'s allocation, generic over the grain.
    pub(crate) fn with_options(queue: &Queue, len: usize, options: SvmOptions) -> Result<Self> {
        let _span = tracing::debug_span!("cl_mem::alloc", kind = "svm", len, elem_bytes = std::mem::size_of::<T>(), queue = ?queue.as_raw(), device = ?queue.device().as_raw()).entered();
        let elem = std::mem::size_of::<T>().max(1);
        let size = len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| {
            Error::InvalidArgument(format!("{len} values of {elem} bytes overflow usize"))
        })?;
        let alignment = options.get_alignment().unwrap_or(elem);
        let mut flags = options.get_access().flags() | G::FLAGS;
        if options.get_atomics() {
            if !G::FLAGS.contains(SvmMemFlags::SVM_FINE_GRAIN_BUFFER) {
                return Err(Error::InvalidArgument(
                    "SVM atomics need fine-grain memory (CL_MEM_SVM_ATOMICS without \
                     CL_MEM_SVM_FINE_GRAIN_BUFFER is invalid)"
                        .into(),
                ));
            }
            flags |= SvmMemFlags::SVM_ATOMICS;
        }
        let core = Core::allocate(queue, size, alignment, flags, G::CAPABILITY, G::NAME)?;
        Ok(SvmArray::from_core(core, len))
    }
}

impl<T: Pod, G: DeviceGrain> SvmArray<T, G> {
    /// Adopts memory from `clSVMAlloc` (PyOpenCL's adopting `SVMAllocation` constructor, used by
    /// allocators), bound to `queue`; it is then freed like any other `SvmArray`.
    ///
    /// SVM has no reference count, so there is no `from_raw_retained`: an SVM pointer cannot be
    /// shared safely with another owner (whichever frees it first leaves the other dangling), and
    /// adopting one takes over the free, which is why this stays `unsafe` with obligation 2.
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] when the context lacks the grain (2.0+); [`Error::InvalidArgument`]
    /// for an out-of-order queue, a null pointer with `len > 0`, or a pointer not aligned to
    /// `alignment` (checked before adopting; on error the memory is *not* freed).
    ///
    /// # Safety
    ///
    /// 1. `ptr` came from `clSVMAlloc` in the queue's context with `flags` (of grain `G`) and at
    ///    least `len * size_of::<T>()` bytes, or is null with `len * size_of::<T>() == 0`.
    /// 2. Nothing else frees it, and no command uses it that the caller has not finished or
    ///    ordered before work on `queue`.
    pub unsafe fn from_raw(
        queue: &Queue,
        ptr: *mut c_void,
        len: usize,
        alignment: usize,
        flags: SvmMemFlags,
    ) -> Result<Self> {
        require_svm(queue.context(), G::CAPABILITY, G::NAME)?;
        require_in_order(queue, "an SVM allocation")?;
        let size = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| Error::InvalidArgument(format!("{len} values overflow usize")))?;
        if ptr.is_null() != (size == 0) {
            return Err(Error::InvalidArgument(
                "an adopted SVM pointer is null exactly when the size is 0".into(),
            ));
        }
        if !alignment.is_power_of_two() || !(ptr as usize).is_multiple_of(alignment) {
            return Err(Error::Misaligned {
                what: "adopted SVM pointer",
                value: ptr as usize,
                alignment,
            });
        }
        // SAFETY: obligations 1 and 2.
        let core = unsafe { Core::adopt(queue, ptr, size, alignment, flags | G::FLAGS) };
        Ok(SvmArray::from_core(core, len))
    }

    /// Gives the memory up without freeing it; the caller must free it (`clEnqueueSVMFree` or
    /// `clSVMFree`) after every command that uses it. Leftover maps are unmapped first.
    ///
    /// # Errors
    ///
    /// [`Error::SvmInUse`] while a kernel holds it (nothing is given up; it is then released
    /// normally); [`Error::Cl`] from unmapping a forgotten map.
    pub fn into_raw(self) -> Result<*mut c_void> {
        self.exclusive("into_raw")?;
        self.core.disown()
    }
}

impl<T: Pod, G: Grain> PartialEq for SvmArray<T, G> {
    /// Identity of the allocation (PyOpenCL's `SVMAllocation.__eq__` compares pointers; here two
    /// zero-size arrays are different allocations).
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.core, &other.core)
    }
}

impl<T: Pod, G: Grain> Eq for SvmArray<T, G> {}

impl<T: Pod, G: Grain> std::hash::Hash for SvmArray<T, G> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        Arc::as_ptr(&self.core).hash(state);
    }
}

impl<T: Pod> SvmArray<T, System> {
    /// Hands host memory over to be used as SVM, bound to `queue` (PyOpenCL's `SVM(ndarray)`,
    /// but owning: a borrowed slice could be freed while a kernel still uses it).
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] unless every device of the queue's context reports
    /// `CL_DEVICE_SVM_FINE_GRAIN_SYSTEM` (2.0+); [`Error::InvalidArgument`] for an out-of-order
    /// queue. `data` is dropped on error.
    pub fn from_vec(queue: &Queue, data: Vec<T>) -> Result<Self> {
        require_svm(queue.context(), System::CAPABILITY, System::NAME)?;
        require_in_order(queue, "an SVM allocation")?;
        let boxed: Box<[T]> = data.into_boxed_slice();
        let len = boxed.len();
        let size = std::mem::size_of_val(&*boxed);
        let ptr = Box::into_raw(boxed).cast::<T>().cast::<c_void>();
        let stored = if size == 0 { std::ptr::null_mut() } else { ptr };
        // SAFETY: `free_box::<T>` reclaims exactly the box leaked above; `T: Send` so any thread
        // may drop it. For size 0 the stored pointer is null and `free_box` rebuilds the empty
        // box from a dangling pointer.
        let core = unsafe {
            Core::from_system(
                queue,
                stored,
                len,
                size,
                std::mem::align_of::<T>(),
                free_box::<T>,
            )
        };
        Ok(SvmArray::from_core(core, len))
    }

    /// Waits for every queue that used the memory and takes it back.
    ///
    /// # Errors
    ///
    /// [`Error::SvmInUse`] while a kernel holds it as an argument (it is then dropped normally
    /// when the last holder goes); [`Error::Cl`] from the waits.
    pub fn into_vec(self) -> Result<Vec<T>> {
        self.exclusive("taking system SVM back")?;
        self.core.wait_idle()?;
        let mut out = vec![zeroed::<T>(); self.len];
        out.copy_from_slice(self.host_slice());
        Ok(out)
    }
}

/// Reclaims a `Box<[T]>` of `len` elements leaked by [`SvmArray::from_vec`].
///
/// # Safety
///
/// 1. `ptr` is null only for `len * size_of::<T>() == 0`, else it came from `Box::into_raw` of
///    a `Box<[T]>` of `len` elements and is reclaimed once.
unsafe fn free_box<T>(ptr: *mut c_void, len: usize) {
    let ptr = if ptr.is_null() {
        std::ptr::NonNull::<T>::dangling().as_ptr()
    } else {
        ptr.cast::<T>()
    };
    // SAFETY: obligation 1 (a zero-size box may be rebuilt from a dangling pointer).
    drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)) });
}

/// A `T` of zero bytes (valid: `Pod` accepts every bit pattern).
fn zeroed<T: Pod>() -> T {
    // SAFETY: `T: Pod` accepts every bit pattern, zeros included.
    unsafe { std::mem::zeroed() }
}

impl<T: Pod, G: Grain> SvmArray<T, G> {
    fn from_core(core: Core, len: usize) -> Self {
        SvmArray {
            core: Arc::new(core),
            len,
            _marker: PhantomData,
        }
    }

    /// The number of values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no values (no memory is allocated then).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The alignment it was allocated with, in bytes.
    pub fn alignment(&self) -> usize {
        self.core.alignment()
    }

    /// The `cl_svm_mem_flags` it was allocated with (`READ_WRITE` for system memory).
    pub fn flags(&self) -> SvmMemFlags {
        self.core.flags()
    }

    /// The in-order queue whose `clEnqueueSVMFree` will release it.
    pub fn queue(&self) -> Queue {
        self.core.bound_queue()
    }

    /// Moves the binding to another in-order queue of the same context: `queue` first waits (a
    /// barrier on a marker) for everything enqueued on the old one, as PyOpenCL's
    /// `bind_to_queue`. Takes `&self`: the release waits for every queue that used the memory
    /// anyway, so rebinding cannot break another user (PyOpenCL's issue #645).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an out-of-order queue or another context (checked first);
    /// [`Error::Cl`] from the marker, flush or barrier.
    pub fn bind_to_queue(&self, queue: &Queue) -> Result<()> {
        self.core.bind(queue)
    }

    /// Runs `callback` once the free of this memory has completed, whether it comes from a drop,
    /// [`SvmArray::enqueue_release`] or [`SvmArray::release_now`]: on the callback worker (see
    /// [`Event::on`]), or on the thread that freed at once. It gets the free command's status.
    pub fn on_release(&self, callback: impl FnOnce(EventStatus) + Send + 'static) {
        self.core.on_release(Box::new(callback));
    }

    /// A kernel argument pointing `offset` values into the allocation (an SVM pointer may point
    /// into the middle, unlike a buffer).
    ///
    /// # Errors
    ///
    /// [`Error::OutOfBounds`] for `offset > len`.
    pub fn arg_at(&self, offset: usize) -> Result<SvmArgAt<'_>> {
        if offset > self.len {
            return Err(Error::OutOfBounds {
                what: "SVM kernel argument",
                offset: offset.saturating_mul(std::mem::size_of::<T>()),
                len: 0,
                size: self.size_bytes(),
            });
        }
        let ptr = if self.core.ptr().is_null() {
            self.core.ptr()
        } else {
            // SAFETY: `offset <= len`, so the result stays inside (or one past) the allocation.
            unsafe { self.core.ptr().cast::<T>().add(offset).cast::<c_void>() }
        };
        Ok(SvmArgAt {
            core: &self.core,
            ptr,
        })
    }

    /// Whether no kernel argument holds the allocation, so no kernel enqueued later can reach it
    /// (what a pool checks before handing a block to a new owner; [`Buffer::is_unique`] for
    /// buffers).
    ///
    /// [`Buffer::is_unique`]: crate::Buffer::is_unique
    pub fn is_unique(&self) -> bool {
        self.exclusive("").is_ok()
    }

    /// [`Error::SvmInUse`] unless `self` holds the only reference (no kernel argument holds it).
    pub(crate) fn exclusive(&self, what: &str) -> Result<()> {
        exclusive(&self.core, what)
    }

    /// The contents as a slice; callers waited for every queue and hold `&mut self` (or own it).
    pub(crate) fn host_slice(&self) -> &[T] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: a live allocation of `len` values of `T` (`Pod`: every byte pattern valid),
        // or zero-size values at a dangling, aligned address; callers guarantee no device
        // command runs on it (see above).
        unsafe { std::slice::from_raw_parts(self.data_ptr(), self.len) }
    }

    /// The address as `*mut T`, dangling (never null) when nothing is allocated.
    fn data_ptr(&self) -> *mut T {
        let p = self.core.ptr().cast::<T>();
        if p.is_null() {
            std::ptr::NonNull::dangling().as_ptr()
        } else {
            p
        }
    }

    /// Enqueues the free now (after `wait` and every queue that used it) and returns its event;
    /// PyOpenCL's `SVMAllocation.enqueue_release`. A zero-size allocation returns a marker.
    ///
    /// # Errors
    ///
    /// [`Error::SvmInUse`] while a kernel holds it as an argument (the memory is then released
    /// when the last holder drops it); [`Error::Cl`] from the markers or `clEnqueueSVMFree`
    /// (the memory is then released by the drop path, which waits for the queues).
    pub fn enqueue_release(self, wait: &[&Event]) -> Result<Event> {
        self.exclusive("enqueue_release")?;
        self.core.enqueue_release(wait)
    }

    /// Frees at once (`clSVMFree`) after waiting for every queue that used it: the explicit,
    /// blocking alternative to the ordered drop.
    ///
    /// # Errors
    ///
    /// As [`SvmArray::enqueue_release`], with [`Error::Cl`] from the waits.
    pub fn release_now(self) -> Result<()> {
        self.exclusive("release_now")?;
        self.core.release_now()
    }
}

impl<T: Pod, G: HostAccessible> SvmArray<T, G> {
    /// Reads fine-grain (or system) memory directly, between kernel runs: waits for every queue
    /// that used it first.
    ///
    /// # Errors
    ///
    /// [`Error::SvmInUse`] while a kernel holds it as an argument; [`Error::Cl`] from the waits.
    pub fn as_slice(&mut self) -> Result<&[T]> {
        self.exclusive("host access")?;
        self.core.wait_idle()?;
        Ok(self.host_slice())
    }

    /// Writes fine-grain (or system) memory directly, between kernel runs: waits for every queue
    /// that used it first.
    ///
    /// # Errors
    ///
    /// As [`SvmArray::as_slice`].
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        self.exclusive("host access")?;
        self.core.wait_idle()?;
        if self.len == 0 {
            return Ok(&mut []);
        }
        // SAFETY: a live allocation of `len` values of `T` (`Pod`), or zero-size values at a
        // dangling address; every queue that used it is idle, no kernel holds it (checked), and
        // `&mut self` excludes every other access for the borrow's duration.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.data_ptr(), self.len) })
    }
}

impl<T: Pod, G: Grain> sealed::Sealed for SvmArray<T, G> {
    fn core(&self) -> &Arc<Core> {
        &self.core
    }
}

impl<T: Pod, G: Grain> SvmPointer for SvmArray<T, G> {
    fn svm_ptr(&self) -> *mut c_void {
        self.core.ptr()
    }
    fn size_bytes(&self) -> usize {
        self.core.size()
    }
}

// SAFETY: the pointer is this allocation's (or null for size 0); the kernel holds the `Core`
// (`keep_alive`), so the memory stays allocated while the argument is set, and each enqueue
// tells the `Core` its queue, so the free waits for it.
unsafe impl<T: Pod, G: Grain> KernelArg for SvmArray<T, G> {
    fn arg_value(&self) -> ArgValue<'_> {
        ArgValue::Svm {
            ptr: self.core.ptr().cast_const(),
            keep_alive: Some(KeepAlive::memory(Arc::clone(&self.core) as _)),
        }
    }
}

/// An SVM kernel argument pointing into the middle of an allocation ([`SvmArray::arg_at`]).
pub struct SvmArgAt<'a> {
    core: &'a Arc<Core>,
    ptr: *mut c_void,
}

// SAFETY: as for `SvmArray`: the pointer lies in (or one past) the allocation the kernel keeps
// alive through `keep_alive`.
unsafe impl KernelArg for SvmArgAt<'_> {
    fn arg_value(&self) -> ArgValue<'_> {
        ArgValue::Svm {
            ptr: self.ptr.cast_const(),
            keep_alive: Some(KeepAlive::memory(Arc::clone(self.core) as _)),
        }
    }
}

impl fmt::Debug for SvmArgAt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SvmArgAt").field("ptr", &self.ptr).finish()
    }
}

impl<T: Pod, G: Grain> fmt::Debug for SvmArray<T, G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SvmArray")
            .field("grain", &G::NAME)
            .field("elem", &std::any::type_name::<T>())
            .field("len", &self.len)
            .field("core", &*self.core)
            .finish()
    }
}

/// `len` values of `T` of grain `G` with `options` (PyOpenCL's `svm_empty(ctx, flags, shape,
/// dtype, alignment=None, queue=...)`; the grain is the type, the queue is required).
/// `len == 0` allocates nothing (and still works everywhere).
///
/// # Errors
///
/// Checked before calling the driver: [`Error::Unsupported`] when the platform or a device
/// is older than 2.0 or lacks the grain (or atomics) in `CL_DEVICE_SVM_CAPABILITIES`;
/// [`Error::InvalidArgument`] for an out-of-order queue, atomics on coarse grain, an
/// alignment that is not a power of two or exceeds 128 bytes (the largest OpenCL data type,
/// the spec's limit for `clSVMAlloc`), or a size that overflows or exceeds
/// `CL_DEVICE_MAX_MEM_ALLOC_SIZE`. Then [`Error::SvmAllocFailed`] when `clSVMAlloc` returns
/// NULL (PyOpenCL's allocator silently returns address 0 instead).
pub fn svm_empty<T: Pod, G: DeviceGrain>(
    queue: &Queue,
    options: SvmOptions,
    len: usize,
) -> Result<SvmArray<T, G>> {
    SvmArray::with_options(queue, len, options)
}

/// Coarse-grain, read-write (PyOpenCL's `csvm_empty`).
///
/// # Errors
///
/// As [`svm_empty`].
pub fn csvm_empty<T: Pod>(queue: &Queue, len: usize) -> Result<SvmArray<T, Coarse>> {
    SvmArray::new(queue, len)
}

/// Fine-grain, read-write (PyOpenCL's `fsvm_empty`).
///
/// # Errors
///
/// As [`svm_empty`].
pub fn fsvm_empty<T: Pod>(queue: &Queue, len: usize) -> Result<SvmArray<T, Fine>> {
    SvmArray::new(queue, len)
}
