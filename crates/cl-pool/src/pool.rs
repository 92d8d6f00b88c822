//! The binned memory pool (PyOpenCL's `memory_pool<Allocator>`, `src/mempool.hpp`).
//!
//! # Design: locking (decided 2026-11-22, measured on the 2-core AMD EPYC VM of this project)
//!
//! The pool is `Send + Sync` and shared by handle ([`MemoryPool`] is an `Arc`); blocks return to it
//! from `Drop` on any thread, which rules out `&mut self` methods (users would need their own lock
//! and could not return blocks from other threads). Inside, the bins are spread over `shards`
//! `Mutex`es (picked by `bin % shards`; neighbouring bins land in different shards), each an
//! unordered map `bin -> LIFO stack` plus per-bin figures as plain integers under that lock.
//!
//! - **One shard (the default, [`DEFAULT_SHARDS`])**: every hit-path counter (active, held, tick,
//!   peaks) is written with a plain load + store under the one lock, so a hit costs one lock/unlock
//!   pair each way and nothing else atomic but the `Arc` count of the block's pool handle. Measured
//!   (`cargo run --release -p cl-pool --example hit_latency`): allocate + drop from a warm bin
//!   ~60 ns median, also over 64 mixed sizes; through [`MemoryPool::allocate_local`], whose block
//!   borrows the pool (no `Arc` traffic), ~33 ns. On this VM one locked instruction costs ~6 ns and
//!   an uncontended `Mutex` lock/unlock ~12.6 ns; PyOpenCL's hit is 300-400 ns. With
//!   `allocate_local`, 2 and 8 threads on distinct sizes take the same total time per hit as one.
//! - **Several shards** ([`PoolBuilder::shards`]): threads on different sizes lock different
//!   mutexes, but `active_bytes` (for an exact peak), `held_bytes` and the allocation tick become
//!   atomic read-modify-writes shared by all threads: ~80-95 ns per hit single-threaded here. On
//!   this 2-core VM neither mode makes 8 threads faster in total than one (the shared cache lines -
//!   the lock or the global atomics, and the pool's `Arc` count - bounce between cores); sharding is
//!   offered for many-core hosts where lock hold times, not cache-line transfers, dominate.
//!
//! Statistics are per-bin plain integers updated under the lock the hit takes anyway, so they add no
//! atomic instruction (opening a [`CounterScope`] adds one compare per counter increase).
//!
//! **No allocator call is made while a shard lock is held**: blocks to free are taken out under the
//! lock and freed after it is released, so an allocator may block in the driver (or call back into
//! the pool) without stalling other threads.
//!
//! # Out-of-memory reclaim
//!
//! As PyOpenCL (reference section 3.3 / 10.2), with two strengthenings: the typed error carries the
//! figures that explain it, and the request's own bin (and, under the larger-bins policy, the bins
//! above it) is looked at again before every retry, so the pool never fails while a held block could
//! have served the request.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use crate::allocator::{Allocator, AllocatorError};
use crate::bins::{BinLayout, BinNumber, InvalidLeadingBits};
use crate::error::{OomReport, PoolError};
use crate::stats::{BinStats, PoolStats, ScopeReport, TimingStats};
use crate::trace::TraceEvent;

/// Default number of lock shards of a pool.
pub const DEFAULT_SHARDS: usize = 1;

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
/// Switchable at run time with [`MemoryPool::set_policy`]; each field is read with one relaxed load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Policy {
    /// Hold at most this many bytes: a returned block that would exceed it is freed instead.
    pub held_bytes_cap: Option<usize>,
    /// On a miss, also look in up to this many bins above the request's (larger blocks; wasted
    /// bytes are reported as active rounded bytes). 0 = PyOpenCL.
    pub larger_bins: u32,
    /// Free the held blocks of bins no request touched in the last this-many allocations (checked
    /// on every miss and by [`MemoryPool::release_idle`]).
    pub idle_release_after: Option<u64>,
    /// What to do on out-of-memory.
    pub oom_mode: OomMode,
    /// Which held blocks go first when some must be freed.
    pub eviction: Eviction,
    /// Keep `managed_bytes` at or below this (as CuPy's `set_limit`): exceeding it runs the same
    /// reclaim path as an upstream out-of-memory, and fails with [`PoolError::LimitReached`].
    pub managed_bytes_limit: Option<usize>,
}

const NONE: usize = usize::MAX;

#[derive(Debug, Default)]
struct PolicyCell {
    held_cap: AtomicUsize,
    larger_bins: AtomicUsize,
    idle_after: AtomicU64,
    oom_mode: AtomicU8,
    eviction: AtomicU8,
    limit: AtomicUsize,
}

impl PolicyCell {
    fn store(&self, p: Policy) {
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
    }

    fn eviction(&self) -> Eviction {
        match self.eviction.load(Ordering::Relaxed) {
            1 => Eviction::FullestBinFirst,
            2 => Eviction::LeastRecentlyUsedBin,
            _ => Eviction::LargestBinFirst,
        }
    }

    fn load(&self) -> Policy {
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
        }
    }
}

struct Bin<B> {
    blocks: Vec<B>,
    stats: BinStats,
}

/// Bin numbers are small distinct integers: one multiplication spreads them well enough.
#[derive(Default, Clone, Copy)]
struct BinHasher(u64);

impl Hasher for BinHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type BinMap<B> = HashMap<BinNumber, Bin<B>, BuildHasherDefault<BinHasher>>;

struct Shard<B> {
    bins: BinMap<B>,
}

/// A shard on its own cache lines, so two threads locking neighbouring shards do not false-share.
#[repr(align(128))]
struct Padded<T>(T);

#[derive(Debug, Default)]
struct Timings {
    allocate: TimingStats,
    free: TimingStats,
}

#[derive(Debug, Default)]
struct ScopeStack {
    saved: Vec<(usize, usize)>,
}

type Shards<B> = Box<[Padded<Mutex<Shard<B>>>]>;

struct Inner<A: Allocator> {
    allocator: A,
    layout: BinLayout,
    shards: Shards<A::Block>,
    /// One shard: the hit-path gauges are written with plain load/store under that shard's lock
    /// (no atomic read-modify-write); several shards: atomic read-modify-write.
    single: bool,
    policy: PolicyCell,
    stop_holding: AtomicBool,
    tick: AtomicU64,
    active_bytes: AtomicUsize,
    managed_bytes: AtomicUsize,
    held_bytes: AtomicUsize,
    peak_active: AtomicUsize,
    peak_managed: AtomicUsize,
    larger_bin_hits: AtomicU64,
    reclaims: AtomicU64,
    oom_events: AtomicU64,
    oom_failures: AtomicU64,
    free_errors: AtomicU64,
    timings: Mutex<Timings>,
    scopes_open: AtomicUsize,
    scope_peak_active: AtomicUsize,
    scope_peak_managed: AtomicUsize,
    scope_stack: Mutex<ScopeStack>,
    recording: AtomicBool,
    next_trace_id: AtomicU64,
    trace: Mutex<Vec<TraceEvent>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while a pool lock is held; if a user's code did, the data is still consistent.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A binned memory pool over any [`Allocator`]: PyOpenCL's `MemoryPool` / `SVMPool` algorithm.
///
/// A cheap handle (`Clone` shares the pool). Blocks come back as [`PoolBlock`]s, which return to
/// the pool on drop; the pool frees its held blocks when the last handle and the last block are
/// gone (PyOpenCL frees them in the destructor too).
///
/// # Examples
///
/// ```
/// use cl_pool::{MemoryPool, TestAllocator};
///
/// let pool = MemoryPool::new(TestAllocator::new());
/// let a = pool.allocate(1000)?;
/// assert_eq!(a.allocated_bytes(), 1023);
/// drop(a);
/// let b = pool.allocate(1001)?; // same bin: served from the held block
/// assert_eq!(pool.stats().hits, 1);
/// # drop(b);
/// # Ok::<(), cl_pool::PoolError<cl_pool::HostAllocError>>(())
/// ```
pub struct MemoryPool<A: Allocator> {
    inner: Arc<Inner<A>>,
}

impl<A: Allocator> Clone for MemoryPool<A> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<A: Allocator + fmt::Debug> fmt::Debug for MemoryPool<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.stats();
        f.debug_struct("MemoryPool")
            .field("allocator", &self.inner.allocator)
            .field("leading_bits", &self.inner.layout.leading_bits())
            .field("held_blocks", &s.held_blocks)
            .field("active_blocks", &s.active_blocks)
            .field("managed_bytes", &s.managed_bytes)
            .field("active_bytes", &s.active_bytes)
            .finish_non_exhaustive()
    }
}

/// Builds a [`MemoryPool`] with non-default settings.
#[derive(Debug)]
pub struct PoolBuilder<A> {
    allocator: A,
    leading_bits: u32,
    shards: usize,
    policy: Policy,
}

impl<A: Allocator> PoolBuilder<A> {
    /// PyOpenCL's `leading_bits_in_bin_id` (default 4, at most 25).
    #[must_use]
    pub fn leading_bits(mut self, l: u32) -> Self {
        self.leading_bits = l;
        self
    }

    /// Number of lock shards (default [`DEFAULT_SHARDS`]), rounded up to a power of two (0 is
    /// taken as 1, more than 1024 as 1024).
    #[must_use]
    pub fn shards(mut self, n: usize) -> Self {
        self.shards = n.clamp(1, 1024).next_power_of_two();
        self
    }

    /// Initial policy (default: PyOpenCL's behaviour).
    #[must_use]
    pub fn policy(mut self, p: Policy) -> Self {
        self.policy = p;
        self
    }

    /// Creates the pool; warns through `tracing` when the allocator is deferred (as PyOpenCL).
    ///
    /// # Errors
    ///
    /// [`InvalidLeadingBits`] for `leading_bits > 25`.
    pub fn build(self) -> Result<MemoryPool<A>, InvalidLeadingBits> {
        let layout = BinLayout::new(self.leading_bits)?;
        Ok(self.build_with(layout))
    }

    fn build_with(self, layout: BinLayout) -> MemoryPool<A> {
        if self.allocator.is_deferred() {
            tracing::warn!(
                "Memory pools expect non-deferred semantics from their allocators. You passed a \
                 deferred allocator, i.e. an allocator whose allocations can turn out to be \
                 unavailable long after allocation."
            );
        }
        let shards: Shards<A::Block> = (0..self.shards)
            .map(|_| {
                Padded(Mutex::new(Shard {
                    bins: BinMap::default(),
                }))
            })
            .collect();
        let policy = PolicyCell::default();
        policy.store(self.policy);
        MemoryPool {
            inner: Arc::new(Inner {
                allocator: self.allocator,
                layout,
                single: shards.len() == 1,
                shards,
                policy,
                stop_holding: AtomicBool::new(false),
                tick: AtomicU64::new(0),
                active_bytes: AtomicUsize::new(0),
                managed_bytes: AtomicUsize::new(0),
                held_bytes: AtomicUsize::new(0),
                peak_active: AtomicUsize::new(0),
                peak_managed: AtomicUsize::new(0),
                larger_bin_hits: AtomicU64::new(0),
                reclaims: AtomicU64::new(0),
                oom_events: AtomicU64::new(0),
                oom_failures: AtomicU64::new(0),
                free_errors: AtomicU64::new(0),
                timings: Mutex::new(Timings::default()),
                scopes_open: AtomicUsize::new(0),
                scope_peak_active: AtomicUsize::new(0),
                scope_peak_managed: AtomicUsize::new(0),
                scope_stack: Mutex::new(ScopeStack::default()),
                recording: AtomicBool::new(false),
                next_trace_id: AtomicU64::new(1),
                trace: Mutex::new(Vec::new()),
            }),
        }
    }
}

/// A block on its way out of the pool, before it is wrapped.
struct Acquired<B> {
    block: B,
    bin: BinNumber,
    size: usize,
    trace_id: u64,
}

/// Where a block found in a bin came from.
enum Found<B> {
    Block(B, BinNumber),
    Nothing,
}

impl<A: Allocator> MemoryPool<A> {
    /// A pool with PyOpenCL's defaults (`leading_bits_in_bin_id = 4`, no policy).
    pub fn new(allocator: A) -> Self {
        Self::builder(allocator).build_with(BinLayout::default())
    }

    /// A pool with `leading_bits_in_bin_id = l`.
    ///
    /// # Errors
    ///
    /// [`InvalidLeadingBits`] for `l > 25`.
    pub fn with_leading_bits(allocator: A, l: u32) -> Result<Self, InvalidLeadingBits> {
        Self::builder(allocator).leading_bits(l).build()
    }

    /// A builder for shard count, leading bits and policy.
    pub fn builder(allocator: A) -> PoolBuilder<A> {
        PoolBuilder {
            allocator,
            leading_bits: crate::bins::DEFAULT_LEADING_BITS,
            shards: DEFAULT_SHARDS,
            policy: Policy::default(),
        }
    }

    /// The allocator.
    pub fn allocator(&self) -> &A {
        &self.inner.allocator
    }

    /// The bin layout.
    pub fn layout(&self) -> BinLayout {
        self.inner.layout
    }

    /// PyOpenCL's `bin_number(size)`.
    pub fn bin_number(&self, size: usize) -> BinNumber {
        self.inner.layout.bin_number(size)
    }

    /// PyOpenCL's `alloc_size(bin)`.
    pub fn alloc_size(&self, bin: BinNumber) -> usize {
        self.inner.layout.alloc_size(bin)
    }

    /// Allocates `size` bytes (PyOpenCL's `allocate(size)` / `__call__(size)`).
    ///
    /// Served from the most recently returned block of the request's bin if there is one, else
    /// from the allocator with `alloc_size(bin_number(size))` bytes. `size == 0` takes a 1-byte
    /// block. On out-of-memory, runs the reclaim path described in the module docs.
    ///
    /// # Errors
    ///
    /// - [`PoolError::OutOfMemory`] when the allocator stays out of memory with nothing held;
    /// - [`PoolError::LimitReached`] when the managed-bytes limit cannot be kept;
    /// - [`PoolError::Allocator`] for any other allocator error (counters untouched);
    /// - [`PoolError::NoBlock`] when the allocator returns no block for a non-zero size.
    pub fn allocate(&self, size: usize) -> Result<PoolBlock<A>, PoolError<A::Error>> {
        let a = self.acquire(size)?;
        Ok(PoolBlock {
            pool: self.clone(),
            block: Some(a.block),
            requested: a.size,
            bin: a.bin,
            trace_id: a.trace_id,
        })
    }

    /// As [`allocate`](Self::allocate), but the block borrows the pool instead of holding a
    /// handle to it: no reference-count traffic, for hot loops where the block does not outlive
    /// the pool handle (about 10 ns less per hit on this project's VM).
    ///
    /// # Errors
    ///
    /// As [`allocate`](Self::allocate).
    pub fn allocate_local(&self, size: usize) -> Result<LocalBlock<'_, A>, PoolError<A::Error>> {
        let a = self.acquire(size)?;
        Ok(LocalBlock {
            inner: &self.inner,
            block: Some(a.block),
            requested: a.size,
            bin: a.bin,
            trace_id: a.trace_id,
        })
    }

    #[inline]
    fn acquire(&self, size: usize) -> Result<Acquired<A::Block>, PoolError<A::Error>> {
        let inner = &*self.inner;
        let bin = inner.layout.bin_number(size);
        let (found, tick) = inner.take_held(bin, size, None);
        if let Found::Block(block, from) = found {
            return self.hand_out(block, from, size);
        }
        self.allocate_miss(size, bin, tick)
    }

    #[cold]
    fn allocate_miss(
        &self,
        size: usize,
        bin: BinNumber,
        tick: u64,
    ) -> Result<Acquired<A::Block>, PoolError<A::Error>> {
        let inner = &*self.inner;
        let policy = inner.policy.load();
        if policy.larger_bins > 0 {
            if let Found::Block(block, from) =
                inner.take_larger(bin, size, tick, policy.larger_bins)
            {
                return self.hand_out(block, from, size);
            }
        }
        if let Some(age) = policy.idle_release_after {
            inner.release_idle_before(tick.saturating_sub(age), Some(bin));
        }
        let rounded = inner.layout.alloc_size(bin);
        let mut last = match inner.upstream_allocate(rounded) {
            Ok(block) => return Ok(self.fresh(block, bin, size, tick)),
            Err(Upstream::Fatal(e)) => return Err(e),
            Err(other) => other,
        };
        // Out of memory (or over the limit): PyOpenCL's reclaim path.
        inner.oom_events.fetch_add(1, Ordering::Relaxed);
        inner.allocator.try_release_blocks();
        let mut retried_once = false;
        loop {
            // Look again: the release hook (or another thread) may have returned a block.
            if let (Found::Block(block, from), _) = inner.take_held(bin, size, Some(tick)) {
                return self.hand_out(block, from, size);
            }
            if policy.larger_bins > 0 {
                if let Found::Block(block, from) =
                    inner.take_larger(bin, size, tick, policy.larger_bins)
                {
                    return self.hand_out(block, from, size);
                }
            }
            let freed = match policy.oom_mode {
                OomMode::FreeOneAtATime => inner.reclaim_one(),
                OomMode::FreeAllRetryOnce if !retried_once => {
                    retried_once = true;
                    inner.free_held_counted(true);
                    true
                }
                OomMode::FreeAllRetryOnce => false,
            };
            if !freed {
                break;
            }
            match inner.upstream_allocate(rounded) {
                Ok(block) => return Ok(self.fresh(block, bin, size, tick)),
                Err(Upstream::Fatal(e)) => return Err(e),
                Err(other) => last = other,
            }
        }
        inner.oom_failures.fetch_add(1, Ordering::Relaxed);
        let report = Box::new(inner.oom_report(size, rounded));
        match last {
            Upstream::Oom(source) => Err(PoolError::OutOfMemory { report, source }),
            Upstream::Limit | Upstream::Fatal(_) => Err(PoolError::LimitReached(report)),
        }
    }

    fn hand_out(
        &self,
        mut block: A::Block,
        bin: BinNumber,
        size: usize,
    ) -> Result<Acquired<A::Block>, PoolError<A::Error>> {
        match self.inner.allocator.hand_out_existing_block(&mut block) {
            Ok(()) => Ok(self.wrap(block, bin, size)),
            Err(e) => {
                // Undo the hit: the block goes back where it was.
                self.inner.give_back(block, bin, size);
                Err(PoolError::Allocator(e))
            }
        }
    }

    fn fresh(&self, block: A::Block, bin: BinNumber, size: usize, tick: u64) -> Acquired<A::Block> {
        let inner = &*self.inner;
        {
            let mut shard = inner.shard(bin);
            let s = &mut shard.bin_entry(bin, inner.layout).stats;
            s.misses += 1;
            s.upstream_allocations += 1;
            s.active_blocks += 1;
            s.active_requested_bytes += size;
            s.peak_active_blocks = s.peak_active_blocks.max(s.active_blocks);
            s.last_used_tick = tick;
            inner.add_active(size);
        }
        self.wrap(block, bin, size)
    }

    #[inline]
    fn wrap(&self, block: A::Block, bin: BinNumber, size: usize) -> Acquired<A::Block> {
        let trace_id = if self.inner.recording.load(Ordering::Relaxed) {
            let id = self.inner.next_trace_id.fetch_add(1, Ordering::Relaxed);
            lock(&self.inner.trace).push(TraceEvent::Alloc { id, size });
            id
        } else {
            0
        };
        Acquired {
            block,
            bin,
            size,
            trace_id,
        }
    }

    /// Frees every held block (PyOpenCL's `free_held`).
    pub fn free_held(&self) {
        self.inner.free_held_counted(false);
    }

    /// Stops holding for good: frees every held block, and returned blocks are freed from now on
    /// (PyOpenCL's `stop_holding`; there is no way back, as in PyOpenCL).
    pub fn stop_holding(&self) {
        self.inner.stop_holding.store(true, Ordering::SeqCst);
        self.free_held();
    }

    /// Whether [`stop_holding`](Self::stop_holding) was called.
    pub fn is_stopped_holding(&self) -> bool {
        self.inner.stop_holding.load(Ordering::SeqCst)
    }

    /// Frees the held blocks of bins no request touched in the last `allocations` allocations;
    /// returns the bytes freed.
    pub fn release_idle(&self, allocations: u64) -> usize {
        let now = self.inner.tick.load(Ordering::Relaxed);
        self.inner
            .release_idle_before(now.saturating_sub(allocations), None)
    }

    /// The policy in force.
    pub fn policy(&self) -> Policy {
        self.inner.policy.load()
    }

    /// Switches policy; takes effect for the next request (held blocks are not touched, call
    /// [`enforce_held_cap`](Self::enforce_held_cap) to apply a new cap at once).
    pub fn set_policy(&self, policy: Policy) {
        self.inner.policy.store(policy);
    }

    /// Sets (or clears) the managed-bytes limit, keeping the rest of the policy.
    pub fn set_managed_limit(&self, limit: Option<usize>) {
        self.inner
            .policy
            .limit
            .store(limit.unwrap_or(NONE), Ordering::Relaxed);
    }

    /// Frees held blocks, largest bins first, until the held bytes are within the policy's cap.
    pub fn enforce_held_cap(&self) {
        if let Some(cap) = self.policy().held_bytes_cap {
            while self.inner.held_bytes.load(Ordering::Relaxed) > cap {
                if !self.inner.reclaim_one_counted(false) {
                    break;
                }
            }
        }
    }

    /// PyOpenCL's `held_blocks`.
    pub fn held_blocks(&self) -> usize {
        self.inner.fold_bins(0, |acc, b| acc + b.blocks.len())
    }

    /// PyOpenCL's `active_blocks`.
    pub fn active_blocks(&self) -> usize {
        self.inner
            .fold_bins(0, |acc, b| acc + b.stats.active_blocks)
    }

    /// PyOpenCL's `managed_bytes`.
    pub fn managed_bytes(&self) -> usize {
        self.inner.managed_bytes.load(Ordering::Relaxed)
    }

    /// PyOpenCL's `active_bytes` (requested sizes).
    pub fn active_bytes(&self) -> usize {
        self.inner.active_bytes.load(Ordering::Relaxed)
    }

    /// Bytes in held blocks (rounded sizes).
    pub fn held_bytes(&self) -> usize {
        self.inner.held_bytes.load(Ordering::Relaxed)
    }

    /// A snapshot of every counter.
    pub fn stats(&self) -> PoolStats {
        let inner = &*self.inner;
        let mut s = PoolStats::default();
        for shard in inner.shards.iter() {
            let shard = lock(&shard.0);
            for bin in shard.bins.values() {
                let b = &bin.stats;
                s.held_blocks += bin.blocks.len();
                s.active_blocks += b.active_blocks;
                s.active_rounded_bytes += b.active_rounded_bytes();
                s.hits += b.hits;
                s.misses += b.misses;
                s.upstream_allocations += b.upstream_allocations;
                s.upstream_frees += b.upstream_frees;
                if !bin.blocks.is_empty() {
                    s.largest_held_block = s.largest_held_block.max(b.block_bytes);
                }
            }
        }
        s.managed_bytes = inner.managed_bytes.load(Ordering::Relaxed);
        s.active_bytes = inner.active_bytes.load(Ordering::Relaxed);
        s.held_bytes = inner.held_bytes.load(Ordering::Relaxed);
        s.peak_managed_bytes = inner.peak_managed.load(Ordering::Relaxed);
        s.peak_active_bytes = inner.peak_active.load(Ordering::Relaxed);
        s.larger_bin_hits = inner.larger_bin_hits.load(Ordering::Relaxed);
        s.reclaims = inner.reclaims.load(Ordering::Relaxed);
        s.oom_events = inner.oom_events.load(Ordering::Relaxed);
        s.oom_failures = inner.oom_failures.load(Ordering::Relaxed);
        s.free_errors = inner.free_errors.load(Ordering::Relaxed);
        s.tick = inner.tick.load(Ordering::Relaxed);
        let t = lock(&inner.timings);
        s.allocate_time = t.allocate;
        s.free_time = t.free;
        s
    }

    /// Per-bin figures, ascending by bin, for every bin a request ever touched.
    pub fn bin_stats(&self) -> Vec<BinStats> {
        let mut v = Vec::new();
        for shard in self.inner.shards.iter() {
            let shard = lock(&shard.0);
            v.extend(shard.bins.values().map(|b| BinStats {
                held_blocks: b.blocks.len(),
                ..b.stats
            }));
        }
        v.sort_by_key(|b| b.bin);
        v
    }

    /// Held bytes in bins no request touched during the last `allocations` allocations.
    pub fn idle_held_bytes(&self, allocations: u64) -> usize {
        let now = self.inner.tick.load(Ordering::Relaxed);
        let before = now.saturating_sub(allocations);
        self.inner.fold_bins(0, |acc, b| {
            if !b.blocks.is_empty() && b.stats.last_used_tick < before {
                acc + b.blocks.len() * b.stats.block_bytes
            } else {
                acc
            }
        })
    }

    /// Resets the peaks to the current values.
    pub fn reset_peaks(&self) {
        let i = &*self.inner;
        i.with_gauges(|| {
            i.peak_active
                .store(i.active_bytes.load(Ordering::Relaxed), Ordering::Relaxed);
        });
        i.peak_managed
            .store(i.managed_bytes.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    /// Opens a counter scope: [`CounterScope::finish`] gives the peaks and counts of the phase
    /// without resetting the global peaks. Scopes nest (close them in reverse order of opening);
    /// while a scope is open each counter increase costs one more atomic compare.
    pub fn scope(&self) -> CounterScope<A> {
        let i = &*self.inner;
        let before = self.stats();
        let mut stack = lock(&i.scope_stack);
        i.with_gauges(|| {
            stack.saved.push((
                i.scope_peak_active.load(Ordering::Relaxed),
                i.scope_peak_managed.load(Ordering::Relaxed),
            ));
            i.scope_peak_active
                .store(i.active_bytes.load(Ordering::Relaxed), Ordering::Relaxed);
            i.scope_peak_managed
                .store(i.managed_bytes.load(Ordering::Relaxed), Ordering::Relaxed);
            i.scopes_open.fetch_add(1, Ordering::SeqCst);
        });
        drop(stack);
        CounterScope {
            pool: self.clone(),
            before,
            open: true,
        }
    }

    /// Starts recording every allocation and return into an in-memory trace (see
    /// [`trace`](crate::trace)); a block allocated before recording started is not recorded.
    pub fn start_recording(&self) {
        self.inner.recording.store(true, Ordering::SeqCst);
    }

    /// Stops recording and returns the trace recorded so far.
    pub fn stop_recording(&self) -> Vec<TraceEvent> {
        self.inner.recording.store(false, Ordering::SeqCst);
        std::mem::take(&mut *lock(&self.inner.trace))
    }
}

enum Upstream<E> {
    Fatal(PoolError<E>),
    Oom(E),
    Limit,
}

impl<B> Shard<B> {
    fn bin_entry(&mut self, bin: BinNumber, layout: BinLayout) -> &mut Bin<B> {
        self.bins.entry(bin).or_insert_with(|| Bin {
            blocks: Vec::new(),
            stats: BinStats {
                bin,
                block_bytes: layout.alloc_size(bin),
                ..BinStats::default()
            },
        })
    }
}

impl<A: Allocator> Inner<A> {
    #[inline]
    fn shard(&self, bin: BinNumber) -> MutexGuard<'_, Shard<A::Block>> {
        // The shard count is a power of two: a mask, not a division (a `div` costs several
        // nanoseconds, twice per hit). usize has at least 32 bits on every platform we build for.
        let idx = usize::try_from(bin).unwrap_or(0) & (self.shards.len() - 1);
        lock(&self.shards[idx].0)
    }

    fn fold_bins<T>(&self, init: T, mut f: impl FnMut(T, &Bin<A::Block>) -> T) -> T {
        let mut acc = init;
        for shard in self.shards.iter() {
            let shard = lock(&shard.0);
            for bin in shard.bins.values() {
                acc = f(acc, bin);
            }
        }
        acc
    }

    #[inline]
    fn bump_peak(peak: &AtomicUsize, value: usize) {
        if value > peak.load(Ordering::Relaxed) {
            peak.fetch_max(value, Ordering::Relaxed);
        }
    }

    // The hit-path gauges (active, held, tick, active peaks). In single-shard mode every writer
    // holds the one shard lock, so a plain load + store is exact and avoids a locked instruction;
    // callers must hold a shard lock. With several shards: atomic read-modify-write.

    #[inline]
    fn gauge_add(&self, g: &AtomicUsize, d: usize) -> usize {
        if self.single {
            let v = g.load(Ordering::Relaxed) + d;
            g.store(v, Ordering::Relaxed);
            v
        } else {
            g.fetch_add(d, Ordering::Relaxed) + d
        }
    }

    #[inline]
    fn gauge_sub(&self, g: &AtomicUsize, d: usize) {
        if self.single {
            g.store(g.load(Ordering::Relaxed) - d, Ordering::Relaxed);
        } else {
            g.fetch_sub(d, Ordering::Relaxed);
        }
    }

    #[inline]
    fn gauge_peak(&self, peak: &AtomicUsize, value: usize) {
        if value > peak.load(Ordering::Relaxed) {
            if self.single {
                peak.store(value, Ordering::Relaxed);
            } else {
                peak.fetch_max(value, Ordering::Relaxed);
            }
        }
    }

    #[inline]
    fn next_tick(&self) -> u64 {
        if self.single {
            let t = self.tick.load(Ordering::Relaxed);
            self.tick.store(t + 1, Ordering::Relaxed);
            t
        } else {
            self.tick.fetch_add(1, Ordering::Relaxed)
        }
    }

    /// Caller holds a shard lock.
    #[inline]
    fn add_active(&self, size: usize) {
        let now = self.gauge_add(&self.active_bytes, size);
        self.gauge_peak(&self.peak_active, now);
        if self.scopes_open.load(Ordering::Relaxed) > 0 {
            self.gauge_peak(&self.scope_peak_active, now);
        }
    }

    /// Runs `f` where the hit-path gauges may be written (single mode: under the shard lock).
    fn with_gauges<R>(&self, f: impl FnOnce() -> R) -> R {
        if self.single {
            let _guard = lock(&self.shards[0].0);
            f()
        } else {
            f()
        }
    }

    fn add_managed(&self, bytes: usize) {
        let now = self.managed_bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.note_managed(now);
    }

    fn note_managed(&self, now: usize) {
        // managed_bytes changes only off the hit path: always atomic read-modify-write.
        Self::bump_peak(&self.peak_managed, now);
        if self.scopes_open.load(Ordering::Relaxed) > 0 {
            Self::bump_peak(&self.scope_peak_managed, now);
        }
    }

    /// Pops the most recent held block of `bin`, counting a hit. `tick: None` starts a new
    /// request (draws its tick); returns the request's tick.
    #[inline]
    fn take_held(&self, bin: BinNumber, size: usize, tick: Option<u64>) -> (Found<A::Block>, u64) {
        let tick = match tick {
            Some(t) => Some(t),
            None if !self.single => Some(self.next_tick()),
            None => None,
        };
        let mut shard = self.shard(bin);
        let tick = tick.unwrap_or_else(|| self.next_tick());
        let Some(b) = shard.bins.get_mut(&bin) else {
            return (Found::Nothing, tick);
        };
        b.stats.last_used_tick = tick;
        let Some(block) = b.blocks.pop() else {
            return (Found::Nothing, tick);
        };
        let s = &mut b.stats;
        s.hits += 1;
        s.active_blocks += 1;
        s.active_requested_bytes += size;
        s.peak_active_blocks = s.peak_active_blocks.max(s.active_blocks);
        self.gauge_sub(&self.held_bytes, s.block_bytes);
        self.add_active(size);
        drop(shard);
        (Found::Block(block, bin), tick)
    }

    fn take_larger(&self, bin: BinNumber, size: usize, tick: u64, n: u32) -> Found<A::Block> {
        // No block can sit above the bin of the largest size: a huge `larger_bins`
        // (`u32::MAX`) looks at the bins that can exist, not at four billion numbers.
        let last = self.layout.bin_number(usize::MAX);
        let n = n.min(last.saturating_sub(bin));
        for k in 1..=n {
            let Some(b) = bin.checked_add(k) else {
                break;
            };
            if let (Found::Block(block, from), _) = self.take_held(b, size, Some(tick)) {
                self.larger_bin_hits.fetch_add(1, Ordering::Relaxed);
                return Found::Block(block, from);
            }
        }
        Found::Nothing
    }

    /// One upstream allocation of `rounded` bytes, within the managed limit.
    fn upstream_allocate(&self, rounded: usize) -> Result<A::Block, Upstream<A::Error>> {
        let limit = self.policy.limit.load(Ordering::Relaxed);
        if limit != NONE {
            let reserved =
                self.managed_bytes
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |m| {
                        m.checked_add(rounded).filter(|&n| n <= limit)
                    });
            if reserved.is_err() {
                return Err(Upstream::Limit);
            }
        }
        let t0 = Instant::now();
        let r = self.allocator.allocate(rounded);
        lock(&self.timings).allocate.record(t0.elapsed());
        let unreserve = || {
            if limit != NONE {
                self.managed_bytes.fetch_sub(rounded, Ordering::Relaxed);
            }
        };
        match r {
            Ok(Some(block)) => {
                if limit == NONE {
                    self.add_managed(rounded);
                } else {
                    self.note_managed(self.managed_bytes.load(Ordering::Relaxed));
                }
                Ok(block)
            }
            Ok(None) => {
                unreserve();
                Err(Upstream::Fatal(PoolError::NoBlock { size: rounded }))
            }
            Err(e) if e.is_out_of_memory() => {
                unreserve();
                Err(Upstream::Oom(e))
            }
            Err(e) => {
                unreserve();
                Err(Upstream::Fatal(PoolError::Allocator(e)))
            }
        }
    }

    fn free_upstream(&self, block: A::Block) {
        let t0 = Instant::now();
        let r = self.allocator.free(block);
        lock(&self.timings).free.record(t0.elapsed());
        if let Err(e) = r {
            self.free_errors.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(error = %e, "memory pool: freeing a block failed");
        }
    }

    /// A handed-out block comes back (recorded when recording).
    #[inline]
    fn release_block(&self, block: A::Block, bin: BinNumber, size: usize, trace_id: u64) {
        if trace_id != 0 && self.recording.load(Ordering::Relaxed) {
            lock(&self.trace).push(TraceEvent::Free { id: trace_id });
        }
        self.give_back(block, bin, size);
    }

    /// A block comes back (PyOpenCL's `free(block, size)`).
    fn give_back(&self, block: A::Block, bin: BinNumber, size: usize) {
        let bytes = self.layout.alloc_size(bin);
        let to_free = {
            let mut shard = self.shard(bin);
            self.gauge_sub(&self.active_bytes, size);
            let hold = if self.stop_holding.load(Ordering::Relaxed) {
                false
            } else {
                let cap = self.policy.held_cap.load(Ordering::Relaxed);
                if cap == NONE {
                    self.gauge_add(&self.held_bytes, bytes);
                    true
                } else if self.single {
                    let h = self.held_bytes.load(Ordering::Relaxed);
                    let fits = h.checked_add(bytes).is_some_and(|n| n <= cap);
                    if fits {
                        self.held_bytes.store(h + bytes, Ordering::Relaxed);
                    }
                    fits
                } else {
                    self.held_bytes
                        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |h| {
                            h.checked_add(bytes).filter(|&n| n <= cap)
                        })
                        .is_ok()
                }
            };
            // The bin exists (the block was handed out from it); `bin_entry` is the fallback.
            let b = match shard.bins.get_mut(&bin) {
                Some(b) => b,
                None => shard.bin_entry(bin, self.layout),
            };
            let s = &mut b.stats;
            s.active_blocks -= 1;
            s.active_requested_bytes -= size;
            if hold {
                b.blocks.push(block);
                b.stats.peak_held_blocks = b.stats.peak_held_blocks.max(b.blocks.len());
                None
            } else {
                s.upstream_frees += 1;
                Some(block)
            }
        };
        if let Some(block) = to_free {
            self.managed_bytes.fetch_sub(bytes, Ordering::Relaxed);
            self.free_upstream(block);
        }
    }

    /// Frees one held block from the highest non-empty bin (PyOpenCL's `try_to_free_memory`).
    fn reclaim_one(&self) -> bool {
        self.reclaim_one_counted(true)
    }

    fn reclaim_one_counted(&self, count: bool) -> bool {
        loop {
            // Find the bin to free from over all shards, then pop from it (it may have been
            // emptied meanwhile by another thread: look again).
            let eviction = self.policy.eviction();
            // Score: larger is freed first.
            let score = |bin: BinNumber, b: &Bin<A::Block>| -> (u64, BinNumber) {
                match eviction {
                    Eviction::LargestBinFirst => (0, bin),
                    Eviction::FullestBinFirst => (b.blocks.len() as u64, bin),
                    Eviction::LeastRecentlyUsedBin => (u64::MAX - b.stats.last_used_tick, bin),
                }
            };
            let mut best: Option<((u64, BinNumber), BinNumber)> = None;
            for shard in self.shards.iter() {
                let shard = lock(&shard.0);
                for (&bin, b) in &shard.bins {
                    if b.blocks.is_empty() {
                        continue;
                    }
                    let sc = score(bin, b);
                    if best.is_none_or(|(s, _)| sc > s) {
                        best = Some((sc, bin));
                    }
                }
            }
            let best = best.map(|(_, bin)| bin);
            let Some(bin) = best else {
                return false;
            };
            let block = {
                let mut shard = self.shard(bin);
                let b = shard.bin_entry(bin, self.layout);
                let block = b.blocks.pop();
                if block.is_some() {
                    b.stats.upstream_frees += 1;
                    let bytes = b.stats.block_bytes;
                    self.gauge_sub(&self.held_bytes, bytes);
                }
                block
            };
            if let Some(block) = block {
                let bytes = self.layout.alloc_size(bin);
                self.managed_bytes.fetch_sub(bytes, Ordering::Relaxed);
                if count {
                    self.reclaims.fetch_add(1, Ordering::Relaxed);
                }
                self.free_upstream(block);
                return true;
            }
        }
    }

    /// Frees every held block, ascending by bin (PyOpenCL's `free_held`). Returns the count.
    fn free_held_counted(&self, reclaim: bool) -> usize {
        let mut taken: Vec<(BinNumber, A::Block)> = Vec::new();
        for shard in self.shards.iter() {
            let mut shard = lock(&shard.0);
            let mut drained = 0;
            for (&bin, b) in &mut shard.bins {
                b.stats.upstream_frees += b.blocks.len() as u64;
                drained += b.blocks.len() * b.stats.block_bytes;
                taken.extend(b.blocks.drain(..).map(|blk| (bin, blk)));
            }
            self.gauge_sub(&self.held_bytes, drained);
        }
        taken.sort_by_key(|(bin, _)| *bin);
        let n = taken.len();
        for (bin, block) in taken {
            let bytes = self.layout.alloc_size(bin);
            self.managed_bytes.fetch_sub(bytes, Ordering::Relaxed);
            if reclaim {
                self.reclaims.fetch_add(1, Ordering::Relaxed);
            }
            self.free_upstream(block);
        }
        n
    }

    /// Frees held blocks of bins last used before tick `before` (except `keep`).
    fn release_idle_before(&self, before: u64, keep: Option<BinNumber>) -> usize {
        let mut taken: Vec<(BinNumber, A::Block)> = Vec::new();
        for shard in self.shards.iter() {
            let mut shard = lock(&shard.0);
            let mut drained = 0;
            for (&bin, b) in &mut shard.bins {
                if Some(bin) != keep && b.stats.last_used_tick < before && !b.blocks.is_empty() {
                    b.stats.upstream_frees += b.blocks.len() as u64;
                    drained += b.blocks.len() * b.stats.block_bytes;
                    taken.extend(b.blocks.drain(..).map(|blk| (bin, blk)));
                }
            }
            self.gauge_sub(&self.held_bytes, drained);
        }
        taken.sort_by_key(|(bin, _)| *bin);
        let mut freed = 0;
        for (bin, block) in taken {
            let bytes = self.layout.alloc_size(bin);
            self.managed_bytes.fetch_sub(bytes, Ordering::Relaxed);
            freed += bytes;
            self.free_upstream(block);
        }
        freed
    }

    fn oom_report(&self, requested: usize, rounded: usize) -> OomReport {
        let largest = self.fold_bins(0, |acc, b| {
            if b.blocks.is_empty() {
                acc
            } else {
                acc.max(b.stats.block_bytes)
            }
        });
        let limit = self.policy.limit.load(Ordering::Relaxed);
        OomReport {
            requested,
            rounded,
            managed_bytes: self.managed_bytes.load(Ordering::Relaxed),
            active_bytes: self.active_bytes.load(Ordering::Relaxed),
            held_bytes: self.held_bytes.load(Ordering::Relaxed),
            largest_held_block: largest,
            limit: (limit != NONE).then_some(limit),
        }
    }
}

impl<A: Allocator> Drop for Inner<A> {
    fn drop(&mut self) {
        // PyOpenCL's destructor runs free_held().
        self.free_held_counted(false);
    }
}

/// A block handed out by a [`MemoryPool`]; returns to the pool on drop.
///
/// Reports both the requested size ([`requested_bytes`](Self::requested_bytes)) and the size of
/// the block ([`allocated_bytes`](Self::allocated_bytes)). Releasing twice, PyOpenCL's
/// `LogicError`, cannot happen: [`release`](Self::release) takes `self`.
pub struct PoolBlock<A: Allocator> {
    pool: MemoryPool<A>,
    block: Option<A::Block>,
    requested: usize,
    bin: BinNumber,
    trace_id: u64,
}

impl<A: Allocator> fmt::Debug for PoolBlock<A>
where
    A::Block: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolBlock")
            .field("block", &self.block)
            .field("requested", &self.requested)
            .field("allocated", &self.allocated_bytes())
            .finish()
    }
}

impl<A: Allocator> PoolBlock<A> {
    /// The underlying block.
    pub fn block(&self) -> &A::Block {
        // `block` is Some from construction until drop/release, which take `self`.
        match &self.block {
            Some(b) => b,
            None => unreachable_block(),
        }
    }

    /// The underlying block, mutably: crate-private, because two handles' blocks swapped
    /// (`mem::swap(a.block_mut(), b.block_mut())`) would be returned to each other's bins and a
    /// later `allocate` would hand out a block smaller than asked. Callers get narrow access
    /// instead ([`PoolBlock::as_mut_slice`], the queue and map methods of buffer and SVM blocks).
    pub(crate) fn block_mut(&mut self) -> &mut A::Block {
        match &mut self.block {
            Some(b) => b,
            None => unreachable_block(),
        }
    }

    /// The block's contents as a mutable slice, for blocks that are slices (host and pinned
    /// memory). A slice cannot be swapped for another block.
    pub fn as_mut_slice<T>(&mut self) -> &mut [T]
    where
        A::Block: std::ops::DerefMut<Target = [T]>,
    {
        self.block_mut()
    }

    /// The size asked for.
    pub fn requested_bytes(&self) -> usize {
        self.requested
    }

    /// The size of the block (`alloc_size` of its bin; at least `requested_bytes`, at least 1).
    pub fn allocated_bytes(&self) -> usize {
        self.pool.alloc_size(self.bin)
    }

    /// The bin the block belongs to.
    pub fn bin(&self) -> BinNumber {
        self.bin
    }

    /// The pool it came from.
    pub fn pool(&self) -> &MemoryPool<A> {
        &self.pool
    }

    /// Returns the block to the pool now (PyOpenCL's `release()`); same as dropping it.
    pub fn release(self) {
        drop(self);
    }
}

#[cold]
fn unreachable_block() -> ! {
    unreachable!("a PoolBlock's block is only taken by Drop, which no method can observe")
}

impl<A: Allocator> Drop for PoolBlock<A> {
    fn drop(&mut self) {
        if let Some(block) = self.block.take() {
            self.pool
                .inner
                .release_block(block, self.bin, self.requested, self.trace_id);
        }
    }
}

/// A block from [`MemoryPool::allocate_local`]: borrows its pool, returns to it on drop.
pub struct LocalBlock<'a, A: Allocator> {
    inner: &'a Inner<A>,
    block: Option<A::Block>,
    requested: usize,
    bin: BinNumber,
    trace_id: u64,
}

impl<A: Allocator> fmt::Debug for LocalBlock<'_, A>
where
    A::Block: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalBlock")
            .field("block", &self.block)
            .field("requested", &self.requested)
            .field("allocated", &self.allocated_bytes())
            .finish()
    }
}

impl<A: Allocator> LocalBlock<'_, A> {
    /// The underlying block.
    pub fn block(&self) -> &A::Block {
        match &self.block {
            Some(b) => b,
            None => unreachable_block(),
        }
    }

    /// The underlying block, mutably: crate-private, as [`PoolBlock::block_mut`].
    pub(crate) fn block_mut(&mut self) -> &mut A::Block {
        match &mut self.block {
            Some(b) => b,
            None => unreachable_block(),
        }
    }

    /// The block's contents as a mutable slice; see [`PoolBlock::as_mut_slice`].
    pub fn as_mut_slice<T>(&mut self) -> &mut [T]
    where
        A::Block: std::ops::DerefMut<Target = [T]>,
    {
        self.block_mut()
    }

    /// The size asked for.
    pub fn requested_bytes(&self) -> usize {
        self.requested
    }

    /// The size of the block.
    pub fn allocated_bytes(&self) -> usize {
        self.inner.layout.alloc_size(self.bin)
    }

    /// Returns the block to the pool now; same as dropping it.
    pub fn release(self) {
        drop(self);
    }
}

impl<A: Allocator> Drop for LocalBlock<'_, A> {
    fn drop(&mut self) {
        if let Some(block) = self.block.take() {
            self.inner
                .release_block(block, self.bin, self.requested, self.trace_id);
        }
    }
}

/// A phase of a pool's life whose peaks and counts are measured on their own (see
/// [`MemoryPool::scope`]).
pub struct CounterScope<A: Allocator> {
    pool: MemoryPool<A>,
    before: PoolStats,
    open: bool,
}

impl<A: Allocator> fmt::Debug for CounterScope<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CounterScope")
            .field("open", &self.open)
            .finish_non_exhaustive()
    }
}

impl<A: Allocator> CounterScope<A> {
    /// Closes the scope and reports what happened during it.
    pub fn finish(mut self) -> ScopeReport {
        self.close()
    }

    fn close(&mut self) -> ScopeReport {
        self.open = false;
        let i = &*self.pool.inner;
        let (peak_active, peak_managed) = {
            let mut stack = lock(&i.scope_stack);
            i.with_gauges(|| {
                let pa = i.scope_peak_active.load(Ordering::Relaxed);
                let pm = i.scope_peak_managed.load(Ordering::Relaxed);
                let (sa, sm) = stack.saved.pop().unwrap_or((0, 0));
                // The enclosing scope saw everything this one saw.
                i.scope_peak_active.store(sa.max(pa), Ordering::Relaxed);
                i.scope_peak_managed.store(sm.max(pm), Ordering::Relaxed);
                i.scopes_open.fetch_sub(1, Ordering::SeqCst);
                (pa, pm)
            })
        };
        let after = self.pool.stats();
        ScopeReport {
            peak_active_bytes: peak_active,
            peak_managed_bytes: peak_managed,
            hits: after.hits - self.before.hits,
            misses: after.misses - self.before.misses,
            upstream_allocations: after.upstream_allocations - self.before.upstream_allocations,
            upstream_frees: after.upstream_frees - self.before.upstream_frees,
        }
    }
}

impl<A: Allocator> Drop for CounterScope<A> {
    fn drop(&mut self) {
        if self.open {
            self.close();
        }
    }
}
