//! Fills ([`Buffer::fill`], `clEnqueueFillBuffer`, OpenCL 1.2) and migration
//! ([`enqueue_migrate_mem_objects`], `clEnqueueMigrateMemObjects`, OpenCL 1.2) of memory objects.
//!
//! Everything the spec makes the driver refuse with `CL_INVALID_VALUE` is checked first: pattern
//! sizes (1, 2, 4, ..., 128 bytes), offset and size multiples of the pattern, bounds, an empty
//! object list, and the platform version (PyOpenCL only warns below 1.2, then calls anyway).

use std::sync::Arc;

use bitflags::bitflags;
use cl_raw::{queue as raw_queue, sys, Version};

use crate::buffer::transfer::{HostData, Transfer};
use crate::buffer::Buffer;
use crate::error::{Error, Result};
use crate::memory::MemObject;
use crate::runtime::event::Event;
use crate::runtime::live::{Live, KEPT};
use crate::runtime::queue::Queue;
use crate::track::{arg_memory, enqueue_tracked, Access, ArgMemory, Use};

impl Buffer {
    /// Fills with copies of `pattern` (its bytes: `&[value]`, an array, a byte slice) after
    /// `o`'s events: the whole buffer by default, or `o.byte_count` bytes (default: the rest) at
    /// `o.dst_offset`. PyOpenCL's `enqueue_fill_buffer(queue, mem, pattern, offset, size)`. The
    /// pattern is copied by the driver before the call returns. A zero size returns a marker
    /// event.
    ///
    /// ```ignore
    /// buf.fill(&queue, &[0f32], &[])?;
    /// buf.fill(&queue, &[7u32], Transfer::default().dst_offset(16).byte_count(64))?;
    /// ```
    ///
    /// # Errors
    ///
    /// Checked first: [`Error::InvalidArgument`] for a pattern whose size is not a power of two
    /// from 1 to 128, a queue of another context, or a rectangle or source offset in `o`;
    /// [`Error::Misaligned`] for an offset or size that is not a multiple of the pattern size;
    /// [`Error::OutOfBounds`] past the end; [`Error::Unsupported`] below OpenCL 1.2. Then
    /// [`Error::Cl`] from `clEnqueueFillBuffer`.
    pub fn fill<'a, P: HostData + ?Sized>(
        &self,
        queue: &Queue,
        pattern: &P,
        o: impl Into<Transfer<'a>>,
    ) -> Result<Event> {
        let o = o.into();
        o.no_rect("a fill")?;
        if o.src_offset != 0 {
            return Err(Error::InvalidArgument(
                "a fill has no source offset (the pattern is the source)".into(),
            ));
        }
        let pattern = pattern.host_slice()?;
        let (offset_bytes, wait) = (o.dst_offset, o.wait);
        let size_bytes = o
            .byte_count
            .unwrap_or_else(|| self.size_bytes().saturating_sub(offset_bytes));
        check_pattern(pattern.len(), offset_bytes, size_bytes)?;
        self.check_range("buffer fill", offset_bytes, size_bytes)?;
        self.check_queue(queue)?;
        queue
            .context()
            .require_platform_version(Version::V1_2, "clEnqueueFillBuffer")?;
        if size_bytes == 0 {
            return queue.enqueue_marker(wait);
        }
        let uses = [(
            self.tracked(),
            Some((offset_bytes, size_bytes)),
            Access::Write,
        )];
        enqueue_tracked(queue, wait, &uses, |list| {
            // SAFETY: valid queue/buffer/events of one 1.2+ context; the pattern is read during
            // the call only; the range is in bounds and a multiple of the pattern; we own the
            // event.
            let ev = unsafe {
                raw_queue::enqueue_fill_buffer(
                    queue.as_raw(),
                    self.as_raw(),
                    pattern,
                    offset_bytes,
                    size_bytes,
                    list,
                )
            }
            .map_err(Error::cl("clEnqueueFillBuffer"))?;
            // SAFETY: a fresh reference we own.
            Ok(unsafe { Event::from_raw(ev) })
        })
    }
}

/// The pattern rules of `clEnqueueFillBuffer`.
fn check_pattern(pattern: usize, offset: usize, size: usize) -> Result<()> {
    if !(pattern.is_power_of_two() && pattern <= 128) {
        return Err(Error::InvalidArgument(format!(
            "a fill pattern is 1, 2, 4, 8, 16, 32, 64 or 128 bytes, got {pattern}"
        )));
    }
    for (what, value) in [("fill offset", offset), ("fill size", size)] {
        if !value.is_multiple_of(pattern) {
            return Err(Error::Misaligned {
                what,
                value,
                alignment: pattern,
            });
        }
    }
    Ok(())
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

/// Migrates memory objects (buffers, sub-buffers, images, pooled buffers: any
/// [`MemObject`]) to the queue's device, or to the host with [`MigrationFlags::HOST`]:
/// PyOpenCL's `enqueue_migrate_mem_objects` (which refuses pooled buffers, reference §9.11).
///
/// Ordered like every other command on the objects (the workspace's command record): a
/// migration waits for the writes other queues have pending on them (and, with
/// [`MigrationFlags::CONTENT_UNDEFINED`], which may discard the contents, for their reads too),
/// and is refused while the host has them mapped. So a buffer last written on device A and
/// migrated to device B's queue arrives with A's data.
///
/// # Errors
///
/// Checked first: [`Error::Unsupported`] below OpenCL 1.2; [`Error::InvalidArgument`] for an
/// empty list or an object of another context; [`Error::Mapped`] while the host has one mapped.
/// Then [`Error::Cl`] from `clEnqueueMigrateMemObjects`.
pub fn enqueue_migrate_mem_objects(
    queue: &Queue,
    objects: &[&dyn MemObject],
    flags: MigrationFlags,
    wait: &[&Event],
) -> Result<Event> {
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
        let ctx: sys::cl_context = unsafe { cl_raw::mem::get_info(m, sys::CL_MEM_CONTEXT) }
            .map_err(Error::cl("clGetMemObjectInfo"))?;
        if ctx != queue.context().as_raw() {
            return Err(Error::InvalidArgument(
                "a memory object to migrate belongs to another context than the queue".into(),
            ));
        }
        raws.push(m);
    }
    let access = if flags.contains(MigrationFlags::CONTENT_UNDEFINED) {
        Access::Write
    } else {
        Access::Read
    };
    let records: smallvec::SmallVec<[_; 8]> =
        objects.iter().filter_map(|o| o.command_record()).collect();
    let uses: smallvec::SmallVec<[Use<'_>; 8]> = records
        .iter()
        .filter_map(|k| arg_memory(k).and_then(ArgMemory::tracked))
        .map(|t| (t, None, access))
        .collect();
    // The object list lives on the heap until the command completed: NVIDIA 580.159.04 reads it
    // when its worker thread runs the command, after the call returned (a reused stack array
    // crashed that thread: `repro/nvidia_migrate_reads_object_list_late.c`,
    // docs/DEVICES.md#nvidia-migrate-list-late). Done on every platform, so that one mechanism,
    // tested on every device, covers the driver that needs it.
    let kept = Arc::new(ObjectList(raws, Live::new()));
    enqueue_tracked(queue, wait, &uses, |list| {
        // SAFETY: valid queue, objects and events of one 1.2+ context; the list is non-empty
        // and kept until the command completed (below); we own the event.
        let ev = unsafe {
            raw_queue::enqueue_migrate_mem_objects(queue.as_raw(), &kept.0, flags.bits(), list)
        }
        .map_err(Error::cl("clEnqueueMigrateMemObjects"))?;
        // SAFETY: a fresh reference we own.
        let ev = unsafe { Event::from_raw(ev) };
        keep_until_complete(&ev, Arc::clone(&kept));
        Ok(ev)
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_rules() {
        for p in [1, 2, 4, 8, 16, 32, 64, 128] {
            assert!(check_pattern(p, p * 3, p * 5).is_ok(), "{p}");
        }
        for p in [0, 3, 12, 256] {
            assert!(
                matches!(check_pattern(p, 0, 0), Err(Error::InvalidArgument(_))),
                "{p}"
            );
        }
        assert_eq!(
            check_pattern(4, 2, 8),
            Err(Error::Misaligned {
                what: "fill offset",
                value: 2,
                alignment: 4
            })
        );
        assert_eq!(
            check_pattern(4, 4, 6),
            Err(Error::Misaligned {
                what: "fill size",
                value: 6,
                alignment: 4
            })
        );
    }
}
