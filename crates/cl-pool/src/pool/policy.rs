//! [`Policy`]: the opt-in policies beyond PyOpenCL, and their atomic cell.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};

/// What the pool does when the upstream reports out-of-memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OomMode {
    /// PyOpenCL's: free one held block from the largest non-empty bin, retry, repeat until nothing
    /// is held.
    #[default]
    FreeOneAtATime,
    /// Free every held block at once and retry once (fewer upstream calls when memory is tight).
    FreeAllRetryOnce,
}

/// Which held block the pool frees first when it must free some (out-of-memory, limit, cap).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Eviction {
    /// PyOpenCL's: the highest-numbered non-empty bin (the largest blocks).
    #[default]
    LargestBinFirst,
    /// The bin that holds the most blocks (ties: the larger bin): the most redundant memory goes
    /// first, keeping one block of as many sizes as possible.
    FullestBinFirst,
    /// The non-empty bin no request touched for the longest time.
    LeastRecentlyUsedBin,
}

/// Opt-in pool policies beyond PyOpenCL. The default is PyOpenCL's exact behaviour.
///
/// Switchable at run time with [`MemoryPool::set_policy`](crate::MemoryPool::set_policy); each field is read with one relaxed load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Policy {
    /// Hold at most this many bytes: a returned block that would exceed it is freed instead.
    pub held_bytes_cap: Option<usize>,
    /// On a miss, also look in up to this many bins above the request's (larger blocks; wasted
    /// bytes are reported as active rounded bytes). 0 = PyOpenCL.
    pub larger_bins: u32,
    /// Free the held blocks of bins no request touched in the last this-many allocations (checked
    /// on every miss and by [`MemoryPool::release_idle`](crate::MemoryPool::release_idle)).
    pub idle_release_after: Option<u64>,
    /// What to do on out-of-memory.
    pub oom_mode: OomMode,
    /// Which held blocks go first when some must be freed.
    pub eviction: Eviction,
    /// Keep `managed_bytes` at or below this (as CuPy's `set_limit`): exceeding it runs the same
    /// reclaim path as an upstream out-of-memory, and fails with [`PoolError::LimitReached`](crate::PoolError::LimitReached).
    /// `isize::MAX` (Rust's own bound on one allocation) bounds it and applies when it is `None`:
    /// every gauge, the per-thread caches' signed ones included, then stays exact.
    pub managed_bytes_limit: Option<usize>,
    /// Serve every request from the shared bins, without the per-thread caches (see the
    /// [`MemoryPool`](crate::MemoryPool) docs): every block is in a shared bin, where any thread finds
    /// it, at the cost of a shard lock on every hit. A held-bytes cap, idle release,
    /// least-recently-used eviction and a larger-bins look-up imply it.
    pub shared_bins_only: bool,
}

pub(super) const NONE: usize = usize::MAX;

/// Bins numbered from this on are never cached (nor counted in stripes): with the default four
/// leading bits every bin is below it.
pub(super) const CACHE_BIN_LIMIT: usize = 1024;

/// The most bytes a pool manages at once, whatever [`Policy::managed_bytes_limit`] says:
/// `isize::MAX`, Rust's own bound on one allocation. A request that would take the managed bytes
/// past it fails like one over the managed-bytes limit ([`PoolError::LimitReached`](crate::PoolError::LimitReached),
/// after the reclaim path), so every gauge, the per-thread caches' signed ones included, stays
/// exact. No OpenCL device comes near it; a simulated upstream with unlimited capacity would.
pub(super) const MAX_MANAGED_BYTES: usize = isize::MAX as usize;

#[derive(Debug, Default)]
pub(super) struct PolicyCell {
    pub(super) held_cap: AtomicUsize,
    pub(super) larger_bins: AtomicUsize,
    pub(super) idle_after: AtomicU64,
    pub(super) oom_mode: AtomicU8,
    pub(super) eviction: AtomicU8,
    pub(super) limit: AtomicUsize,
    pub(super) shared_only: AtomicBool,
}

impl PolicyCell {
    pub(super) fn store(&self, p: Policy) {
        self.held_cap
            .store(p.held_bytes_cap.unwrap_or(NONE), Ordering::Relaxed);
        self.larger_bins.store(
            usize::try_from(p.larger_bins).unwrap_or(NONE),
            Ordering::Relaxed,
        );
        self.idle_after
            .store(p.idle_release_after.unwrap_or(u64::MAX), Ordering::Relaxed);
        self.oom_mode.store(
            match p.oom_mode {
                OomMode::FreeOneAtATime => 0,
                OomMode::FreeAllRetryOnce => 1,
            },
            Ordering::Relaxed,
        );
        self.eviction.store(
            match p.eviction {
                Eviction::LargestBinFirst => 0,
                Eviction::FullestBinFirst => 1,
                Eviction::LeastRecentlyUsedBin => 2,
            },
            Ordering::Relaxed,
        );
        self.limit
            .store(p.managed_bytes_limit.unwrap_or(NONE), Ordering::Relaxed);
        self.shared_only
            .store(p.shared_bins_only, Ordering::Relaxed);
    }

    pub(super) fn eviction(&self) -> Eviction {
        match self.eviction.load(Ordering::Relaxed) {
            1 => Eviction::FullestBinFirst,
            2 => Eviction::LeastRecentlyUsedBin,
            _ => Eviction::LargestBinFirst,
        }
    }

    pub(super) fn load(&self) -> Policy {
        let opt = |v: usize| (v != NONE).then_some(v);
        Policy {
            held_bytes_cap: opt(self.held_cap.load(Ordering::Relaxed)),
            larger_bins: u32::try_from(self.larger_bins.load(Ordering::Relaxed))
                .unwrap_or(u32::MAX),
            idle_release_after: match self.idle_after.load(Ordering::Relaxed) {
                u64::MAX => None,
                n => Some(n),
            },
            oom_mode: if self.oom_mode.load(Ordering::Relaxed) == 1 {
                OomMode::FreeAllRetryOnce
            } else {
                OomMode::FreeOneAtATime
            },
            eviction: self.eviction(),
            managed_bytes_limit: opt(self.limit.load(Ordering::Relaxed)),
            shared_bins_only: self.shared_only.load(Ordering::Relaxed),
        }
    }
}

/// The bounds of each thread's cache of a pool (see the [`MemoryPool`](crate::MemoryPool) docs), set
/// with [`PoolBuilder::thread_cache`](crate::PoolBuilder::thread_cache).
///
/// A returned block goes into the returning thread's cache only if its block size is at most
/// `max_block_bytes` (and its bin is numbered below 1024: every size up to the limit for
/// `leading_bits` up to 6); when the cache then holds more than `max_blocks` blocks or
/// `max_bytes` bytes, the oldest half of that block's bin (at least one block) moves to the
/// shared bin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadCacheLimits {
    /// Most blocks one thread keeps (default 256; 0 turns the thread caches off for good).
    pub max_blocks: usize,
    /// Most bytes (block sizes) one thread keeps (default 64 MiB).
    pub max_bytes: usize,
    /// Blocks larger than this never go into a thread's cache (default 4 MiB).
    pub max_block_bytes: usize,
}

impl Default for ThreadCacheLimits {
    fn default() -> Self {
        ThreadCacheLimits {
            max_blocks: 256,
            max_bytes: 64 << 20,
            max_block_bytes: 4 << 20,
        }
    }
}
