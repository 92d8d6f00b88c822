//! Maps of buffer regions (`clEnqueueMapBuffer` / `clEnqueueUnmapMemObject`): PyOpenCL's
//! `enqueue_map_buffer` and `MemoryMap`.
//!
//! Two ways in, both unmapping exactly once:
//!
//! - a scope, [`Buffer::with_map`], in the manner of
//!   `std::thread::scope`: the slice exists only inside the closure and the region is unmapped
//!   (and the unmap waited for) before the call returns, even when the closure panics;
//! - a guard, [`MapRead`] / [`MapMut`] (and [`PendingMap`] for non-blocking maps), which borrows
//!   the buffer and the queue, so it cannot outlive either, and dereferences to the slice. Its
//!   `Drop` unmaps and waits; [`MapMut::unmap`] returns the unmap event instead. Forgetting a
//!   guard (`mem::forget`) leaves the region mapped but leaks no access: every slice borrowed
//!   from the guard ended before the guard could be moved into `forget`.
//!
//! PyOpenCL's `MemoryMap.release()` unmaps again when called twice (reference §9.10); here
//! `unmap(self)` consumes the guard. PyOpenCL does not validate map strides against the
//! mapped size; the typed maps here always cover exactly `len * size_of::<T>()` bytes, and the
//! ndarray views check shape and order against that size.

use std::ffi::c_void;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut, RangeBounds};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

use bitflags::bitflags;
use cl_raw::{queue as raw_queue, sys, Version};

use crate::buffer::{resolve_range, Buffer};
use crate::error::{Error, Result};
use crate::memory::MemFlags;
use crate::pod::Pod;
use crate::raw_handle::RawHandle;
use crate::runtime::event::{checked_list, Event};
use crate::runtime::queue::Queue;
use crate::runtime::track::{Access, Claim};

bitflags! {
    /// `cl_map_flags` (PyOpenCL's `map_flags`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct MapFlags: sys::cl_map_flags {
        /// `CL_MAP_READ`.
        const READ = sys::CL_MAP_READ;
        /// `CL_MAP_WRITE`.
        const WRITE = sys::CL_MAP_WRITE;
        /// `CL_MAP_WRITE_INVALIDATE_REGION` (1.2): the region's old contents are not needed;
        /// excludes `READ` and `WRITE`.
        const WRITE_INVALIDATE_REGION = sys::CL_MAP_WRITE_INVALIDATE_REGION;
    }
}

/// One open mapping: unmaps on drop.
struct Mapping<'a> {
    buffer: &'a Buffer,
    queue: &'a Queue,
    ptr: *mut c_void,
    open: bool,
    /// The map event: the unmap waits for it (out-of-order queues; a blocking map whose wait
    /// failed).
    after: Option<Event>,
    /// The map's claim on its bytes in the allocation's record; released after the unmap.
    claim: Option<Claim>,
    /// A writable map: its unmap is recorded as a write.
    write: bool,
}

impl Mapping<'_> {
    fn unmap(&mut self, wait: &[&Event]) -> Result<Event> {
        // `open` is cleared only once the unmap is enqueued: after a failure (an out-of-memory
        // status, issue 16) the region is still mapped in the driver, so `Drop` unmaps again
        // and the claim stays until then. Clearing it first leaked the mapping (and the
        // driver's reference to the buffer) for good.
        let mut list = checked_list(self.queue, wait)?;
        if let Some(e) = &self.after {
            list.push(e.as_raw());
        }
        // SAFETY: valid queue/buffer/events of one context; `ptr` came from a map of this
        // buffer that is still open (`open` was true and is cleared before any other unmap); no
        // slice of it survives (they borrow the guard, which is being consumed or dropped).
        let ev = unsafe {
            crate::buffer::tracked::enqueue_unmap(
                self.queue,
                self.buffer.as_raw(),
                self.buffer.tracked(),
                self.ptr,
                self.write,
                list,
            )
        }?;
        self.open = false;
        // The bytes are free for commands again: the unmap is recorded, and commands on other
        // queues wait for it.
        self.claim = None;
        Ok(ev)
    }
}

impl Drop for Mapping<'_> {
    fn drop(&mut self) {
        if self.open {
            match self.unmap(&[]).and_then(|e| e.wait()) {
                Ok(()) => {}
                Err(e) => crate::error::drop_error("unmapping a buffer", &e),
            }
        }
    }
}

/// A read-only mapped region of a buffer as `&[T]`; see the module documentation.
pub struct MapRead<'a, T: Pod> {
    map: Mapping<'a>,
    len: usize,
    _t: PhantomData<&'a [T]>,
}

/// A writable mapped region of a buffer as `&mut [T]`; see the module documentation.
pub struct MapMut<'a, T: Pod> {
    map: Mapping<'a>,
    len: usize,
    _t: PhantomData<&'a mut [T]>,
}

// SAFETY: the guard gives access to `[T]` (T: Pod is Send + Sync) in host memory the driver
// keeps mapped; OpenCL calls (the unmap in drop) are thread-safe.
unsafe impl<T: Pod> Send for MapRead<'_, T> {}
// SAFETY: as for `Send`; `&MapRead` only gives `&[T]`.
unsafe impl<T: Pod> Sync for MapRead<'_, T> {}
// SAFETY: as for `MapRead`.
unsafe impl<T: Pod> Send for MapMut<'_, T> {}
// SAFETY: `&MapMut` only gives `&[T]`.
unsafe impl<T: Pod> Sync for MapMut<'_, T> {}

/// What both guards share: `Deref` to `[T]`, `unmap` (with the guard's own doc) and `Debug`.
macro_rules! map_guards {
    ($($(#[$unmap_doc:meta])* $guard:ident;)*) => {$(
        impl<T: Pod> Deref for $guard<'_, T> {
            type Target = [T];
            fn deref(&self) -> &[T] {
                // SAFETY: the map completed (blocking, or waited for by `PendingMap::wait`),
                // covers `len` aligned `T`s (checked in `map_region`), and stays mapped while
                // `self` lives.
                unsafe { std::slice::from_raw_parts(self.map.ptr.cast::<T>(), self.len) }
            }
        }

        impl<T: Pod> $guard<'_, T> {
            $(#[$unmap_doc])*
            ///
            /// # Errors
            ///
            /// [`Error::Cl`] from `clEnqueueUnmapMemObject`.
            pub fn unmap(mut self, wait: &[&Event]) -> Result<Event> {
                self.map.unmap(wait)
            }
        }

        impl<T: Pod> fmt::Debug for $guard<'_, T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($guard))
                    .field("ptr", &self.map.ptr)
                    .field("len", &self.len)
                    .finish()
            }
        }
    )*};
}

map_guards! {
    /// Unmaps now after `wait`, returning the unmap event (`Drop` unmaps and waits).
    MapRead;
    /// Unmaps now after `wait`, returning the unmap event (`Drop` unmaps and waits). Later
    /// commands on another queue or an out-of-order queue must wait for this event to see the
    /// host's writes.
    MapMut;
}

impl<T: Pod> DerefMut for MapMut<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as for `Deref`; the map allows writes and `&mut self` makes access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.map.ptr.cast::<T>(), self.len) }
    }
}

/// A non-blocking map in flight: [`PendingMap::wait`] gives the guard once the map completed.
/// Dropping it waits and unmaps.
#[must_use = "a pending map must be waited for to reach the memory"]
pub struct PendingMap<'a, G> {
    event: Event,
    guard: G,
    _l: PhantomData<&'a ()>,
}

impl<'a, G> PendingMap<'a, G> {
    /// The map command's event.
    pub fn event(&self) -> &Event {
        &self.event
    }

    /// Waits for the map and returns the guard.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clWaitForEvents` (the region is then unmapped by the guard's drop).
    pub fn wait(self) -> Result<G> {
        self.event.wait()?;
        Ok(self.guard)
    }
}

impl<G> fmt::Debug for PendingMap<'_, G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingMap")
            .field("event", &self.event)
            .finish()
    }
}

impl Buffer {
    /// Maps `bytes` bytes at `offset` for `flags`; returns the mapping and the map event.
    fn map_region<'a, T: Pod>(
        &'a self,
        queue: &'a Queue,
        flags: MapFlags,
        range: impl RangeBounds<usize>,
        blocking: bool,
        wait: &[&Event],
    ) -> Result<(Mapping<'a>, usize, Event)> {
        let _span = tracing::debug_span!("cl_mem::map", write = flags.intersects(MapFlags::WRITE | MapFlags::WRITE_INVALIDATE_REGION), blocking, elem_bytes = std::mem::size_of::<T>(), queue = ?queue.as_raw(), device = ?queue.device().as_raw()).entered();
        let n = std::mem::size_of::<T>();
        if n == 0 {
            return Err(Error::InvalidArgument(
                "cannot map zero-sized elements".into(),
            ));
        }
        let (start, end) = resolve_range(range, self.len_of::<T>())?;
        let (offset, bytes) = (start * n, (end - start) * n);
        self.check_queue(queue)?;
        check_map_flags(self.flags(), flags)?;
        if flags.contains(MapFlags::WRITE_INVALIDATE_REGION) {
            queue
                .context()
                .require_platform_version(Version::V1_2, "CL_MAP_WRITE_INVALIDATE_REGION")?;
        }
        let write = flags.intersects(MapFlags::WRITE | MapFlags::WRITE_INVALIDATE_REGION);
        // Exclusive: refused when the bytes are mapped for writing (or mapped at all, for a
        // writable map); waits for commands of other queues that are still writing them.
        let (claim, extra) = self.tracked().claim_map(queue, (offset, bytes), write)?;
        let mut list = checked_list(queue, wait)?;
        list.extend(extra.iter().map(Event::as_raw));
        // Enqueued non-blocking under the allocation's map lock and waited for below (see
        // `Tracked::map_command`: PoCL 3.1 crashes on map commands of one buffer running together).
        let (ptr, ev) = self.tracked().map_command(queue, list, |list| {
            // SAFETY: valid queue/buffer/events of one context; the range is in bounds; the
            // pointer is only dereferenced by the guards after the map completed (waited for
            // below when `blocking`, else through `PendingMap`), as `flags` allow, until the
            // guard unmaps; we own the event.
            let (ptr, ev) = unsafe {
                raw_queue::enqueue_map_buffer(
                    queue.as_raw(),
                    self.as_raw(),
                    false,
                    flags.bits(),
                    offset,
                    bytes,
                    list,
                )
            }
            .map_err(Error::cl("clEnqueueMapBuffer"))?;
            // SAFETY: a fresh reference we own.
            Ok((ptr, unsafe { Event::from_raw(ev) }))
        })?;
        self.tracked().record(queue, Access::Read, &ev);
        let map = Mapping {
            buffer: self,
            queue,
            ptr,
            open: true,
            after: Some(ev.clone()),
            claim: Some(claim),
            write,
        };
        if blocking {
            // On failure `map` unmaps when dropped here.
            ev.wait()?;
        }
        // On error `map` unmaps when dropped here.
        crate::error::check_aligned_ptr::<T>("mapped pointer", ptr)?;
        Ok((map, end - start, ev))
    }

    /// Blocking map of a range of `T` elements (`..` for all) after `wait`: PyOpenCL's
    /// `enqueue_map_buffer`. The mode picks the guard: [`ReadOnly`] gives a [`MapRead`] (`&[T]`),
    /// [`MapFlags`] holding `WRITE` (optionally with `READ`) or `WRITE_INVALIDATE_REGION` alone
    /// give a [`MapMut`] (`&mut [T]`).
    ///
    /// ```ignore
    /// let m = buf.map::<f32, _>(&queue, ReadOnly, .., &[])?;
    /// let mut w = buf.map::<f32, _>(&queue, MapFlags::WRITE, 0..4, &[])?;
    /// ```
    ///
    /// # Errors
    ///
    /// Checked first: [`Error::InvalidArgument`] for an empty range, a queue of another context,
    /// a buffer the host may not access that way (`HOST_WRITE_ONLY`, `HOST_NO_ACCESS`, ...),
    /// writable flags without a write flag or mixing `WRITE_INVALIDATE_REGION` with
    /// `READ`/`WRITE`; [`Error::OutOfBounds`] past the end; [`Error::Unsupported`] for
    /// `WRITE_INVALIDATE_REGION` below OpenCL 1.2. Then [`Error::Cl`] from `clEnqueueMapBuffer`,
    /// and [`Error::Misaligned`] when the driver's pointer is not aligned for `T`.
    pub fn map<'a, T: Pod, M: MapMode>(
        &'a self,
        queue: &'a Queue,
        mode: M,
        range: impl RangeBounds<usize>,
        wait: &[&Event],
    ) -> Result<M::Guard<'a, T>> {
        let (map, len, _ev) = self.map_region::<T>(queue, mode.flags()?, range, true, wait)?;
        Ok(M::guard(MapMut {
            map,
            len,
            _t: PhantomData,
        }))
    }

    /// Non-blocking [`Buffer::map`]: [`PendingMap::wait`] gives the guard once the map
    /// completed.
    ///
    /// # Errors
    ///
    /// As [`Buffer::map`].
    pub fn enqueue_map<'a, T: Pod, M: MapMode>(
        &'a self,
        queue: &'a Queue,
        mode: M,
        range: impl RangeBounds<usize>,
        wait: &[&Event],
    ) -> Result<PendingMap<'a, M::Guard<'a, T>>> {
        let (map, len, event) = self.map_region::<T>(queue, mode.flags()?, range, false, wait)?;
        Ok(PendingMap {
            event,
            guard: M::guard(MapMut {
                map,
                len,
                _t: PhantomData,
            }),
            _l: PhantomData,
        })
    }

    /// Maps a range of `T`s as [`Buffer::map`] does, runs `f` on the slice (`&[T]` for
    /// [`ReadOnly`], `&mut [T]` for writable flags), then unmaps and waits for the unmap (also when
    /// `f` panics). The slice cannot escape `f`.
    ///
    /// ```ignore
    /// let sum: f32 = buf.with_map(&queue, ReadOnly, .., |s: &[f32]| s.iter().sum())?;
    /// buf.with_map(&queue, MapFlags::WRITE, 0..4, |s: &mut [f32]| s.fill(1.0))?;
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Buffer::map`], plus [`Error::Cl`] from the unmap.
    pub fn with_map<'a, T: Pod, M: MapMode, R>(
        &'a self,
        queue: &'a Queue,
        mode: M,
        range: impl RangeBounds<usize>,
        f: impl for<'s> FnOnce(M::Slice<'s, T>) -> R,
    ) -> Result<R> {
        let mut guard = self.map::<T, M>(queue, mode, range, &[])?;
        let r = catch_unwind(AssertUnwindSafe(|| f(M::slice(&mut guard))));
        match r {
            Ok(r) => {
                M::unmap(guard)?;
                Ok(r)
            }
            Err(p) => {
                drop(guard);
                resume_unwind(p)
            }
        }
    }
}

/// Which way a map goes, and so which guard it gives: [`ReadOnly`] (a [`MapRead`]), or writable
/// [`MapFlags`] (a [`MapMut`]); for SVM see [`SvmMapMode`](crate::svm::SvmMapMode). Sealed.
pub trait MapMode: Copy + sealed::Sealed {
    /// The guard of a buffer map.
    type Guard<'a, T: Pod>;
    /// The slice the scope forms ([`Buffer::with_map`], `SvmArray::with_map`) hand out.
    type Slice<'s, T: Pod + 's>;
    #[doc(hidden)]
    fn slice<'s, T: Pod>(guard: &'s mut Self::Guard<'_, T>) -> Self::Slice<'s, T>;
    #[doc(hidden)]
    fn flags(self) -> Result<MapFlags>;
    #[doc(hidden)]
    fn guard<T: Pod>(map: MapMut<'_, T>) -> Self::Guard<'_, T>;
    #[doc(hidden)]
    fn unmap<T: Pod>(guard: Self::Guard<'_, T>) -> Result<()>;
}

/// A read-only map ([`MapMode`]): `CL_MAP_READ`, the guard gives `&[T]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ReadOnly;

/// Seals [`MapMode`]: [`ReadOnly`] and [`MapFlags`] only.
pub(crate) mod sealed {
    pub trait Sealed {}
    impl Sealed for super::ReadOnly {}
    impl Sealed for super::MapFlags {}
}

impl MapMode for ReadOnly {
    type Guard<'a, T: Pod> = MapRead<'a, T>;
    type Slice<'s, T: Pod + 's> = &'s [T];
    fn slice<'s, T: Pod>(guard: &'s mut MapRead<'_, T>) -> &'s [T] {
        guard
    }
    fn flags(self) -> Result<MapFlags> {
        Ok(MapFlags::READ)
    }
    fn guard<T: Pod>(m: MapMut<'_, T>) -> MapRead<'_, T> {
        MapRead {
            map: m.map,
            len: m.len,
            _t: PhantomData,
        }
    }
    fn unmap<T: Pod>(guard: MapRead<'_, T>) -> Result<()> {
        guard.unmap(&[])?.wait()
    }
}

/// Writable maps: `WRITE` (optionally with `READ`) or `WRITE_INVALIDATE_REGION` alone.
impl MapMode for MapFlags {
    type Guard<'a, T: Pod> = MapMut<'a, T>;
    type Slice<'s, T: Pod + 's> = &'s mut [T];
    fn slice<'s, T: Pod>(guard: &'s mut MapMut<'_, T>) -> &'s mut [T] {
        guard
    }
    fn flags(self) -> Result<MapFlags> {
        crate::error::check_known_bits(&self, "map flags")?;
        require_write(self)?;
        Ok(self)
    }
    fn guard<T: Pod>(m: MapMut<'_, T>) -> MapMut<'_, T> {
        m
    }
    fn unmap<T: Pod>(guard: MapMut<'_, T>) -> Result<()> {
        guard.unmap(&[])?.wait()
    }
}

fn require_write(flags: MapFlags) -> Result<()> {
    if flags.intersects(MapFlags::WRITE | MapFlags::WRITE_INVALIDATE_REGION) {
        Ok(())
    } else {
        Err(Error::InvalidArgument(
            "a writable map needs WRITE or WRITE_INVALIDATE_REGION".into(),
        ))
    }
}

/// The flag rules of `clEnqueueMapBuffer` (OpenCL 3.0 §5.2.5), checked before the call.
pub(crate) fn check_map_flags(buffer: MemFlags, flags: MapFlags) -> Result<()> {
    crate::error::check_known_bits(&flags, "map flags")?;
    if flags.is_empty() {
        return Err(Error::InvalidArgument("map flags are empty".into()));
    }
    if flags.contains(MapFlags::WRITE_INVALIDATE_REGION)
        && flags.intersects(MapFlags::READ | MapFlags::WRITE)
    {
        return Err(Error::InvalidArgument(
            "WRITE_INVALIDATE_REGION excludes READ and WRITE".into(),
        ));
    }
    let reads = flags.contains(MapFlags::READ);
    let writes = flags.intersects(MapFlags::WRITE | MapFlags::WRITE_INVALIDATE_REGION);
    // A known, non-empty set reads or writes (or both).
    if reads {
        buffer.check_host_access(true, "mapped memory")?;
    }
    if writes {
        buffer.check_host_access(false, "mapped memory")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_flag_rules() {
        let rw = MemFlags::READ_WRITE;
        assert!(check_map_flags(rw, MapFlags::READ).is_ok());
        // Bits OpenCL does not define are refused here and by the SVM maps' mode.
        let unknown = MapFlags::from_bits_retain(MapFlags::WRITE.bits() | 1 << 7);
        assert!(matches!(
            check_map_flags(rw, unknown),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            MapMode::flags(unknown),
            Err(Error::InvalidArgument(_))
        ));
        assert!(check_map_flags(rw, MapFlags::READ | MapFlags::WRITE).is_ok());
        assert!(check_map_flags(rw, MapFlags::WRITE_INVALIDATE_REGION).is_ok());
        assert!(check_map_flags(rw, MapFlags::empty()).is_err());
        assert!(check_map_flags(rw, MapFlags::WRITE_INVALIDATE_REGION | MapFlags::READ).is_err());
        assert!(check_map_flags(MemFlags::HOST_NO_ACCESS, MapFlags::READ).is_err());
        assert!(check_map_flags(MemFlags::HOST_WRITE_ONLY, MapFlags::READ).is_err());
        assert!(check_map_flags(MemFlags::HOST_WRITE_ONLY, MapFlags::WRITE).is_ok());
        assert!(check_map_flags(MemFlags::HOST_READ_ONLY, MapFlags::WRITE).is_err());
        assert!(require_write(MapFlags::READ).is_err());
    }
}
