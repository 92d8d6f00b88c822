//! The allocator protocol a [`MemoryPool`](crate::MemoryPool) draws from, and the host-only
//! allocator of trace replay and host benchmarks ([`SimulatedAllocator`]).
//!
//! PyOpenCL's `AllocatorBase` (C++ `buffer_allocator_base`) as a trait: allocate a size (zero gives
//! no block), free, say whether allocation is deferred, release blocks held elsewhere before the pool
//! gives up (PyOpenCL runs `gc.collect()` there), and prepare a held block for reuse (PyOpenCL's
//! `hand_out_existing_block`, where queue synchronisation happens). Any allocator a user writes plugs
//! into the pool the same way.

use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// An allocator error that can say whether it means "out of memory".
///
/// The pool's reclaim path (free held blocks, retry) runs only for errors where
/// [`is_out_of_memory`](Self::is_out_of_memory) is true; every other error propagates unchanged
/// with the pool's counters untouched. For OpenCL this is `CL_MEM_OBJECT_ALLOCATION_FAILURE` (-4),
/// `CL_OUT_OF_RESOURCES` (-5) and `CL_OUT_OF_HOST_MEMORY` (-6), as in PyOpenCL.
pub trait AllocatorError: std::error::Error + Send + Sync + 'static {
    /// Whether freeing memory and retrying could make the failed allocation succeed.
    fn is_out_of_memory(&self) -> bool;
}

/// A source of memory blocks for a [`MemoryPool`](crate::MemoryPool).
///
/// Implementations must be cheap to call concurrently (`&self`); the pool never calls them while
/// holding one of its locks, so an allocator may block, call the driver, or even call back into the
/// pool (from [`try_release_blocks`](Self::try_release_blocks)).
pub trait Allocator: Send + Sync + 'static {
    /// One block of memory (a buffer, an SVM pointer, an offset in a simulation).
    type Block: Send;
    /// What allocation and freeing can fail with.
    type Error: AllocatorError;

    /// Allocates `size` bytes. `Ok(None)` is the answer for `size == 0` (PyOpenCL returns `None`).
    ///
    /// The pool only ever asks for sizes `>= 1` (a zero request takes a 1-byte block).
    ///
    /// # Errors
    ///
    /// Whatever the upstream reports; out-of-memory errors (per
    /// [`AllocatorError::is_out_of_memory`]) start the pool's reclaim path.
    fn allocate(&self, size: usize) -> Result<Option<Self::Block>, Self::Error>;

    /// Gives a block back to the upstream for good.
    ///
    /// # Errors
    ///
    /// Whatever the upstream reports; the pool logs it and counts it, the block is gone either way.
    fn free(&self, block: Self::Block) -> Result<(), Self::Error>;

    /// Whether an allocation may only fail long after it was made (plain `clCreateBuffer`).
    ///
    /// A pool warns (through `tracing`) when given a deferred allocator, as PyOpenCL does: its
    /// out-of-memory handling only works when failures are reported at allocation time.
    fn is_deferred(&self) -> bool {
        false
    }

    /// Asks whoever else holds blocks (caches, arrays awaiting collection) to return them.
    ///
    /// Called once per out-of-memory event before the pool starts freeing its own held blocks;
    /// PyOpenCL runs `gc.collect()` here. The default does nothing.
    fn try_release_blocks(&self) {}

    /// Prepares a held block to be handed out again (PyOpenCL's `hand_out_existing_block`).
    ///
    /// The place for cross-queue synchronisation: a block last used on another queue must not be
    /// overwritten by new work before the old work completes. The default does nothing.
    ///
    /// Runs while the calling thread's cache is in use: a pool call the hook makes (of any pool)
    /// is served without that thread's cached blocks, as if from another thread (so an
    /// out-of-memory reclaim there cannot free them, and a `free_held` frees them at the
    /// thread's next call).
    ///
    /// # Errors
    ///
    /// An error (or a panic) leaves the block on top of its bin and is returned to the caller of
    /// `allocate`. A block of the calling thread's cache is then not counted at all; a block of
    /// the shared bins has been counted as a hit and is counted back as returned (onto the top
    /// of the thread's cache).
    fn hand_out_existing_block(&self, block: &mut Self::Block) -> Result<(), Self::Error> {
        let _ = block;
        Ok(())
    }
}

/// The zero-size rule of [`Allocator::allocate`] in one place for this crate's allocators:
/// `Ok(None)` for `size == 0`, else the block `allocate` makes.
pub(crate) fn unless_zero<B, E>(
    size: usize,
    allocate: impl FnOnce() -> Result<B, E>,
) -> Result<Option<B>, E> {
    if size == 0 {
        return Ok(None);
    }
    allocate().map(Some)
}

/// A shared allocator is an allocator: every call (the hooks included) goes to the one behind the
/// `Arc`. Several pools can then draw on one allocator, and the caller keeps a handle to it (to
/// read a test allocator's counters after the pool is gone, say), as PyOpenCL's pools share
/// allocator objects by reference.
impl<A: Allocator + ?Sized> Allocator for std::sync::Arc<A> {
    type Block = A::Block;
    type Error = A::Error;

    fn allocate(&self, size: usize) -> Result<Option<Self::Block>, Self::Error> {
        (**self).allocate(size)
    }

    fn free(&self, block: Self::Block) -> Result<(), Self::Error> {
        (**self).free(block)
    }

    fn is_deferred(&self) -> bool {
        (**self).is_deferred()
    }

    fn try_release_blocks(&self) {
        (**self).try_release_blocks();
    }

    #[inline]
    fn hand_out_existing_block(&self, block: &mut Self::Block) -> Result<(), Self::Error> {
        (**self).hand_out_existing_block(block)
    }
}

/// Errors of the host-only [`SimulatedAllocator`] (and of test allocators built on [`HostBlock`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HostAllocError {
    /// The simulated upstream has no room (an out-of-memory error).
    OutOfMemory {
        /// Bytes asked for.
        requested: usize,
        /// Bytes in use upstream at the time.
        in_use: usize,
        /// The upstream's capacity.
        capacity: usize,
    },
    /// An injected failure that is *not* out-of-memory (like `CL_INVALID_BUFFER_SIZE`).
    Invalid {
        /// Bytes asked for.
        requested: usize,
    },
}

impl fmt::Display for HostAllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::OutOfMemory {
                requested,
                in_use,
                capacity,
            } => write!(
                f,
                "out of memory: {requested} bytes requested, {in_use} of {capacity} in use"
            ),
            Self::Invalid { requested } => write!(f, "invalid allocation of {requested} bytes"),
        }
    }
}

impl std::error::Error for HostAllocError {}

impl AllocatorError for HostAllocError {
    fn is_out_of_memory(&self) -> bool {
        matches!(self, Self::OutOfMemory { .. })
    }
}

/// A block of a host-only allocator: a unique id and its size.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct HostBlock {
    /// Unique per allocator, starting at 1.
    pub id: u64,
    /// The size it was allocated with.
    pub size: usize,
}

/// A simulated upstream of fixed capacity for trace replay: no call log, no fault injection, only
/// the arithmetic (cheap enough for millions of events).
#[derive(Debug)]
pub struct SimulatedAllocator {
    capacity: usize,
    in_use: AtomicUsize,
    next_id: AtomicU64,
}

impl SimulatedAllocator {
    /// An upstream of `capacity` bytes (`usize::MAX` for unlimited).
    #[must_use]
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            in_use: AtomicUsize::new(0),
            next_id: AtomicU64::new(1),
        }
    }
}

impl Allocator for SimulatedAllocator {
    type Block = HostBlock;
    type Error = HostAllocError;

    fn allocate(&self, size: usize) -> Result<Option<HostBlock>, HostAllocError> {
        unless_zero(size, || {
            let capacity = self.capacity;
            match self
                .in_use
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                    used.checked_add(size).filter(|&n| n <= capacity)
                }) {
                Ok(_) => Ok(HostBlock {
                    id: self.next_id.fetch_add(1, Ordering::Relaxed),
                    size,
                }),
                Err(in_use) => Err(HostAllocError::OutOfMemory {
                    requested: size,
                    in_use,
                    capacity,
                }),
            }
        })
    }

    fn free(&self, block: HostBlock) -> Result<(), HostAllocError> {
        self.in_use.fetch_sub(block.size, Ordering::Relaxed);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simulated_allocator_tracks_in_use() {
        let a = SimulatedAllocator::new(10);
        let b = a.allocate(10).unwrap().unwrap();
        assert!(a.allocate(1).unwrap_err().is_out_of_memory());
        a.free(b).unwrap();
        assert!(
            a.allocate(10).unwrap().is_some(),
            "the freed bytes are free again"
        );
    }
}
