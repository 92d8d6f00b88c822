//! Command tracking: what every command and host map of one allocation must know about the
//! others. One [`Tracker`] per allocation (a root buffer with its sub-buffers and clones; an
//! image made from a buffer shares the buffer's), reached through a [`Tracked`] view (the
//! tracker plus the byte range the handle covers).
//!
//! It records, per queue, the last command that wrote and the last that read the allocation
//! (every command on an out-of-order queue until it completes), and the live host maps with
//! their ranges. From that record alone:
//!
//! - a command on queue B waits for the writes (and, when it writes, the reads) still pending on
//!   other queues: memory last written on queue A is never read on B too early, whatever the
//!   caller passes as a wait list (PyOpenCL's #447, and `PooledBuffer::use_on_queue`, made
//!   unnecessary);
//! - a host map waits for the same, and is exclusive: at most one writable map or any number of
//!   read maps of overlapping bytes; a command that writes bytes under a live map, or touches
//!   bytes under a live writable map, is refused ([`Error::Mapped`]) before the driver sees it.
//!
//! Granularity: maps are tracked by byte range (a sub-buffer and its root can be mapped at
//! disjoint places), commands by allocation (a wait for a command on another part of the same
//! allocation is a spurious but harmless dependency). Completed commands are pruned whenever a
//! queue's record is touched, so the record holds at most two events per in-order queue.
//!
//! The record is generic over [`CommandQueue`] (what it needs of a queue and its events), so the
//! host tests at the end run its rules against a fake queue, without a device; the crate uses one
//! instantiation, `Queue`, the default type argument everywhere.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{fence, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use cl_raw::object::{self, Object};
use cl_raw::sys;
use smallvec::SmallVec;

use crate::error::{Error, Result};
use crate::raw_handle::RawHandle;
use crate::runtime::event::{Event, EventStatus};
use crate::runtime::queue::Queue;

/// How many records pass between two prunings of completed commands of other queues.
const PRUNE_EVERY: u32 = 16;

/// What a command does to the bytes it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// Reads only.
    Read,
    /// Writes (or may write).
    Write,
}

/// Which way a host transfer runs, as a type: a read and a write are one generic function that
/// still takes `*mut` host memory for reads and `*const` for writes, so the compiler checks what
/// the twins used to repeat by hand.
pub(crate) trait Direction {
    /// `*mut c_void` for a read (the host bytes are written), `*const c_void` for a write.
    type Host: Copy;
    /// What the command does to the memory object's bytes.
    const ACCESS: Access;
    /// `clEnqueueReadBuffer` or `clEnqueueWriteBuffer`, with its C name for errors.
    const BUFFER: (&'static str, BufferCall<Self::Host>);
    /// `clEnqueueReadBufferRect` or `clEnqueueWriteBufferRect`, with its C name for errors.
    const BUFFER_RECT: (&'static str, BufferRectCall<Self::Host>);
    /// `clEnqueueReadImage` or `clEnqueueWriteImage`, with its C name for errors.
    const IMAGE: (&'static str, ImageCall<Self::Host>);
}

/// The signature of `cl_raw::queue::enqueue_{read,write}_buffer`.
pub(crate) type BufferCall<H> = unsafe fn(
    sys::cl_command_queue,
    sys::cl_mem,
    bool,
    usize,
    usize,
    H,
    &[sys::cl_event],
) -> std::result::Result<sys::cl_event, cl_raw::ClError>;

/// The signature of `cl_raw::queue::enqueue_{read,write}_buffer_rect`.
pub(crate) type BufferRectCall<H> =
    unsafe fn(
        sys::cl_command_queue,
        sys::cl_mem,
        bool,
        [usize; 3],
        [usize; 3],
        [usize; 3],
        [usize; 2],
        [usize; 2],
        H,
        &[sys::cl_event],
    ) -> std::result::Result<sys::cl_event, cl_raw::ClError>;

/// The signature of `cl_raw::queue::enqueue_{read,write}_image`.
pub(crate) type ImageCall<H> = unsafe fn(
    sys::cl_command_queue,
    sys::cl_mem,
    bool,
    [usize; 3],
    [usize; 3],
    usize,
    usize,
    H,
    &[sys::cl_event],
) -> std::result::Result<sys::cl_event, cl_raw::ClError>;

/// Writes the two [`Direction`] markers from their calls.
macro_rules! directions {
    ($($(#[$doc:meta])* $name:ident($host:ty): $buffer:ident, $rect:ident, $image:ident;)*) => {$(
        $(#[$doc])*
        pub(crate) enum $name {}
        impl Direction for $name {
            type Host = $host;
            const ACCESS: Access = Access::$name;
            const BUFFER: (&'static str, BufferCall<$host>) =
                (concat!("clEnqueue", stringify!($name), "Buffer"), cl_raw::queue::$buffer);
            const BUFFER_RECT: (&'static str, BufferRectCall<$host>) =
                (concat!("clEnqueue", stringify!($name), "BufferRect"), cl_raw::queue::$rect);
            const IMAGE: (&'static str, ImageCall<$host>) =
                (concat!("clEnqueue", stringify!($name), "Image"), cl_raw::queue::$image);
        }
    )*};
}

directions! {
    /// Device to host: the command reads the object and writes the host bytes.
    Read(*mut std::ffi::c_void): enqueue_read_buffer, enqueue_read_buffer_rect, enqueue_read_image;
    /// Host to device: the command reads the host bytes and writes the object.
    Write(*const std::ffi::c_void):
        enqueue_write_buffer, enqueue_write_buffer_rect, enqueue_write_image;
}

/// What the record needs of a queue and of its commands' events. [`Queue`] is the one
/// implementation the crate runs; the host tests implement it on a fake. A type parameter, not a
/// trait object: the driver path is monomorphised and makes the calls it made before, with no
/// dispatch, allocation or lock added per command.
pub(crate) trait CommandQueue: Clone {
    /// A command's event.
    type Event: Clone;
    /// The queue's device: where a command that writes leaves the allocation's bytes.
    type Device: Copy;
    /// Equal for two handles of one queue.
    fn key(&self) -> usize;
    /// Runs its commands in order (the newest completes last).
    fn in_order(&self) -> bool;
    /// `clFlush`: another queue may wait for its commands only after this.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from the driver.
    fn flush(&self) -> Result<()>;
    /// The queue's device.
    fn device(&self) -> Self::Device;
    /// `CL_DEVICE_MEM_BASE_ADDR_ALIGN` of its device, in bytes.
    fn base_addr_align(&self) -> usize;
    /// Map and unmap commands of one allocation must run one after another on its platform
    /// (PoCL's concurrent-map crash, see [`Tracked::map_command`]).
    fn orders_map_commands(&self) -> bool;
    /// The caller's wait list as handles, refused when an event belongs to another context or
    /// already failed.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] or [`Error::Cl`] as `crate::runtime::event::checked_list`.
    fn checked_list(&self, wait: &[&Self::Event]) -> Result<SmallVec<[sys::cl_event; 8]>>;
    /// True once the command finished (successfully or not) or its state cannot be read.
    fn is_done(event: &Self::Event) -> bool;
    /// The event's handle, for a wait list.
    fn raw(event: &Self::Event) -> sys::cl_event;
}

impl CommandQueue for Queue {
    type Event = Event;
    type Device = crate::runtime::device::Device;

    #[inline]
    fn key(&self) -> usize {
        self.as_raw() as usize
    }

    #[inline]
    fn in_order(&self) -> bool {
        self.is_in_order()
    }

    #[inline]
    fn flush(&self) -> Result<()> {
        Queue::flush(self)
    }

    #[inline]
    fn device(&self) -> Self::Device {
        *Queue::device(self)
    }

    #[inline]
    fn base_addr_align(&self) -> usize {
        Queue::device(self).base_addr_align()
    }

    fn orders_map_commands(&self) -> bool {
        crate::runtime::quirks::quirks(&Queue::device(self).platform()).orders_map_commands
    }

    #[inline]
    fn checked_list(&self, wait: &[&Event]) -> Result<SmallVec<[sys::cl_event; 8]>> {
        crate::runtime::event::checked_list(self, wait)
    }

    #[inline]
    fn is_done(event: &Event) -> bool {
        is_done(event)
    }

    #[inline]
    fn raw(event: &Event) -> sys::cl_event {
        event.as_raw()
    }
}

/// The commands of one queue that may still be running.
struct QueueRecord<Q: CommandQueue> {
    /// The queue (flushed before another queue waits for its commands).
    queue: Q,
    in_order: bool,
    /// In-order: the last write only; out-of-order: every write not known complete.
    writes: SmallVec<[Q::Event; 1]>,
    /// As `writes`, for reads.
    reads: SmallVec<[Q::Event; 1]>,
}

/// One live host map.
struct LiveMap {
    id: u64,
    start: usize,
    end: usize,
    write: bool,
}

struct State<Q: CommandQueue> {
    queues: SmallVec<[QueueRecord<Q>; 2]>,
    maps: SmallVec<[LiveMap; 2]>,
    /// Commands between their check and their record (the driver call in between): a map
    /// claimed meanwhile would not see them, so it waits for them to be recorded.
    enqueuing: SmallVec<[LiveMap; 2]>,
    next_id: u64,
    /// Records since other queues' completed commands were last forgotten.
    since_prune: u32,
    /// The device of the last command that wrote or migrated the allocation: where its bytes
    /// live in a context of several devices (`buffer/between.rs` copies from there).
    home: Option<Q::Device>,
    /// Memory another API exported (`external.rs`): usable only while acquired.
    external: Option<ExternalState<Q>>,
}

impl<Q: CommandQueue> Default for State<Q> {
    fn default() -> State<Q> {
        State {
            queues: SmallVec::new(),
            maps: SmallVec::new(),
            enqueuing: SmallVec::new(),
            next_id: 0,
            since_prune: 0,
            home: None,
            external: None,
        }
    }
}

/// The OpenCL side of memory another API exported (`crate::external`): commands and maps are
/// refused unless OpenCL holds it (acquired), and the switch between the two sides is a command
/// ordered after everything recorded here ([`Tracked::switch_external`]).
pub(crate) struct ExternalState<Q: CommandQueue = Queue> {
    /// OpenCL holds the memory: between an acquire and a release.
    acquired: bool,
    /// The queue of the last acquire: where the release at the end goes.
    queue: Q,
    /// Enqueues the acquire and release commands. It owns its own reference to the memory
    /// object, so the release at the end can run after the last wrapper released its reference.
    handover: Box<dyn Handover<Q>>,
}

/// The acquire and release commands of one external memory object (`crate::external`).
pub(crate) trait Handover<Q: CommandQueue = Queue>: Send + Sync {
    /// Enqueues an acquire (`true`) or a release of the memory on `queue` after `wait`.
    fn enqueue(&self, queue: &Q, acquire: bool, wait: &[sys::cl_event]) -> Result<Q::Event>;
}

impl<Q: CommandQueue> ExternalState<Q> {
    /// Memory acquired by a command on `queue` (recorded with [`Tracked::record`] by the caller).
    pub(crate) fn acquired_on(queue: &Q, handover: Box<dyn Handover<Q>>) -> ExternalState<Q> {
        ExternalState {
            acquired: true,
            queue: queue.clone(),
            handover,
        }
    }
}

fn not_external() -> Error {
    Error::InvalidArgument(
        "not external memory: only a buffer imported from another API is acquired and handed back"
            .into(),
    )
}

/// [`Error::HandedBack`] unless the memory is OpenCL's (plain memory always is).
fn check_acquired<Q: CommandQueue>(s: &State<Q>) -> Result<()> {
    match &s.external {
        Some(x) if !x.acquired => Err(Error::HandedBack(
            "the memory was handed back to the API that exported it; acquire it again \
             (Buffer::acquire_external) before an OpenCL command or map uses it"
                .into(),
        )),
        _ => Ok(()),
    }
}

/// The command and map record of one allocation; see the module documentation.
pub(crate) struct Tracker<Q: CommandQueue = Queue> {
    state: Mutex<State<Q>>,
    /// The allocation's last map or unmap command and its queue, held across the driver call of
    /// the next one: see [`Tracked::map_command`].
    map_calls: Mutex<Option<(Q, Q::Event)>>,
    /// What can start new work on the allocation: the live [`Tracked`] views (each shared by a
    /// handle and its clones: the root buffer, sub-buffers, images, adopted wrappers), the kernel
    /// argument slots that hold any of them, and references given away with `into_raw` (never
    /// taken back). Commands already enqueued are not counted: the record orders new work after
    /// them. Read by [`Tracked::is_sole_handle`].
    handles: AtomicUsize,
}

impl<Q: CommandQueue> Default for Tracker<Q> {
    fn default() -> Tracker<Q> {
        Tracker {
            state: Mutex::default(),
            map_calls: Mutex::new(None),
            handles: AtomicUsize::new(0),
        }
    }
}

impl<Q: CommandQueue> fmt::Debug for Tracker<Q> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.lock();
        f.debug_struct("Tracker")
            .field("queues", &s.queues.len())
            .field("maps", &s.maps.len())
            .finish()
    }
}

/// What a kernel needs of the memory behind an argument's keep-alive: the one way `runtime/`
/// reaches memory (`xtask/tests/module_graph.rs` keeps it so). Implemented by [`Tracked`]
/// (buffers) and the SVM allocation core.
pub(crate) trait ArgMemory {
    /// The allocation's context, for the kernel's context check.
    fn arg_context(&self) -> Option<sys::cl_context> {
        None
    }
    /// A kernel argument slot now holds the memory (`true`) or let it go.
    fn slot(&self, _set: bool) {}
    /// A command on `queue` uses the memory (SVM frees wait for every such queue).
    fn used_on(&self, _queue: &Queue) {}
    /// The memory's command record, when it keeps one.
    fn tracked(&self) -> Option<&Tracked> {
        None
    }
    /// A kernel command that uses the memory is about to be enqueued: refused while the host
    /// has it mapped. Every `Ok` is followed by one [`ArgMemory::end_command`].
    ///
    /// # Errors
    ///
    /// [`Error::Mapped`] while a host map of the memory is open.
    fn begin_command(&self) -> Result<()> {
        Ok(())
    }
    /// The command of [`ArgMemory::begin_command`] was enqueued (or failed to be).
    fn end_command(&self) {}
}

/// What a kernel argument of tracked memory (a buffer, an image, a `Memory` from one) keeps
/// alive: how the kernel finds the record, and how the record counts the kernel's *slots*
/// ([`ArgMemory::slot`]) as handles. The view itself is not counted: the commands enqueued with
/// the argument keep it until they complete, and they cannot start new work (a pool may hand the
/// memory out again once only they are left, see [`Tracked::is_sole_handle`]).
pub(crate) struct ArgHold(Tracked);

impl ArgHold {
    /// An uncounted view of `tracked`'s bytes.
    pub(crate) fn new(tracked: &Tracked) -> ArgHold {
        ArgHold(Tracked {
            tracker: Arc::clone(&tracked.tracker),
            start: tracked.start,
            end: tracked.end,
            counted: false,
        })
    }
}

impl ArgMemory for ArgHold {
    fn tracked(&self) -> Option<&Tracked> {
        Some(&self.0)
    }

    fn slot(&self, set: bool) {
        // Release: a handle dropped after setting the slot publishes the count first.
        let handles = &self.0.tracker.handles;
        if set {
            handles.fetch_add(1, Ordering::Release);
        } else {
            handles.fetch_sub(1, Ordering::Release);
        }
    }
}

/// True once the command finished (successfully or not) or its state cannot be read.
pub(crate) fn is_done(e: &Event) -> bool {
    !matches!(
        e.status(),
        Ok(EventStatus::Queued | EventStatus::Submitted | EventStatus::Running)
    )
}

fn overlaps(a: (usize, usize), b: (usize, usize)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

/// The first entry of `list` an access to `span` conflicts with: any overlapping entry when the
/// access writes, an overlapping writing entry when it reads.
fn conflicting(list: &[LiveMap], span: (usize, usize), write: bool) -> Option<&LiveMap> {
    list.iter()
        .find(|m| overlaps(span, (m.start, m.end)) && (m.write || write))
}

impl<Q: CommandQueue> Tracker<Q> {
    fn lock(&self) -> MutexGuard<'_, State<Q>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<Q: CommandQueue> Drop for Tracker<Q> {
    /// External memory still acquired is handed back after every command recorded for it, so
    /// the exporting API may use what OpenCL wrote once the release completes.
    fn drop(&mut self) {
        let s = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        let Some(x) = s.external.take() else {
            return;
        };
        if !x.acquired {
            return;
        }
        let pending: SmallVec<[Q::Event; 4]> = s
            .queues
            .iter()
            .flat_map(|r| r.writes.iter().chain(r.reads.iter()))
            .filter(|e| !Q::is_done(e))
            .cloned()
            .collect();
        let raw: SmallVec<[sys::cl_event; 4]> = pending.iter().map(Q::raw).collect();
        for r in &s.queues {
            if r.queue.key() != x.queue.key() {
                if let Err(e) = r.queue.flush() {
                    tracing::warn!(error = %e, "flushing a queue before an external release failed");
                }
            }
        }
        match x
            .handover
            .enqueue(&x.queue, false, &raw)
            .and_then(|_| x.queue.flush())
        {
            Ok(()) => {}
            Err(e) => crate::error::drop_failed(
                "clEnqueueReleaseExternalMemObjectsKHR",
                e.cl_status(),
                e.to_string(),
            ),
        }
    }
}

/// Root memory objects with a live tracker, so a handle adopted again (`Buffer::from_raw`,
/// `Memory::into_buffer`) shares the tracker of the wrappers that already exist. An entry that
/// outlives its object (the address reused by a new object before the old tracker dropped) can
/// only make two allocations share one record: more waits and refusals, never fewer.
/// Keyed by the root handle's address; dead entries are swept when the map has doubled since the
/// last sweep (amortised O(1) per creation, however many objects are alive).
static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    map: None,
    sweep_at: 64,
});

struct Registry {
    map: Option<HashMap<usize, Weak<Tracker>>>,
    sweep_at: usize,
}

impl Registry {
    fn map(&mut self) -> &mut HashMap<usize, Weak<Tracker>> {
        self.map.get_or_insert_with(HashMap::new)
    }

    fn insert(&mut self, mem: usize, tracker: &Arc<Tracker>) {
        let sweep_at = self.sweep_at;
        let map = self.map();
        map.insert(mem, Arc::downgrade(tracker));
        if map.len() >= sweep_at {
            map.retain(|_, w| w.strong_count() > 0);
            let live = map.len();
            self.sweep_at = 64usize.max(live.saturating_mul(2));
        }
    }

    fn find(&mut self, mem: usize) -> Option<Arc<Tracker>> {
        self.map().get(&mem).and_then(Weak::upgrade)
    }
}

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A handle's view of its allocation's tracker: the tracker and the bytes `[start, end)` the
/// handle covers in the allocation. Shared by clones of the handle; given to kernels as the
/// argument's keep-alive, which is how a kernel finds the tracker of a buffer argument.
pub(crate) struct Tracked<Q: CommandQueue = Queue> {
    tracker: Arc<Tracker<Q>>,
    start: usize,
    end: usize,
    /// Counted in the tracker's `handles` (every view but a kernel argument's [`ArgHold`]).
    counted: bool,
}

impl<Q: CommandQueue> Drop for Tracked<Q> {
    fn drop(&mut self) {
        if self.counted {
            self.tracker.handles.fetch_sub(1, Ordering::Release);
        }
    }
}

crate::raw_handle::debug_fields!(Tracked<Q: CommandQueue>: start, end);

/// Extra wait-list entries a command needs, from [`Tracked::before`].
pub(crate) type Waits<Q = Queue> = SmallVec<[<Q as CommandQueue>::Event; 2]>;

/// A claim on bytes of an allocation, given back when it drops: a live map's (in the record's
/// maps), or a command's from its check to its record, or a transfer of several commands holding
/// its whole range (in the record's commands being enqueued). Dropped without [`Claim::done`]
/// (a failed enqueue), a command's claim records nothing.
pub(crate) struct Claim<Q: CommandQueue = Queue> {
    tracker: Arc<Tracker<Q>>,
    id: u64,
    on: ClaimOn,
}

/// Whose claim a [`Claim`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClaimOn {
    Map,
    /// A command, with the access [`Claim::done`] records.
    Command(Access),
    /// Recorded by [`Claim::done`]: nothing left to give back.
    Done,
}

impl<Q: CommandQueue> Drop for Claim<Q> {
    fn drop(&mut self) {
        let id = self.id;
        match self.on {
            ClaimOn::Done => {}
            ClaimOn::Map => self.tracker.lock().maps.retain(|m| m.id != id),
            ClaimOn::Command(_) => self.tracker.lock().enqueuing.retain(|m| m.id != id),
        }
    }
}

crate::raw_handle::debug_fields!(Claim<Q: CommandQueue>: id, on);

impl<Q: CommandQueue> Tracked<Q> {
    /// Registers `span` (absolute bytes) in the record's maps (`ClaimOn::Map`) or commands being
    /// enqueued, under the record's lock `s`, and returns the claim that gives it back.
    fn claim(&self, s: &mut State<Q>, span: (usize, usize), write: bool, on: ClaimOn) -> Claim<Q> {
        let id = s.next_id;
        s.next_id += 1;
        let list = if on == ClaimOn::Map {
            &mut s.maps
        } else {
            &mut s.enqueuing
        };
        list.push(LiveMap {
            id,
            start: span.0,
            end: span.1,
            write,
        });
        Claim {
            tracker: Arc::clone(&self.tracker),
            id,
            on,
        }
    }
}

impl<Q: CommandQueue> Claim<Q> {
    /// Records the enqueued command's event (a command's claim) and forgets completed commands.
    pub(crate) fn done(mut self, queue: &Q, event: &Q::Event) {
        let mut s = self.tracker.lock();
        s.enqueuing.retain(|m| m.id != self.id);
        if let ClaimOn::Command(access) = self.on {
            record(&mut s, queue, access, event);
        }
        drop(s);
        self.on = ClaimOn::Done;
    }
}

impl<Q: CommandQueue> Tracked<Q> {
    /// A view of `tracker`, counted as a handle.
    fn counted(tracker: Arc<Tracker<Q>>, start: usize, end: usize) -> Arc<Tracked<Q>> {
        tracker.handles.fetch_add(1, Ordering::Relaxed);
        Arc::new(Tracked {
            tracker,
            start,
            end,
            counted: true,
        })
    }
}

impl Tracked {
    /// The tracker of a new root memory object `mem` of `size` bytes, with nothing recorded.
    pub(crate) fn new_root(mem: sys::cl_mem, size: usize) -> Arc<Tracked> {
        let tracker: Arc<Tracker> = Arc::default();
        registry().insert(mem as usize, &tracker);
        Tracked::counted(tracker, 0, size)
    }

    /// The tracker of a new root memory object `mem` imported from another API and acquired
    /// (`crate::external`).
    pub(crate) fn new_external_root(
        mem: sys::cl_mem,
        size: usize,
        external: ExternalState,
    ) -> Arc<Tracked> {
        let tracker = Arc::new(Tracker::default());
        tracker.lock().external = Some(external);
        registry().insert(mem as usize, &tracker);
        Tracked::counted(tracker, 0, size)
    }
}

impl<Q: CommandQueue> Tracked<Q> {
    /// Whether the allocation is external memory (`Some`) and OpenCL holds it (`Some(true)`).
    pub(crate) fn external_acquired(&self) -> Option<bool> {
        self.tracker.lock().external.as_ref().map(|x| x.acquired)
    }

    /// Hands external memory to the other API (`acquire == false`: a release ordered after every
    /// recorded command on every queue) or takes it back (`acquire == true`: later commands on
    /// any queue wait for the acquire). The tracker stays locked across the driver call, so no
    /// command or map passes [`check_acquired`] on the wrong side of the switch.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the memory is not external or already on that side;
    /// [`Error::Mapped`] when handing back mapped memory; [`Error::Cl`] from the command.
    pub(crate) fn switch_external(
        &self,
        queue: &Q,
        wait: &[&Q::Event],
        acquire: bool,
    ) -> Result<Q::Event> {
        let mut list = queue.checked_list(wait)?;
        let mut s = self.tracker.lock();
        // Commands between their check and their record finish their driver call first.
        while !s.enqueuing.is_empty() {
            drop(s);
            std::thread::yield_now();
            s = self.tracker.lock();
        }
        match &s.external {
            None => return Err(not_external()),
            Some(x) if x.acquired == acquire => {
                return Err(Error::InvalidArgument(
                    if acquire {
                        "the external memory is already acquired"
                    } else {
                        "the external memory is already handed back"
                    }
                    .into(),
                ))
            }
            Some(_) => {}
        }
        if !acquire && !s.maps.is_empty() {
            return Err(Error::Mapped(
                "external memory cannot be handed back while the host has it mapped; unmap first"
                    .into(),
            ));
        }
        let (waits, flush) = pending_for(&s, queue, Access::Write);
        flush_all(&flush)?;
        list.extend(waits.iter().map(Q::raw));
        let Some(x) = s.external.as_mut() else {
            return Err(not_external());
        };
        let event = x.handover.enqueue(queue, acquire, &list)?;
        drop(waits);
        x.acquired = acquire;
        if acquire {
            x.queue = queue.clone();
        }
        record(&mut s, queue, Access::Write, &event);
        Ok(event)
    }
}

impl Tracked {
    /// True when `this` (shared by one handle and its clones) is the only handle of its
    /// allocation: no clone of the handle, no other view (sub-buffer, image, adopted wrapper), no
    /// kernel argument slot and no reference given away. Commands still pending do not count.
    ///
    /// Exact when nothing else is alive; when something is, it can make only a "no" out of a
    /// race: a holder that hands itself on (a clone making a sub-buffer, an image or a kernel
    /// argument, then dropping) adds the new count before its own drops, and the counts are read
    /// in that order (the clones first, then the views and slots).
    #[inline]
    pub(crate) fn is_sole_handle(this: &Arc<Tracked>) -> bool {
        if Arc::strong_count(this) != 1 {
            return false;
        }
        // Pairs with the release of the last clone's drop: what it counted before is seen.
        fence(Ordering::Acquire);
        this.tracker.handles.load(Ordering::Relaxed) == 1
    }

    /// The tracker of an adopted root memory object: the one its other wrappers use, or a new
    /// one.
    pub(crate) fn adopt_root(mem: sys::cl_mem, size: usize) -> Arc<Tracked> {
        let found = registry().find(mem as usize);
        match found {
            Some(tracker) => Tracked::counted(tracker, 0, size),
            None => Tracked::new_root(mem, size),
        }
    }

    /// The record other wrappers of this crate keep for a raw memory object (a root, or a
    /// sub-buffer found through its parent), so that a wrapper adopted from a raw handle keeps to
    /// it; `None` when no wrapper of this crate records that memory (or the queries fail).
    pub(crate) fn of_raw(mem: sys::cl_mem) -> Option<Arc<Tracked>> {
        // SAFETY: a valid memory object (the caller's obligation); a 1.1 parameter, and this
        // crate accepts no older platform.
        let parent: sys::cl_mem =
            unsafe { object::get_info(Object::Mem, mem, sys::CL_MEM_ASSOCIATED_MEMOBJECT) }.ok()?;
        // SAFETY: as above; a 1.0 parameter.
        let size: usize = unsafe { object::get_info(Object::Mem, mem, sys::CL_MEM_SIZE) }.ok()?;
        let (root, offset) = if parent.is_null() {
            (mem, 0)
        } else {
            // SAFETY: as above; a 1.1 parameter.
            let offset: usize =
                unsafe { object::get_info(Object::Mem, mem, sys::CL_MEM_OFFSET) }.ok()?;
            (parent, offset)
        };
        let tracker = registry().find(root as usize)?;
        // A handle that can start work on the allocation: counted, so a pool keeps the memory.
        Some(Tracked::counted(
            tracker,
            offset,
            offset.saturating_add(size),
        ))
    }
}

impl<Q: CommandQueue> Tracked<Q> {
    /// A view of `len` bytes at `offset` of the same allocation (`offset` relative to the
    /// allocation, not to `self`).
    pub(crate) fn view(&self, offset: usize, len: usize) -> Arc<Tracked<Q>> {
        Tracked::counted(
            Arc::clone(&self.tracker),
            offset,
            offset.saturating_add(len),
        )
    }

    /// A sub-buffer is created when its origin suits one device of the context (the spec's rule,
    /// kept by `Buffer::sub_buffer`); a command on a device whose `CL_DEVICE_MEM_BASE_ADDR_ALIGN`
    /// the origin does not meet is refused here, before the driver
    /// (`CL_MISALIGNED_SUB_BUFFER_OFFSET`): the multi-device case.
    fn check_origin(&self, queue: &Q) -> Result<()> {
        let align = queue.base_addr_align();
        if self.start == 0 || self.start.is_multiple_of(align) {
            Ok(())
        } else {
            Err(Error::Misaligned {
                what: "sub-buffer origin on this queue's device (CL_DEVICE_MEM_BASE_ADDR_ALIGN)",
                value: self.start,
                alignment: align,
            })
        }
    }

    /// The bytes `[offset, offset + len)` of this view, in allocation coordinates (the whole view
    /// for `None`).
    fn span(&self, range: Option<(usize, usize)>) -> (usize, usize) {
        match range {
            Some((offset, len)) => {
                let s = self.start.saturating_add(offset);
                (s, s.saturating_add(len))
            }
            None => (self.start, self.end),
        }
    }

    /// Checks a command's access to `range` (relative to this view; `None`: all of it) against
    /// the live maps, and returns the claim to record the command with ([`Claim::done`])
    /// and the commands of other queues it must wait for.
    ///
    /// # Errors
    ///
    /// [`Error::Mapped`] when the command writes bytes under a live map or touches bytes under a
    /// live writable map.
    pub(crate) fn before(
        &self,
        queue: &Q,
        range: Option<(usize, usize)>,
        access: Access,
    ) -> Result<(Claim<Q>, Waits<Q>)> {
        self.check_origin(queue)?;
        let span = self.span(range);
        let mut s = self.tracker.lock();
        check_acquired(&s)?;
        if let Some(m) = conflicting(&s.maps, span, access == Access::Write) {
            return Err(Error::Mapped(format!(
                "a command that {} bytes {}..{} of an allocation while the host has bytes \
                 {}..{} mapped for {}; unmap first",
                if access == Access::Write {
                    "writes"
                } else {
                    "reads"
                },
                span.0,
                span.1,
                m.start,
                m.end,
                if m.write { "writing" } else { "reading" },
            )));
        }
        let (waits, flush) = pending_for(&s, queue, access);
        let claim = self.claim(
            &mut s,
            span,
            access == Access::Write,
            ClaimOn::Command(access),
        );
        drop(s);
        flush_all(&flush)?;
        Ok((claim, waits))
    }
}

impl<Q: CommandQueue> Tracked<Q> {
    /// Holds `range` (relative to this view) against maps until the returned guard drops; `write`:
    /// the transfer writes the bytes (then read maps wait too).
    ///
    /// # Errors
    ///
    /// [`Error::Mapped`] when a live map conflicts now (the transfer would be refused anyway).
    pub(crate) fn hold(&self, range: (usize, usize), write: bool) -> Result<Claim<Q>> {
        let span = self.span(Some(range));
        let mut s = self.tracker.lock();
        check_acquired(&s)?;
        if let Some(m) = conflicting(&s.maps, span, write) {
            return Err(Error::Mapped(format!(
                "a transfer that {} bytes {}..{} while the host has bytes {}..{} mapped for {}; \
                 unmap first",
                if write { "writes" } else { "reads" },
                span.0,
                span.1,
                m.start,
                m.end,
                if m.write { "writing" } else { "reading" },
            )));
        }
        Ok(self.claim(&mut s, span, write, ClaimOn::Command(Access::Read)))
    }
}

/// Records a command's event and forgets completed commands.
fn record<Q: CommandQueue>(s: &mut State<Q>, queue: &Q, access: Access, event: &Q::Event) {
    {
        let in_order = queue.in_order();
        let i = match s.queues.iter().position(|r| r.queue.key() == queue.key()) {
            Some(i) => i,
            None => {
                s.queues.push(QueueRecord {
                    queue: queue.clone(),
                    in_order,
                    writes: SmallVec::new(),
                    reads: SmallVec::new(),
                });
                s.queues.len() - 1
            }
        };
        if access == Access::Write {
            s.home = Some(queue.device());
        }
        let rec = &mut s.queues[i];
        let list = match access {
            Access::Write => &mut rec.writes,
            Access::Read => &mut rec.reads,
        };
        if rec.in_order {
            // On an in-order queue the newest command completes last.
            list.clear();
        } else if list.len() >= 8 && list.len().is_power_of_two() {
            // Out of order: every pending command counts; swept at doubling lengths (amortised
            // O(1) status reads per record).
            list.retain(|e| !Q::is_done(e));
        }
        list.push(event.clone());
        // Queues whose last commands completed hold nothing. Status reads cost a driver call
        // each, so this runs every PRUNE_EVERY records, not every time (a completed event left
        // in the record only adds a satisfied entry to a wait list).
        s.since_prune += 1;
        if s.queues.len() > 1 && s.since_prune >= PRUNE_EVERY {
            s.since_prune = 0;
            s.queues.retain_mut(|r| {
                r.writes.retain(|e| !Q::is_done(e));
                r.reads.retain(|e| !Q::is_done(e));
                !(r.writes.is_empty() && r.reads.is_empty())
            });
        }
    }
}

impl<Q: CommandQueue> Tracked<Q> {
    /// Registers a host map of `range` (relative to this view), refusing one that overlaps a
    /// writable map, or any map when `write`; returns the claim and the commands of other queues
    /// the map must wait for.
    ///
    /// # Errors
    ///
    /// [`Error::Mapped`] on a conflict.
    pub(crate) fn claim_map(
        &self,
        queue: &Q,
        range: (usize, usize),
        write: bool,
    ) -> Result<(Claim<Q>, Waits<Q>)> {
        self.check_origin(queue)?;
        let span = self.span(Some(range));
        let mut s = self.tracker.lock();
        // Commands being enqueued on these bytes are recorded within a driver call: wait for them.
        while conflicting(&s.enqueuing, span, write).is_some() {
            drop(s);
            std::thread::yield_now();
            s = self.tracker.lock();
        }
        check_acquired(&s)?;
        if let Some(m) = conflicting(&s.maps, span, write) {
            return Err(Error::Mapped(format!(
                "bytes {}..{} are already mapped for {}; a second {} map of bytes {}..{} would \
                 alias them",
                m.start,
                m.end,
                if m.write { "writing" } else { "reading" },
                if write { "writable" } else { "read" },
                span.0,
                span.1,
            )));
        }
        let access = if write { Access::Write } else { Access::Read };
        let (waits, flush) = pending_for(&s, queue, access);
        let claim = self.claim(&mut s, span, write, ClaimOn::Map);
        drop(s);
        flush_all(&flush)?;
        Ok((claim, waits))
    }

    /// [`Tracked::claim_map`] of the whole view (images map by region, not by byte range).
    ///
    /// # Errors
    ///
    /// As [`Tracked::claim_map`].
    pub(crate) fn claim_map_whole(&self, queue: &Q, write: bool) -> Result<(Claim<Q>, Waits<Q>)> {
        self.claim_map(queue, (0, self.end - self.start), write)
    }

    /// Records a command that needed no check (a map's own map and unmap commands).
    pub(crate) fn record(&self, queue: &Q, access: Access, event: &Q::Event) {
        record(&mut self.tracker.lock(), queue, access, event);
    }

    /// Enqueues a map or unmap command of this allocation (`enqueue` gets `list` plus what it
    /// must wait for) so that no two of them run at the same time, whatever their queues: the
    /// calls are made under one lock per allocation, and each command waits for the previous
    /// one (its queue flushed first, the spec's `clFlush` rule).
    ///
    /// Why: PoCL 3.1 crashes (SIGSEGV inside its map code, or a mapped pointer that is not the
    /// buffer's) when two threads map one buffer read-only on two queues, which the map record
    /// allows (any number of read maps). `repro/pocl_concurrent_read_maps.c` shows that a lock
    /// around the calls alone is not enough once maps are non-blocking (the map commands still run
    /// together: 3 crashes in 4 runs), and that ordering each command after the previous one
    /// is (0 in 5); docs/DEVICES.md#pocl-concurrent-maps. Done on PoCL only ([`orders_map_commands`]):
    /// elsewhere the ordering buys nothing and would make an unmap wait behind an unrelated map of
    /// disjoint bytes on another queue (a map gated on an unset user event then blocks the unmap
    /// of another guard's drop for good). A command already finished, or failed, orders nothing.
    /// The lock is never held while waiting: blocking maps are enqueued non-blocking and waited
    /// for by the caller after this returns.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from flushing the previous command's queue, and whatever `enqueue` returns.
    pub(crate) fn map_command<T>(
        &self,
        queue: &Q,
        mut list: SmallVec<[sys::cl_event; 8]>,
        enqueue: impl FnOnce(&[sys::cl_event]) -> Result<(T, Q::Event)>,
    ) -> Result<(T, Q::Event)> {
        if !queue.orders_map_commands() {
            return enqueue(&list);
        }
        let mut last = self
            .tracker
            .map_calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // Only a command still pending is waited for: a finished one (errors included) orders
        // nothing, and an errored one must not fail every later map of the allocation.
        if last.as_ref().is_some_and(|(_, e)| Q::is_done(e)) {
            *last = None;
        }
        if let Some((q, e)) = &*last {
            if q.key() != queue.key() {
                q.flush()?;
            }
            list.push(Q::raw(e));
        }
        let (out, event) = enqueue(&list)?;
        *last = Some((queue.clone(), event.clone()));
        Ok((out, event))
    }

    /// The device of the last command that wrote or migrated the allocation (`None`: none yet).
    pub(crate) fn home(&self) -> Option<Q::Device> {
        self.tracker.lock().home
    }

    /// A migration moved the allocation's bytes to `device`.
    pub(crate) fn moved_to(&self, device: Q::Device) {
        self.tracker.lock().home = Some(device);
    }

    /// Live maps of the allocation (for tests and diagnostics).
    pub(crate) fn live_maps(&self) -> usize {
        self.tracker.lock().maps.len()
    }
}

impl Tracked {
    /// Keeps the allocation's record alive (and so findable through the registry) until every
    /// command it lists has finished: for a handle given away with `into_raw`, so that a wrapper
    /// adopting it again meanwhile still orders maps and other queues after those commands. A
    /// callback that cannot be registered is replaced by a wait.
    ///
    /// The reference given away stays counted as a handle for good ([`Tracked::is_sole_handle`]):
    /// whoever holds it can adopt it again, so a pool never hands the memory to another owner.
    pub(crate) fn keep_until_idle(&self) {
        self.given_away();
        let (pending, queues): (Vec<Event>, Vec<Queue>) = {
            let s = self.tracker.lock();
            let mut queues = Vec::new();
            let mut pending = Vec::new();
            for r in &s.queues {
                let before = pending.len();
                pending.extend(
                    r.writes
                        .iter()
                        .chain(r.reads.iter())
                        .filter(|e| !is_done(e))
                        .cloned(),
                );
                if pending.len() > before {
                    queues.push(r.queue.clone());
                }
            }
            (pending, queues)
        };
        // The record holds these queues, so their release cannot flush them: flush here, or a
        // driver that runs commands only when flushed (Oclgrind) never completes them.
        for q in &queues {
            if let Err(e) = q.flush() {
                tracing::warn!(error = %e, "flushing a queue for a handle given away failed");
            }
        }
        for ev in pending {
            let keep = Arc::clone(&self.tracker);
            if let Err(e) = ev.on_complete(move |_| drop(keep)) {
                tracing::warn!(error = %e, "could not defer a record's release; waiting for the command");
                if let Err(e) = ev.wait() {
                    tracing::warn!(error = %e, "waiting for a command failed in into_raw");
                }
            }
        }
    }
}

impl<Q: CommandQueue> Tracked<Q> {
    /// Counts a reference given away with `into_raw` as a handle, for good.
    pub(crate) fn given_away(&self) {
        self.tracker.handles.fetch_add(1, Ordering::Relaxed);
    }

    /// Commands recorded as possibly pending (for tests and diagnostics).
    pub(crate) fn recorded_commands(&self) -> usize {
        self.tracker
            .lock()
            .queues
            .iter()
            .map(|r| r.writes.len() + r.reads.len())
            .sum()
    }
}

/// The unfinished commands of queues other than `queue` (all of them when `queue` is out of
/// order) that a command with `access` must follow (writes always, reads too when it writes),
/// and the other queues to flush first: the spec (`clFlush`) lets a command wait for an event of
/// another queue only once that queue was flushed.
fn pending_for<Q: CommandQueue>(
    s: &State<Q>,
    queue: &Q,
    access: Access,
) -> (Waits<Q>, SmallVec<[Q; 1]>) {
    let own_ordered = queue.in_order();
    let mut waits = Waits::<Q>::new();
    let mut flush = SmallVec::new();
    for r in &s.queues {
        let same = r.queue.key() == queue.key();
        if same && own_ordered {
            continue;
        }
        let before = waits.len();
        // Finished commands order nothing, and a failed one must not fail (PoCL: hang, Intel:
        // abort in the driver) every later command of the allocation on other queues: its
        // failure was its own caller's to see.
        waits.extend(r.writes.iter().filter(|e| !Q::is_done(e)).cloned());
        if access == Access::Write {
            waits.extend(r.reads.iter().filter(|e| !Q::is_done(e)).cloned());
        }
        if !same && waits.len() > before {
            flush.push(r.queue.clone());
        }
    }
    (waits, flush)
}

/// Flushes the queues [`pending_for`] named (outside the record's lock: a driver call).
fn flush_all<Q: CommandQueue>(queues: &[Q]) -> Result<()> {
    for q in queues {
        q.flush()?;
    }
    Ok(())
}

/// One allocation a command uses: the handle's view, the bytes (relative to the view; `None`:
/// all of it) and what the command does to them.
pub(crate) type Use<'a, Q = Queue> = (&'a Tracked<Q>, Option<(usize, usize)>, Access);

/// Runs one command over tracked memory: checks every use against the live maps, adds the
/// pending commands of other queues to the caller's (context-checked) wait list, calls
/// `enqueue` with the full list, and records the command's event for every use.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for a wait-list event of another context, [`Error::Mapped`], and
/// whatever `enqueue` returns (nothing is recorded then).
pub(crate) fn enqueue_tracked<Q: CommandQueue>(
    queue: &Q,
    wait: &[&Q::Event],
    uses: &[Use<'_, Q>],
    enqueue: impl FnOnce(&[sys::cl_event]) -> Result<Q::Event>,
) -> Result<Q::Event> {
    let mut list = queue.checked_list(wait)?;
    let mut claims: SmallVec<[Claim<Q>; 4]> = SmallVec::new();
    // The events of other queues' commands are kept (one reference each) until the command is
    // enqueued: the raw handles in `list` are only borrowed, and the record may drop its own
    // references meanwhile (another thread pruning completed commands).
    let mut held: SmallVec<[Waits<Q>; 4]> = SmallVec::new();
    for (tracked, range, access) in uses {
        let (claim, waits) = tracked.before(queue, *range, *access)?;
        claims.push(claim);
        list.extend(waits.iter().map(Q::raw));
        held.push(waits);
    }
    let event = enqueue(&list)?;
    drop(held);
    for claim in claims {
        claim.done(queue, &event);
    }
    Ok(event)
}

#[cfg(test)]
mod tests {
    //! The record's rules on the host: a fake queue whose events finish when a test says so,
    //! and an `enqueue` that reports the wait list the driver would have been given.

    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
    use std::sync::{mpsc, Arc};
    use std::time::Duration;

    use cl_raw::sys;
    use smallvec::SmallVec;

    use super::{
        conflicting, enqueue_tracked, Access, CommandQueue, ExternalState, Handover, LiveMap,
        Tracked, Tracker, Use,
    };
    use crate::error::{Error, Result};

    /// A command's event: pending until [`Ev::finish`].
    #[derive(Clone, Debug)]
    struct Ev(Arc<(usize, AtomicBool)>);

    impl Ev {
        fn new() -> Ev {
            static NEXT: AtomicUsize = AtomicUsize::new(1);
            Ev(Arc::new((
                NEXT.fetch_add(1, Relaxed),
                AtomicBool::new(false),
            )))
        }

        fn finish(&self) {
            self.0 .1.store(true, Relaxed);
        }

        fn raw(&self) -> sys::cl_event {
            std::ptr::without_provenance_mut(self.0 .0)
        }
    }

    /// A queue of the fake driver; clones are the same queue.
    #[derive(Clone)]
    struct Fake(Arc<FakeState>);

    struct FakeState {
        key: usize,
        in_order: bool,
        align: usize,
        orders_map_commands: bool,
        flushes: AtomicUsize,
        fail_flush: AtomicBool,
    }

    impl Fake {
        fn with(in_order: bool, align: usize, orders_map_commands: bool) -> Fake {
            static NEXT: AtomicUsize = AtomicUsize::new(1);
            Fake(Arc::new(FakeState {
                key: NEXT.fetch_add(1, Relaxed),
                in_order,
                align,
                orders_map_commands,
                flushes: AtomicUsize::new(0),
                fail_flush: AtomicBool::new(false),
            }))
        }

        fn in_order() -> Fake {
            Fake::with(true, 1, false)
        }

        fn out_of_order() -> Fake {
            Fake::with(false, 1, false)
        }

        fn flushes(&self) -> usize {
            self.0.flushes.load(Relaxed)
        }
    }

    impl CommandQueue for Fake {
        type Event = Ev;
        type Device = usize;

        fn key(&self) -> usize {
            self.0.key
        }

        fn in_order(&self) -> bool {
            self.0.in_order
        }

        fn flush(&self) -> Result<()> {
            if self.0.fail_flush.load(Relaxed) {
                return Err(Error::InvalidArgument("flush failed".into()));
            }
            self.0.flushes.fetch_add(1, Relaxed);
            Ok(())
        }

        fn device(&self) -> usize {
            self.0.key
        }

        fn base_addr_align(&self) -> usize {
            self.0.align
        }

        fn orders_map_commands(&self) -> bool {
            self.0.orders_map_commands
        }

        fn checked_list(&self, wait: &[&Ev]) -> Result<SmallVec<[sys::cl_event; 8]>> {
            Ok(wait.iter().map(|e| e.raw()).collect())
        }

        fn is_done(event: &Ev) -> bool {
            event.0 .1.load(Relaxed)
        }

        fn raw(event: &Ev) -> sys::cl_event {
            event.raw()
        }
    }

    /// A new allocation of `size` bytes: its root view.
    fn alloc(size: usize) -> Arc<Tracked<Fake>> {
        Tracked::counted(Arc::default(), 0, size)
    }

    /// Enqueues one command through the record: its event and the wait list the driver got.
    fn run(q: &Fake, uses: &[Use<'_, Fake>]) -> Result<(Ev, Vec<sys::cl_event>)> {
        let mut seen = Vec::new();
        let ev = enqueue_tracked(q, &[], uses, |list| {
            seen = list.to_vec();
            Ok(Ev::new())
        })?;
        Ok((ev, seen))
    }

    fn whole(t: &Tracked<Fake>, access: Access) -> Use<'_, Fake> {
        (t, None, access)
    }

    fn enqueuing(t: &Tracked<Fake>) -> usize {
        t.tracker.lock().enqueuing.len()
    }

    fn is_mapped<T: std::fmt::Debug>(r: Result<T>) -> bool {
        matches!(r, Err(Error::Mapped(_)))
    }

    /// Memory last written on queue A is read on B only after the write: B's command waits for it
    /// (A flushed first, the spec's rule for waiting across queues), A's own next command does not
    /// (an in-order queue orders it already), and a finished write orders nothing.
    #[test]
    fn a_command_waits_for_another_queues_pending_write() -> Result<()> {
        let (a, b) = (Fake::in_order(), Fake::in_order());
        let buf = alloc(256);
        let (w, _) = run(&a, &[whole(&buf, Access::Write)])?;
        let (_, seen) = run(&b, &[whole(&buf, Access::Read)])?;
        assert_eq!(seen, [w.raw()]);
        assert_eq!(a.flushes(), 1, "A flushed before B waits for it");
        let (_, seen) = run(&a, &[whole(&buf, Access::Read)])?;
        assert!(seen.is_empty(), "the same in-order queue: {seen:?}");
        w.finish();
        let (_, seen) = run(&b, &[whole(&buf, Access::Read)])?;
        assert!(seen.is_empty(), "a finished write orders nothing: {seen:?}");
        Ok(())
    }

    /// Reads of other queues do not order a read (they share the bytes) but do order a write.
    #[test]
    fn a_write_waits_for_other_queues_reads_and_a_read_does_not() -> Result<()> {
        let (a, b, c) = (Fake::in_order(), Fake::in_order(), Fake::in_order());
        let buf = alloc(64);
        let (ra, _) = run(&a, &[whole(&buf, Access::Read)])?;
        let (rb, seen) = run(&b, &[whole(&buf, Access::Read)])?;
        assert!(seen.is_empty(), "reads share: {seen:?}");
        assert_eq!(a.flushes(), 0, "nothing to wait for, nothing flushed");
        let (_, mut seen) = run(&c, &[whole(&buf, Access::Write)])?;
        seen.sort();
        let mut want = vec![ra.raw(), rb.raw()];
        want.sort();
        assert_eq!(seen, want);
        Ok(())
    }

    /// An out-of-order queue runs its commands in any order: a command waits for the conflicting
    /// commands of its own queue too (without flushing it), and for every one still pending.
    #[test]
    fn an_out_of_order_queue_waits_for_its_own_pending_commands() -> Result<()> {
        let o = Fake::out_of_order();
        let buf = alloc(64);
        let (w1, _) = run(&o, &[whole(&buf, Access::Write)])?;
        let (r, seen) = run(&o, &[whole(&buf, Access::Read)])?;
        assert_eq!(seen, [w1.raw()]);
        let (_, seen) = run(&o, &[whole(&buf, Access::Write)])?;
        assert_eq!(seen, [w1.raw(), r.raw()]);
        assert_eq!(o.flushes(), 0, "a queue is not flushed for itself");
        // The in-order queue beside it sees the out-of-order queue's pending commands as any other.
        let i = Fake::in_order();
        let (_, seen) = run(&i, &[whole(&buf, Access::Read)])?;
        assert_eq!(
            seen.len(),
            2,
            "both pending writes of the other queue: {seen:?}"
        );
        Ok(())
    }

    /// Commands are ordered per allocation (a command on other bytes of the same allocation is a
    /// spurious but harmless wait), never across allocations; maps are exclusive per byte range.
    #[test]
    fn commands_are_ordered_per_allocation_and_maps_per_byte_range() -> Result<()> {
        let (a, b) = (Fake::in_order(), Fake::in_order());
        let buf = alloc(256);
        let (lo, hi) = (buf.view(0, 128), buf.view(128, 128));
        let other = alloc(256);
        let (w, _) = run(&a, &[(&lo, Some((0, 64)), Access::Write)])?;
        let (_, seen) = run(&b, &[(&hi, Some((0, 8)), Access::Read)])?;
        assert_eq!(
            seen,
            [w.raw()],
            "disjoint bytes of one allocation still order"
        );
        let (_, seen) = run(&b, &[(&buf, Some((32, 64)), Access::Read)])?;
        assert_eq!(seen, [w.raw()], "overlapping bytes order");
        let (_, seen) = run(&b, &[whole(&other, Access::Write)])?;
        assert!(seen.is_empty(), "another allocation: {seen:?}");
        // Maps: the sub-buffers map disjoint bytes at once, the root over both cannot.
        let (_m1, _) = lo.claim_map(&a, (0, 128), true)?;
        let (_m2, _) = hi.claim_map(&a, (0, 128), true)?;
        assert!(is_mapped(buf.claim_map(&a, (120, 16), false)));
        Ok(())
    }

    /// Any number of read maps of a byte, at most one writable map and nothing beside it; a view's
    /// range is taken at its offset in the allocation; a map's claim gives its bytes back on drop.
    #[test]
    fn maps_are_exclusive_and_released_on_drop() -> Result<()> {
        let q = Fake::in_order();
        let buf = alloc(256);
        let (r1, _) = buf.claim_map(&q, (0, 64), false)?;
        let (r2, _) = buf.claim_map(&q, (32, 64), false)?;
        assert!(
            is_mapped(buf.claim_map(&q, (60, 10), true)),
            "a write over reads"
        );
        let (w, _) = buf.claim_map(&q, (96, 32), true)?;
        let view = buf.view(120, 64);
        assert!(
            is_mapped(view.claim_map(&q, (0, 8), false)),
            "the view's byte 0 is 120"
        );
        let (vm, _) = view.claim_map(&q, (8, 8), true)?;
        assert_eq!(buf.live_maps(), 4);
        drop(vm);
        assert_eq!(buf.live_maps(), 3);
        drop(r1);
        assert!(
            is_mapped(buf.claim_map(&q, (60, 10), true)),
            "r2 still covers 60..70"
        );
        drop(r2);
        let (w2, _) = buf.claim_map(&q, (60, 10), true)?;
        drop(w);
        assert!(
            is_mapped(buf.claim_map_whole(&q, false)),
            "60..70 is mapped for writing"
        );
        drop(w2);
        buf.claim_map_whole(&q, true)?;
        Ok(())
    }

    /// A command that writes bytes under a live map, or touches bytes under a writable map, is
    /// refused before the driver sees it; disjoint bytes are free; the refusal ends with the map.
    #[test]
    fn commands_under_a_live_map_are_refused_until_it_is_released() -> Result<()> {
        let q = Fake::in_order();
        let buf = alloc(256);
        let (read_map, _) = buf.claim_map(&q, (0, 64), false)?;
        let (write_map, _) = buf.claim_map(&q, (128, 64), true)?;
        run(&q, &[(&buf, Some((0, 64)), Access::Read)])?;
        let mut called = false;
        let refused = enqueue_tracked(&q, &[], &[(&buf, Some((32, 8)), Access::Write)], |_| {
            called = true;
            Ok(Ev::new())
        });
        assert!(is_mapped(refused) && !called, "a write under a read map");
        assert!(is_mapped(run(&q, &[(&buf, Some((150, 1)), Access::Read)])));
        assert!(is_mapped(buf.hold((0, 8), true)), "a transfer's hold too");
        run(&q, &[(&buf, Some((64, 64)), Access::Write)])?;
        let _hold = buf.hold((64, 64), true)?;
        drop((read_map, write_map));
        run(&q, &[whole(&buf, Access::Write)])?;
        Ok(())
    }

    /// A map waits for the pending commands of other queues as a command does: a read map for
    /// writes, a writable map for reads too.
    #[test]
    fn a_map_waits_for_other_queues_pending_commands() -> Result<()> {
        let (a, b) = (Fake::in_order(), Fake::in_order());
        let buf = alloc(128);
        let (w, _) = run(&a, &[(&buf, Some((0, 64)), Access::Write)])?;
        let (r, _) = run(&a, &[(&buf, Some((64, 64)), Access::Read)])?;
        let (m, waits) = buf.claim_map(&b, (0, 8), false)?;
        assert_eq!(waits.iter().map(Ev::raw).collect::<Vec<_>>(), [w.raw()]);
        assert_eq!(a.flushes(), 1);
        drop(m);
        let (_, waits) = buf.claim_map(&b, (64, 8), true)?;
        assert_eq!(
            waits.iter().map(Ev::raw).collect::<Vec<_>>(),
            [w.raw(), r.raw()]
        );
        Ok(())
    }

    /// A failed enqueue records nothing and gives its claims back: a later map is not held off,
    /// and a later command on another queue waits for what was recorded before only.
    #[test]
    fn a_failed_enqueue_leaves_the_record_unchanged() -> Result<()> {
        let (a, b, c) = (Fake::in_order(), Fake::in_order(), Fake::in_order());
        let buf = alloc(64);
        let (w, _) = run(&a, &[whole(&buf, Access::Write)])?;
        let failed = enqueue_tracked(&b, &[], &[whole(&buf, Access::Write)], |_| {
            Err(Error::InvalidArgument("the driver refused".into()))
        });
        assert!(matches!(failed, Err(Error::InvalidArgument(_))));
        assert_eq!((buf.recorded_commands(), enqueuing(&buf)), (1, 0));
        let (_, seen) = run(&c, &[whole(&buf, Access::Write)])?;
        assert_eq!(seen, [w.raw()], "nothing of the failed command on b");
        let (_m, _) = buf.claim_map(&c, (0, 64), true)?;
        Ok(())
    }

    /// A command over several allocations refused on one of them (mapped) reaches no driver and
    /// gives back the claims it took on the others.
    #[test]
    fn a_refused_use_releases_the_claims_of_the_others() -> Result<()> {
        let q = Fake::in_order();
        let (src, dst) = (alloc(64), alloc(64));
        let (_map, _) = dst.claim_map(&q, (0, 64), false)?;
        let mut called = false;
        let refused = enqueue_tracked(
            &q,
            &[],
            &[whole(&src, Access::Read), whole(&dst, Access::Write)],
            |_| {
                called = true;
                Ok(Ev::new())
            },
        );
        assert!(is_mapped(refused) && !called);
        assert_eq!((enqueuing(&src), src.recorded_commands()), (0, 0));
        Ok(())
    }

    /// A flush that fails (the queue to wait for) fails the command and releases its claim.
    #[test]
    fn a_failed_flush_releases_the_claim() -> Result<()> {
        let (a, b) = (Fake::in_order(), Fake::in_order());
        let buf = alloc(64);
        run(&a, &[whole(&buf, Access::Write)])?;
        a.0.fail_flush.store(true, Relaxed);
        let failed = run(&b, &[whole(&buf, Access::Read)]);
        assert!(matches!(failed, Err(Error::InvalidArgument(_))));
        assert_eq!((enqueuing(&buf), buf.recorded_commands()), (0, 1));
        assert!(
            buf.claim_map(&b, (0, 8), false).is_err(),
            "the flush is still needed"
        );
        a.0.fail_flush.store(false, Relaxed);
        buf.claim_map(&b, (0, 8), false)?;
        Ok(())
    }

    /// Between its check and its record (the driver call) a command holds a claim: a map of its
    /// bytes claimed meanwhile waits for the record, a map of other bytes does not; a claim
    /// dropped without `done` records nothing.
    #[test]
    fn a_command_claim_holds_off_overlapping_maps_until_recorded() -> Result<()> {
        let q = Fake::in_order();
        let buf = alloc(128);
        let (claim, _) = buf.before(&q, Some((0, 64)), Access::Write)?;
        assert_eq!(enqueuing(&buf), 1);
        // Maps are claimed on threads of their own: one that waits too long fails the test
        // instead of hanging it.
        let map = |range, write| {
            let (tx, rx) = mpsc::channel();
            let (buf, q) = (Arc::clone(&buf), q.clone());
            std::thread::spawn(move || tx.send(buf.claim_map(&q, range, write).map(|(c, _)| c)));
            rx
        };
        let other = map((64, 64), true)
            .recv_timeout(Duration::from_secs(10))
            .expect("a map of other bytes does not wait")?;
        let held = map((32, 8), false);
        assert!(
            held.recv_timeout(Duration::from_millis(100)).is_err(),
            "the map waited"
        );
        claim.done(&q, &Ev::new());
        held.recv_timeout(Duration::from_secs(10))
            .expect("the map ran once the command was recorded")?;
        assert_eq!((enqueuing(&buf), buf.recorded_commands()), (0, 1));
        drop(other);
        let (claim, _) = buf.before(&q, None, Access::Read)?;
        drop(claim);
        assert_eq!((enqueuing(&buf), buf.recorded_commands()), (0, 1));
        Ok(())
    }

    /// An in-order queue's record holds its last write and last read, however many commands are
    /// pending; an out-of-order queue's is swept of finished commands as it grows; a queue whose
    /// commands all finished is forgotten.
    #[test]
    fn the_record_stays_bounded() -> Result<()> {
        let (i, o) = (Fake::in_order(), Fake::out_of_order());
        let buf = alloc(64);
        for _ in 0..40 {
            run(&i, &[whole(&buf, Access::Write)])?;
            run(&i, &[whole(&buf, Access::Read)])?;
        }
        assert_eq!(buf.recorded_commands(), 2);
        let other = alloc(64);
        let mut pending = Vec::new();
        for _ in 0..8 {
            pending.push(run(&o, &[whole(&other, Access::Write)])?.0);
        }
        assert_eq!(
            other.recorded_commands(),
            8,
            "every pending out-of-order command counts"
        );
        pending.iter().for_each(Ev::finish);
        run(&o, &[whole(&other, Access::Write)])?;
        assert_eq!(other.recorded_commands(), 1, "swept at 8");
        // `i`'s commands finish: after the next prune only `o` is left.
        let (w, _) = run(&i, &[whole(&other, Access::Write)])?;
        w.finish();
        for _ in 0..super::PRUNE_EVERY {
            run(&o, &[whole(&other, Access::Read)])?;
        }
        assert_eq!(other.tracker.lock().queues.len(), 1);
        Ok(())
    }

    /// Where the platform needs it (PoCL), a map or unmap command waits for the allocation's
    /// previous one still pending (its other queue flushed first); elsewhere nothing is added.
    #[test]
    fn map_commands_run_one_after_another_where_the_quirk_says() -> Result<()> {
        let (a, b) = (Fake::with(true, 1, true), Fake::with(true, 1, true));
        let buf = alloc(64);
        let map = |q: &Fake| {
            let mut seen = Vec::new();
            let ((), ev) = buf.map_command(q, SmallVec::new(), |list| {
                seen = list.to_vec();
                Ok(((), Ev::new()))
            })?;
            Ok::<_, Error>((ev, seen))
        };
        let (e1, seen) = map(&a)?;
        assert!(seen.is_empty());
        let (e2, seen) = map(&b)?;
        assert_eq!((seen, a.flushes()), (vec![e1.raw()], 1));
        e2.finish();
        let (_, seen) = map(&a)?;
        assert!(seen.is_empty(), "a finished command orders nothing");
        let plain = Fake::in_order();
        let mut seen = vec![Ev::new().raw()];
        buf.map_command(&plain, SmallVec::new(), |list| {
            seen = list.to_vec();
            Ok(((), Ev::new()))
        })?;
        assert!(seen.is_empty(), "no quirk, no order: {seen:?}");
        Ok(())
    }

    /// A sub-buffer origin its queue's device cannot address is refused before the driver.
    #[test]
    fn a_misaligned_origin_is_refused_on_its_device() -> Result<()> {
        let q = Fake::with(true, 128, false);
        let buf = alloc(512);
        let bad = buf.view(64, 64);
        assert!(matches!(
            bad.before(&q, None, Access::Read),
            Err(Error::Misaligned {
                value: 64,
                alignment: 128,
                ..
            })
        ));
        assert!(bad.claim_map(&q, (0, 8), false).is_err());
        buf.view(256, 64).before(&q, None, Access::Read)?;
        Ok(())
    }

    /// The acquire and release commands of external memory, counted.
    struct Switch(Arc<AtomicUsize>);

    impl Handover<Fake> for Switch {
        fn enqueue(&self, _queue: &Fake, _acquire: bool, _wait: &[sys::cl_event]) -> Result<Ev> {
            self.0.fetch_add(1, Relaxed);
            Ok(Ev::new())
        }
    }

    /// Memory handed back to the API that exported it takes no command or map until acquired
    /// again, is not handed back while mapped, and is handed back when its record goes.
    #[test]
    fn external_memory_is_used_only_while_acquired() -> Result<()> {
        let q = Fake::in_order();
        let calls = Arc::new(AtomicUsize::new(0));
        let tracker: Arc<Tracker<Fake>> = Arc::default();
        tracker.lock().external = Some(ExternalState::acquired_on(
            &q,
            Box::new(Switch(Arc::clone(&calls))),
        ));
        let buf = Tracked::counted(tracker, 0, 64);
        let (map, _) = buf.claim_map(&q, (0, 8), false)?;
        assert!(is_mapped(buf.switch_external(&q, &[], false)));
        drop(map);
        buf.switch_external(&q, &[], false)?;
        assert!(matches!(
            run(&q, &[whole(&buf, Access::Read)]),
            Err(Error::HandedBack(_))
        ));
        assert!(matches!(
            buf.claim_map(&q, (0, 8), false),
            Err(Error::HandedBack(_))
        ));
        assert!(
            buf.switch_external(&q, &[], false).is_err(),
            "already handed back"
        );
        buf.switch_external(&q, &[], true)?;
        run(&q, &[whole(&buf, Access::Write)])?;
        assert_eq!(calls.load(Relaxed), 2);
        drop(buf);
        assert_eq!(calls.load(Relaxed), 3, "released when the record went");
        Ok(())
    }

    fn map(id: u64, start: usize, end: usize, write: bool) -> LiveMap {
        LiveMap {
            id,
            start,
            end,
            write,
        }
    }

    /// The exclusivity rule on the host: any number of read maps of a byte, at most one writable
    /// map, and nothing else touching the bytes a writable map covers; disjoint bytes are free.
    #[test]
    fn maps_are_exclusive_by_byte_range() {
        let reads = [map(1, 0, 64, false), map(2, 32, 96, false)];
        assert!(
            conflicting(&reads, (0, 128), false).is_none(),
            "reads share"
        );
        assert_eq!(conflicting(&reads, (60, 70), true).map(|m| m.id), Some(1));
        assert!(
            conflicting(&reads, (96, 128), true).is_none(),
            "disjoint bytes"
        );
        let write = [map(3, 100, 200, true)];
        assert_eq!(
            conflicting(&write, (199, 300), false).map(|m| m.id),
            Some(3)
        );
        assert!(
            conflicting(&write, (200, 300), true).is_none(),
            "end is exclusive"
        );
        assert!(conflicting(&write, (0, 100), true).is_none());
    }
}
