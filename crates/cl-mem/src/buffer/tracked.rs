//! The recorded driver commands that the dispatching transfers (`transfer.rs`, `fill.rs`) and
//! the staged paths (`staged.rs`, `between.rs`) share: host reads and writes of a byte range
//! through an allocation's command record, the unmap of a buffer or image map, and the driver's
//! migration of memory objects with its checks. Below both, so that the dispatchers import the
//! staged paths and never the reverse.

use std::sync::Arc;

use bitflags::bitflags;
use cl_raw::object::{self, Object};
use cl_raw::{queue as raw_queue, sys, ClError, Version};
use smallvec::SmallVec;

use crate::error::{Error, Result};
use crate::memory::MemObject;
use crate::raw_handle::RawHandle;
use crate::runtime::event::Event;
use crate::runtime::live::{Live, KEPT};
use crate::runtime::queue::Queue;
use crate::runtime::track::{enqueue_tracked, Access, ArgMemory, Direction, Tracked, Use};

/// `clEnqueueReadBuffer` (`D` = [`Read`](crate::runtime::track::Read)) or `clEnqueueWriteBuffer`
/// (`D` = `Write`) of `len` bytes between `host` and `offset_bytes` of `mem`, after `wait`; a
/// 0-byte transfer is a marker (OpenCL refuses size 0). With `track`, the command is checked
/// against the buffer's live maps, ordered after the conflicting commands on other queues and
/// recorded. The one buffer transfer call behind `Buffer::read`/`write` and their `enqueue_`
/// forms (checked by `Buffer::enqueue_bytes`), the staged paths (checked by their plan) and
/// `SvmBufferView::read`/`write`.
///
/// # Errors
///
/// [`Error::Cl`] from the call (or from the marker); [`Error::Mapped`] with `track`.
///
/// # Safety
///
/// 1. `mem` is a valid buffer of `queue`'s context, as is every event of `wait`; `track` is
///    `mem`'s.
/// 2. `offset_bytes + len` is at most the size of `mem`.
/// 3. `host` is valid for `len` bytes of writes (a read) or reads (a write), and nothing else
///    accesses them until the command completes (when `blocking`: until this call returns); a
///    write only needs them not written.
#[expect(clippy::too_many_arguments, reason = "one raw command's parameters")]
pub(crate) unsafe fn enqueue_host<D: Direction>(
    queue: &Queue,
    mem: sys::cl_mem,
    track: Option<&Tracked>,
    blocking: bool,
    offset_bytes: usize,
    host: D::Host,
    len: usize,
    wait: &[&Event],
) -> Result<Event> {
    let (call, raw) = D::BUFFER;
    let transfer = |list: &[sys::cl_event]| {
        // SAFETY: obligations 1-3 are the raw call's.
        unsafe { raw(queue.as_raw(), mem, blocking, offset_bytes, len, host, list) }
    };
    host_transfer(
        queue,
        track,
        D::ACCESS,
        (offset_bytes, len),
        wait,
        call,
        transfer,
    )
    .and_then(|ev| ev.finished_if(blocking))
}

/// What host reads and writes share: a 0-byte transfer is a marker; otherwise the command goes
/// through the allocation's record (when `track` is given) with `access` on the bytes of `span`
/// (offset, length).
fn host_transfer(
    queue: &Queue,
    track: Option<&Tracked>,
    access: Access,
    span: (usize, usize),
    wait: &[&Event],
    call: &'static str,
    enqueue: impl FnOnce(&[sys::cl_event]) -> std::result::Result<sys::cl_event, ClError>,
) -> Result<Event> {
    if span.1 == 0 {
        return queue.enqueue_marker(wait);
    }
    let uses: SmallVec<[Use<'_>; 1]> = track.map(|t| (t, Some(span), access)).into_iter().collect();
    enqueue_tracked(queue, wait, &uses, |list| {
        // SAFETY: `enqueue` returns a fresh reference we own.
        unsafe { Event::adopt(enqueue(list), call) }
    })
}

/// `clEnqueueUnmapMemObject` of `ptr` in `track`'s order of map commands (after `list`), then
/// recorded as a write (`write`: a writable map) or a read: the one unmap behind buffer and image
/// maps. The caller releases the map's claim after it.
///
/// # Errors
///
/// [`Error::Cl`] from the call; nothing is recorded then (the region is still mapped).
///
/// # Safety
///
/// 1. `mem` is a valid memory object of `queue`'s context, as is every event of `list`; `track`
///    is `mem`'s.
/// 2. `ptr` came from a map of `mem` on `queue` that is still open, and no slice of it survives.
pub(crate) unsafe fn enqueue_unmap(
    queue: &Queue,
    mem: sys::cl_mem,
    track: &Tracked,
    ptr: *mut std::ffi::c_void,
    write: bool,
    list: SmallVec<[sys::cl_event; 8]>,
) -> Result<Event> {
    let ((), ev) = track.map_command(queue, list, |list| {
        // SAFETY: obligations 1 and 2; we own the event.
        Ok(((), unsafe {
            let ev = raw_queue::enqueue_unmap_mem_object(queue.as_raw(), mem, ptr, list);
            Event::adopt(ev, "clEnqueueUnmapMemObject")
        }?))
    })?;
    let access = if write { Access::Write } else { Access::Read };
    track.record(queue, access, &ev);
    Ok(ev)
}

bitflags! {
    /// `cl_mem_migration_flags` (PyOpenCL's `mem_migration_flags`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct MigrationFlags: sys::cl_mem_migration_flags {
        /// `CL_MIGRATE_MEM_OBJECT_HOST`: migrate to the host instead of the queue's device.
        const HOST = sys::CL_MIGRATE_MEM_OBJECT_HOST;
        /// `CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED`: the contents need not be preserved.
        const CONTENT_UNDEFINED = sys::CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED;
    }
}

/// The checks of a migration (version, a non-empty list, every object of the queue's context)
/// and the objects' handles.
pub(crate) fn migration_handles(
    queue: &Queue,
    objects: &[&dyn MemObject],
) -> Result<Vec<sys::cl_mem>> {
    queue
        .context()
        .require_platform_version(Version::V1_2, "clEnqueueMigrateMemObjects")?;
    if objects.is_empty() {
        return Err(Error::InvalidArgument(
            "migration needs at least one memory object".into(),
        ));
    }
    let mut raws: Vec<sys::cl_mem> = Vec::with_capacity(objects.len());
    for o in objects {
        let m = o.as_raw();
        // SAFETY: a valid object (MemObject contract); a 1.0 parameter; the handle is compared,
        // not retained.
        let ctx: sys::cl_context = unsafe { object::get_info(Object::Mem, m, sys::CL_MEM_CONTEXT) }
            .map_err(Error::cl("clGetMemObjectInfo"))?;
        if ctx != queue.context().as_raw() {
            return Err(Error::InvalidArgument(
                "a memory object to migrate belongs to another context than the queue".into(),
            ));
        }
        raws.push(m);
    }
    Ok(raws)
}

/// `enqueue_migrate_mem_objects` as the driver's one command.
pub(crate) fn migrate_plain(
    queue: &Queue,
    objects: &[&dyn MemObject],
    flags: MigrationFlags,
    wait: &[&Event],
) -> Result<Event> {
    let raws = migration_handles(queue, objects)?;
    let access = if flags.contains(MigrationFlags::CONTENT_UNDEFINED) {
        Access::Write
    } else {
        Access::Read
    };
    let records: smallvec::SmallVec<[_; 8]> =
        objects.iter().filter_map(|o| o.command_record()).collect();
    let uses: smallvec::SmallVec<[Use<'_>; 8]> = records
        .iter()
        .filter_map(|k| k.arg_memory().and_then(ArgMemory::tracked))
        .map(|t| (t, None, access))
        .collect();
    // The object list lives on the heap until the command completed: NVIDIA 580.159.04 reads it
    // when its worker thread runs the command, after the call returned (a reused stack array
    // crashed that thread: `repro/nvidia_migrate_reads_object_list_late.c`,
    // docs/DEVICES.md#nvidia-migrate-list-late). Done on every platform, so that one mechanism,
    // tested on every device, covers the driver that needs it.
    let kept = Arc::new(ObjectList(raws, Live::new()));
    let ev = enqueue_tracked(queue, wait, &uses, |list| {
        // SAFETY: valid queue, objects and events of one 1.2+ context; the list is non-empty
        // and kept until the command completed (below); we own the event.
        let ev = unsafe {
            let ev =
                raw_queue::enqueue_migrate_mem_objects(queue.as_raw(), &kept.0, flags.bits(), list);
            Event::adopt(ev, "clEnqueueMigrateMemObjects")
        }?;
        keep_until_complete(&ev, Arc::clone(&kept));
        Ok(ev)
    })?;
    if !flags.contains(MigrationFlags::HOST) {
        for (t, _, _) in &uses {
            t.moved_to(*queue.device());
        }
    }
    Ok(ev)
}

/// A migration's object list on the heap, counted in [`crate::live_objects`] (`kept_lists`).
struct ObjectList(Vec<sys::cl_mem>, Live<KEPT>);

// SAFETY: handle values only, never dereferenced here; OpenCL handles may be used from any
// thread (OpenCL 3.0, "Multiple Host Threads"), and the driver only reads the list.
unsafe impl Send for ObjectList {}
// SAFETY: as for `Send`; the list is never written after creation.
unsafe impl Sync for ObjectList {}

/// Keeps `list` alive until the command of `ev` completed: freed by a completion callback, or
/// leaked when no callback can be registered (a few bytes, on a path that is an error already;
/// waiting here instead could deadlock: the command may wait for a user event that the caller
/// sets after this call, and the command record's claim is still open). Also leaked where a
/// driver never runs the callback: PoCL 3.1 for a command whose wait-list event failed
/// (docs/DEVICES.md#pocl-failed-wait-events).
fn keep_until_complete(ev: &Event, list: Arc<ObjectList>) {
    let in_callback = Arc::clone(&list);
    if let Err(e) = ev.on_complete(move |_| drop(in_callback)) {
        tracing::warn!(error = %e, "could not register the release of a migration's object list: leaking it");
        std::mem::forget(list);
    }
}
