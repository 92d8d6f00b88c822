//! The pool's error type.

use std::fmt;

use crate::allocator::AllocatorError;

/// What the pool knew when it gave up on an allocation: enough to see *why* without a debugger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OomReport {
    /// Bytes the caller asked for.
    pub requested: usize,
    /// Bytes the pool asked its allocator for (`alloc_size(bin_number(requested))`).
    pub rounded: usize,
    /// `managed_bytes` at the time (held + active blocks, rounded sizes).
    pub managed_bytes: usize,
    /// `active_bytes` at the time (requested sizes of blocks handed out).
    pub active_bytes: usize,
    /// Bytes in held blocks at the time (0 unless another thread returned one meanwhile).
    pub held_bytes: usize,
    /// The largest held block at the time (0 if none).
    pub largest_held_block: usize,
    /// The managed-bytes limit in force, if any.
    pub limit: Option<usize>,
}

impl fmt::Display for OomReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} bytes requested ({} rounded), managed {} / active {} / held {} bytes, largest held block {} bytes",
            self.requested,
            self.rounded,
            self.managed_bytes,
            self.active_bytes,
            self.held_bytes,
            self.largest_held_block
        )?;
        if let Some(limit) = self.limit {
            write!(f, ", limit {limit} bytes")?;
        }
        Ok(())
    }
}

/// Why a [`MemoryPool`](crate::MemoryPool) allocation failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum PoolError<E> {
    /// The allocator failed with an error that is not out-of-memory, or its hand-out hook failed;
    /// it is passed on unchanged. The pool's counters are as before the call, except after a
    /// hook that failed on a block of the shared bins (see
    /// [`Allocator::hand_out_existing_block`](crate::Allocator::hand_out_existing_block)).
    Allocator(E),
    /// The upstream stayed out of memory after every held block was freed (PyOpenCL's
    /// `MemoryError("memory_pool::allocate", MEM_OBJECT_ALLOCATION_FAILURE, "failed to free memory
    /// for allocation")`, with the figures that explain it).
    OutOfMemory {
        /// The pool's figures at the time (boxed: keeps `Result`s small on the hit path).
        report: Box<OomReport>,
        /// The last out-of-memory error of the allocator.
        source: E,
    },
    /// The managed-bytes limit set on the pool (or the hard bound
    /// `isize::MAX`, see [`Policy::managed_bytes_limit`](crate::Policy::managed_bytes_limit)) would be exceeded even with no held blocks
    /// left.
    LimitReached(Box<OomReport>),
    /// The allocator answered `Ok(None)` for a non-zero size (PyOpenCL: "allocator succeeded but
    /// returned NULL cl_mem").
    NoBlock {
        /// The size asked of the allocator.
        size: usize,
    },
}

impl<E: fmt::Display> fmt::Display for PoolError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Allocator(e) => write!(f, "memory_pool::allocate failed: {e}"),
            Self::OutOfMemory { report, source } => write!(
                f,
                "memory_pool::allocate failed to free memory for allocation: {report} ({source})"
            ),
            Self::LimitReached(report) => write!(
                f,
                "memory_pool::allocate reached the managed-bytes limit: {report}"
            ),
            Self::NoBlock { size } => write!(
                f,
                "allocator succeeded but returned no block for {size} bytes"
            ),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for PoolError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Allocator(e) | Self::OutOfMemory { source: e, .. } => Some(e),
            Self::LimitReached(_) | Self::NoBlock { .. } => None,
        }
    }
}

impl<E: AllocatorError> PoolError<E> {
    /// Whether this is an out-of-memory condition (the pool's own, a limit, or the allocator's).
    #[must_use]
    pub fn is_out_of_memory(&self) -> bool {
        match self {
            Self::OutOfMemory { .. } | Self::LimitReached(_) => true,
            Self::Allocator(e) => e.is_out_of_memory(),
            Self::NoBlock { .. } => false,
        }
    }
}

impl<E: AllocatorError> AllocatorError for PoolError<E> {
    fn is_out_of_memory(&self) -> bool {
        PoolError::is_out_of_memory(self)
    }
}
