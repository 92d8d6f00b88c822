//! Copies and migrations of buffers between devices of one context through pinned host chunks
//! (issue 32): what `enqueue_copy` of two buffers and `enqueue_migrate_mem_objects` do on the
//! staged path, which [`Transfer::options`](crate::buffer::transfer::Transfer::options) chooses.
//!
//! # Design
//!
//! NVIDIA's driver moves a buffer between two GPUs of one context at 1-4 GB/s (no peer access, no
//! pinned staging), where a read into pinned host memory on the first GPU and a write from it on
//! the second go at 15-25 GB/s (docs/PERFORMANCE.md, "Between two GPUs"). So a copy whose source
//! lives on another device is cut into chunks: chunk `k` is read from the source into a pinned
//! chunk on the context's own in-order queue of the source's device, and written from that chunk
//! into the destination on the caller's queue, the write waiting for the read's event. Reads and
//! writes of different chunks overlap on the two queues; `threads x depth` pinned chunks (2..=16,
//! from the context's [`StagingCache`](crate::runtime::staging::StagingCache), as the pageable
//! staged path uses) are in flight, the read of chunk `k` waiting for the write that last used its
//! pinned chunk.
//!
//! - No host thread moves bytes and nothing blocks: every command is enqueued at once with its
//!   dependencies, so the call returns like the driver's copy does, and the returned event (the
//!   last chunk's write; writes are chained on an out-of-order queue) completes when every chunk
//!   landed. The pinned chunks go back to the cache from completion callbacks of the last read
//!   and the last write (leaked, never reused under a DMA, where a driver runs no callback).
//! - Every chunk command is an ordinary tracked command (`track::enqueue_tracked`): a read of the
//!   source's bytes on the source's device, a write of the destination's on the caller's queue.
//!   So maps, other queues and pools see one copy: a map waits for the last chunk, later commands
//!   on other queues wait for the reads and writes. Both ranges are held against new maps while
//!   the chunks are enqueued, and a live map that conflicts refuses the copy before any command.
//! - Where the bytes live: the device of the last command that wrote or migrated the allocation
//!   (the command record's `home`). A copy runs where its queue is, as the driver's does: the
//!   destination's bytes end on the queue's device.
//! - An enqueue that fails mid-way returns its error; the chunk commands enqueued before it stay
//!   recorded (later commands and maps wait for them), and their pinned chunks are given back once
//!   they completed. Nothing is half-recorded: a command is recorded exactly when the driver took it.
//! - A migration of a root buffer to a device other than its home goes the same way into a
//!   temporary buffer on the queue's device, then migrates the buffer there without its contents
//!   (`CONTENT_UNDEFINED`, which waits for the chunk reads) and copies the temporary into it on the
//!   device: twice the buffer's size on the destination for the duration. `Auto` takes the driver's
//!   migration when the temporary cannot be allocated.
//!
//! `Auto` stages between devices where the platform's quirk says the driver's path is slow
//! (`Quirks::cross_device_copy_slow`: NVIDIA), from [`AUTO_BETWEEN_MIN_BYTES`]; CPU runtimes keep
//! the driver's path. `CL_TRANSFER_PATH=plain|staged` overrides `Auto` as for host transfers.
//!
//! Alternatives considered: host threads waiting for each read and issuing each write (the
//! pageable path's workers) add a wake-up per chunk and block the caller, where the event graph
//! needs neither; a device-side peer copy does not exist on NVIDIA's OpenCL
//! (`enqueue_copy_buffer_p2p_amd` is AMD's, between contexts).

use std::sync::Arc;

use cl_raw::{queue as raw_queue, sys};
use smallvec::SmallVec;

use crate::buffer::staged::{resolve, TransferOptions, TransferPath};
use crate::buffer::tracked::{enqueue_host, migrate_plain, migration_handles, MigrationFlags};
use crate::buffer::Buffer;
use crate::error::{Error, Result};
use crate::memory::MemObject;
use crate::raw_handle::RawHandle;
use crate::runtime::device::Device;
use crate::runtime::event::Event;
use crate::runtime::queue::Queue;
use crate::runtime::quirks::quirks;
use crate::runtime::staging::{PinnedChunk, QueueRole, StagingCache};
use crate::runtime::track::{enqueue_tracked, Access, ArgMemory, Read, Tracked, Write};

/// The smallest copy `Auto` stages between devices (the smallest size measured: the driver's
/// path is 5x slower there already; below it, one command's latency may decide).
pub(crate) const AUTO_BETWEEN_MIN_BYTES: usize = 1 << 20;

/// The most pinned chunks one copy between devices keeps in flight.
const MAX_SLOTS: usize = 16;

/// One side of a staged copy: a memory object, its command record, and the first byte.
struct Side<'a> {
    raw: sys::cl_mem,
    tracked: &'a Tracked,
    offset: usize,
}

/// The device a staged copy of `count` bytes, from memory whose bytes live on `home`, to
/// `queue`'s device reads its source on; `None` for the driver's path.
fn source_device(
    queue: &Queue,
    home: Option<Device>,
    count: usize,
    opts: &TransferOptions,
) -> Option<Device> {
    match resolve(opts.path) {
        TransferPath::Plain => None,
        TransferPath::Staged => Some(home.unwrap_or(*queue.device())),
        TransferPath::Auto => home.filter(|h| {
            h != queue.device()
                && count >= AUTO_BETWEEN_MIN_BYTES
                && quirks(&queue.device().platform()).cross_device_copy_slow
        }),
    }
}

/// The staged path of a copy between buffers (`Buffer::copy_range`, which checked the arguments;
/// `count > 0`):
/// `None` when `opts` chooses the driver's path.
#[expect(clippy::too_many_arguments, reason = "a copy's arguments")]
pub(super) fn copy_staged(
    queue: &Queue,
    src: &Buffer,
    src_offset: usize,
    dst: &Buffer,
    dst_offset: usize,
    count: usize,
    wait: &[&Event],
    opts: &TransferOptions,
) -> Result<Option<Event>> {
    opts.check()?;
    let root = |b: &Buffer| b.parent().map_or(b.as_raw(), Buffer::as_raw);
    // Within one allocation the chunk reads and writes would order each other: the driver's copy.
    if root(src) == root(dst) {
        return Ok(None);
    }
    let Some(from) = source_device(queue, src.tracked().home(), count, opts) else {
        return Ok(None);
    };
    let s = Side {
        raw: src.as_raw(),
        tracked: src.tracked(),
        offset: src_offset,
    };
    let d = Side {
        raw: dst.as_raw(),
        tracked: dst.tracked(),
        offset: dst_offset,
    };
    pipeline(queue, from, &s, &d, count, wait, opts).map(Some)
}

/// Chunk `k` of `count` bytes in chunks of `chunk`: its offset and length.
fn chunk_at(k: usize, chunk: usize, count: usize) -> (usize, usize) {
    let off = k * chunk;
    (off, chunk.min(count - off))
}

/// Pinned chunks that go back to the cache when the last holder (a completion callback) drops.
struct GiveBack {
    chunks: Vec<PinnedChunk>,
    cache: Arc<StagingCache>,
}

impl Drop for GiveBack {
    fn drop(&mut self) {
        self.cache.give(std::mem::take(&mut self.chunks));
    }
}

/// Gives `chunks` back once every event of `after` completed (a callback each). Where a callback
/// cannot be registered, its event is waited for; if that fails too, the chunks are leaked
/// rather than reused while a command may still use them.
fn give_back_after(after: &[&Event], chunks: Vec<PinnedChunk>, cache: Arc<StagingCache>) {
    let back = Arc::new(std::sync::Mutex::new(GiveBack { chunks, cache }));
    for e in after {
        let held = Arc::clone(&back);
        if let Err(err) = e.on_complete(move |_| drop(held)) {
            tracing::warn!(error = %err, "copy between devices: no completion callback; waiting");
            if e.wait().is_err() {
                std::mem::forget(Arc::clone(&back));
            }
        }
    }
}

/// Enqueues the chunk commands of a staged copy of `count` bytes from `src` (read on the
/// context's queue of `from`) to `dst` (written on `queue`); returns the last write's event.
fn pipeline(
    queue: &Queue,
    from: Device,
    src: &Side<'_>,
    dst: &Side<'_>,
    count: usize,
    wait: &[&Event],
    opts: &TransferOptions,
) -> Result<Event> {
    let _span = tracing::debug_span!("cl_mem::copy_between", bytes = count, from = ?from.as_raw(), to = ?queue.device().as_raw()).entered();
    let ctx = queue.context();
    let sq = Queue::staging_queue(ctx, &from, QueueRole::Reads)?;
    // New chunks are mapped (blocking) on a queue of their own: `sq` may hold an earlier call's
    // chunk reads behind a user event the caller sets only after this call returns.
    let mq = Queue::staging_queue(ctx, &from, QueueRole::Maps)?;
    // Maps of either range wait until every chunk is recorded; a live one refuses the copy now.
    let _holds = (
        src.tracked.hold((src.offset, count), false)?,
        dst.tracked.hold((dst.offset, count), true)?,
    );
    let chunk = opts.chunk_bytes.min(count);
    let n = count.div_ceil(chunk);
    let m = opts
        .threads
        .saturating_mul(opts.depth)
        .clamp(2, MAX_SLOTS)
        .min(n);
    let mut slots = ctx.staging().take(ctx.as_raw(), mq.as_raw(), chunk, m)?;
    let mut slot_write: Vec<Option<Event>> = (0..m).map(|_| None).collect();
    let mut last_read: Option<Event> = None;
    let mut last_write: Option<Event> = None;
    let in_order = queue.is_in_order();
    let mut run = || -> Result<()> {
        for k in 0..n {
            let s = k % m;
            let (off, len) = chunk_at(k, chunk, count);
            let ptr = slots[s].as_mut_ptr();
            let read = {
                let mut before: SmallVec<[&Event; 4]> = SmallVec::new();
                if k == 0 {
                    before.extend(wait.iter().copied());
                }
                before.extend(slot_write[s].as_ref());
                // SAFETY: the pinned chunk holds `len` bytes and is neither touched by the host
                // nor given back before this command completed (`give_back_after`); the range is
                // inside the source (checked by the caller); the callee checks the wait list.
                unsafe {
                    enqueue_host::<Read>(
                        &sq,
                        src.raw,
                        Some(src.tracked),
                        false,
                        src.offset + off,
                        ptr.cast(),
                        len,
                        &before,
                    )
                }?
            };
            // The write on `queue` waits for this read: its queue must be flushed (clFlush's rule).
            let flushed = sq.flush();
            let write = flushed.and_then(|()| {
                let mut after_read: SmallVec<[&Event; 2]> = SmallVec::new();
                after_read.push(&read);
                if !in_order {
                    after_read.extend(last_write.as_ref());
                }
                // SAFETY: as for the read; the read filled the chunk before this command starts.
                unsafe {
                    enqueue_host::<Write>(
                        queue,
                        dst.raw,
                        Some(dst.tracked),
                        false,
                        dst.offset + off,
                        ptr.cast(),
                        len,
                        &after_read,
                    )
                }
            });
            last_read = Some(read);
            let write = write?;
            slot_write[s] = Some(write.clone());
            last_write = Some(write);
            // The next read of this chunk waits for this write.
            queue.flush()?;
        }
        Ok(())
    };
    let result = run();
    {
        let after: SmallVec<[&Event; 2]> = last_read.iter().chain(last_write.iter()).collect();
        give_back_after(&after, slots, ctx.staging_shared());
    }
    result?;
    last_write.ok_or_else(|| Error::InvalidArgument("a staged copy of 0 bytes".into()))
}

/// The migration behind `enqueue_migrate_mem_objects` (`fill.rs`, which documents the paths)
/// on the path `opts` chooses: the driver's one command, or a root buffer whose bytes live on
/// another device than `queue`'s through pinned host memory.
///
/// # Errors
///
/// As `enqueue_migrate_mem_objects`; [`Error::InvalidArgument`] for options the path cannot
/// take. With several objects, those migrated before an error stay migrated.
pub(super) fn migrate(
    queue: &Queue,
    objects: &[&dyn MemObject],
    flags: MigrationFlags,
    wait: &[&Event],
    opts: &TransferOptions,
) -> Result<Event> {
    let moves_bytes = !flags.intersects(MigrationFlags::HOST | MigrationFlags::CONTENT_UNDEFINED);
    if !moves_bytes || resolve(opts.path) == TransferPath::Plain {
        return migrate_plain(queue, objects, flags, wait);
    }
    opts.check()?;
    let raws = migration_handles(queue, objects)?;
    let records: Vec<_> = objects.iter().map(|o| o.command_record()).collect();
    let mut staged: Vec<(usize, Device, usize)> = Vec::new();
    let mut rest: Vec<&dyn MemObject> = Vec::new();
    for (i, (o, raw)) in objects.iter().zip(&raws).enumerate() {
        let tracked = records[i]
            .as_ref()
            .and_then(|k| k.arg_memory().and_then(ArgMemory::tracked));
        let pick = tracked.and_then(|t| {
            let size = root_buffer_size(*raw)?;
            let home = t.home().filter(|h| h != queue.device())?;
            source_device(queue, Some(home), size, opts).map(|from| (from, size))
        });
        match pick {
            Some((from, size)) => staged.push((i, from, size)),
            None => rest.push(*o),
        }
    }
    let mut events: Vec<Event> = Vec::new();
    for (i, from, size) in staged {
        let Some(tracked) = records[i]
            .as_ref()
            .and_then(|k| k.arg_memory().and_then(ArgMemory::tracked))
        else {
            continue;
        };
        match migrate_one(queue, objects[i], raws[i], tracked, from, size, wait, opts)? {
            Some(e) => events.push(e),
            None => rest.push(objects[i]),
        }
    }
    if !rest.is_empty() {
        events.push(migrate_plain(queue, &rest, flags, wait)?);
    }
    match events.len() {
        1 => Ok(events.remove(0)),
        _ => {
            let all: Vec<&Event> = events.iter().collect();
            queue.enqueue_marker(&all)
        }
    }
}

/// The size of `mem` when it is a root buffer (not a sub-buffer, image or pipe).
fn root_buffer_size(mem: sys::cl_mem) -> Option<usize> {
    // SAFETY: a valid memory object of the queue's context (checked by `migration_handles`);
    // 1.0 and 1.1 parameters.
    unsafe {
        let ty: sys::cl_mem_object_type =
            cl_raw::object::get_info(cl_raw::object::Object::Mem, mem, sys::CL_MEM_TYPE).ok()?;
        let parent: sys::cl_mem = cl_raw::object::get_info(
            cl_raw::object::Object::Mem,
            mem,
            sys::CL_MEM_ASSOCIATED_MEMOBJECT,
        )
        .ok()?;
        let size: usize =
            cl_raw::object::get_info(cl_raw::object::Object::Mem, mem, sys::CL_MEM_SIZE).ok()?;
        (ty == sys::CL_MEM_OBJECT_BUFFER && parent.is_null() && size > 0).then_some(size)
    }
}

/// One root buffer's staged migration to `queue`'s device (see the module documentation);
/// `None` when `Auto` falls back to the driver's migration (no temporary buffer).
#[expect(clippy::too_many_arguments, reason = "one object's migration")]
fn migrate_one(
    queue: &Queue,
    object: &dyn MemObject,
    raw: sys::cl_mem,
    tracked: &Tracked,
    from: Device,
    size: usize,
    wait: &[&Event],
    opts: &TransferOptions,
) -> Result<Option<Event>> {
    let tmp = match Buffer::new(queue.context(), crate::memory::MemFlags::READ_WRITE, size) {
        Ok(b) => b,
        Err(e) if opts.path == TransferPath::Auto && e.is_out_of_memory() => return Ok(None),
        Err(e) => return Err(e),
    };
    let src = Side {
        raw,
        tracked,
        offset: 0,
    };
    let dst = Side {
        raw: tmp.as_raw(),
        tracked: tmp.tracked(),
        offset: 0,
    };
    let landed = pipeline(queue, from, &src, &dst, size, wait, opts)?;
    // Waits for the chunk reads of `object` (a write: the record orders it after other queues'
    // reads); explicit waits for an out-of-order queue.
    let moved = migrate_plain(
        queue,
        &[object],
        MigrationFlags::CONTENT_UNDEFINED,
        &[&landed],
    )?;
    let uses = [
        (tmp.tracked(), None, Access::Read),
        (tracked, None, Access::Write),
    ];
    let ev = enqueue_tracked(queue, &[&landed, &moved], &uses, |list| {
        // SAFETY: valid queue and buffers of one context, both `size` bytes, distinct
        // allocations; we own the event.
        unsafe {
            let ev =
                raw_queue::enqueue_copy_buffer(queue.as_raw(), tmp.as_raw(), raw, 0, 0, size, list);
            Event::adopt(ev, "clEnqueueCopyBuffer")
        }
    })?;
    // The temporary's release waits for its commands (the driver keeps it until they ran).
    drop(tmp);
    Ok(Some(ev))
}

#[cfg(test)]
mod tests {
    use super::chunk_at;

    #[test]
    fn chunks_cover_the_range_once() {
        for (count, chunk) in [
            (1usize, 1usize),
            (10, 3),
            (4096, 4096),
            (4097, 4096),
            (5, 8),
        ] {
            let chunk = chunk.min(count);
            let n = count.div_ceil(chunk);
            let mut next = 0;
            for k in 0..n {
                let (off, len) = chunk_at(k, chunk, count);
                assert_eq!(off, next);
                assert!(len > 0 && len <= chunk);
                next = off + len;
            }
            assert_eq!(next, count);
        }
    }
}
