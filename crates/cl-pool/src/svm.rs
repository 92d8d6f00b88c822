//! The SVM allocator and pool (PyOpenCL's `SVMAllocator`, `SVMPool`, `PooledSVM`, reference
//! sections 3.6 and 3.7), over `cl_mem::svm`.
//!
//! Differences from PyOpenCL, each deliberate:
//!
//! - A NULL from `clSVMAlloc` is out-of-memory (`cl_mem::Error::SvmAllocFailed`, for which
//!   `is_out_of_memory()` is true), so the pool's reclaim path runs; PyOpenCL hands out address 0.
//! - The allocator always has a queue (cl-mem binds every SVM allocation to an in-order queue from
//!   birth and frees it with `clEnqueueSVMFree` after every queue that used it), so the "no queue:
//!   `clFinish` on hand-out" branch of PyOpenCL does not exist.
//! - Handing a block to the allocator's queue when it is bound elsewhere uses cl-mem's
//!   `bind_to_queue` (a marker on the old queue, a barrier on the new one); the marker events are
//!   released at once, so no event leaks per hand-off (PyOpenCL leaks one).
//! - `PooledSvm::requested_bytes` is the requested size and `allocated_bytes` the rounded one
//!   (PyOpenCL's `PooledSVM.size` is the requested size, its `PooledBuffer.size` the rounded one).

use std::ops::{Deref, RangeBounds};

use cl_mem::svm::{Coarse, DeviceGrain, SvmAllocation, SvmMapMode, SvmOptions};
use cl_mem::{Error, Queue};

use crate::allocator::{unless_zero, Allocator};
use crate::pool::PoolBlock;

/// A pooled SVM allocation.
pub type PooledSvm<G = Coarse> = PoolBlock<SvmAllocator<G>>;

/// Allocates SVM of grain `G` bound to an in-order queue (PyOpenCL's `SVMAllocator(context,
/// alignment, flags, queue)`; the context is the queue's).
#[derive(Debug, Clone)]
pub struct SvmAllocator<G: DeviceGrain = Coarse> {
    queue: Queue,
    options: SvmOptions,
    _grain: std::marker::PhantomData<G>,
}

impl<G: DeviceGrain> SvmAllocator<G> {
    /// An allocator of `options` SVM (access, alignment, atomics) bound to `queue`. Without an
    /// alignment in `options` the blocks get the driver's default (alignment 0: the largest OpenCL
    /// data type's), as PyOpenCL's `SVMAllocator` does, not the 1 byte of an untyped element.
    ///
    /// Capability and queue checks happen at the first allocation (cl-mem checks them before
    /// calling the driver).
    pub fn new(queue: &Queue, options: SvmOptions) -> Self {
        let options = match options.alignment_bytes() {
            Some(_) => options,
            None => options.alignment(0),
        };
        Self {
            queue: queue.clone(),
            options,
            _grain: std::marker::PhantomData,
        }
    }

    /// The queue new and reused blocks are bound to.
    pub fn queue(&self) -> &Queue {
        &self.queue
    }
}

impl<G: DeviceGrain> Allocator for SvmAllocator<G> {
    type Block = SvmAllocation<G>;
    type Error = Error;

    fn allocate(&self, size: usize) -> Result<Option<SvmAllocation<G>>, Error> {
        unless_zero(size, || {
            cl_mem::svm::svm_empty::<u8, G>(&self.queue, self.options, size)
        })
    }

    fn free(&self, block: SvmAllocation<G>) -> Result<(), Error> {
        // Enqueued on the bound queue after markers on every other queue that used it.
        drop(block.enqueue_release(&[])?);
        Ok(())
    }

    fn hand_out_existing_block(&self, block: &mut SvmAllocation<G>) -> Result<(), Error> {
        if !block.is_unique() {
            // A kernel argument still holds this memory and could write it again: the new owner
            // gets fresh memory, and the held allocation is freed when its last holder goes (as
            // the buffer pool does, issue 29). On an error the pool keeps the block.
            if let Some(fresh) = self.allocate(block.len())? {
                *block = fresh;
            }
        }
        // A no-op when the block is already bound to our queue (in-order semantics suffice).
        block.bind_to_queue(&self.queue)
    }
}

/// A pooled SVM block is its allocation for every read-only use: kernel arguments, transfers,
/// `svm_ptr` (PyOpenCL's), `bind_to_queue` (PyOpenCL's; moves the block to another in-order
/// queue of its context).
impl<G: DeviceGrain> Deref for PoolBlock<SvmAllocator<G>> {
    type Target = SvmAllocation<G>;

    fn deref(&self) -> &SvmAllocation<G> {
        self.block()
    }
}

impl<G: DeviceGrain> PoolBlock<SvmAllocator<G>> {
    /// Maps `range` of the block (`..` for all) as [`SvmArray::map`](cl_mem::svm::SvmArray::map)
    /// does: `ReadOnly` gives a read guard, writable `MapFlags` a write guard (PyOpenCL's
    /// `map_ro` / `map_rw`). The block itself is not handed out mutably: swapped between two
    /// handles it would go back to the wrong bin.
    ///
    /// # Errors
    ///
    /// As `cl_mem::svm::SvmArray::map`.
    pub fn map<M: SvmMapMode>(
        &mut self,
        queue: &Queue,
        mode: M,
        range: impl RangeBounds<usize>,
    ) -> Result<M::SvmGuard<'_, u8>, Error> {
        self.block_mut().map(queue, mode, range)
    }

    /// Runs `f` on a map of `range` of the block, then unmaps (the scope form of
    /// [`map`](Self::map)).
    ///
    /// # Errors
    ///
    /// As `cl_mem::svm::SvmArray::with_map`.
    pub fn with_map<M: SvmMapMode, R>(
        &mut self,
        queue: &Queue,
        mode: M,
        range: impl RangeBounds<usize>,
        f: impl for<'s> FnOnce(M::Slice<'s, u8>) -> R,
    ) -> Result<R, Error> {
        self.block_mut().with_map(queue, mode, range, f)
    }
}

// A pooled SVM block stands for its allocation as a kernel argument (`Kernel::set_arg`).
impl<G: DeviceGrain> cl_mem::AsKernelArg for PoolBlock<SvmAllocator<G>> {
    type Arg = SvmAllocation<G>;

    fn as_kernel_arg(&self) -> &SvmAllocation<G> {
        self.block()
    }
}
