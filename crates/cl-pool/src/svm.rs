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

use cl_mem::svm::{Coarse, DeviceGrain, SvmAllocation, SvmMap, SvmMapMut, SvmOptions, SvmPointer};
use cl_mem::{Error, Queue};

use crate::allocator::Allocator;
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
        if size == 0 {
            return Ok(None);
        }
        cl_mem::svm::svm_empty::<u8, G>(&self.queue, self.options, size).map(Some)
    }

    fn free(&self, block: SvmAllocation<G>) -> Result<(), Error> {
        // Enqueued on the bound queue after markers on every other queue that used it.
        drop(block.enqueue_release(&[])?);
        Ok(())
    }

    fn hand_out_existing_block(&self, block: &mut SvmAllocation<G>) -> Result<(), Error> {
        // A no-op when the block is already bound to our queue (in-order semantics suffice).
        block.bind_to_queue(&self.queue)
    }
}

impl<G: DeviceGrain> PoolBlock<SvmAllocator<G>> {
    /// The SVM allocation (a kernel argument, a memcpy source or destination).
    pub fn svm(&self) -> &SvmAllocation<G> {
        self.block()
    }

    /// PyOpenCL's `svm_ptr`.
    pub fn svm_ptr(&self) -> *mut std::ffi::c_void {
        self.block().svm_ptr()
    }

    /// Maps the whole block read-only (the block itself is not handed out mutably: swapped
    /// between two handles it would go back to the wrong bin).
    ///
    /// # Errors
    ///
    /// As `cl_mem::svm::SvmArray::map`.
    pub fn map_ro(&mut self, queue: &Queue) -> Result<SvmMap<'_, u8>, Error> {
        self.block_mut().map(queue, cl_mem::ReadOnly, ..)
    }

    /// Maps the whole block read-write; see [`PoolBlock::map_ro`].
    ///
    /// # Errors
    ///
    /// As `cl_mem::svm::SvmArray::map`.
    pub fn map_rw(&mut self, queue: &Queue) -> Result<SvmMapMut<'_, u8>, Error> {
        self.block_mut()
            .map(queue, cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE, ..)
    }

    /// Runs `f` on a read-write map of the whole block; see [`PoolBlock::map_ro`].
    ///
    /// # Errors
    ///
    /// As `cl_mem::svm::SvmArray::with_map`.
    pub fn with_map_rw<R>(
        &mut self,
        queue: &Queue,
        f: impl FnOnce(&mut [u8]) -> R,
    ) -> Result<R, Error> {
        self.block_mut().with_map(
            queue,
            cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE,
            ..,
            f,
        )
    }

    /// Moves the block to another in-order queue of its context (PyOpenCL's `bind_to_queue`).
    ///
    /// # Errors
    ///
    /// As `cl_mem::svm::SvmArray::bind_to_queue`.
    pub fn bind_to_queue(&self, queue: &Queue) -> Result<(), Error> {
        self.block().bind_to_queue(queue)
    }
}

// A pooled SVM block stands for its allocation as a kernel argument (`Kernel::set_arg`).
impl<G: DeviceGrain> cl_mem::AsKernelArg for PoolBlock<SvmAllocator<G>> {
    type Arg = SvmAllocation<G>;

    fn as_kernel_arg(&self) -> &SvmAllocation<G> {
        self.svm()
    }
}
