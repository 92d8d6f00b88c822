//! Snapshots of a pool's counters: PyOpenCL's four, and what PyTorch's caching allocator, RMM and
//! CuPy users look at beyond them.

use std::time::Duration;

use crate::bins::BinNumber;

/// Min / total / max of the time spent in one kind of upstream call (the mean is
/// `total_ns / count`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimingStats {
    /// Calls measured.
    pub count: u64,
    /// Sum of all calls, nanoseconds.
    pub total_ns: u64,
    /// Fastest call, nanoseconds (0 when `count == 0`).
    pub min_ns: u64,
    /// Slowest call, nanoseconds.
    pub max_ns: u64,
}

impl TimingStats {
    /// Adds one measurement.
    pub(crate) fn record(&mut self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.min_ns = if self.count == 0 {
            ns
        } else {
            self.min_ns.min(ns)
        };
        self.max_ns = self.max_ns.max(ns);
        self.total_ns = self.total_ns.saturating_add(ns);
        self.count += 1;
    }
}

/// The figures of one bin (its held bytes are `held_blocks * block_bytes`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BinStats {
    /// The bin number.
    pub bin: BinNumber,
    /// Size of every block of this bin.
    pub block_bytes: usize,
    /// Blocks held (returned, kept for reuse).
    pub held_blocks: usize,
    /// Blocks of this bin handed out now.
    pub active_blocks: usize,
    /// Requested bytes of the blocks of this bin handed out now.
    pub active_requested_bytes: usize,
    /// Requests served from a held block of this bin.
    pub hits: u64,
    /// Requests mapped to this bin that found no held block in it.
    pub misses: u64,
    /// Blocks of this bin obtained from the allocator.
    pub upstream_allocations: u64,
    /// Blocks of this bin given back to the allocator.
    pub upstream_frees: u64,
    /// Most blocks held at once.
    pub peak_held_blocks: usize,
    /// Most blocks handed out at once.
    pub peak_active_blocks: usize,
    /// The pool's allocation tick when a request last touched this bin.
    pub last_used_tick: u64,
}

/// A snapshot of a whole pool.
///
/// Figures, not ratios; the usual ones are a line each: the hit rate `hits / (hits + misses)`,
/// the fragmentation `1 - largest_held_block / held_bytes` (0 when all held memory is one block,
/// near 1 when it is scattered over many small ones).
///
/// Exact when no other thread uses the pool during the snapshot; under concurrency every figure is
/// exact on its own, but figures may come from slightly different instants.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// PyOpenCL's `held_blocks`: blocks returned and kept.
    pub held_blocks: usize,
    /// PyOpenCL's `active_blocks`: blocks handed out, not yet returned.
    pub active_blocks: usize,
    /// PyOpenCL's `managed_bytes`: rounded sizes of held + active blocks.
    pub managed_bytes: usize,
    /// PyOpenCL's `active_bytes`: *requested* sizes of active blocks.
    pub active_bytes: usize,
    /// Rounded sizes of held blocks (PyOpenCL has no such counter; see its PR #429).
    pub held_bytes: usize,
    /// Rounded sizes of active blocks (`managed_bytes - held_bytes`).
    pub active_rounded_bytes: usize,
    /// Highest `managed_bytes` since creation or [`reset_peaks`](crate::MemoryPool::reset_peaks).
    pub peak_managed_bytes: usize,
    /// Highest `active_bytes` since creation or the last reset.
    pub peak_active_bytes: usize,
    /// Requests served from a held block.
    pub hits: u64,
    /// Of the hits, those served from a larger bin (policy [`Policy::larger_bins`](crate::Policy)).
    pub larger_bin_hits: u64,
    /// Requests that had to go to the allocator (successful or not).
    pub misses: u64,
    /// Held blocks freed to make room for an allocation (out-of-memory or limit).
    pub reclaims: u64,
    /// Allocations that met an out-of-memory condition (upstream or limit) at least once.
    pub oom_events: u64,
    /// Allocations that failed with out-of-memory in the end.
    pub oom_failures: u64,
    /// Blocks obtained from the allocator.
    pub upstream_allocations: u64,
    /// Blocks given back to the allocator.
    pub upstream_frees: u64,
    /// Failed `free` calls of the allocator (logged through `tracing`).
    pub free_errors: u64,
    /// The largest held block (0 if none).
    pub largest_held_block: usize,
    /// The pool's allocation tick: requests so far.
    pub tick: u64,
    /// Time in the allocator's `allocate` (including forcing the memory into existence).
    pub allocate_time: TimingStats,
    /// Time in the allocator's `free`.
    pub free_time: TimingStats,
}

/// What a [`MemoryPool::scope`](crate::MemoryPool::scope) saw between its start and its end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScopeReport {
    /// Highest `active_bytes` during the scope.
    pub peak_active_bytes: usize,
    /// Highest `managed_bytes` during the scope.
    pub peak_managed_bytes: usize,
    /// Hits during the scope.
    pub hits: u64,
    /// Misses during the scope.
    pub misses: u64,
    /// Upstream allocations during the scope.
    pub upstream_allocations: u64,
    /// Upstream frees during the scope.
    pub upstream_frees: u64,
}
