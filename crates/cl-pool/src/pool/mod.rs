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
//! (This section records the design before the per-thread caches of 2026-11-24, which now serve
//! most hits without any locked instruction (their lock is biased towards their thread, see the
//! `cache` module): see docs/PERFORMANCE.md for today's figures, measured on the H100's 16-core
//! host, where sharding helps 1.2-3.8x at 8-16 threads.)
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

#[allow(unsafe_code)]
mod biased;
pub use biased::uses_membarrier;
mod blocks;
mod cache;
mod engine;
mod policy;
mod scope;
#[allow(unsafe_code)]
mod tls;

pub use self::blocks::{LocalBlock, PoolBlock};
use self::blocks::{Owner, WideBin};
use self::engine::*;
use self::policy::*;
pub use self::policy::{Eviction, OomMode, Policy, MAX_MANAGED_BYTES};
pub use self::scope::CounterScope;

use std::fmt;

/// The end of a cached hit in `allocate` and `allocate_local`: the allocator's hand-out hook on
/// the block already in its handle `out` (a failure returns it to the pool), then the trace id.
macro_rules! finish_cached_hit {
    ($pool:ident, $out:ident, $size:ident) => {
        match $pool.hand_out_cached(&mut $out.block, $size) {
            Ok(id) => {
                $out.trace_id = id;
                Ok($out)
            }
            Err(e) => Err(hand_out_failed($out, e)),
        }
    };
}
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::allocator::Allocator;
use crate::bins::{BinLayout, BinNumber, InvalidLeadingBits};
use crate::error::PoolError;
use crate::stats::{BinStats, PoolStats};
use crate::trace::TraceEvent;

/// The per-thread caches' figures, summed.
#[derive(Default)]
struct SlotSums {
    held_blocks: usize,
    active_blocks: isize,
    active_bytes: isize,
    held_bytes: isize,
    hits: u64,
    requests: u64,
    /// bin -> (held blocks, active blocks, active requested bytes, hits)
    bins: std::collections::HashMap<BinNumber, (usize, isize, isize, u64)>,
    /// bin -> (peak held, peak active, last tick), the largest any thread saw
    peaks: std::collections::HashMap<BinNumber, (usize, usize, u64)>,
}

/// Default number of lock shards of a pool.
pub const DEFAULT_SHARDS: usize = 1;

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
        self.inner.handles.fetch_add(1, Ordering::Relaxed);
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<A: Allocator> Drop for MemoryPool<A> {
    fn drop(&mut self) {
        if self.inner.handles.fetch_sub(1, Ordering::AcqRel) == 1 {
            // The last handle: close. The caches go back to the shared bins; blocks still out keep
            // the shared state alive through their slots, and the last of them frees every held
            // block with it (PyOpenCL frees them in the destructor too).
            let inner = &*self.inner;
            inner.closed.store(true, Ordering::SeqCst);
            inner.refresh_cache_on();
            let slots = std::mem::take(&mut *lock(&inner.registry));
            for slot in &slots {
                for d in slot.close() {
                    inner.push_held(d.bin, d.blocks, d.last_tick);
                }
            }
            drop(slots);
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
        let pool = MemoryPool {
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
                registry: Mutex::new(Vec::new()),
                cache_on: AtomicBool::new(false),
                handles: AtomicUsize::new(1),
                closed: AtomicBool::new(false),
                solo: AtomicUsize::new(0),
            }),
        };
        pool.inner.refresh_cache_on();
        pool
    }
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
    /// - [`PoolError::LimitReached`] when the managed-bytes limit (or [`MAX_MANAGED_BYTES`])
    ///   cannot be kept;
    /// - [`PoolError::Allocator`] for any other allocator error (counters untouched);
    /// - [`PoolError::NoBlock`] when the allocator returns no block for a non-zero size.
    #[inline(always)]
    pub fn allocate(&self, size: usize) -> Result<PoolBlock<A>, PoolError<A::Error>> {
        let inner = &*self.inner;
        let bin = inner.layout.bin_number(size);
        // The common case, inline: a hit from this thread's cache. A one-word block is popped
        // into a local and the handle built from registers; a larger one is written straight
        // into the handle (`Slot::take` in cache.rs says why).
        if inner.cache_on() {
            if size_of::<A::Block>() <= size_of::<usize>() {
                let mut taken = None;
                if let Some(slot) = cache::take_cached(&self.inner, bin, size, true, &mut taken) {
                    let mut out = PoolBlock {
                        owner: self.owner(slot),
                        block: taken,
                        requested: size,
                        bin: WideBin::new(bin),
                        trace_id: 0,
                    };
                    return finish_cached_hit!(self, out, size);
                }
            } else {
                let mut out = PoolBlock {
                    owner: Owner::Gone,
                    block: None,
                    requested: size,
                    bin: WideBin::new(bin),
                    trace_id: 0,
                };
                if let Some(slot) = cache::take_cached(&self.inner, bin, size, true, &mut out.block)
                {
                    out.owner = self.owner(slot);
                    return finish_cached_hit!(self, out, size);
                }
            }
        }
        let (a, slot) = self.acquire_shared(size, bin, true)?;
        let owner = self.owner(slot);
        Ok(PoolBlock {
            owner,
            block: Some(a.block),
            requested: a.size,
            bin: WideBin::new(a.bin),
            trace_id: a.trace_id,
        })
    }

    /// As [`allocate`](Self::allocate), but the block borrows the pool instead of holding a
    /// handle to it: no reference-count traffic at all, for hot loops where the block does not
    /// outlive the pool handle.
    ///
    /// # Errors
    ///
    /// As [`allocate`](Self::allocate).
    #[inline(always)]
    pub fn allocate_local(&self, size: usize) -> Result<LocalBlock<'_, A>, PoolError<A::Error>> {
        let inner = &*self.inner;
        let bin = inner.layout.bin_number(size);
        if inner.cache_on() {
            if size_of::<A::Block>() <= size_of::<usize>() {
                let mut taken = None;
                if cache::take_cached(&self.inner, bin, size, false, &mut taken).is_some() {
                    let mut out = LocalBlock {
                        inner: &self.inner,
                        block: taken,
                        requested: size,
                        bin: WideBin::new(bin),
                        trace_id: 0,
                    };
                    return finish_cached_hit!(self, out, size);
                }
            } else {
                let mut out = LocalBlock {
                    inner: &self.inner,
                    block: None,
                    requested: size,
                    bin: WideBin::new(bin),
                    trace_id: 0,
                };
                if cache::take_cached(&self.inner, bin, size, false, &mut out.block).is_some() {
                    return finish_cached_hit!(self, out, size);
                }
            }
        }
        let (a, _) = self.acquire_shared(size, bin, false)?;
        Ok(LocalBlock {
            inner: &self.inner,
            block: Some(a.block),
            requested: a.size,
            bin: WideBin::new(a.bin),
            trace_id: a.trace_id,
        })
    }

    /// The allocator's hand-out hook for a cached hit's block, run with the block already in
    /// its handle (a hook that fails or panics returns it to the pool), then the trace id.
    #[inline(always)]
    fn hand_out_cached(&self, block: &mut Option<A::Block>, size: usize) -> Result<u64, A::Error> {
        if let Some(b) = block.as_mut() {
            self.inner.allocator.hand_out_existing_block(b)?;
        }
        Ok(self.trace_alloc(size))
    }

    /// What keeps an owned block's pool alive: the calling thread's slot, else a pool handle.
    #[inline(always)]
    fn owner(&self, slot: Option<Arc<cache::Slot<A>>>) -> Owner<A> {
        match slot {
            Some(s) => Owner::Slot(s),
            None => Owner::Pool(Arc::clone(&self.inner)),
        }
    }

    /// The trace id of a new allocation (0 unless recording).
    #[inline]
    fn trace_alloc(&self, size: usize) -> u64 {
        if self.inner.recording.load(Ordering::Relaxed) {
            self.trace_alloc_slow(size)
        } else {
            0
        }
    }

    #[cold]
    fn trace_alloc_slow(&self, size: usize) -> u64 {
        let id = self.inner.next_trace_id.fetch_add(1, Ordering::Relaxed);
        lock(&self.inner.trace).push(TraceEvent::Alloc { id, size });
        id
    }

    /// A block for `size` bytes through the shared bins (a miss of this thread's cache, or the
    /// caches off); for an owned block also the calling thread's slot, which keeps the pool alive
    /// without a shared reference count (`None`: the block needs a pool handle).
    #[inline(never)]
    #[expect(clippy::type_complexity, reason = "a private pair")]
    fn acquire_shared(
        &self,
        size: usize,
        bin: BinNumber,
        owned: bool,
    ) -> Result<(Acquired<A::Block>, Option<Arc<cache::Slot<A>>>), PoolError<A::Error>> {
        let inner = &*self.inner;
        let cached = inner.cache_on();
        // A single thread with the caches off needs no slot.
        let slot = if !cached && inner.solo.load(Ordering::Relaxed) == cache::thread_key() {
            None
        } else {
            cache::slot_for(&self.inner)
        };
        let own = slot.as_ref().map_or(cache::Own::default(), |s| s.own());
        let (found, tick) = inner.take_held(bin, size, None, own);
        let a = if let Found::Block(block, from) = found {
            self.hand_out(block, from, size)?
        } else {
            self.allocate_miss(size, bin, tick, own)?
        };
        if let Some(s) = &slot {
            s.after_shared(inner, a.bin, cached, owned);
        }
        Ok((a, slot.filter(|_| owned)))
    }

    #[cold]
    fn allocate_miss(
        &self,
        size: usize,
        bin: BinNumber,
        tick: u64,
        own: cache::Own,
    ) -> Result<Acquired<A::Block>, PoolError<A::Error>> {
        let inner = &*self.inner;
        let policy = inner.policy.load();
        if policy.larger_bins > 0 {
            if let Found::Block(block, from) =
                inner.take_larger(bin, size, tick, policy.larger_bins, own)
            {
                return self.hand_out(block, from, size);
            }
        }
        if let Some(age) = policy.idle_release_after {
            inner.release_idle_before(tick.saturating_sub(age), Some(bin));
        }
        let rounded = inner.layout.alloc_size(bin);
        let mut last = match inner.upstream_allocate(rounded) {
            Ok(block) => return Ok(self.fresh(block, bin, size, tick, own)),
            Err(Upstream::Fatal(e)) => return Err(e),
            Err(other) => other,
        };
        // Out of memory (or over the limit): PyOpenCL's reclaim path.
        inner.oom_events.fetch_add(1, Ordering::Relaxed);
        inner.allocator.try_release_blocks();
        // Blocks cached by threads are held: the reclaim path must see them.
        inner.flush_slots();
        let mut retried_once = false;
        loop {
            // Look again: the release hook (or another thread) may have returned a block.
            if let (Found::Block(block, from), _) = inner.take_held(bin, size, Some(tick), own) {
                return self.hand_out(block, from, size);
            }
            if policy.larger_bins > 0 {
                if let Found::Block(block, from) =
                    inner.take_larger(bin, size, tick, policy.larger_bins, own)
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
                Ok(block) => return Ok(self.fresh(block, bin, size, tick, own)),
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

    #[inline]
    fn hand_out(
        &self,
        mut block: A::Block,
        bin: BinNumber,
        size: usize,
    ) -> Result<Acquired<A::Block>, PoolError<A::Error>> {
        match self.inner.allocator.hand_out_existing_block(&mut block) {
            Ok(()) => Ok(self.wrap(block, bin, size)),
            Err(e) => {
                // Undo the hit: the block goes back as a returned block would, on top of this
                // thread's cache (caches on) or of its shared bin, so the next request gets it
                // again (PyOpenCL's LIFO).
                blocks::release(&self.inner, &mut Some(block), bin, size, 0);
                Err(PoolError::Allocator(e))
            }
        }
    }

    fn fresh(
        &self,
        block: A::Block,
        bin: BinNumber,
        size: usize,
        tick: u64,
        own: cache::Own,
    ) -> Acquired<A::Block> {
        let inner = &*self.inner;
        {
            let mut shard = inner.shard(bin);
            let s = &mut shard.bin_entry(bin, inner.layout).stats;
            s.misses += 1;
            s.upstream_allocations += 1;
            s.active_blocks = s.active_blocks.wrapping_add(1);
            s.active_requested_bytes = s.active_requested_bytes.wrapping_add(size);
            s.peak_active_blocks = s.peak_active_blocks.max(clamp(s.active_blocks));
            s.last_used_tick = tick;
            inner.add_active(size, own.active);
        }
        self.wrap(block, bin, size)
    }

    #[inline]
    fn wrap(&self, block: A::Block, bin: BinNumber, size: usize) -> Acquired<A::Block> {
        Acquired {
            block,
            bin,
            size,
            trace_id: self.trace_alloc(size),
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
        self.inner.refresh_cache_on();
        self.free_held();
    }

    /// Whether [`stop_holding`](Self::stop_holding) was called.
    pub fn is_stopped_holding(&self) -> bool {
        self.inner.stop_holding.load(Ordering::SeqCst)
    }

    /// Frees the held blocks of bins no request touched in the last `allocations` allocations;
    /// returns the bytes freed.
    pub fn release_idle(&self, allocations: u64) -> usize {
        let now = self.stats().tick;
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
        self.inner.refresh_cache_on();
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
            self.inner.flush_slots();
            while self.inner.held_bytes.load(Ordering::Relaxed) > cap {
                if !self.inner.reclaim_one_counted(false) {
                    break;
                }
            }
        }
    }

    /// PyOpenCL's `held_blocks` (blocks in the per-thread caches included).
    pub fn held_blocks(&self) -> usize {
        self.stats().held_blocks
    }

    /// PyOpenCL's `active_blocks`.
    pub fn active_blocks(&self) -> usize {
        self.stats().active_blocks
    }

    /// PyOpenCL's `managed_bytes`.
    pub fn managed_bytes(&self) -> usize {
        self.inner.managed_bytes.load(Ordering::Relaxed)
    }

    /// PyOpenCL's `active_bytes` (requested sizes).
    pub fn active_bytes(&self) -> usize {
        let reg = lock(&self.inner.registry);
        self.inner
            .active_bytes
            .load(Ordering::Relaxed)
            .wrapping_add_signed(Self::slot_gauges(&reg).0)
    }

    /// Bytes in held blocks (rounded sizes; the per-thread caches included).
    pub fn held_bytes(&self) -> usize {
        let reg = lock(&self.inner.registry);
        self.inner
            .held_bytes
            .load(Ordering::Relaxed)
            .wrapping_add_signed(Self::slot_gauges(&reg).1)
    }

    /// The per-thread caches' contributions, summed (the registry is locked while they are read,
    /// so a thread's slot is never counted both here and, folded, in the shared figures).
    /// The per-thread caches' active and held bytes (no per-bin walk: these gauges are read
    /// after every event of a replay).
    fn slot_gauges(reg: &[Arc<cache::Slot<A>>]) -> (isize, isize) {
        reg.iter().fold((0, 0), |(a, h), slot| {
            let st = slot.lock();
            (
                a.wrapping_add(st.active_bytes),
                h.wrapping_add(st.held_bytes),
            )
        })
    }

    fn slot_sums_of(reg: &[Arc<cache::Slot<A>>]) -> SlotSums {
        let mut t = SlotSums::default();
        for slot in reg.iter() {
            let st = slot.lock();
            t.active_bytes = t.active_bytes.wrapping_add(st.active_bytes);
            t.held_bytes = t.held_bytes.wrapping_add(st.held_bytes);
            t.requests += st.requests;
            for (bin, c) in st.bins.iter() {
                t.held_blocks += c.blocks.len();
                t.active_blocks += c.active_blocks;
                t.hits += c.hits;
                let e = t.bins.entry(bin).or_default();
                e.0 += c.blocks.len();
                e.1 += c.active_blocks;
                e.2 = e.2.wrapping_add(c.active_requested);
                e.3 += c.hits;
                let p = t.peaks.entry(bin).or_default();
                p.0 = p.0.max(c.peak_held);
                p.1 = p.1.max(c.peak_active);
                p.2 = p.2.max(c.last_tick);
            }
        }
        t
    }

    /// A snapshot of every counter.
    pub fn stats(&self) -> PoolStats {
        let inner = &*self.inner;
        let mut s = PoolStats::default();
        // The registry stays locked for the whole read: an exiting thread folding its slot into
        // the shared figures cannot be counted twice or not at all.
        let reg = lock(&inner.registry);
        for shard in inner.shards.iter() {
            let shard = lock(&shard.0);
            for bin in shard.bins.values() {
                let b = &bin.stats;
                s.held_blocks += bin.blocks.len();
                s.active_blocks = s.active_blocks.wrapping_add(b.active_blocks);
                s.active_rounded_bytes = s
                    .active_rounded_bytes
                    .wrapping_add(b.active_blocks.wrapping_mul(b.block_bytes));
                s.hits += b.hits;
                s.misses += b.misses;
                s.upstream_allocations += b.upstream_allocations;
                s.upstream_frees += b.upstream_frees;
                if !bin.blocks.is_empty() {
                    s.largest_held_block = s.largest_held_block.max(b.block_bytes);
                }
            }
        }
        let t = Self::slot_sums_of(&reg);
        // The shared gauges and tick are read before the registry is released: an exiting thread
        // folds its slot into them under that lock, and must not be seen in both places.
        let shared_active = inner.active_bytes.load(Ordering::Relaxed);
        let shared_held = inner.held_bytes.load(Ordering::Relaxed);
        let shared_tick = inner.tick.load(Ordering::Relaxed);
        drop(reg);
        s.held_blocks += t.held_blocks;
        s.active_blocks = s.active_blocks.wrapping_add_signed(t.active_blocks);
        s.hits += t.hits;
        for (&bin, &(held, active, _, _)) in &t.bins {
            let bytes = inner.layout.alloc_size(bin);
            s.active_rounded_bytes = s
                .active_rounded_bytes
                .wrapping_add_signed(active.wrapping_mul(isize::try_from(bytes).unwrap_or(0)));
            if held > 0 {
                s.largest_held_block = s.largest_held_block.max(bytes);
            }
        }
        s.managed_bytes = inner.managed_bytes.load(Ordering::Relaxed);
        s.active_bytes = shared_active.wrapping_add_signed(t.active_bytes);
        s.held_bytes = shared_held.wrapping_add_signed(t.held_bytes);
        s.peak_managed_bytes = inner.peak_managed.load(Ordering::Relaxed);
        s.peak_active_bytes = inner.peak_active.load(Ordering::Relaxed);
        s.larger_bin_hits = inner.larger_bin_hits.load(Ordering::Relaxed);
        s.reclaims = inner.reclaims.load(Ordering::Relaxed);
        s.oom_events = inner.oom_events.load(Ordering::Relaxed);
        s.oom_failures = inner.oom_failures.load(Ordering::Relaxed);
        s.free_errors = inner.free_errors.load(Ordering::Relaxed);
        s.tick = shared_tick + t.requests;
        let t = lock(&inner.timings);
        s.allocate_time = t.allocate;
        s.free_time = t.free;
        s
    }

    /// Per-bin figures, ascending by bin, for every bin a request ever touched.
    pub fn bin_stats(&self) -> Vec<BinStats> {
        let mut v = Vec::new();
        let reg = lock(&self.inner.registry);
        for shard in self.inner.shards.iter() {
            let shard = lock(&shard.0);
            v.extend(shard.bins.values().map(|b| BinStats {
                held_blocks: b.blocks.len(),
                ..b.stats
            }));
        }
        let sums = Self::slot_sums_of(&reg);
        drop(reg);
        for (bin, (held, active, requested, hits)) in sums.bins.iter().map(|(&b, &v)| (b, v)) {
            let i = match v.iter().position(|b| b.bin == bin) {
                Some(i) => i,
                None => {
                    v.push(BinStats {
                        bin,
                        block_bytes: self.inner.layout.alloc_size(bin),
                        ..BinStats::default()
                    });
                    v.len() - 1
                }
            };
            let b = &mut v[i];
            b.held_blocks += held;
            b.active_blocks = b.active_blocks.wrapping_add_signed(active);
            b.active_requested_bytes = b.active_requested_bytes.wrapping_add_signed(requested);
            b.hits += hits;
            if let Some(&(ph, pa, lt)) = sums.peaks.get(&bin) {
                b.peak_held_blocks = b.peak_held_blocks.max(ph);
                b.peak_active_blocks = b.peak_active_blocks.max(pa);
                b.last_used_tick = b.last_used_tick.max(lt);
            }
        }
        v.sort_by_key(|b| b.bin);
        v
    }

    /// Held bytes in bins no request touched during the last `allocations` allocations.
    pub fn idle_held_bytes(&self, allocations: u64) -> usize {
        // Cached blocks carry the tick of their bin's last cached hit: move them where the ticks
        // are.
        self.inner.flush_slots();
        let now = self.stats().tick;
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
        let active = self.active_bytes();
        i.with_gauges(|| {
            i.peak_active.store(active, Ordering::Relaxed);
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
        let active = before.active_bytes;
        let mut stack = lock(&i.scope_stack);
        i.with_gauges(|| {
            stack.saved.push((
                i.scope_peak_active.load(Ordering::Relaxed),
                i.scope_peak_managed.load(Ordering::Relaxed),
            ));
            i.scope_peak_active.store(active, Ordering::Relaxed);
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

/// A cached hit the allocator refused to hand out: the block goes back as a returned one, by
/// dropping its handle (on top of this thread's cache, so the next request gets it again:
/// PyOpenCL's LIFO; an owned block's slot count drops with it).
#[cold]
#[inline(never)]
fn hand_out_failed<H, E>(handle: H, e: E) -> PoolError<E> {
    drop(handle);
    PoolError::Allocator(e)
}
