//! Host access through `clEnqueueSVMMap`: [`SvmMap`], [`SvmMapMut`] and the `with_map_*` scopes.

use std::ffi::c_void;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Bound, Deref, DerefMut, Range, RangeBounds};
use std::sync::Arc;

use cl_raw::{queue as raw_queue, sys};

use crate::buffer::map::{MapFlags, MapMode, ReadOnly};
use crate::error::{Error, Result};
use crate::pod::Pod;
use crate::raw_handle::RawHandle;
use crate::runtime::event::{raw_list, Event};
use crate::runtime::queue::Queue;

use super::core::Core;
use super::{Grain, SvmArray};

/// A live `clEnqueueSVMMap` of one range; unmapped (and waited for) once. Registered in the
/// allocation's [`Core`] so that a guard leaked with `mem::forget` is unmapped before the next
/// map, host access or free.
///
/// The guard holds no OpenCL reference: the queue lives in the allocation's list of maps, so a
/// guard forgotten with `mem::forget` leaks nothing (the entry is unmapped and dropped by the
/// next map, host access or free).
pub(crate) struct Mapping<'a> {
    core: &'a Core,
    /// False once unmapped, or when nothing was mapped (an empty range).
    open: bool,
    id: u64,
}

impl Mapping<'_> {
    fn unmap(&mut self) -> Result<()> {
        if !std::mem::replace(&mut self.open, false) {
            return Ok(());
        }
        self.core.unmap_map(self.id)
    }
}

/// Enqueues `clEnqueueSVMUnmap` of `base` on `queue` and waits for it.
pub(crate) fn unmap_now(queue: &Queue, base: *mut c_void) -> Result<()> {
    // SAFETY: `base` was mapped on `queue` by `map_core` and is unmapped once (callers take it
    // out of the mapping or the allocation's list first); the host reference derived from it
    // ended with the guard; we own the event.
    let ev = unsafe {
        let ev = raw_queue::enqueue_svm_unmap(queue.as_raw(), base, &[]);
        Event::adopt(ev, "clEnqueueSVMUnmap")
    }?;
    // Waiting keeps cross-queue use simple: once the guard is gone the memory is unmapped,
    // whatever queue the next command goes to.
    ev.wait()
}

impl Drop for Mapping<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.unmap() {
            crate::error::drop_error("clEnqueueSVMUnmap", &e);
        }
    }
}

/// A read-only map of SVM: derefs to `&[T]`; unmapped on drop (or [`SvmMap::release`]).
///
/// Borrows the [`SvmArray`] mutably, so nothing can enqueue work on it meanwhile; forgetting the
/// guard leaves the region mapped but leaves no reference to it (sound).
pub struct SvmMap<'a, T: Pod> {
    mapping: Mapping<'a>,
    ptr: *const T,
    len: usize,
    _borrow: PhantomData<&'a [T]>,
}

/// A read-write map of SVM: derefs to `&mut [T]`; unmapped on drop (or [`SvmMapMut::release`]).
/// See [`SvmMap`].
pub struct SvmMapMut<'a, T: Pod> {
    mapping: Mapping<'a>,
    ptr: *mut T,
    len: usize,
    _borrow: PhantomData<&'a mut [T]>,
}

/// What both guards share: `release`, `Deref` to `[T]` and `Debug`.
macro_rules! map_guards {
    ($($guard:ident),*) => {$(
        impl<T: Pod> $guard<'_, T> {
            /// Unmaps now, reporting failure (`Drop` only logs it).
            ///
            /// # Errors
            ///
            /// [`Error::Cl`] from `clEnqueueSVMUnmap` or the wait.
            pub fn release(mut self) -> Result<()> {
                self.mapping.unmap()
            }
        }

        impl<T: Pod> Deref for $guard<'_, T> {
            type Target = [T];
            fn deref(&self) -> &[T] {
                if self.len == 0 {
                    return &[];
                }
                // SAFETY: a mapped, live range of `len` values (the guard borrows the array);
                // `Pod`.
                unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
            }
        }

        impl<T: Pod> fmt::Debug for $guard<'_, T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($guard))
                    .field("ptr", &self.ptr)
                    .field("len", &self.len)
                    .finish()
            }
        }
    )*};
}

map_guards!(SvmMap, SvmMapMut);

impl<T: Pod> DerefMut for SvmMapMut<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: a range mapped for writing; the guard holds the array's exclusive borrow and
        // `&mut self` makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

/// Maps `range` (in values of `T`) of the allocation of `len` values behind `core` on `queue`,
/// after every queue that used the memory. Callers hold `&mut` of the owner.
pub(crate) fn map_core<'a, T: Pod>(
    core: &'a Arc<Core>,
    len_total: usize,
    queue: &Queue,
    range: Range<usize>,
    flags: sys::cl_map_flags,
) -> Result<(Mapping<'a>, *mut T, usize)> {
    core.check_queue(queue)?;
    core.unmap_leftovers()?;
    let elem = std::mem::size_of::<T>();
    if range.start > range.end || range.end > len_total {
        return Err(Error::OutOfBounds {
            what: "SVM map",
            offset: range.start.saturating_mul(elem),
            len: range.end.saturating_sub(range.start).saturating_mul(elem),
            size: core.size(),
        });
    }
    let len = range.end - range.start;
    if len == 0 || elem == 0 {
        let mapping = Mapping {
            core,
            open: false,
            id: 0,
        };
        // Zero-size values need no memory: all `len` of them live at a dangling address.
        let n = if elem == 0 { len } else { 0 };
        return Ok((mapping, std::ptr::NonNull::dangling().as_ptr(), n));
    }
    // SAFETY: `range` is inside the allocation (checked).
    let ptr = unsafe { core.ptr().cast::<T>().add(range.start) };
    // Registered before anything is enqueued: kernels holding the allocation are refused from
    // here on (Error::Mapped), and those already past their check are waited for, so the
    // markers below cover every command that may touch the memory.
    let id = core.remember_map(queue, ptr.cast::<c_void>());
    core.wait_for_enqueues();
    let mapping = Mapping {
        core,
        open: false,
        id,
    };
    let markers = match core.pending_markers(Some(queue)) {
        Ok(m) => m,
        Err(e) => {
            core.forget_map(id);
            return Err(e);
        }
    };
    let waits: Vec<&Event> = markers.iter().collect();
    // SAFETY: a 2.0+ platform (checked at allocation) and a queue of its context (checked);
    // the range lies in the allocation; the map is blocking and waits for every queue that used
    // the memory, and kernels holding it cannot enqueue while it is registered, so the host
    // reference made from it races with nothing; `Mapping` unmaps it once.
    let raw = unsafe {
        raw_queue::enqueue_svm_map(
            queue.as_raw(),
            true,
            flags,
            ptr.cast::<c_void>(),
            len * elem,
            &raw_list(&waits),
        )
    };
    let raw = match raw {
        Ok(r) => r,
        Err(e) => {
            core.forget_map(id);
            return Err(Error::cl("clEnqueueSVMMap")(e));
        }
    };
    // SAFETY: a fresh reference we own; the map is complete (blocking).
    drop(unsafe { Event::from_raw(raw) });
    let mut mapping = mapping;
    mapping.open = true;
    Ok((mapping, ptr, len))
}

impl<'a, T: Pod> SvmMap<'a, T> {
    pub(crate) fn from_parts((mapping, ptr, len): (Mapping<'a>, *mut T, usize)) -> Self {
        SvmMap {
            mapping,
            ptr: ptr.cast_const(),
            len,
            _borrow: PhantomData,
        }
    }
}

impl<'a, T: Pod> SvmMapMut<'a, T> {
    pub(crate) fn from_parts((mapping, ptr, len): (Mapping<'a>, *mut T, usize)) -> Self {
        SvmMapMut {
            mapping,
            ptr,
            len,
            _borrow: PhantomData,
        }
    }
}

impl<'a, T: Pod> SvmMapMut<'a, T> {
    /// The same mapping, read-only (a map made with `CL_MAP_READ` only).
    pub(crate) fn into_read_only(self) -> SvmMap<'a, T> {
        SvmMap {
            mapping: self.mapping,
            ptr: self.ptr.cast_const(),
            len: self.len,
            _borrow: PhantomData,
        }
    }
}

/// The SVM side of a [`MapMode`]: the guard an SVM map of that mode gives, [`SvmMap`] for
/// [`ReadOnly`], [`SvmMapMut`] for writable [`MapFlags`]. Sealed (through [`MapMode`]).
pub trait SvmMapMode: MapMode {
    /// The guard of an SVM map.
    type SvmGuard<'a, T: Pod>;
    #[doc(hidden)]
    fn svm_slice<'s, T: Pod>(guard: &'s mut Self::SvmGuard<'_, T>) -> Self::Slice<'s, T>;
    #[doc(hidden)]
    fn svm_guard<T: Pod>(map: SvmMapMut<'_, T>) -> Self::SvmGuard<'_, T>;
    #[doc(hidden)]
    fn svm_release<T: Pod>(guard: Self::SvmGuard<'_, T>) -> Result<()>;
}

impl SvmMapMode for ReadOnly {
    type SvmGuard<'a, T: Pod> = SvmMap<'a, T>;
    fn svm_slice<'s, T: Pod>(guard: &'s mut SvmMap<'_, T>) -> &'s [T] {
        guard
    }
    fn svm_guard<T: Pod>(m: SvmMapMut<'_, T>) -> SvmMap<'_, T> {
        m.into_read_only()
    }
    fn svm_release<T: Pod>(guard: SvmMap<'_, T>) -> Result<()> {
        guard.release()
    }
}

impl SvmMapMode for MapFlags {
    type SvmGuard<'a, T: Pod> = SvmMapMut<'a, T>;
    fn svm_slice<'s, T: Pod>(guard: &'s mut SvmMapMut<'_, T>) -> &'s mut [T] {
        guard
    }
    fn svm_guard<T: Pod>(m: SvmMapMut<'_, T>) -> SvmMapMut<'_, T> {
        m
    }
    fn svm_release<T: Pod>(guard: SvmMapMut<'_, T>) -> Result<()> {
        guard.release()
    }
}

impl<T: Pod, G: Grain> SvmArray<T, G> {
    /// Maps `range` (in values, `..` for all; PyOpenCL's `map_ro` / `map_rw`), blocking, after
    /// every queue that used it. The mode picks the guard: [`ReadOnly`](crate::ReadOnly) gives
    /// an [`SvmMap`] (`&[T]`), [`MapFlags`](crate::MapFlags) with a write flag an [`SvmMapMut`]
    /// (`&mut [T]`). An empty range calls nothing. (PyOpenCL's `map` validates its `size` and
    /// then maps everything; this maps what was asked.)
    ///
    /// # Errors
    ///
    /// [`Error::OutOfBounds`] past the end, [`Error::InvalidArgument`] for a queue of another
    /// context or writable flags without a write flag (checked first); [`Error::SvmInUse`] while
    /// a kernel holds it as an argument; [`Error::Cl`] from the markers or `clEnqueueSVMMap`.
    pub fn map<M: SvmMapMode>(
        &mut self,
        queue: &Queue,
        mode: M,
        range: impl RangeBounds<usize>,
    ) -> Result<M::SvmGuard<'_, T>> {
        let flags = mode.flags()?;
        let range = values(range, self.len())?;
        let parts = map_core(&self.core, self.len(), queue, range, flags.bits())?;
        Ok(M::svm_guard(SvmMapMut::from_parts(parts)))
    }

    /// Runs `f` on the slice of a map of `range` as [`SvmArray::map`] makes it (`&[T]` for
    /// [`ReadOnly`](crate::ReadOnly), `&mut [T]` for writable flags), then unmaps (the scope form:
    /// nothing can be forgotten).
    ///
    /// # Errors
    ///
    /// As [`SvmArray::map`], plus [`Error::Cl`] from the unmap.
    pub fn with_map<M: SvmMapMode, R>(
        &mut self,
        queue: &Queue,
        mode: M,
        range: impl RangeBounds<usize>,
        f: impl for<'s> FnOnce(M::Slice<'s, T>) -> R,
    ) -> Result<R> {
        let mut map = self.map(queue, mode, range)?;
        let r = f(M::svm_slice(&mut map));
        M::svm_release(map)?;
        Ok(r)
    }
}

/// A range of values as `start..end` (unbounded ends: 0 and `len`); bounds are `map_core`'s.
fn values(range: impl RangeBounds<usize>, len: usize) -> Result<Range<usize>> {
    let overflow = || Error::InvalidArgument("an SVM map range overflows usize".into());
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.checked_add(1).ok_or_else(overflow)?,
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1).ok_or_else(overflow)?,
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    Ok(start..end)
}
