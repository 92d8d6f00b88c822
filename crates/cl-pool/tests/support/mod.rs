//! Test support shared by the host test binaries: [`TestAllocator`], the host-only allocator with
//! fault injection and a call log (PyOpenCL's `_TestMemoryPool`, but with real blocks, a capacity
//! and failures on demand). It implements the public `Allocator` trait and needs nothing private,
//! so it lives with the tests instead of in the crate's API.

#![allow(
    dead_code,
    reason = "each test binary uses its own part of the support code"
)]

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use cl_pool::{Allocator, HostAllocError, HostBlock, MemoryPool};

/// A host-only allocator with fault injection, for testing pool bookkeeping without a device
/// (PyOpenCL's `_TestMemoryPool`, but with real blocks, a capacity and failures on demand).
///
/// Allocation succeeds while the bytes in use stay within the capacity (default unlimited), and
/// fails with [`HostAllocError::OutOfMemory`] past it, or on demand via
/// [`fail_next_out_of_memory`](Self::fail_next_out_of_memory) /
/// [`fail_next_invalid`](Self::fail_next_invalid). It counts every call (a hand-out of a held
/// block included) and can fail the next hand-outs ([`fail_next_hand_out`](Self::fail_next_hand_out)).
#[derive(Debug)]
pub(crate) struct TestAllocator {
    capacity: AtomicUsize,
    in_use: AtomicUsize,
    next_id: AtomicU64,
    allocations: AtomicU64,
    frees: AtomicU64,
    release_calls: AtomicU64,
    hand_outs: AtomicU64,
    fail_oom: AtomicUsize,
    fail_invalid: AtomicUsize,
    fail_hand_out: AtomicUsize,
    deferred: AtomicBool,
    log: Mutex<Vec<AllocatorCall>>,
}

/// One call the [`TestAllocator`] received, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AllocatorCall {
    /// `allocate(size)`, and whether it succeeded.
    Allocate(usize, bool),
    /// `free` of a block of that size.
    Free(usize),
    /// `try_release_blocks()`.
    TryRelease,
}

impl Default for TestAllocator {
    fn default() -> Self {
        Self::new()
    }
}

impl TestAllocator {
    /// An allocator with unlimited capacity.
    #[must_use]
    pub(crate) fn new() -> Self {
        Self::with_capacity(usize::MAX)
    }

    /// An allocator that fails with out-of-memory past `capacity` bytes in use.
    #[must_use]
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Self {
            capacity: AtomicUsize::new(capacity),
            in_use: AtomicUsize::new(0),
            next_id: AtomicU64::new(1),
            allocations: AtomicU64::new(0),
            frees: AtomicU64::new(0),
            release_calls: AtomicU64::new(0),
            hand_outs: AtomicU64::new(0),
            fail_oom: AtomicUsize::new(0),
            fail_invalid: AtomicUsize::new(0),
            fail_hand_out: AtomicUsize::new(0),
            deferred: AtomicBool::new(false),
            log: Mutex::new(Vec::new()),
        }
    }

    /// Changes the capacity.
    pub(crate) fn set_capacity(&self, capacity: usize) {
        self.capacity.store(capacity, Ordering::SeqCst);
    }

    /// The next `n` allocations fail with out-of-memory.
    pub(crate) fn fail_next_out_of_memory(&self, n: usize) {
        self.fail_oom.store(n, Ordering::SeqCst);
    }

    /// The next `n` allocations fail with a non-out-of-memory error.
    pub(crate) fn fail_next_invalid(&self, n: usize) {
        self.fail_invalid.store(n, Ordering::SeqCst);
    }

    /// The next `n` hand-outs of held blocks fail with a non-out-of-memory error.
    pub(crate) fn fail_next_hand_out(&self, n: usize) {
        self.fail_hand_out.store(n, Ordering::SeqCst);
    }

    /// Makes [`Allocator::is_deferred`] answer `deferred`.
    pub(crate) fn set_deferred(&self, deferred: bool) {
        self.deferred.store(deferred, Ordering::SeqCst);
    }

    /// Bytes currently allocated and not freed.
    #[must_use]
    pub(crate) fn in_use(&self) -> usize {
        self.in_use.load(Ordering::SeqCst)
    }

    /// Successful allocations so far.
    #[must_use]
    pub(crate) fn allocations(&self) -> u64 {
        self.allocations.load(Ordering::SeqCst)
    }

    /// Frees so far.
    #[must_use]
    pub(crate) fn frees(&self) -> u64 {
        self.frees.load(Ordering::SeqCst)
    }

    /// `try_release_blocks` calls so far.
    #[must_use]
    pub(crate) fn release_calls(&self) -> u64 {
        self.release_calls.load(Ordering::SeqCst)
    }

    /// `hand_out_existing_block` calls so far (the failed ones included).
    #[must_use]
    pub(crate) fn hand_outs(&self) -> u64 {
        self.hand_outs.load(Ordering::SeqCst)
    }

    /// Every call so far, in order (then clears the log).
    pub(crate) fn take_log(&self) -> Vec<AllocatorCall> {
        std::mem::take(
            &mut *self
                .log
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    fn record(&self, call: AllocatorCall) {
        self.log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(call);
    }

    fn take_one(counter: &AtomicUsize) -> bool {
        counter
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }
}

impl Allocator for TestAllocator {
    type Block = HostBlock;
    type Error = HostAllocError;

    fn allocate(&self, size: usize) -> Result<Option<HostBlock>, HostAllocError> {
        if size == 0 {
            return Ok(None);
        }
        if Self::take_one(&self.fail_invalid) {
            self.record(AllocatorCall::Allocate(size, false));
            return Err(HostAllocError::Invalid { requested: size });
        }
        let capacity = self.capacity.load(Ordering::SeqCst);
        let reserved = self
            .in_use
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                used.checked_add(size).filter(|&n| n <= capacity)
            });
        let forced = Self::take_one(&self.fail_oom);
        match reserved {
            Ok(_) if !forced => {
                self.allocations.fetch_add(1, Ordering::SeqCst);
                self.record(AllocatorCall::Allocate(size, true));
                let id = self.next_id.fetch_add(1, Ordering::SeqCst);
                Ok(Some(HostBlock { id, size }))
            }
            other => {
                if other.is_ok() {
                    self.in_use.fetch_sub(size, Ordering::SeqCst);
                }
                self.record(AllocatorCall::Allocate(size, false));
                Err(HostAllocError::OutOfMemory {
                    requested: size,
                    in_use: self.in_use.load(Ordering::SeqCst),
                    capacity,
                })
            }
        }
    }

    fn free(&self, block: HostBlock) -> Result<(), HostAllocError> {
        self.in_use.fetch_sub(block.size, Ordering::SeqCst);
        self.frees.fetch_add(1, Ordering::SeqCst);
        self.record(AllocatorCall::Free(block.size));
        Ok(())
    }

    fn is_deferred(&self) -> bool {
        self.deferred.load(Ordering::SeqCst)
    }

    fn try_release_blocks(&self) {
        self.release_calls.fetch_add(1, Ordering::SeqCst);
        self.record(AllocatorCall::TryRelease);
    }

    fn hand_out_existing_block(&self, block: &mut HostBlock) -> Result<(), HostAllocError> {
        self.hand_outs.fetch_add(1, Ordering::SeqCst);
        if Self::take_one(&self.fail_hand_out) {
            return Err(HostAllocError::Invalid {
                requested: block.size,
            });
        }
        Ok(())
    }
}

/// Held blocks, active blocks, managed bytes, active bytes.
pub(crate) fn figures(p: &MemoryPool<TestAllocator>) -> (usize, usize, usize, usize) {
    (
        p.held_blocks(),
        p.active_blocks(),
        p.managed_bytes(),
        p.active_bytes(),
    )
}

/// splitmix64
pub(crate) fn rng(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The `Allocator` items of a test allocator that hands `allocate` and `free` to its host
/// allocator field `$inner` (its other hooks are the test's own), written once.
#[macro_export]
macro_rules! host_blocks_from {
    ($inner:ident) => {
        type Block = cl_pool::HostBlock;
        type Error = cl_pool::HostAllocError;
        fn allocate(
            &self,
            size: usize,
        ) -> Result<Option<cl_pool::HostBlock>, cl_pool::HostAllocError> {
            self.$inner.allocate(size)
        }
        fn free(&self, block: cl_pool::HostBlock) -> Result<(), cl_pool::HostAllocError> {
            self.$inner.free(block)
        }
    };
}
