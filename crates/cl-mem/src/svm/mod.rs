//! Shared virtual memory (OpenCL 2.0) that cannot be freed under a running command.
//!
//! # What is here
//!
//! | Rust | OpenCL | PyOpenCL |
//! | --- | --- | --- |
//! | [`SvmPointer`] (object-safe, sealed) | an SVM pointer and its size | `SVMPointer` |
//! | [`SvmArray<T, G>`], [`SvmAllocation<G>`] (= `SvmArray<u8, G>`) | `clSVMAlloc` / `clEnqueueSVMFree` | `SVMAllocation`, the arrays of `svm_empty` |
//! | [`Coarse`], [`Fine`], [`System`] ([`Grain`]) | `CL_MEM_SVM_FINE_GRAIN_BUFFER`, fine-grain system SVM | `svm_mem_flags`, `SVM(ndarray)` |
//! | [`SvmOptions`], [`SvmAccess`], [`SvmMemFlags`] | `cl_svm_mem_flags`, alignment | `flags`, `alignment` |
//! | [`svm_empty`], [`csvm_empty`], [`fsvm_empty`] | — | same names (`_like`: pass `like.len()`) |
//! | `SvmArray<T, System>` ([`SvmArray::from_vec`]) | host memory used as SVM | `SVM(ndarray)` |
//! | [`SvmArray::map`], [`SvmArray::with_map`] ([`SvmMap`], [`SvmMapMut`]) | `clEnqueueSVMMap` / `clEnqueueSVMUnmap` | `SVMMap`, `map_ro`, `map_rw` |
//! | [`SvmBufferView`] | `clCreateBuffer(USE_HOST_PTR, svm_ptr)` | `SVMPointer.as_buffer` |
//! | [`SvmArray::fill`] | `clEnqueueSVMMemFill` | `enqueue_svm_memfill`, `enqueue_fill` |
//! | [`SvmArray::write`], [`SvmArray::read`], [`crate::enqueue_copy`], [`enqueue_svm_memcpy`] | `clEnqueueSVMMemcpy` | `enqueue_copy` with SVM |
//! | [`enqueue_svm_migrate`] | `clEnqueueSVMMigrateMem` (2.1) | `enqueue_svm_migratemem` |
//! | `KernelArg` for [`SvmArray`], [`SvmArgAt`], [`SvmBufferView`] | `clSetKernelArgSVMPointer` | SVM kernel arguments |
//!
//! # Release ordering (the point of this module)
//!
//! SVM has no reference count: `clSVMFree` frees at once, even under a running kernel. PyOpenCL
//! binds an allocation to at most one queue and leaves the rest to the user (its issues #449,
//! #645, #601). Here:
//!
//! * Every allocation is bound to an **in-order** queue from birth (out-of-order queues are
//!   refused) and is freed by `clEnqueueSVMFree` on it, so the free runs after every earlier
//!   command of that queue.
//! * Every *other* queue that gets work on the allocation through this crate is remembered: the
//!   non-blocking operations here note their queue, and [`crate::Kernel::enqueue_nd_range`]
//!   tells every SVM argument which queue it was enqueued on. The free waits for a marker on each
//!   of them. [`SvmArray::bind_to_queue`] moves the binding with a marker (as PyOpenCL does).
//! * A kernel that has an allocation as an argument holds it (an `Arc`), so dropping the
//!   [`SvmArray`] while the kernel lives defers the free until the kernel drops or its argument
//!   changes; the kernel can never be enqueued on freed memory.
//! * Freeing at once exists only as the explicit [`SvmArray::release_now`], which first waits
//!   for every queue that used the memory; [`SvmArray::enqueue_release`] returns the free's
//!   event; [`SvmArray::on_release`] observes the free of a plain drop.
//!
//! # Host access
//!
//! Host references into SVM must never overlap device writes (that is a data race). So every
//! host access takes `&mut self`, refuses while a kernel still holds the allocation as an
//! argument ([`crate::error::Error::SvmInUse`]), and first waits for every queue that used it.
//! Coarse-grain memory is reachable only through a map ([`SvmMap`], [`SvmMapMut`], or the
//! `with_map_*` scopes); fine-grain and system memory also give `as_slice` / `as_mut_slice`
//! directly (between kernel runs). A map guard borrows the array, so forgetting it
//! (`mem::forget`) leaves no reference behind (sound); the allocation remembers the map and
//! unmaps it before its next map, host access, SVM command or free (a kernel enqueued in
//! between would see mapped memory: device-side only, never a host reference).
//!
//! # Examples
//!
//! ```no_run
//! use cl_mem::svm::{csvm_empty, fsvm_empty};
//! use cl_mem::{Context, Device, DeviceType, MapFlags, Platform, Program, Queue, ReadOnly};
//!
//! # fn main() -> cl_mem::Result<()> {
//! let device: Device = Platform::list()?[0].devices(DeviceType::ALL)?[0];
//! let context = Context::new(&[device])?;
//! let queue = Queue::new(&context, &device)?;
//! let program = Program::build_from_source(
//!     &context,
//!     "__kernel void twice(__global float *a) { a[get_global_id(0)] *= 2.0f; }",
//!     "",
//! )?;
//!
//! let mut a = csvm_empty::<f32>(&queue, 1024)?; // coarse grain: host access through maps
//! a.with_map(&queue, MapFlags::WRITE, .., |s| {
//!     s.iter_mut().enumerate().for_each(|(i, v)| *v = i as f32)
//! })?;
//! let mut kernel = program.kernel("twice")?;
//! kernel.set_arg(0, &a)?;
//! kernel.enqueue_nd_range(&queue, &[1024], None, &[])?;
//! drop(kernel); // the kernel held the allocation; host access waits for that
//! a.with_map(&queue, ReadOnly, .., |s| assert_eq!(s[3], 6.0))?;
//!
//! let mut f = fsvm_empty::<u32>(&queue, 16)?; // fine grain: direct host access
//! f.as_mut_slice()?.fill(7);
//! drop(a); // freed by clEnqueueSVMFree on `queue`, after the kernel
//! # Ok(())
//! # }
//! ```
//!
//! # Capability gating
//!
//! Nothing here calls an SVM entry point unless the context's platform and every device are
//! OpenCL 2.0 or newer and report the needed `CL_DEVICE_SVM_CAPABILITIES`; migration needs 2.1.
//! Otherwise the call fails with [`crate::Error::Unsupported`] (Oclgrind is OpenCL 1.2 and may
//! hang on newer entry points). SVM of an NVIDIA context over several GPUs is refused the same way:
//! the driver (580.159.04) crashes in its first `clEnqueueSVMMap` there.

mod array;
mod core;
mod map;
mod ops;
mod view;

pub use self::array::{csvm_empty, fsvm_empty, svm_empty, SvmAllocation, SvmArgAt, SvmArray};
pub use self::core::{
    Coarse, DeviceGrain, Fine, Grain, HostAccessible, SvmAccess, SvmMemFlags, SvmOptions, System,
};
pub use self::map::{SvmMap, SvmMapMode, SvmMapMut};
pub use self::ops::{enqueue_svm_memcpy, enqueue_svm_migrate};
pub use self::view::SvmBufferView;

use std::ffi::c_void;

use cl_raw::sys;

use crate::error::Result;
use crate::memory::MemFlags;
use crate::runtime::queue::Queue;

/// Anything that is an SVM pointer with a known size: owned allocations and system memory
/// ([`SvmArray`] of every [`Grain`]). Object-safe, so several kinds mix in one list
/// ([`enqueue_svm_migrate`], [`enqueue_svm_memcpy`]). Sealed: the release ordering relies on
/// knowing every implementor.
pub trait SvmPointer: self::core::sealed::Sealed {
    /// The address (PyOpenCL's `svm_ptr`); null for a zero-size allocation.
    fn svm_ptr(&self) -> *mut c_void;

    /// The size in bytes (PyOpenCL's `size`).
    fn size_bytes(&self) -> usize;

    /// Maps all bytes for reading (the untyped `map_ro`; typed: [`SvmArray::map`]).
    ///
    /// # Errors
    ///
    /// As [`SvmArray::map`].
    fn map_ro_bytes(&mut self, queue: &Queue) -> Result<SvmMap<'_, u8>> {
        let size = self.size_bytes();
        let parts = map::map_core(self.core(), size, queue, 0..size, sys::CL_MAP_READ)?;
        Ok(SvmMap::from_parts(parts))
    }

    /// Maps all bytes for reading and writing (the untyped `map_rw`).
    ///
    /// # Errors
    ///
    /// As [`SvmArray::map`].
    fn map_rw_bytes(&mut self, queue: &Queue) -> Result<SvmMapMut<'_, u8>> {
        let size = self.size_bytes();
        let flags = sys::CL_MAP_READ | sys::CL_MAP_WRITE;
        let parts = map::map_core(self.core(), size, queue, 0..size, flags)?;
        Ok(SvmMapMut::from_parts(parts))
    }

    /// A buffer object over the whole allocation that cannot outlive it (PyOpenCL's
    /// `as_buffer`: flags default to `READ_WRITE`; `USE_HOST_PTR` is always added).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for an empty allocation
    /// (buffers cannot be empty), for `COPY_HOST_PTR`/`ALLOC_HOST_PTR` (checked first);
    /// [`Error::Cl`](crate::Error::Cl) from `clCreateBuffer`.
    fn as_buffer(&self, flags: MemFlags) -> Result<SvmBufferView<'_>> {
        view::view_core(self.core(), flags)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send_sync<T: Send + Sync>() {}

    #[test]
    fn owned_svm_and_views_cross_threads() {
        send_sync::<SvmArray<f32, Coarse>>();
        send_sync::<SvmArray<u8, Fine>>();
        send_sync::<SvmArray<u64, System>>();
        send_sync::<SvmBufferView<'static>>();
    }

    #[test]
    fn options_become_svm_flags() {
        let o = SvmOptions::default();
        assert_eq!(o.get_access().flags(), SvmMemFlags::READ_WRITE);
        assert_eq!(o.get_alignment(), None);
        assert!(!o.get_atomics());
        let o = SvmOptions::default()
            .access(SvmAccess::ReadOnly)
            .alignment(64)
            .atomics(true);
        assert_eq!(o.get_access().flags(), SvmMemFlags::READ_ONLY);
        assert_eq!(o.get_alignment(), Some(64));
        assert!(o.get_atomics());
        assert_eq!(SvmAccess::WriteOnly.flags(), SvmMemFlags::WRITE_ONLY);
        // PyOpenCL's svm_mem_flags values.
        assert_eq!(SvmMemFlags::READ_WRITE.bits(), 1);
        assert_eq!(SvmMemFlags::WRITE_ONLY.bits(), 2);
        assert_eq!(SvmMemFlags::READ_ONLY.bits(), 4);
        assert_eq!(SvmMemFlags::SVM_FINE_GRAIN_BUFFER.bits(), 1 << 10);
        assert_eq!(SvmMemFlags::SVM_ATOMICS.bits(), 1 << 11);
        assert_eq!(<Coarse as DeviceGrain>::FLAGS, SvmMemFlags::empty());
        assert_eq!(
            <Fine as DeviceGrain>::FLAGS,
            SvmMemFlags::SVM_FINE_GRAIN_BUFFER
        );
    }

    #[test]
    fn svm_errors_read_well() {
        let e = crate::error::Error::SvmAllocFailed {
            size: 16,
            alignment: 8,
        };
        assert_eq!(
            e.to_string(),
            "clSVMAlloc returned NULL for 16 bytes with alignment 8"
        );
        assert!(e.is_out_of_memory());
        let e = crate::error::Error::SvmInUse("mapping: 1 kernel argument(s) still hold it".into());
        assert!(!e.is_out_of_memory());
        assert!(e.to_string().starts_with("SVM in use: mapping"));
    }
}
