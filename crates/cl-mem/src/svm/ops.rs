//! SVM commands: fill (`clEnqueueSVMMemFill`), copies in every direction
//! (`clEnqueueSVMMemcpy`) and migration (`clEnqueueSVMMigrateMem`, 2.1).
//!
//! They take `&self`: the device writes, but no host reference into the memory can exist
//! meanwhile (host access needs `&mut SvmArray`). Non-blocking commands note their queue so the
//! free waits for it. A map whose guard was leaked (`mem::forget`) is unmapped first.

use std::ffi::c_void;

use cl_raw::{queue as raw_queue, Version};

use crate::buffer::tracked::MigrationFlags;
use crate::buffer::transfer::{host_range, host_transfers, CopyPair, Transfer};
use crate::error::{check_range, Error, Result};
use crate::pod::Pod;
use crate::raw_handle::RawHandle;
use crate::runtime::event::{checked_list, Event};
use crate::runtime::queue::Queue;

use super::core::Core;
use super::{Grain, SvmArray, SvmPointer};

/// `ptr + offset` for a checked in-bounds offset (null stays null: only for empty ranges).
fn offset_ptr(ptr: *mut c_void, offset: usize) -> *mut c_void {
    if ptr.is_null() {
        ptr
    } else {
        ptr.cast::<u8>().wrapping_add(offset).cast::<c_void>()
    }
}

/// The fill and copy core over bytes, shared by the typed methods.
fn fill_bytes_core(
    core: &Core,
    queue: &Queue,
    pattern: &[u8],
    offset: usize,
    byte_count: usize,
    wait: &[&Event],
) -> Result<Event> {
    core.check_queue(queue)?;
    let p = pattern.len();
    if !(p.is_power_of_two() && p <= 128) {
        return Err(Error::InvalidArgument(format!(
            "an SVM fill pattern has 1, 2, 4, ..., 128 bytes, got {p}"
        )));
    }
    for (what, value) in [
        ("SVM fill offset", offset),
        ("SVM fill byte count", byte_count),
    ] {
        if !value.is_multiple_of(p) {
            return Err(Error::Misaligned {
                what,
                value,
                alignment: p,
            });
        }
    }
    check_range("SVM fill", offset, byte_count, core.size())?;
    if byte_count == 0 {
        return queue.enqueue_marker(wait);
    }
    core.unmap_leftovers()?;
    let dst = offset_ptr(core.ptr(), offset);
    if !(dst as usize).is_multiple_of(p) {
        return Err(Error::Misaligned {
            what: "SVM fill address",
            value: dst as usize,
            alignment: p,
        });
    }
    let list = checked_list(queue, wait)?;
    // SAFETY: a 2.0+ platform (checked at allocation), a queue of its context; the range lies
    // in the live allocation (checked), which stays allocated until the command is done (the
    // queue is noted below); no host reference exists (host access needs `&mut`); the pattern
    // is copied by the driver before returning; we own the event.
    let ev = unsafe {
        let ev = raw_queue::enqueue_svm_mem_fill(queue.as_raw(), dst, pattern, byte_count, &list);
        Event::adopt(ev, "clEnqueueSVMMemFill")
    }?;
    core.note_use(queue);
    Ok(ev)
}

/// A device-side copy between two SVM ranges, non-blocking.
fn copy_core(
    queue: &Queue,
    dst: (&Core, usize),
    src: (&Core, usize),
    byte_count: usize,
    wait: &[&Event],
) -> Result<Event> {
    let (dcore, doff) = dst;
    let (score, soff) = src;
    dcore.check_queue(queue)?;
    score.check_queue(queue)?;
    check_range("SVM copy destination", doff, byte_count, dcore.size())?;
    check_range("SVM copy source", soff, byte_count, score.size())?;
    if byte_count == 0 {
        return queue.enqueue_marker(wait);
    }
    if std::ptr::eq(dcore, score) && doff < soff + byte_count && soff < doff + byte_count {
        return Err(Error::InvalidArgument(
            "SVM copy source and destination overlap (CL_MEM_COPY_OVERLAP)".into(),
        ));
    }
    dcore.unmap_leftovers()?;
    score.unmap_leftovers()?;
    // SAFETY: a 2.0+ platform; both ranges lie in live allocations of the queue's context,
    // which stay allocated until the command is done (both note the queue below); they do not
    // overlap; no host reference exists into either; we own the event.
    let ev = unsafe {
        let ev = raw_queue::enqueue_svm_memcpy(
            queue.as_raw(),
            false,
            offset_ptr(dcore.ptr(), doff),
            offset_ptr(score.ptr(), soff).cast_const(),
            byte_count,
            &checked_list(queue, wait)?,
        );
        Event::adopt(ev, "clEnqueueSVMMemcpy")
    }?;
    dcore.note_use(queue);
    score.note_use(queue);
    Ok(ev)
}

/// Copies `byte_count` bytes from `src` at `src_offset` to `dst` at `dst_offset` on the device
/// (non-blocking; PyOpenCL's `enqueue_copy` between SVM pointers, with explicit offsets where
/// PyOpenCL demands 0). Any grains mix.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for a queue of another context or overlapping ranges of one
/// allocation; [`Error::OutOfBounds`] past either end (all checked first); [`Error::Cl`] from
/// `clEnqueueSVMMemcpy`.
pub fn enqueue_svm_memcpy(
    queue: &Queue,
    dst: &dyn SvmPointer,
    dst_offset: usize,
    src: &dyn SvmPointer,
    src_offset: usize,
    byte_count: usize,
    wait: &[&Event],
) -> Result<Event> {
    copy_core(
        queue,
        (dst.core(), dst_offset),
        (src.core(), src_offset),
        byte_count,
        wait,
    )
}

/// Migrates whole allocations to the queue's device, or to the host with
/// [`MigrationFlags::HOST`] (OpenCL 2.1; PyOpenCL's `enqueue_svm_migratemem`). Empty
/// allocations are skipped; an empty list is a marker.
///
/// # Errors
///
/// [`Error::Unsupported`] when the platform or the queue's device is older than 2.1;
/// [`Error::InvalidArgument`] for allocations of another context (checked first); [`Error::Cl`]
/// from `clEnqueueSVMMigrateMem`.
pub fn enqueue_svm_migrate(
    queue: &Queue,
    svms: &[&dyn SvmPointer],
    flags: MigrationFlags,
    wait: &[&Event],
) -> Result<Event> {
    crate::error::check_known_bits(&flags, "migration flags")?;
    queue
        .context()
        .require_platform_version(Version::V2_1, "clEnqueueSVMMigrateMem")?;
    queue
        .device()
        .require_version(Version::V2_1, "clEnqueueSVMMigrateMem")?;
    let mut ptrs = Vec::with_capacity(svms.len());
    let mut sizes = Vec::with_capacity(svms.len());
    for s in svms {
        s.core().check_queue(queue)?;
        s.core().unmap_leftovers()?;
        if s.size_bytes() > 0 {
            ptrs.push(s.svm_ptr().cast_const());
            sizes.push(s.size_bytes());
        }
    }
    if ptrs.is_empty() {
        return queue.enqueue_marker(wait);
    }
    // SAFETY: a 2.1 platform and device (checked); every pointer is a live allocation of the
    // queue's context with its exact size, kept allocated until the command is done (each notes
    // the queue below); we own the event.
    let ev = unsafe {
        let ev = raw_queue::enqueue_svm_migrate_mem(
            queue.as_raw(),
            &ptrs,
            &sizes,
            flags.bits(),
            &checked_list(queue, wait)?,
        );
        Event::adopt(ev, "clEnqueueSVMMigrateMem")
    }?;
    for s in svms {
        s.core().note_use(queue);
    }
    Ok(ev)
}

impl<T: Pod, G: Grain> SvmArray<T, G> {
    host_transfers! {
        /// Fills with copies of `pattern` (its bytes: `&[value]`, an array, a byte slice;
        /// non-blocking) after `o`'s events: the whole allocation by default, or `o.byte_count`
        /// bytes (default: the rest) at `o.dst_offset`. The pattern's size must be a power of two
        /// up to 128 (`clEnqueueSVMMemFill`'s pattern sizes).
        ///
        /// # Errors
        ///
        /// Checked first: [`Error::InvalidArgument`] for such a pattern size, a queue of another
        /// context, or a rectangle or source offset in `o`; [`Error::Misaligned`] for an offset or
        /// count that is not a multiple of the pattern; [`Error::OutOfBounds`] past the end. Then
        /// [`Error::Cl`] from `clEnqueueSVMMemFill`.
        fill(self, queue, pattern, o) {
            let (offset, count) = o.fill_range("an SVM fill", self.size_bytes())?;
            fill_bytes_core(
                &self.core,
                queue,
                pattern.host_slice()?,
                offset,
                count,
                o.wait,
            )
        }

        /// Blocking copy of `src` (host memory: [`HostData`](crate::HostData)) into the allocation
        /// at `o.dst_offset` bytes (`o.src_offset` and `o.byte_count` pick part of `src`), after
        /// `o`'s events. Offsets and count are whole values of `T`.
        ///
        /// # Errors
        ///
        /// [`Error::Misaligned`] for an offset or count that is not a whole number of values,
        /// [`Error::OutOfBounds`] past the end of either side, [`Error::InvalidArgument`] for a
        /// queue of another context or a rectangle (checked first); [`Error::Cl`] from
        /// `clEnqueueSVMMemcpy`.
        write(self, queue, src, o) {
            in_elements::<T>(&o)?;
            self.core.check_queue(queue)?;
            let bytes = o.src_part(src.host_slice()?)?;
            whole::<T>("SVM copy byte count", bytes.len())?;
            // SAFETY: the queue is checked above; `bytes` is read only during the blocking call.
            unsafe {
                self.memcpy_host(
                    queue,
                    "SVM write",
                    o.dst_offset,
                    bytes.len(),
                    o.wait,
                    |svm| (svm, bytes.as_ptr().cast()),
                )
            }
        }

        /// Blocking copy from the allocation at `o.src_offset` bytes into `dst` (host memory:
        /// [`HostDataMut`](crate::HostDataMut); `o.dst_offset` and `o.byte_count` pick part of it),
        /// after `o`'s events.
        ///
        /// # Errors
        ///
        /// As [`SvmArray::write`].
        read(self, queue, dst, o) {
            in_elements::<T>(&o)?;
            self.core.check_queue(queue)?;
            let bytes = o.dst_part(dst.host_slice_mut()?)?;
            whole::<T>("SVM copy byte count", bytes.len())?;
            let host = bytes.as_mut_ptr().cast();
            // SAFETY: the queue is checked above; `bytes` is written only during the blocking
            // call, through our exclusive borrow.
            unsafe {
                self.memcpy_host(
                    queue,
                    "SVM read",
                    o.src_offset,
                    bytes.len(),
                    o.wait,
                    |svm| (host, svm.cast_const()),
                )
            }
        }
    }

    /// What `write` and `read` share once the host bytes are picked: the range check of `len`
    /// bytes at `off` (naming `what`), a marker for 0 bytes, leftover maps unmapped, then one
    /// blocking `clEnqueueSVMMemcpy` between the `(dst, src)` that `ends` makes of the
    /// allocation's address at `off`.
    ///
    /// # Safety
    ///
    /// 1. `queue` is of the allocation's context (the callers check it first, so that its error
    ///    comes before the host side's).
    /// 2. `ends(svm)` gives `svm` as one end and, as the other, host memory valid for `len` bytes
    ///    of writes (as `dst`) or reads (as `src`) that nothing else accesses during the call.
    unsafe fn memcpy_host(
        &self,
        queue: &Queue,
        what: &'static str,
        off: usize,
        len: usize,
        wait: &[&Event],
        ends: impl FnOnce(*mut c_void) -> (*mut c_void, *const c_void),
    ) -> Result<Event> {
        check_range(what, off, len, self.size_bytes())?;
        if len == 0 {
            return queue.enqueue_marker(wait);
        }
        self.core.unmap_leftovers()?;
        let (dst, src) = ends(offset_ptr(self.core.ptr(), off));
        let list = checked_list(queue, wait)?;
        // SAFETY: valid queue and allocation of one context (obligation 1); the range
        // is inside the allocation (checked); the host end is the caller's obligation; blocking;
        // we own the event.
        let ev = unsafe {
            let ev = raw_queue::enqueue_svm_memcpy(queue.as_raw(), true, dst, src, len, &list);
            Event::adopt(ev, "clEnqueueSVMMemcpy")
        }?;
        ev.finished_if(true)
    }
}

/// `bytes` in whole values of `T`; [`Error::Misaligned`] (naming `what`) when it is not.
fn whole<T>(what: &'static str, bytes: usize) -> Result<usize> {
    let elem = std::mem::size_of::<T>().max(1);
    if bytes.is_multiple_of(elem) {
        Ok(bytes / elem)
    } else {
        Err(Error::Misaligned {
            what,
            value: bytes,
            alignment: elem,
        })
    }
}

/// Byte offsets and count of `o` in whole values of `T`.
fn in_elements<T>(o: &Transfer<'_>) -> Result<(usize, usize, Option<usize>)> {
    o.no_rect("an SVM copy")?;
    Ok((
        whole::<T>("SVM copy source offset", o.src_offset)?,
        whole::<T>("SVM copy destination offset", o.dst_offset)?,
        o.byte_count
            .map(|n| whole::<T>("SVM copy byte count", n))
            .transpose()?,
    ))
}

impl<T: Pod, G: Grain> CopyPair for (&SvmArray<T, G>, &[T]) {
    fn enqueue(self, queue: &Queue, o: Transfer<'_>) -> Result<Event> {
        self.0.write(queue, self.1, o)
    }
}

impl<T: Pod, G: Grain> CopyPair for (&mut [T], &SvmArray<T, G>) {
    fn enqueue(self, queue: &Queue, o: Transfer<'_>) -> Result<Event> {
        self.1.read(queue, self.0, o)
    }
}

/// Whole allocations of one length (use [`enqueue_svm_memcpy`] for offsets and counts).
impl<T: Pod, G: Grain, G2: Grain> CopyPair for (&SvmArray<T, G>, &SvmArray<T, G2>) {
    fn enqueue(self, queue: &Queue, o: Transfer<'_>) -> Result<Event> {
        let (dst, src) = self;
        if o.src_offset != 0 || o.dst_offset != 0 || o.byte_count.is_some() || o.rect.is_some() {
            return Err(Error::InvalidArgument(
                "an SVM to SVM enqueue_copy copies whole allocations; use enqueue_svm_memcpy for \
                 offsets and counts"
                    .into(),
            ));
        }
        if src.len() != dst.len() {
            return Err(Error::InvalidArgument(format!(
                "SVM copy of {} values into {}: sizes of source and destination do not match",
                src.len(),
                dst.len()
            )));
        }
        copy_core(
            queue,
            (&dst.core, 0),
            (&src.core, 0),
            dst.size_bytes(),
            o.wait,
        )
    }
}

// SVM <-> buffer, through a map of the buffer (so on every device, whatever its SVM grain): the
// buffer's bytes are mapped, then copied with clEnqueueSVMMemcpy, then unmapped; the map is a
// claim on the buffer's record like any other.
impl<T: Pod, G: Grain, B: crate::buffer::AsBuffer + ?Sized> CopyPair for (&SvmArray<T, G>, &B) {
    fn enqueue(self, queue: &Queue, o: Transfer<'_>) -> Result<Event> {
        let (src, dst, count) = in_elements::<T>(&o)?;
        let buffer = self.1.as_buffer();
        let len = buffer.len_of::<T>();
        let (a, b) = host_range(len, src, count)?;
        let map = buffer.map::<T, _>(queue, crate::buffer::map::ReadOnly, a..b, o.wait)?;
        let ev = self.0.write(
            queue,
            &*map,
            Transfer::default().dst_offset(dst * std::mem::size_of::<T>()),
        )?;
        map.unmap(&[])?.wait()?;
        Ok(ev)
    }
}

impl<T: Pod, G: Grain, B: crate::buffer::AsBuffer + ?Sized> CopyPair for (&B, &SvmArray<T, G>) {
    fn enqueue(self, queue: &Queue, o: Transfer<'_>) -> Result<Event> {
        let (src, dst, count) = in_elements::<T>(&o)?;
        let buffer = self.0.as_buffer();
        let len = buffer.len_of::<T>();
        let (a, b) = host_range(len, dst, count)?;
        let mut map =
            buffer.map::<T, _>(queue, crate::buffer::map::MapFlags::WRITE, a..b, o.wait)?;
        let ev = self.1.read(
            queue,
            &mut *map,
            Transfer::default().src_offset(src * std::mem::size_of::<T>()),
        )?;
        map.unmap(&[])?.wait()?;
        Ok(ev)
    }
}
