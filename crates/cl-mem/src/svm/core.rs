//! The shared state of one SVM allocation ([`Core`]): its pointer, the queues that used it, and
//! the ordered release. Plus the grain markers and allocation options.

use std::ffi::c_void;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bitflags::bitflags;
use cl_raw::{queue as raw_queue, svm as raw_svm, sys, Version};

use crate::error::{Error, Result};
use crate::raw_handle::RawHandle;
use crate::runtime::context::Context;
use crate::runtime::device::SvmCapabilities;
use crate::runtime::event::{raw_list, Event, EventStatus};
use crate::runtime::queue::Queue;

bitflags! {
    /// `cl_svm_mem_flags` (PyOpenCL's `svm_mem_flags`), as [`super::SvmArray::flags`] reports
    /// them. Built from [`SvmOptions`] and the [`Grain`], never passed in raw.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct SvmMemFlags: sys::cl_svm_mem_flags {
        /// `CL_MEM_READ_WRITE`.
        const READ_WRITE = sys::CL_MEM_READ_WRITE;
        /// `CL_MEM_WRITE_ONLY`: kernels only write.
        const WRITE_ONLY = sys::CL_MEM_WRITE_ONLY;
        /// `CL_MEM_READ_ONLY`: kernels only read.
        const READ_ONLY = sys::CL_MEM_READ_ONLY;
        /// `CL_MEM_SVM_FINE_GRAIN_BUFFER`.
        const SVM_FINE_GRAIN_BUFFER = sys::CL_MEM_SVM_FINE_GRAIN_BUFFER;
        /// `CL_MEM_SVM_ATOMICS` (fine grain only).
        const SVM_ATOMICS = sys::CL_MEM_SVM_ATOMICS;
    }
}

/// What kernels may do with the memory (the access part of `cl_svm_mem_flags`). The host may
/// always map it read-write: PyOpenCL's issue #372 (a `READ_ONLY` allocation could not be filled
/// from the host) cannot happen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SvmAccess {
    /// `CL_MEM_READ_WRITE` (the default).
    #[default]
    ReadWrite,
    /// `CL_MEM_READ_ONLY`.
    ReadOnly,
    /// `CL_MEM_WRITE_ONLY`.
    WriteOnly,
}

impl SvmAccess {
    pub(crate) fn flags(self) -> SvmMemFlags {
        match self {
            SvmAccess::ReadWrite => SvmMemFlags::READ_WRITE,
            SvmAccess::ReadOnly => SvmMemFlags::READ_ONLY,
            SvmAccess::WriteOnly => SvmMemFlags::WRITE_ONLY,
        }
    }
}

/// Allocation options: access, alignment (default: the element size), atomics (fine grain).
///
/// `SvmOptions::default().access(SvmAccess::ReadOnly).alignment(64)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[must_use]
pub struct SvmOptions {
    access: SvmAccess,
    alignment: Option<usize>,
    atomics: bool,
}

impl SvmOptions {
    /// Kernel access.
    pub fn access(mut self, access: SvmAccess) -> SvmOptions {
        self.access = access;
        self
    }

    /// Alignment in bytes: a power of two (checked at allocation), or 0 for the driver's default
    /// (`clSVMAlloc` with alignment 0: the size of the largest OpenCL data type the device
    /// supports, PyOpenCL's default for untyped allocations).
    pub fn alignment(mut self, bytes: usize) -> SvmOptions {
        self.alignment = Some(bytes);
        self
    }

    /// The alignment asked for, if any (`Some(0)`: the driver's default).
    pub fn alignment_bytes(&self) -> Option<usize> {
        self.alignment
    }

    /// `CL_MEM_SVM_ATOMICS` (fine grain, and the device must report `CL_DEVICE_SVM_ATOMICS`).
    pub fn atomics(mut self, on: bool) -> SvmOptions {
        self.atomics = on;
        self
    }

    pub(crate) fn get_access(&self) -> SvmAccess {
        self.access
    }
    pub(crate) fn get_alignment(&self) -> Option<usize> {
        self.alignment
    }
    pub(crate) fn get_atomics(&self) -> bool {
        self.atomics
    }
}

pub(crate) mod sealed {
    /// Seals [`super::Grain`] and [`crate::svm::SvmPointer`]: the release ordering relies on
    /// knowing every implementor.
    pub trait Sealed {
        /// The allocation's shared state.
        #[doc(hidden)]
        fn core(&self) -> &std::sync::Arc<super::Core>;
    }

    /// Seals [`super::Grain`]: [`super::Coarse`], [`super::Fine`] and [`super::System`] only.
    pub trait SealedGrain {}
}

/// The kind of SVM, as a type: [`Coarse`], [`Fine`] or [`System`]. Decides which host access
/// exists at compile time (coarse grain has no unmapped host access).
pub trait Grain: sealed::SealedGrain + fmt::Debug + Send + Sync + 'static {
    /// What is printed in errors and `Debug`.
    const NAME: &'static str;
    /// The capability every device of the context must report.
    const CAPABILITY: SvmCapabilities;
}

/// Grains that `clSVMAlloc` allocates ([`Coarse`], [`Fine`]).
pub trait DeviceGrain: Grain {
    /// Extra `cl_svm_mem_flags` of this grain.
    const FLAGS: SvmMemFlags;
}

/// Grains the host may read and write without a map, between kernel runs ([`Fine`],
/// [`System`]).
pub trait HostAccessible: Grain {}

/// Coarse-grain buffer SVM (`CL_DEVICE_SVM_COARSE_GRAIN_BUFFER`): host access only through a map.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Coarse {}
/// Fine-grain buffer SVM (`CL_MEM_SVM_FINE_GRAIN_BUFFER`): also directly host-accessible.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fine {}
/// Ordinary host memory used as SVM: needs `CL_DEVICE_SVM_FINE_GRAIN_SYSTEM` (the Intel CPU
/// runtime here). PyOpenCL's `SVM(ndarray)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum System {}

impl sealed::SealedGrain for Coarse {}
impl sealed::SealedGrain for Fine {}
impl sealed::SealedGrain for System {}

impl Grain for Coarse {
    const NAME: &'static str = "coarse-grain buffer SVM";
    const CAPABILITY: SvmCapabilities = SvmCapabilities::COARSE_GRAIN_BUFFER;
}
impl Grain for Fine {
    const NAME: &'static str = "fine-grain buffer SVM";
    const CAPABILITY: SvmCapabilities = SvmCapabilities::FINE_GRAIN_BUFFER;
}
impl Grain for System {
    const NAME: &'static str = "fine-grain system SVM";
    const CAPABILITY: SvmCapabilities = SvmCapabilities::FINE_GRAIN_SYSTEM;
}
impl DeviceGrain for Coarse {
    const FLAGS: SvmMemFlags = SvmMemFlags::empty();
}
impl DeviceGrain for Fine {
    const FLAGS: SvmMemFlags = SvmMemFlags::SVM_FINE_GRAIN_BUFFER;
}
impl HostAccessible for Fine {}
impl HostAccessible for System {}

/// The largest `clSVMAlloc` alignment the spec allows: the size of the largest OpenCL C data
/// type (`long16`, `double16`).
pub(crate) const MAX_SVM_ALIGNMENT: usize = 128;

/// Frees system memory handed over by [`Core::from_system`].
type SystemFree = unsafe fn(*mut c_void, usize);

/// Where the memory came from.
enum Storage {
    /// `clSVMAlloc`: freed with `clEnqueueSVMFree` / `clSVMFree`.
    Svm,
    /// A leaked `Box<[T]>` of `len` elements, freed by `free` once the queues are done.
    System { free: SystemFree, len: usize },
}

/// The queues that used an allocation.
struct Queues {
    /// The in-order queue whose `clEnqueueSVMFree` releases it.
    bound: Queue,
    /// Other queues with (possibly) pending work on it.
    others: Vec<Queue>,
}

type ReleaseCallback = Box<dyn FnOnce(EventStatus) + Send + 'static>;

/// One SVM allocation, shared between its owner and the kernels that hold it as an argument.
/// Dropping the last `Arc` releases it, ordered after every queue that used it.
pub struct Core {
    ptr: *mut c_void,
    size: usize,
    alignment: usize,
    flags: SvmMemFlags,
    context: Context,
    storage: Storage,
    queues: Mutex<Queues>,
    on_release: Mutex<Vec<ReleaseCallback>>,
    released: AtomicBool,
    /// Live maps `(id, queue, address)`; an entry left when no guard exists is a guard leaked
    /// with `mem::forget`, unmapped before the next map, host access or free.
    maps: Mutex<Vec<(u64, Queue, usize)>>,
    next_map: AtomicU64,
    /// Kernel argument slots set to this allocation now. Commands that used it hold the `Arc`
    /// too, until they complete, but only a slot can start new commands, so only slots make
    /// host access unsafe.
    kernel_slots: AtomicUsize,
    /// Kernel enqueues between their map check and their queue record (see `begin_command`).
    enqueuing: AtomicUsize,
}

// SAFETY: the pointer is an SVM (or system SVM) address, valid in every host thread of the
// process; OpenCL 1.1+ calls are thread-safe ("Multiple Host Threads"); the mutable state is
// behind mutexes. Host *contents* access goes through `&mut SvmArray`, never through `Core`.
unsafe impl Send for Core {}
// SAFETY: as for `Send`.
unsafe impl Sync for Core {}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

// Kernels reach an SVM allocation only through this seam (crate::runtime::track::ArgMemory).
impl crate::runtime::track::ArgMemory for Core {
    fn arg_context(&self) -> Option<sys::cl_context> {
        Some(self.context.as_raw())
    }

    /// Only slots make host access unsafe: commands that used the memory are waited for.
    fn slot(&self, set: bool) {
        if set {
            self.kernel_slots.fetch_add(1, Ordering::AcqRel);
        } else {
            self.kernel_slots.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// The allocation remembers the queue so its free waits for it.
    fn used_on(&self, queue: &Queue) {
        self.note_use(queue);
    }

    /// Announces the enqueue, then looks for host maps; a map registers itself, then waits for
    /// announced enqueues (`map_core`): one of the two always sees the other.
    fn begin_command(&self) -> Result<()> {
        self.enqueuing.fetch_add(1, Ordering::SeqCst);
        let maps = lock(&self.maps).len();
        if maps == 0 {
            Ok(())
        } else {
            self.enqueuing.fetch_sub(1, Ordering::SeqCst);
            Err(Error::Mapped(format!(
                "a kernel would use SVM the host has mapped ({maps} map(s) open); drop the map \
                 guard first (a guard forgotten with mem::forget is unmapped by the next map or \
                 host access)"
            )))
        }
    }

    fn end_command(&self) {
        self.enqueuing.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Checks the platform and every device of `context` for `capability` (SVM needs 2.0), and
/// refuses SVM in an NVIDIA context of several GPUs, where the driver crashes.
pub(crate) fn require_svm(
    context: &Context,
    capability: SvmCapabilities,
    feature: &'static str,
) -> Result<()> {
    context.require_platform_version(Version::V2_0, feature)?;
    let devices = context.devices();
    // Distinct devices: a context made from one device listed twice is a one-device context.
    let distinct = (0..devices.len())
        .filter(|&i| !devices[..i].contains(&devices[i]))
        .count();
    if distinct > 1 && crate::runtime::quirks::quirks(&context.platform()).multi_gpu_svm_crashes {
        // NVIDIA 580.159.04 kills the process (SIGSEGV) in the first clEnqueueSVMMap of a
        // coarse-grain allocation of a context over two GPUs: repro/nvidia_two_gpu_image_svm.c,
        // docs/DEVICES.md#nvidia-multi-gpu-svm.
        return Err(Error::Unsupported {
            feature,
            needs: "a context of one NVIDIA device: NVIDIA's driver (580.159.04) crashes in \
                    clEnqueueSVMMap on SVM of a context over several GPUs"
                .into(),
        });
    }
    for device in context.devices() {
        device.require_version(Version::V2_0, feature)?;
        let caps = device.svm_capabilities()?;
        if !caps.contains(capability) {
            return Err(Error::Unsupported {
                feature,
                needs: format!(
                    "{capability:?} in CL_DEVICE_SVM_CAPABILITIES, device '{}' reports {caps:?}",
                    device.name().unwrap_or_default().trim()
                ),
            });
        }
    }
    Ok(())
}

/// [`Error::SvmInUse`] while a kernel argument slot holds the allocation (a kernel that could be
/// enqueued again). Commands that used it and may still run hold it too, but they are waited
/// for by the callers (`wait_idle`) or ordered before the free.
pub(crate) fn exclusive(core: &Arc<Core>, what: &str) -> Result<()> {
    let holders = core.kernel_slots.load(Ordering::Acquire);
    if holders == 0 {
        Ok(())
    } else {
        Err(Error::SvmInUse(format!(
            "{what}: {holders} kernel argument(s) still hold the allocation; drop the kernel or \
             set another argument first"
        )))
    }
}

/// Refuses out-of-order queues: they cannot order the free after earlier commands.
pub(crate) fn require_in_order(queue: &Queue, what: &str) -> Result<()> {
    if queue.is_in_order() {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "{what} needs an in-order queue: an out-of-order queue cannot order the SVM free after \
             the commands that use it"
        )))
    }
}

impl Core {
    /// Allocates `size` bytes with `clSVMAlloc`, bound to `queue`. Size 0 allocates nothing.
    pub(crate) fn allocate(
        queue: &Queue,
        size: usize,
        alignment: usize,
        flags: SvmMemFlags,
        capability: SvmCapabilities,
        feature: &'static str,
    ) -> Result<Core> {
        let context = queue.context();
        require_svm(context, capability, feature)?;
        if flags.contains(SvmMemFlags::SVM_ATOMICS) {
            require_svm(context, SvmCapabilities::ATOMICS, "SVM atomics")?;
        }
        require_in_order(queue, "an SVM allocation")?;
        if alignment != 0 && !alignment.is_power_of_two() {
            return Err(Error::InvalidArgument(format!(
                "SVM alignment {alignment} is not a power of two (or 0 for the default)"
            )));
        }
        // clSVMAlloc: the alignment "must be equal to or smaller than the size of the largest
        // data type supported by the OpenCL device" (long16 / double16: 128 bytes). PoCL and the
        // Intel CPU runtime return NULL above it.
        if alignment > MAX_SVM_ALIGNMENT {
            return Err(Error::InvalidArgument(format!(
                "SVM alignment {alignment} exceeds {MAX_SVM_ALIGNMENT} bytes, the largest OpenCL \
                 data type (clSVMAlloc)"
            )));
        }
        let align32 = u32::try_from(alignment).map_err(|_| {
            Error::InvalidArgument(format!("SVM alignment {alignment} does not fit a cl_uint"))
        })?;
        context.check_alloc_size("SVM", size)?;
        let ptr = if size == 0 {
            // PyOpenCL PR #742: zero-size allocations are allowed and allocate nothing.
            std::ptr::null_mut()
        } else {
            // A NULL is retried a few times before it is an error: NVIDIA 580 returns spurious
            // NULLs while other threads' SVM frees run (see `svm_alloc_free_lock`; the enqueued
            // frees cannot be serialised, they run in the driver's threads). A real
            // out-of-memory stays NULL and costs the retries' ~25 ms once.
            let mut got = None;
            for attempt in 0..SVM_ALLOC_ATTEMPTS {
                if attempt > 0 {
                    std::thread::sleep(std::time::Duration::from_micros(100 << attempt));
                }
                let _serial = svm_alloc_free_lock();
                // SAFETY: a 2.0+ platform whose devices all report the capability `flags` asks
                // for (checked above); the pointer is freed exactly once, by `release`, after the
                // queues that used it are done.
                got = unsafe { raw_svm::alloc(context.as_raw(), flags.bits(), size, align32) };
                if got.is_some() {
                    break;
                }
            }
            got.ok_or(Error::SvmAllocFailed { size, alignment })?
        };
        // Alignment 0 asks for the driver's default: record what the pointer has (at most the
        // largest data type's 128 bytes), so later offset checks use a real alignment.
        let alignment = if alignment == 0 {
            let got = 1usize << (ptr as usize).trailing_zeros().min(7);
            if ptr.is_null() {
                MAX_SVM_ALIGNMENT
            } else {
                got
            }
        } else {
            alignment
        };
        Ok(Core::with_storage(
            queue,
            ptr,
            size,
            alignment,
            flags,
            Storage::Svm,
        ))
    }

    /// Adopts system memory (`len` elements of a leaked `Box<[T]>` at `ptr`, `size` bytes).
    ///
    /// # Safety
    ///
    /// 1. `free(ptr, len)` frees that memory and may run on any thread; nothing else frees it.
    pub(crate) unsafe fn from_system(
        queue: &Queue,
        ptr: *mut c_void,
        len: usize,
        size: usize,
        alignment: usize,
        free: SystemFree,
    ) -> Core {
        Core::with_storage(
            queue,
            ptr,
            size,
            alignment,
            SvmMemFlags::READ_WRITE,
            Storage::System { free, len },
        )
    }

    /// Adopts a `clSVMAlloc` pointer (see `SvmArray::from_raw`).
    ///
    /// # Safety
    ///
    /// 1. As `SvmArray::from_raw`.
    pub(crate) unsafe fn adopt(
        queue: &Queue,
        ptr: *mut c_void,
        size: usize,
        alignment: usize,
        flags: SvmMemFlags,
    ) -> Core {
        Core::with_storage(queue, ptr, size, alignment, flags, Storage::Svm)
    }

    /// Gives the pointer up without freeing it (see `SvmArray::into_raw`); the caller holds the
    /// only reference.
    pub(crate) fn disown(&self) -> Result<*mut c_void> {
        self.unmap_leftovers()?;
        self.released.store(true, Ordering::Release);
        Ok(self.ptr)
    }

    fn with_storage(
        queue: &Queue,
        ptr: *mut c_void,
        size: usize,
        alignment: usize,
        flags: SvmMemFlags,
        storage: Storage,
    ) -> Core {
        Core {
            ptr,
            size,
            alignment,
            flags,
            context: queue.context().clone(),
            storage,
            queues: Mutex::new(Queues {
                bound: queue.clone(),
                others: Vec::new(),
            }),
            on_release: Mutex::new(Vec::new()),
            released: AtomicBool::new(false),
            maps: Mutex::new(Vec::new()),
            next_map: AtomicU64::new(1),
            kernel_slots: AtomicUsize::new(0),
            enqueuing: AtomicUsize::new(0),
        }
    }

    pub(crate) fn ptr(&self) -> *mut c_void {
        self.ptr
    }
    pub(crate) fn size(&self) -> usize {
        self.size
    }
    pub(crate) fn alignment(&self) -> usize {
        self.alignment
    }
    pub(crate) fn flags(&self) -> SvmMemFlags {
        self.flags
    }
    pub(crate) fn context(&self) -> &Context {
        &self.context
    }
    pub(crate) fn bound_queue(&self) -> Queue {
        lock(&self.queues).bound.clone()
    }

    /// [`Error::InvalidArgument`] unless `queue` belongs to this allocation's context.
    pub(crate) fn check_queue(&self, queue: &Queue) -> Result<()> {
        if queue.context() == &self.context {
            Ok(())
        } else {
            Err(Error::InvalidArgument(
                "the queue belongs to another context than the SVM allocation".into(),
            ))
        }
    }

    /// Remembers that `queue` may have pending work on this memory.
    pub(crate) fn note_use(&self, queue: &Queue) {
        let mut q = lock(&self.queues);
        if q.bound != *queue && !q.others.contains(queue) {
            q.others.push(queue.clone());
        }
    }

    /// Moves the binding to `queue`: it waits (a barrier on a marker) for everything enqueued on
    /// the old one.
    pub(crate) fn bind(&self, queue: &Queue) -> Result<()> {
        require_in_order(queue, "binding SVM to a queue")?;
        self.check_queue(queue)?;
        let mut q = lock(&self.queues);
        if q.bound == *queue {
            return Ok(());
        }
        let marker = q.bound.enqueue_marker(&[])?;
        q.bound.flush()?;
        queue.enqueue_barrier(&[&marker])?;
        let old = std::mem::replace(&mut q.bound, queue.clone());
        q.others.retain(|o| o != queue && *o != old);
        Ok(())
    }

    /// Markers on every queue with possible pending work, except `on` when it is in order (its
    /// own order covers it). Each marked queue is flushed so a wait on another queue progresses.
    /// A queue of another context (a kernel of another context given this pointer: a misuse
    /// the driver may not catch) cannot appear in a wait list, so it is waited for on the host
    /// here instead.
    pub(crate) fn pending_markers(&self, on: Option<&Queue>) -> Result<Vec<Event>> {
        let q = lock(&self.queues);
        let mut markers = Vec::with_capacity(1 + q.others.len());
        for queue in std::iter::once(&q.bound).chain(q.others.iter()) {
            if on.is_some_and(|o| o == queue && o.is_in_order()) {
                continue;
            }
            let marker = queue.enqueue_marker(&[])?;
            queue.flush()?;
            if queue.context() == &self.context {
                markers.push(marker);
            } else {
                marker.wait()?;
            }
        }
        Ok(markers)
    }

    /// Blocks until every queue that used the memory is done with it, then forgets the other
    /// queues. Callers hold the only `Arc` (no kernel can add work meanwhile).
    pub(crate) fn wait_idle(&self) -> Result<()> {
        if self.size == 0 {
            return Ok(());
        }
        self.unmap_leftovers()?;
        let markers = self.pending_markers(None)?;
        let refs: Vec<&Event> = markers.iter().collect();
        Event::wait_for_all(&refs)?;
        lock(&self.queues).others.clear();
        Ok(())
    }

    /// Records a live map; returns its id.
    pub(crate) fn remember_map(&self, queue: &Queue, base: *mut c_void) -> u64 {
        let id = self.next_map.fetch_add(1, Ordering::Relaxed);
        lock(&self.maps).push((id, queue.clone(), base as usize));
        id
    }

    /// Forgets a map whose enqueue failed.
    pub(crate) fn forget_map(&self, id: u64) {
        lock(&self.maps).retain(|(i, _, _)| *i != id);
    }

    /// Unmaps the live map `id` (its guard is ending) on the queue it was mapped on.
    pub(crate) fn unmap_map(&self, id: u64) -> Result<()> {
        let entry = {
            let mut maps = lock(&self.maps);
            maps.iter()
                .position(|(i, _, _)| *i == id)
                .map(|at| maps.remove(at))
        };
        match entry {
            Some((i, queue, base)) => {
                let r = super::map::unmap_now(&queue, base as *mut c_void);
                if r.is_err() {
                    // Still mapped (an out-of-memory status, issue 16): keep the entry, so the
                    // next map, host access, command or free unmaps it as a leftover.
                    lock(&self.maps).push((i, queue, base));
                }
                r
            }
            None => Ok(()),
        }
    }

    /// Waits until no kernel enqueue that checked for maps before this map registered is still
    /// between its check and its record.
    pub(crate) fn wait_for_enqueues(&self) {
        while self.enqueuing.load(Ordering::SeqCst) > 0 {
            std::thread::yield_now();
        }
    }

    /// Unmaps maps whose guards were leaked (`mem::forget`). Callers hold the owner's `&mut` or
    /// own the last reference, so no guard is alive and every entry is a leftover.
    pub(crate) fn unmap_leftovers(&self) -> Result<()> {
        let leftovers = std::mem::take(&mut *lock(&self.maps));
        for (_, queue, base) in leftovers {
            tracing::warn!(
                address = base,
                "unmapping SVM whose map guard was forgotten"
            );
            super::map::unmap_now(&queue, base as *mut c_void)?;
        }
        Ok(())
    }

    /// Registers `callback` to run (on the callback worker) when the free completes.
    pub(crate) fn on_release(&self, callback: ReleaseCallback) {
        lock(&self.on_release).push(callback);
    }

    /// Enqueues the free on the bound queue after `wait` and a marker on every other queue that
    /// used the memory; returns the free's event. At most once (`released`).
    pub(crate) fn enqueue_release(&self, wait: &[&Event]) -> Result<Event> {
        if self.released.swap(true, Ordering::AcqRel) {
            return Err(Error::InvalidArgument(
                "the SVM allocation is already released".into(),
            ));
        }
        match self.enqueue_release_inner(wait) {
            Ok(ev) => {
                for cb in std::mem::take(&mut *lock(&self.on_release)) {
                    if let Err(e) = ev.on_complete(cb) {
                        tracing::warn!(error = %e, "SVM release callback not registered");
                    }
                }
                Ok(ev)
            }
            Err(e) => {
                self.released.store(false, Ordering::Release);
                Err(e)
            }
        }
    }

    fn enqueue_release_inner(&self, wait: &[&Event]) -> Result<Event> {
        self.unmap_leftovers()?;
        let bound = self.bound_queue();
        let markers = self.pending_markers(Some(&bound))?;
        let mut all: Vec<&Event> = wait.to_vec();
        all.extend(markers.iter());
        if self.size == 0 || self.ptr.is_null() {
            return match self.storage {
                Storage::Svm => bound.enqueue_marker(&all),
                Storage::System { free, len } => {
                    let ev = bound.enqueue_marker(&all)?;
                    // SAFETY: a zero-size system allocation owns no memory; `free` only
                    // reclaims the empty box, once (guarded by `released`).
                    unsafe { free(self.ptr, len) };
                    Ok(ev)
                }
            };
        }
        let ev = match self.storage {
            Storage::Svm => {
                // SAFETY: a 2.0+ platform (checked at allocation); `ptr` came from clSVMAlloc in
                // this context and is freed once (`released`); the free runs after every earlier
                // command of the in-order bound queue and after a marker on each other queue
                // that used it; kernels holding it would hold this `Core` alive, so none remain;
                // we own the event.
                unsafe {
                    let ev = raw_queue::enqueue_svm_free(
                        bound.as_raw(),
                        &[self.ptr],
                        None,
                        std::ptr::null_mut(),
                        &raw_list(&all),
                    );
                    Event::adopt(ev, "clEnqueueSVMFree")
                }?
            }
            Storage::System { free, len } => {
                let ev = bound.enqueue_marker(&all)?;
                let job = SystemFreeJob {
                    ptr: self.ptr,
                    len,
                    free,
                };
                ev.on_complete(move |status| job.run(status))?;
                ev
            }
        };
        // The free is enqueued: from here on nothing may report failure, or the drop path
        // would free a second time.
        if let Err(e) = bound.flush() {
            tracing::warn!(error = %e, "clFlush after the SVM free failed");
        }
        Ok(ev)
    }

    /// Waits for every queue, then frees at once (`clSVMFree`).
    pub(crate) fn release_now(&self) -> Result<()> {
        self.wait_idle()?;
        if self.released.swap(true, Ordering::AcqRel) {
            return Err(Error::InvalidArgument(
                "the SVM allocation is already released".into(),
            ));
        }
        self.free_unordered();
        for cb in std::mem::take(&mut *lock(&self.on_release)) {
            cb(EventStatus::Complete);
        }
        Ok(())
    }

    /// Frees without ordering; callers made sure no command uses the memory.
    fn free_unordered(&self) {
        if self.ptr.is_null() {
            if let Storage::System { free, len } = self.storage {
                // SAFETY: the empty box is reclaimed once (callers hold `released`).
                unsafe { free(self.ptr, len) };
            }
            return;
        }
        match self.storage {
            Storage::Svm => {
                let _serial = svm_alloc_free_lock();
                // SAFETY: a 2.0+ platform; `ptr` from clSVMAlloc in this context, freed once; no
                // command uses it (callers waited for every queue).
                unsafe { raw_svm::free(self.context.as_raw(), self.ptr) }
            }
            // SAFETY: as above; `free` reclaims the box exactly once.
            Storage::System { free, len } => unsafe { free(self.ptr, len) },
        }
    }
}

/// How many times `clSVMAlloc` is tried before its NULL is an error (sleeps doubling from 0.2 to
/// 12.8 ms between: about 25 ms for a real out-of-memory). Four tries (1.4 ms) were not enough
/// once in a 45 s soak on the H100 (`thread 0 round 1738: clSVMAlloc returned NULL for 1536
/// bytes`, docs/DEVICES.md#nvidia-svm-alloc-null).
const SVM_ALLOC_ATTEMPTS: u32 = 8;

/// Serialises `clSVMAlloc` with `clSVMFree` process-wide. NVIDIA 580.159.04 returns NULL from
/// `clSVMAlloc` while other threads free SVM: 2,478-2,586 NULLs in 8,000 allocations of four
/// threads with `clSVMFree`, 0-7 with `clEnqueueSVMFree` (which runs in the driver's threads and
/// cannot be serialised: hence also the retry in `Core::alloc`), none with one thread
/// (repro/nvidia_concurrent_svm_alloc.c, docs/DEVICES.md#nvidia-svm-alloc-null). An allocation costs microseconds at
/// least, so one uncontended lock around it is noise; every platform takes it.
fn svm_alloc_free_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The deferred free of system memory, run by the release marker's callback.
struct SystemFreeJob {
    ptr: *mut c_void,
    len: usize,
    free: SystemFree,
}

// SAFETY: the job owns the memory it frees (handed over by `Core::from_system`), and `free`
// may run on any thread (its contract).
unsafe impl Send for SystemFreeJob {}

impl SystemFreeJob {
    fn run(self, status: EventStatus) {
        if status == EventStatus::Complete {
            // SAFETY: the marker completed after every queue that used the memory; the job runs
            // once (the driver calls each callback once).
            unsafe { (self.free)(self.ptr, self.len) };
        } else {
            // A failed marker says nothing about the commands before it: leaking is safe.
            tracing::error!(?status, "SVM release marker failed: system memory leaked");
        }
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        if self.released.load(Ordering::Acquire) {
            return;
        }
        if let Err(e) = self.enqueue_release(&[]) {
            tracing::warn!(error = %e, "ordered SVM free failed in drop; waiting for the queues");
            match self.wait_idle() {
                Ok(()) => {
                    self.released.store(true, Ordering::Release);
                    self.free_unordered();
                    for cb in std::mem::take(&mut *lock(&self.on_release)) {
                        cb(EventStatus::Complete);
                    }
                }
                Err(e) => {
                    tracing::error!(error = %e, "SVM memory leaked: its queues could not be waited for");
                }
            }
        }
    }
}

impl fmt::Debug for Core {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let q = lock(&self.queues);
        f.debug_struct("Core")
            .field("ptr", &self.ptr)
            .field("size", &self.size)
            .field("flags", &self.flags)
            .field("bound", &q.bound)
            .field("other_queues", &q.others.len())
            .finish()
    }
}
