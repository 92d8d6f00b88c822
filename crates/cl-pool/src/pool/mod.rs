//! The binned memory pool (PyOpenCL's `memory_pool<Allocator>`, `src/mempool.hpp`).

mod blocks;
mod cache;
mod engine;
mod policy;
mod scope;

pub use self::blocks::{LocalBlock, PoolBlock};
pub use self::policy::{Eviction, OomMode, Policy, ThreadCacheLimits};
use self::scope::CounterScope;

use std::fmt;
use std::sync::atomic::Ordering::{AcqRel, Relaxed, SeqCst};
use std::sync::Arc;

use crate::allocator::Allocator;
use crate::bins::{BinLayout, BinNumber, InvalidLeadingBits};
use crate::error::PoolError;
use crate::stats::{BinStats, PoolStats, ScopeReport};
use crate::trace::TraceEvent;

use self::blocks::WideBin;
use self::cache::ThreadCache;
use self::engine::{clamp, Found, Inner, Stripe, Upstream};
use self::policy::PolicyCell;

/// Default number of lock shards of a pool's shared bins.
const DEFAULT_SHARDS: usize = 16;

/// A binned memory pool over any [`Allocator`]: PyOpenCL's `MemoryPool` / `SVMPool` algorithm.
///
/// A cheap handle (`Clone` shares the pool). Blocks come back as [`PoolBlock`]s, which return to
/// the pool on drop; the pool frees its held blocks when the last handle and the last block are
/// gone (PyOpenCL frees them in the destructor too).
///
/// # Design
///
/// The pool is `Send + Sync` and shared by handle (it is an `Arc`); blocks return to
/// it from `Drop` on any thread. Two layers, in the shape of tcmalloc and mimalloc:
///
/// - **Thread caches** (`cache.rs`): each thread keeps the blocks it returns, per bin, and takes
///   its hits from them first. Only its own thread touches a cache, with no lock; other threads
///   reach it only by messages it reads at its next call of the pool or at its exit. A cache is
///   bounded by count and by bytes, and takes no block larger than a limit
///   ([`ThreadCacheLimits`], [`PoolBuilder::thread_cache`]).
/// - **Shared bins** (`engine.rs`): PyOpenCL's bins, spread over `shards` `parking_lot` mutexes
///   (picked by `bin % shards`; neighbouring bins land in different shards). A request its
///   thread's cache cannot serve, a block no cache takes, and every out-of-memory reclaim go
///   here. `parking_lot`'s locks do not convoy, and with the default 16 shards threads on different
///   sizes seldom meet.
///
/// One path per request, [`MemoryPool::allocate`] top to bottom: this thread's cache, else the
/// shared bin (`acquire`), else the allocator and PyOpenCL's reclaim path (`miss`). A return
/// ([`PoolBlock`]'s `Drop`, `blocks.rs`) goes into the returning thread's cache, else onto the
/// shared bin, else (after `stop_holding`) to the allocator.
///
/// **Figures.** Every thread counts its requests in a stripe of its own (counters with one
/// writer, no locked instruction), which the statistics sum; bins a thread never caches (past
/// the block-size limit) are counted in their shard. So with one thread (PyOpenCL's case) every
/// counter is exact and the pool makes PyOpenCL's decisions: a thread's cache and the shared bin
/// of a bin form one LIFO stack (a cache gives its *oldest* blocks to the shared bin). With
/// several threads sums stay exact when the pool is quiet; the peaks (pool-wide and per bin) and
/// the last-use ticks are each thread's own view: the largest figure any one thread's requests
/// account for.
///
/// **Held blocks.** Blocks in thread caches are held: `held_blocks`, `held_bytes` and the
/// statistics count them. What is released when:
///
/// - [`MemoryPool::free_held`] and [`MemoryPool::stop_holding`] free at once every block of the
///   shared bins and of the calling thread's cache, and ask every other thread's cache to free
///   its blocks: each does so at its thread's next call of the pool (an allocation or a return)
///   or at the thread's exit.
/// - The out-of-memory reclaim, a held-bytes cap set with [`MemoryPool::set_policy`] and
///   [`MemoryPool::release_idle`] see the shared bins and the calling thread's cache, and
///   ask the other caches to give their blocks back to the shared bins (same moments).
/// - A policy that needs every block in one place (a held-bytes cap, idle release, least-
///   recently-used eviction, larger bins, [`Policy::shared_bins_only`]) turns the caches off:
///   each gives its blocks back at the same moments.
/// - When the last [`MemoryPool`] handle goes, the caches give their blocks back (the calling
///   thread's at once) and let the pool go; the held blocks are freed when the last handle and
///   the last block are gone (PyOpenCL frees them in the destructor). A thread that never calls
///   the pool again keeps a closed pool (its allocator) alive until it exits or first uses
///   another new pool.
/// - A thread's exit gives its caches' blocks back to the shared bins.
///
/// **No allocator call is made while a shard lock is held**: blocks to free are taken out under
/// the lock and freed after it is released, so an allocator may block in the driver or call back
/// into the pool (such a call, made inside a pool call, uses the shared bins).
///
/// # Out-of-memory reclaim
///
/// As PyOpenCL (reference section 3.3 / 10.2), with two strengthenings: the typed error carries the
/// figures that explain it, and the request's own bin (and, under the larger-bins policy, the bins
/// above it) is looked at again before every retry, so the pool never fails while a held block of
/// the shared bins could have served the request.
///
/// # Examples
///
/// ```
/// use cl_pool::{MemoryPool, SimulatedAllocator};
///
/// let pool = MemoryPool::new(SimulatedAllocator::new(usize::MAX));
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
        self.inner.handles.fetch_add(1, Relaxed);
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<A: Allocator> Drop for MemoryPool<A> {
    fn drop(&mut self) {
        if self.inner.handles.fetch_sub(1, AcqRel) == 1 {
            // The last handle: close. The caches give their blocks back and let the pool go
            // (this thread's now); the last block out frees the held ones with the pool.
            self.inner.closed.store(true, Relaxed);
            self.inner.refresh_cache_on();
            self.read_messages();
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
    limits: ThreadCacheLimits,
}

impl<A: Allocator> PoolBuilder<A> {
    /// PyOpenCL's `leading_bits_in_bin_id` (default 4, at most 25).
    #[must_use]
    pub fn leading_bits(mut self, l: u32) -> Self {
        self.leading_bits = l;
        self
    }

    /// Number of lock shards of the shared bins (default 16), rounded up to a
    /// power of two (0 is taken as 1, more than 1024 as 1024).
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

    /// Bounds of each thread's cache (default [`ThreadCacheLimits::default`]; `max_blocks: 0`
    /// serves every request from the shared bins).
    #[must_use]
    pub fn thread_cache(mut self, limits: ThreadCacheLimits) -> Self {
        self.limits = limits;
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
        let policy = PolicyCell::default();
        policy.store(self.policy);
        let inner = Inner::new(self.allocator, layout, self.shards, policy, self.limits);
        inner.refresh_cache_on();
        MemoryPool {
            inner: Arc::new(inner),
        }
    }
}

/// Where a request that its thread's cache could not serve is counted: the thread's stripe (and
/// its cache, which an out-of-memory reclaim empties first), or a stripe lent for the request.
enum Sink<'a, A: Allocator> {
    Thread(&'a mut ThreadCache<A>),
    Lent(&'a Stripe),
}

impl<A: Allocator> Sink<'_, A> {
    fn stripe(&self) -> &Stripe {
        match self {
            Sink::Thread(tc) => &tc.stripe,
            Sink::Lent(st) => st,
        }
    }
}

/// A block on its way out and, for an owned one, a pool handle this thread's cache spared.
type Got<A> = (Found<<A as Allocator>::Block>, Option<Arc<Inner<A>>>);

impl<A: Allocator> MemoryPool<A> {
    /// A pool with PyOpenCL's defaults (`leading_bits_in_bin_id = 4`, no policy).
    pub fn new(allocator: A) -> Self {
        Self::builder(allocator).build_with(BinLayout::default())
    }

    /// A builder for shard count, leading bits, policy and thread-cache bounds.
    pub fn builder(allocator: A) -> PoolBuilder<A> {
        PoolBuilder {
            allocator,
            leading_bits: crate::bins::DEFAULT_LEADING_BITS,
            shards: DEFAULT_SHARDS,
            policy: Policy::default(),
            limits: ThreadCacheLimits::default(),
        }
    }

    /// The allocator.
    pub fn allocator(&self) -> &A {
        &self.inner.allocator
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
    /// - [`PoolError::LimitReached`] when the managed-bytes limit (or `isize::MAX`, the bound of
    ///   [`Policy::managed_bytes_limit`]) cannot be kept;
    /// - [`PoolError::Allocator`] for any other allocator error (counters untouched);
    /// - [`PoolError::NoBlock`] when the allocator returns no block for a non-zero size.
    #[inline(always)]
    pub fn allocate(&self, size: usize) -> Result<PoolBlock<A>, PoolError<A::Error>> {
        let bin = self.inner.layout.bin_number(size);
        // Built from values on both paths, wrapped last: a `Result` merged in memory is copied
        // in 16-byte pieces across its 8-byte stores (store-forwarding stalls, `tools/sf`).
        let b = match cache::hit(&self.inner, bin, size, ThreadCache::spare) {
            Ok((block, spare)) => PoolBlock {
                pool: Some(match spare {
                    Some(p) => p,
                    None => self.new_handle(),
                }),
                block: Some(block),
                requested: size,
                bin: WideBin::new(bin),
                trace_id: self.trace_alloc(size),
            },
            Err(hook_failed) => self.allocate_uncached(size, hook_failed)?,
        };
        Ok(b)
    }

    /// [`allocate`](Self::allocate) past this thread's cache.
    #[inline(never)]
    fn allocate_uncached(
        &self,
        size: usize,
        hook_failed: Option<A::Error>,
    ) -> Result<PoolBlock<A>, PoolError<A::Error>> {
        hook_failed.map_or(Ok(()), |e| Err(PoolError::Allocator(e)))?;
        let (got, spare) = self.take(size, true)?;
        PoolBlock {
            pool: Some(spare.unwrap_or_else(|| self.new_handle())),
            block: Some(got.block),
            requested: size,
            bin: WideBin::new(got.bin),
            trace_id: 0,
        }
        .handed_out(self, got.hit)
    }

    /// A pool handle for an owned block when this thread's cache has no spare.
    #[cold]
    #[inline(never)]
    fn new_handle(&self) -> Arc<Inner<A>> {
        Arc::clone(&self.inner)
    }

    /// As [`allocate`](Self::allocate), but the block borrows the pool instead of holding a
    /// handle to it, for hot loops where the block does not outlive the pool handle.
    ///
    /// # Errors
    ///
    /// As [`allocate`](Self::allocate).
    #[inline(always)]
    pub fn allocate_local(&self, size: usize) -> Result<LocalBlock<'_, A>, PoolError<A::Error>> {
        let bin = self.inner.layout.bin_number(size);
        // Built once, from values on both paths (see `allocate`).
        let (block, bin, trace_id) = match cache::hit(&self.inner, bin, size, |_| ()) {
            Ok((block, _)) => (block, bin, self.trace_alloc(size)),
            Err(hook_failed) => self.allocate_local_uncached(size, hook_failed)?,
        };
        Ok(LocalBlock {
            inner: &self.inner,
            block: Some(block),
            requested: size,
            bin: WideBin::new(bin),
            trace_id,
        })
    }

    /// [`allocate_local`](Self::allocate_local) past this thread's cache: block, bin, trace id.
    #[inline(never)]
    fn allocate_local_uncached(
        &self,
        size: usize,
        hook_failed: Option<A::Error>,
    ) -> Result<(A::Block, BinNumber, u64), PoolError<A::Error>> {
        hook_failed.map_or(Ok(()), |e| Err(PoolError::Allocator(e)))?;
        let (got, _) = self.take(size, false)?;
        let handle = LocalBlock {
            inner: &self.inner,
            block: Some(got.block),
            requested: size,
            bin: WideBin::new(got.bin),
            trace_id: 0,
        };
        // Taken apart: nothing but the block in it owns anything.
        let mut handle = std::mem::ManuallyDrop::new(handle.handed_out(self, got.hit)?);
        let Some(block) = handle.block.take() else {
            blocks::unreachable_block()
        };
        Ok((block, handle.bin.get(), handle.trace_id))
    }

    /// A block from the shared bins or the allocator for a request of `size` bytes (`owned`:
    /// with a spare pool handle if this thread's cache has one).
    #[inline]
    fn take(&self, size: usize, owned: bool) -> Result<Got<A>, PoolError<A::Error>> {
        let inner = &self.inner;
        let bin = inner.layout.bin_number(size);
        match cache::with(inner, |tc, _| {
            let tick = tc.stripe.next_tick();
            self.take_uncached(tc, bin, size, tick, owned)
        }) {
            Ok(r) => r,
            Err(_) => self.take_lent(bin, size),
        }
    }

    /// Not in this thread's cache: the shared bins and the allocator, counted in its stripe.
    #[inline(never)]
    fn take_uncached(
        &self,
        tc: &mut ThreadCache<A>,
        bin: BinNumber,
        size: usize,
        tick: u64,
        owned: bool,
    ) -> Result<Got<A>, PoolError<A::Error>> {
        let found = self.acquire(Sink::Thread(tc), bin, size, tick)?;
        Ok((found, if owned { tc.spare() } else { None }))
    }

    /// No cache on this thread now: the shared bins and the allocator, counted in a lent stripe.
    #[cold]
    #[inline(never)]
    fn take_lent(&self, bin: BinNumber, size: usize) -> Result<Got<A>, PoolError<A::Error>> {
        let found = self
            .inner
            .lend_stripe(|st| self.acquire(Sink::Lent(st), bin, size, st.next_tick()))?;
        Ok((found, None))
    }

    /// The shared bin of `bin`, else [`miss`](Self::miss): `true` with a held block.
    #[inline]
    fn acquire(
        &self,
        sink: Sink<'_, A>,
        bin: BinNumber,
        size: usize,
        tick: u64,
    ) -> Result<Found<A::Block>, PoolError<A::Error>> {
        match self.inner.take_shared(sink.stripe(), bin, size, tick) {
            Some(found) => Ok(found),
            None => self.miss(sink, bin, size, tick),
        }
    }

    /// No held block: the larger bins (by policy), then the allocator, then PyOpenCL's reclaim
    /// path.
    #[cold]
    fn miss(
        &self,
        mut sink: Sink<'_, A>,
        bin: BinNumber,
        size: usize,
        tick: u64,
    ) -> Result<Found<A::Block>, PoolError<A::Error>> {
        let inner = &*self.inner;
        let policy = inner.policy.load();
        if policy.larger_bins > 0 {
            if let Some(f) = inner.take_larger(sink.stripe(), bin, size, tick, policy.larger_bins) {
                return Ok(f);
            }
        }
        if let Some(age) = policy.idle_release_after {
            inner.release_idle_before(tick.saturating_sub(age), Some(bin));
        }
        let rounded = inner.layout.alloc_size(bin);
        let (mut reclaiming, mut retried_once) = (false, false);
        let last = loop {
            let failed = match inner.upstream_allocate(rounded) {
                Ok(block) => {
                    inner.count_fresh(sink.stripe(), bin, size, tick);
                    let hit = false;
                    return Ok(Found { block, bin, hit });
                }
                Err(Upstream::Fatal(e)) => return Err(e),
                Err(other) => other,
            };
            if !reclaiming {
                // Out of memory (or over the limit): PyOpenCL's reclaim path.
                reclaiming = true;
                inner.oom_events.fetch_add(1, Relaxed);
                inner.allocator.try_release_blocks();
                // This thread's cached blocks are held: the reclaim must see them. Other
                // threads' caches are asked for theirs.
                if let Sink::Thread(tc) = &mut sink {
                    tc.drain(inner);
                }
                inner.message_caches(false);
            }
            // Look again: the release hook (or another thread) may have returned a block.
            if let Some(found) = inner.take_shared(sink.stripe(), bin, size, tick) {
                return Ok(found);
            }
            if policy.larger_bins > 0 {
                if let Some(f) =
                    inner.take_larger(sink.stripe(), bin, size, tick, policy.larger_bins)
                {
                    return Ok(f);
                }
            }
            let freed = match policy.oom_mode {
                OomMode::FreeOneAtATime => inner.reclaim_one(true),
                OomMode::FreeAllRetryOnce if !retried_once => {
                    retried_once = true;
                    inner.free_shared(true);
                    true
                }
                OomMode::FreeAllRetryOnce => false,
            };
            if !freed {
                break failed;
            }
        };
        inner.oom_failures.fetch_add(1, Relaxed);
        let report =
            Box::new(inner.oom_report(size, rounded, self.active_bytes(), self.held_bytes()));
        match last {
            Upstream::Oom(source) => Err(PoolError::OutOfMemory { report, source }),
            Upstream::Limit | Upstream::Fatal(_) => Err(PoolError::LimitReached(report)),
        }
    }

    /// The trace id of a new allocation (0 unless recording).
    #[inline]
    fn trace_alloc(&self, size: usize) -> u64 {
        if self.inner.hot.recording.load(Relaxed) {
            self.trace_alloc_slow(size)
        } else {
            0
        }
    }

    #[cold]
    fn trace_alloc_slow(&self, size: usize) -> u64 {
        let id = self.inner.next_trace_id.fetch_add(1, Relaxed);
        self.inner.trace.lock().push(TraceEvent::Alloc { id, size });
        id
    }

    /// Moves this thread's cached blocks to the shared bins and asks every other cache to do the
    /// same (at its thread's next pool call or exit), before a walk over the shared bins.
    fn gather(&self) {
        let _ = cache::with(&self.inner, |tc, inner| tc.drain(inner));
        self.inner.message_caches(false);
    }

    /// Frees every held block (PyOpenCL's `free_held`): at once those of the shared bins and of
    /// this thread's cache; other threads' caches free theirs at their thread's next call of the
    /// pool or exit (see the module docs).
    pub fn free_held(&self) {
        // This thread's blocks join the shared bins first, so that with one thread the frees
        // go in PyOpenCL's order (ascending by bin).
        let _ = cache::with(&self.inner, |tc, inner| tc.drain(inner));
        self.inner.message_caches(true);
        // A cache that read the request late is moving its blocks onto the shared bins now:
        // they are there once `moves` is free (see `ThreadCache::drain`).
        drop(self.inner.moves.write());
        self.inner.free_shared(false);
    }

    /// Stops holding for good: frees the held blocks as [`free_held`](Self::free_held) does, and
    /// returned blocks are freed from now on (PyOpenCL's `stop_holding`; there is no way back, as
    /// in PyOpenCL).
    pub fn stop_holding(&self) {
        self.inner.stop_holding.store(true, SeqCst);
        self.inner.refresh_cache_on();
        self.read_messages();
        self.free_held();
    }

    /// Frees the held blocks of the shared bins (this thread's cached ones included) of bins no
    /// request touched in the last `allocations` allocations; returns the bytes freed.
    pub fn release_idle(&self, allocations: u64) -> usize {
        self.gather();
        let now = self.stats().tick;
        self.inner
            .release_idle_before(now.saturating_sub(allocations), None)
    }

    /// The policy in force.
    pub fn policy(&self) -> Policy {
        self.inner.policy.load()
    }

    /// Switches policy for the next request, and applies a held-bytes cap at once: held blocks
    /// of the shared bins (this thread's cached ones included) are freed, largest bins first,
    /// until they are within it. (To change one field: `Policy { managed_bytes_limit: Some(n),
    /// ..pool.policy() }`.)
    pub fn set_policy(&self, policy: Policy) {
        self.inner.policy.store(policy);
        self.inner.refresh_cache_on();
        self.read_messages();
        self.enforce_held_cap();
    }

    /// This thread's cache reads the message just sent (the calling thread's cache is no other
    /// thread's: it follows at once).
    fn read_messages(&self) {
        let _ = cache::with(&self.inner, |_, _| ());
    }

    /// Frees held blocks of the shared bins (this thread's cached ones included), largest bins
    /// first, until they are within the policy's cap.
    fn enforce_held_cap(&self) {
        if let Some(cap) = self.policy().held_bytes_cap {
            self.gather();
            while self.inner.shared_held_bytes() > cap {
                if !self.inner.reclaim_one(false) {
                    break;
                }
            }
        }
    }

    /// PyOpenCL's `held_blocks` (blocks in the thread caches included).
    pub fn held_blocks(&self) -> usize {
        self.stats().held_blocks
    }

    /// PyOpenCL's `active_blocks`.
    pub fn active_blocks(&self) -> usize {
        self.stats().active_blocks
    }

    /// PyOpenCL's `managed_bytes`.
    pub fn managed_bytes(&self) -> usize {
        self.inner.managed_bytes.load(Relaxed)
    }

    /// PyOpenCL's `active_bytes` (requested sizes).
    pub fn active_bytes(&self) -> usize {
        let _quiet = self.inner.moves.write();
        self.inner.stripes().iter().fold(0usize, |a, st| {
            a.wrapping_add(st.active_bytes.load(Relaxed))
        })
    }

    /// Bytes in held blocks (rounded sizes; the thread caches included): `stats().held_bytes`
    /// without the walk over the bins (the replay reads it after every event).
    pub(crate) fn held_bytes(&self) -> usize {
        let _quiet = self.inner.moves.write();
        let cached = self
            .inner
            .stripes()
            .iter()
            .fold(0usize, |a, st| a.wrapping_add(st.held_bytes.load(Relaxed)));
        cached.wrapping_add(self.inner.shared_held_bytes())
    }

    /// A snapshot of every counter.
    pub fn stats(&self) -> PoolStats {
        let inner = &*self.inner;
        let mut s = PoolStats::default();
        // No block moves between a cache and the shared bins while the figures are read.
        let quiet = inner.moves.write();
        let (bins, shared_held_bytes) = self.bins_quiet();
        for b in bins {
            s.held_blocks += b.held_blocks;
            s.active_blocks = s.active_blocks.wrapping_add(b.active_blocks);
            s.active_rounded_bytes = s
                .active_rounded_bytes
                .wrapping_add(b.active_blocks.wrapping_mul(b.block_bytes));
            s.hits += b.hits;
            s.misses += b.misses;
            s.upstream_allocations += b.upstream_allocations;
            s.upstream_frees += b.upstream_frees;
            if b.held_blocks > 0 {
                s.largest_held_block = s.largest_held_block.max(b.block_bytes);
            }
        }
        s.held_bytes = shared_held_bytes;
        for st in inner.stripes() {
            s.tick += st.requests.load(Relaxed);
            s.active_bytes = s.active_bytes.wrapping_add(st.active_bytes.load(Relaxed));
            s.held_bytes = s.held_bytes.wrapping_add(st.held_bytes.load(Relaxed));
        }
        // Frees out of a cache count their managed bytes under `moves` too.
        s.managed_bytes = inner.managed_bytes.load(Relaxed);
        drop(quiet);
        s.peak_managed_bytes = inner.peak_managed.load(Relaxed);
        s.peak_active_bytes = inner.hot.peak_active.load(Relaxed);
        s.larger_bin_hits = inner.larger_bin_hits.load(Relaxed);
        s.reclaims = inner.reclaims.load(Relaxed);
        s.oom_events = inner.oom_events.load(Relaxed);
        s.oom_failures = inner.oom_failures.load(Relaxed);
        s.free_errors = inner.free_errors.load(Relaxed);
        let t = inner.timings.lock();
        s.allocate_time = t.allocate;
        s.free_time = t.free;
        s
    }

    /// Per-bin figures, ascending by bin, for every bin a block was ever allocated for.
    pub fn bin_stats(&self) -> Vec<BinStats> {
        let _quiet = self.inner.moves.write();
        self.bins_quiet().0
    }

    /// [`bin_stats`](Self::bin_stats) and the shared held bytes, each shard read under one lock
    /// (shared-bin hits take no `moves`); `moves` held by the caller.
    fn bins_quiet(&self) -> (Vec<BinStats>, usize) {
        let inner = &*self.inner;
        let (mut v, mut shared_held_bytes) = (Vec::<BinStats>::new(), 0);
        for shard in inner.shards.iter() {
            let shard = shard.lock();
            shared_held_bytes += shard.held_bytes;
            v.extend(shard.bins.values().map(|b| BinStats {
                held_blocks: b.blocks.len(),
                ..b.stats
            }));
        }
        v.sort_by_key(|b| b.bin);
        for st in inner.stripes() {
            for (bin, c) in (0..).zip(st.bins.iter()) {
                let Ok(i) = v.binary_search_by_key(&bin, |b| b.bin) else {
                    continue;
                };
                let b = &mut v[i];
                b.held_blocks += c.held.load(Relaxed);
                b.active_blocks = b.active_blocks.wrapping_add(c.active.load(Relaxed));
                b.active_requested_bytes = b
                    .active_requested_bytes
                    .wrapping_add(c.requested.load(Relaxed));
                b.hits += c.hits.load(Relaxed);
                b.peak_held_blocks = b.peak_held_blocks.max(c.peak_held.load(Relaxed));
                b.peak_active_blocks = b.peak_active_blocks.max(c.peak_active.load(Relaxed));
                b.last_used_tick = b.last_used_tick.max(c.last_tick.load(Relaxed));
            }
        }
        (v, shared_held_bytes)
    }

    /// Resets the peaks to the current values.
    pub fn reset_peaks(&self) {
        let i = &*self.inner;
        i.hot.peak_active.store(clamp(self.active_bytes()), Relaxed);
        i.peak_managed.store(i.managed_bytes.load(Relaxed), Relaxed);
    }

    /// Runs `f` as a phase of the pool's life and reports its peaks and counts, without
    /// resetting the global peaks. The figures are the pool's: every thread's work during `f`
    /// counts. Scopes nest (a scope inside `f` reports its own phase and the enclosing one sees
    /// everything). Scopes on several threads that overlap without nesting share the pool's peak
    /// register, so their peaks are not their own phases' (their counts are: before/after
    /// differences); open one scope at a time for a phase's peak. While a scope is open each
    /// counter increase costs one more atomic compare.
    pub fn scope<R>(&self, f: impl FnOnce() -> R) -> (R, ScopeReport) {
        let mut scope = self.open_scope();
        let r = f();
        (r, scope.close())
    }

    /// Opens a counter scope; it closes when its report is taken, or on drop (a panicking `f`).
    fn open_scope(&self) -> CounterScope<A> {
        let i = &*self.inner;
        let before = self.stats();
        let mut stack = i.scope_stack.lock();
        stack.push((
            i.scope_peak_active.load(Relaxed),
            i.scope_peak_managed.load(Relaxed),
        ));
        i.scope_peak_active
            .store(clamp(before.active_bytes), Relaxed);
        i.scope_peak_managed.store(before.managed_bytes, Relaxed);
        i.hot.scopes_open.fetch_add(1, SeqCst);
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
        self.inner.hot.recording.store(true, SeqCst);
    }

    /// Stops recording and returns the trace recorded so far.
    pub fn stop_recording(&self) -> Vec<TraceEvent> {
        self.inner.hot.recording.store(false, SeqCst);
        std::mem::take(&mut *self.inner.trace.lock())
    }
}
