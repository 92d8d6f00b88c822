//! Fills ([`Buffer::fill`], `clEnqueueFillBuffer`, OpenCL 1.2) and migration
//! ([`enqueue_migrate_mem_objects`], `clEnqueueMigrateMemObjects`, OpenCL 1.2) of memory objects.
//!
//! Everything the spec makes the driver refuse with `CL_INVALID_VALUE` is checked first: pattern
//! sizes (1, 2, 4, ..., 128 bytes), offset and size multiples of the pattern, bounds, an empty
//! object list, and the platform version (PyOpenCL only warns below 1.2, then calls anyway).

use cl_raw::{queue as raw_queue, Version};

use crate::buffer::tracked::MigrationFlags;
use crate::buffer::transfer::{host_transfers, Transfer};
use crate::buffer::Buffer;
use crate::error::{Error, Result};
use crate::memory::MemObject;
use crate::raw_handle::RawHandle;
use crate::runtime::event::Event;
use crate::runtime::queue::Queue;
use crate::runtime::track::{enqueue_tracked, Access};

impl Buffer {
    host_transfers! {
        /// Fills with copies of `pattern` (its bytes: `&[value]`, an array, a byte slice) after
        /// `o`'s events: the whole buffer by default, or `o.byte_count` bytes (default: the rest)
        /// at `o.dst_offset`. PyOpenCL's `enqueue_fill_buffer(queue, mem, pattern, offset, size)`.
        /// The pattern is copied by the driver before the call returns. A zero size returns a
        /// marker event.
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
        fill(self, queue, pattern, o) {
            let (offset_bytes, size_bytes) = o.fill_range("a fill", self.size_bytes())?;
            let pattern = pattern.host_slice()?;
            let wait = o.wait;
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
                unsafe {
                    let ev = raw_queue::enqueue_fill_buffer(
                        queue.as_raw(),
                        self.as_raw(),
                        pattern,
                        offset_bytes,
                        size_bytes,
                        list,
                    );
                    Event::adopt(ev, "clEnqueueFillBuffer")
                }
            })
        }
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

/// Migrates memory objects (buffers, sub-buffers, images, pooled buffers: any
/// [`MemObject`]) to the queue's device, or to the host with [`MigrationFlags::HOST`], after
/// `o`'s events: PyOpenCL's `enqueue_migrate_mem_objects` (which refuses pooled buffers,
/// reference §9.11).
///
/// Ordered like every other command on the objects (the workspace's command record): a
/// migration waits for the writes other queues have pending on them (and, with
/// [`MigrationFlags::CONTENT_UNDEFINED`], which may discard the contents, for their reads too),
/// and is refused while the host has them mapped. So a buffer last written on device A and
/// migrated to device B's queue arrives with A's data.
///
/// `o.options` picks the path between devices of one context (`crate::buffer::between`): a
/// root buffer whose bytes live on another device than `queue`'s moves through pinned host
/// memory on [`TransferPath::Staged`](crate::buffer::staged::TransferPath::Staged), and on
/// [`TransferPath::Auto`](crate::buffer::staged::TransferPath::Auto) (the default) where the
/// driver's path is slow; everything else, and every migration with [`MigrationFlags::HOST`] or
/// [`MigrationFlags::CONTENT_UNDEFINED`] (no bytes to move), is the driver's one
/// `clEnqueueMigrateMemObjects`. A buffer already on `queue`'s device is not moved by a forced
/// staged path either.
///
/// ```ignore
/// enqueue_migrate_mem_objects(&q1, &[&buf], MigrationFlags::empty(), &[])?;
/// let staged = TransferOptions { path: TransferPath::Staged, ..TransferOptions::default() };
/// enqueue_migrate_mem_objects(&q1, &[&buf], MigrationFlags::empty(), Transfer::default().options(staged))?;
/// ```
///
/// # Errors
///
/// Checked first: [`Error::InvalidArgument`] for offsets, a byte count or a rectangle in `o`
/// (a migration moves whole objects), options the path cannot take, an empty list or an object
/// of another context; [`Error::Unsupported`] below OpenCL 1.2; [`Error::Mapped`] while the host
/// has one mapped. Then [`Error::Cl`] from `clEnqueueMigrateMemObjects`. With several objects on
/// the staged path, those migrated before an error stay migrated.
pub fn enqueue_migrate_mem_objects<'a>(
    queue: &Queue,
    objects: &[&dyn MemObject],
    flags: MigrationFlags,
    o: impl Into<Transfer<'a>>,
) -> Result<Event> {
    let o = o.into();
    crate::error::check_known_bits(&flags, "migration flags")?;
    o.no_rect("a migration")?;
    if o.src_offset != 0 || o.dst_offset != 0 || o.byte_count.is_some() {
        return Err(Error::InvalidArgument(
            "a migration moves whole memory objects: no offsets or byte count".into(),
        ));
    }
    super::between::migrate(queue, objects, flags, o.wait, &o.options)
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
