//! The pool's shared state ([`Inner`]): the shared bins, spread over lock shards, the counters
//! every thread publishes ([`Stripe`]), the pool-wide figures, and every move of a block between a
//! shared bin, a caller and the allocator. Knows nothing of the thread caches (`cache.rs`).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Instant;

use crossbeam_utils::CachePadded;
use parking_lot::{Mutex, MutexGuard, RwLock};

use crate::allocator::{Allocator, AllocatorError};
use crate::bins::{BinLayout, BinNumber};
use crate::error::{OomReport, PoolError};
use crate::stats::{BinStats, TimingStats};
use crate::trace::TraceEvent;

use super::policy::{
    Eviction, PolicyCell, ThreadCacheLimits, CACHE_BIN_LIMIT, MAX_MANAGED_BYTES, NONE,
};

pub(super) struct Bin<B> {
    pub(super) blocks: Vec<B>,
    /// Misses and upstream calls of every bin; the other figures only for bins no thread counts
    /// in its stripe (at or past [`Inner::cache_bins`]).
    pub(super) stats: BinStats,
}

/// The shared bins' locks, each on cache lines of its own.
pub(super) type Shards<B> = Box<[CachePadded<Mutex<Shard<B>>>]>;

pub(super) struct Shard<B> {
    /// A shard holds a few bins (`bin % shards`): a B-tree finds one in a compare or two.
    pub(super) bins: BTreeMap<BinNumber, Bin<B>>,
    /// Bytes held in this shard's bins.
    pub(super) held_bytes: usize,
}

impl<B> Shard<B> {
    pub(super) fn bin_entry(&mut self, bin: BinNumber, layout: BinLayout) -> &mut Bin<B> {
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

// Counters with one writer at a time (a stripe's owner, or the shard lock's holder): a load and a
// store, no locked instruction; anyone may read them. The gauges wrap: a stripe's figures are
// deltas (a block taken on one thread and returned on another), only their sums are real figures.
// The counts (`hits`, `requests`) only grow, in u64.

#[inline]
pub(super) fn add(c: &AtomicUsize, d: usize) -> usize {
    let v = c.load(Relaxed).wrapping_add(d);
    c.store(v, Relaxed);
    v
}

#[inline]
pub(super) fn sub(c: &AtomicUsize, d: usize) -> usize {
    add(c, d.wrapping_neg())
}

/// Raises a peak to `v`, compared signed: a wrapped (below-zero) figure raises nothing.
#[inline]
pub(super) fn raise(c: &AtomicUsize, v: usize) {
    if v.cast_signed() > c.load(Relaxed).cast_signed() {
        c.store(v, Relaxed);
    }
}

/// A wrapped (below-zero) sum counts as zero.
pub(super) fn clamp(v: usize) -> usize {
    if isize::try_from(v).is_ok() {
        v
    } else {
        0
    }
}

impl BinCounters {
    /// A request of this bin was served (`hit`: from a held block) for `size` bytes, as request
    /// `tick`. Written once for a hit from the thread's cache and one from the shared bin.
    #[inline(always)]
    pub(super) fn count_out(&self, size: usize, tick: u64, hit: bool) {
        raise(&self.peak_active, add(&self.active, 1));
        add(&self.requested, size);
        self.last_tick.store(tick, Relaxed);
        self.hits
            .store(self.hits.load(Relaxed) + u64::from(hit), Relaxed);
    }
}

/// One bin's figures as one stripe counts them: one cache line of its own (its owner writes it on
/// every hit and return of the bin; a neighbour on the line written by another thread would
/// bounce it between their cores).
#[derive(Default)]
#[repr(align(64))]
pub(super) struct BinCounters {
    /// Blocks of the bin in the owner's cache.
    pub(super) held: AtomicUsize,
    pub(super) active: AtomicUsize,
    pub(super) requested: AtomicUsize,
    pub(super) hits: AtomicU64,
    pub(super) last_tick: AtomicU64,
    pub(super) peak_active: AtomicUsize,
    pub(super) peak_held: AtomicUsize,
    /// The shared bin's length when the owner last touched it: with `held`, the bin's held
    /// blocks as the owner sees them (exact while no other thread uses the bin).
    pub(super) shared_seen: AtomicUsize,
}

/// The figures one thread (or one borrower at a time, see [`Inner::lend_stripe`]) counts for a
/// pool, published for the readers of statistics: the pool-wide gauges of all its requests and
/// the per-bin figures of the bins below [`Inner::cache_bins`]. Its writer is its only writer.
/// Aligned to two cache lines (the pair an x86 core prefetches together), as crossbeam's
/// `CachePadded`: a stripe outlives its thread and passes to the next one, and its neighbour in
/// memory may be another thread's data.
#[repr(align(128))]
pub(super) struct Stripe {
    pub(super) requests: AtomicU64,
    pub(super) active_bytes: AtomicUsize,
    /// Bytes in the owner's cache.
    pub(super) held_bytes: AtomicUsize,
    pub(super) bins: Box<[BinCounters]>,
}

impl Stripe {
    fn new(bins: usize) -> Self {
        Stripe {
            requests: AtomicU64::new(0),
            active_bytes: AtomicUsize::new(0),
            held_bytes: AtomicUsize::new(0),
            bins: (0..bins).map(|_| BinCounters::default()).collect(),
        }
    }

    /// The counters of `bin`, if this stripe counts it.
    #[inline]
    pub(super) fn bin(&self, bin: BinNumber) -> Option<&BinCounters> {
        self.bins.get(usize::try_from(bin).ok()?)
    }

    /// A new request: its tick (the pool's requests before it, as this stripe counts them).
    #[inline]
    pub(super) fn next_tick(&self) -> u64 {
        let tick = self.requests.load(Relaxed);
        self.requests.store(tick + 1, Relaxed);
        tick
    }
}

#[derive(Default)]
struct Stripes {
    all: Vec<Arc<Stripe>>,
    /// Stripes of exited threads, handed to the next thread or lent for one request.
    free: Vec<Arc<Stripe>>,
}

/// What every request reads: one cache line, written only by rare events.
#[derive(Default)]
pub(super) struct Hot {
    /// Bumped by every message to the thread caches (see `cache.rs`).
    pub(super) gen: AtomicU64,
    pub(super) peak_active: AtomicUsize,
    pub(super) scopes_open: AtomicUsize,
    pub(super) recording: AtomicBool,
}

#[derive(Debug, Default)]
pub(super) struct Timings {
    pub(super) allocate: TimingStats,
    pub(super) free: TimingStats,
}

pub(super) struct Inner<A: Allocator> {
    pub(super) allocator: A,
    pub(super) layout: BinLayout,
    pub(super) shards: Shards<A::Block>,
    pub(super) policy: PolicyCell,
    pub(super) limits: ThreadCacheLimits,
    /// Bins numbered below this are the ones a thread may cache, and counted in the stripes.
    pub(super) cache_bins: usize,
    pub(super) hot: CachePadded<Hot>,
    /// Bumped by `free_held` and `stop_holding`: caches free what they hold, not just return it.
    pub(super) free_gen: AtomicU64,
    /// Whether the thread caches may keep blocks now (policy and state).
    pub(super) cache_on: AtomicBool,
    pub(super) stop_holding: AtomicBool,
    /// The last `MemoryPool` handle went.
    pub(super) closed: AtomicBool,
    pub(super) handles: AtomicUsize,
    pub(super) managed_bytes: AtomicUsize,
    pub(super) peak_managed: AtomicUsize,
    pub(super) scope_peak_active: AtomicUsize,
    pub(super) scope_peak_managed: AtomicUsize,
    pub(super) scope_stack: Mutex<Vec<(usize, usize)>>,
    pub(super) larger_bin_hits: AtomicU64,
    pub(super) reclaims: AtomicU64,
    pub(super) oom_events: AtomicU64,
    pub(super) oom_failures: AtomicU64,
    pub(super) free_errors: AtomicU64,
    pub(super) timings: Mutex<Timings>,
    pub(super) next_trace_id: AtomicU64,
    pub(super) trace: Mutex<Vec<TraceEvent>>,
    stripes: Mutex<Stripes>,
    /// Moves of blocks between a thread's cache and the shards (and frees out of a cache) take
    /// it shared; statistics take it exclusive, so that no block is seen in both places or none.
    pub(super) moves: RwLock<()>,
}

/// A block for a request, the bin it belongs to, and whether it was held (a hit).
pub(super) struct Found<B> {
    pub(super) block: B,
    pub(super) bin: BinNumber,
    pub(super) hit: bool,
}

/// Managed bytes reserved for an allocator call, given back when dropped.
struct Reservation<'a>(&'a AtomicUsize, usize);

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(self.1, Relaxed);
    }
}

pub(super) enum Upstream<E> {
    Fatal(PoolError<E>),
    Oom(E),
    Limit,
}

impl<A: Allocator> Inner<A> {
    pub(super) fn new(
        allocator: A,
        layout: BinLayout,
        shards: usize,
        policy: PolicyCell,
        limits: ThreadCacheLimits,
    ) -> Self {
        // Bins are ordered by size: the cacheable ones are a prefix.
        let b = layout.bin_number(limits.max_block_bytes);
        let fits = usize::from(layout.alloc_size(b) <= limits.max_block_bytes);
        let n = usize::try_from(b).map_or(usize::MAX, |n| n.saturating_add(fits));
        let cache_bins = if limits.max_blocks == 0 {
            0
        } else {
            n.min(CACHE_BIN_LIMIT)
        };
        Inner {
            allocator,
            layout,
            shards: (0..shards)
                .map(|_| {
                    CachePadded::new(Mutex::new(Shard {
                        bins: BTreeMap::new(),
                        held_bytes: 0,
                    }))
                })
                .collect(),
            policy,
            limits,
            cache_bins,
            hot: CachePadded::default(),
            free_gen: AtomicU64::new(0),
            cache_on: AtomicBool::new(false),
            stop_holding: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            handles: AtomicUsize::new(1),
            managed_bytes: AtomicUsize::new(0),
            peak_managed: AtomicUsize::new(0),
            scope_peak_active: AtomicUsize::new(0),
            scope_peak_managed: AtomicUsize::new(0),
            scope_stack: Mutex::new(Vec::new()),
            larger_bin_hits: AtomicU64::new(0),
            reclaims: AtomicU64::new(0),
            oom_events: AtomicU64::new(0),
            oom_failures: AtomicU64::new(0),
            free_errors: AtomicU64::new(0),
            timings: Mutex::new(Timings::default()),
            next_trace_id: AtomicU64::new(1),
            trace: Mutex::new(Vec::new()),
            stripes: Mutex::new(Stripes::default()),
            moves: RwLock::new(()),
        }
    }

    #[inline]
    pub(super) fn shard(&self, bin: BinNumber) -> MutexGuard<'_, Shard<A::Block>> {
        // The shard count is a power of two: a mask, not a division.
        let idx = usize::try_from(bin).unwrap_or(0) & (self.shards.len() - 1);
        self.shards[idx].lock()
    }

    // ---- stripes ----

    /// A stripe for a new thread cache (an exited thread's, else a new one).
    pub(super) fn take_stripe(&self) -> Arc<Stripe> {
        let mut s = self.stripes.lock();
        if let Some(st) = s.free.pop() {
            return st;
        }
        let st = Arc::new(Stripe::new(self.cache_bins));
        s.all.push(Arc::clone(&st));
        st
    }

    /// Gives a stripe back (its thread exited, or a lent one's request is done).
    pub(super) fn return_stripe(&self, st: Arc<Stripe>) {
        self.stripes.lock().free.push(st);
    }

    /// Runs `f` with a stripe of its own, for a request made where the thread has no cache (its
    /// thread-locals are being destroyed, or a pool call from inside an allocator call).
    pub(super) fn lend_stripe<R>(&self, f: impl FnOnce(&Stripe) -> R) -> R {
        let st = self.take_stripe();
        let r = f(&st);
        self.return_stripe(st);
        r
    }

    /// Every stripe, for the readers of statistics.
    pub(super) fn stripes(&self) -> Vec<Arc<Stripe>> {
        self.stripes.lock().all.clone()
    }

    // ---- messages to the thread caches ----

    /// Asks every thread cache to give its blocks back to the shared bins at its thread's next
    /// pool call or exit (`free`: to free them instead).
    pub(super) fn message_caches(&self, free: bool) {
        if free {
            self.free_gen.fetch_add(1, Relaxed);
        }
        self.hot.gen.fetch_add(1, SeqCst);
    }

    /// Recomputes whether the thread caches may hold blocks; when that changes, every cache
    /// hears of it.
    pub(super) fn refresh_cache_on(&self) {
        let p = self.policy.load();
        let on = self.limits.max_blocks > 0
            && !self.stop_holding.load(Relaxed)
            && !self.closed.load(Relaxed)
            && p.larger_bins == 0
            && !p.shared_bins_only
            && p.held_bytes_cap.is_none()
            && p.idle_release_after.is_none()
            && p.eviction != Eviction::LeastRecentlyUsedBin;
        self.cache_on.store(on, Relaxed);
        self.message_caches(false);
    }

    // ---- counting ----

    /// A request of `bin` was served (`hit`: from a held block) for `size` bytes; the shard's
    /// figures when no stripe counts the bin (caller holds that shard).
    #[inline]
    fn count_out(
        &self,
        st: &Stripe,
        shard: &mut Shard<A::Block>,
        bin: BinNumber,
        size: usize,
        hit: bool,
        tick: u64,
    ) {
        match st.bin(bin) {
            Some(c) => {
                c.count_out(size, tick, hit);
                if let Some(b) = shard.bins.get(&bin) {
                    c.shared_seen.store(b.blocks.len(), Relaxed);
                }
            }
            None => {
                let s = &mut shard.bin_entry(bin, self.layout).stats;
                s.active_blocks = s.active_blocks.wrapping_add(1);
                s.active_requested_bytes = s.active_requested_bytes.wrapping_add(size);
                s.peak_active_blocks = s.peak_active_blocks.max(clamp(s.active_blocks));
                s.last_used_tick = tick;
                s.hits += u64::from(hit);
            }
        }
    }

    /// The active bytes grew by `size` through `st`: the pool-wide figure as that stripe sees it
    /// (exact when one thread uses the pool) raises the peaks. Shared lines are only read unless
    /// a peak rises.
    #[inline(always)]
    pub(super) fn note_active(&self, st: &Stripe, size: usize) {
        // Signed: a wrapped (below-zero) sum is below every peak, as `clamp` would make it, in
        // one compare fewer. The managed bytes are at most `isize::MAX`.
        let now = add(&st.active_bytes, size)
            .cast_signed()
            .min(self.managed_bytes.load(Relaxed).cast_signed());
        if now > self.hot.peak_active.load(Relaxed).cast_signed() {
            self.hot.peak_active.fetch_max(now.unsigned_abs(), Relaxed);
        }
        // A locked compare-exchange only when the scope's peak rises: every hit inside a
        // scope paid one (`hit_latency`'s "inside a scope" row, a few ns over the others).
        if self.hot.scopes_open.load(Relaxed) > 0 {
            let now = now.max(0).unsigned_abs();
            if now > self.scope_peak_active.load(Relaxed) {
                self.scope_peak_active.fetch_max(now, Relaxed);
            }
        }
    }

    fn note_managed(&self, now: usize) {
        self.peak_managed.fetch_max(now, Relaxed);
        if self.hot.scopes_open.load(Relaxed) > 0 {
            self.scope_peak_managed.fetch_max(now, Relaxed);
        }
    }

    // ---- the shared bins ----

    /// The newest held block of `bin` from its shared bin, counted as a hit of request `tick`.
    pub(super) fn take_shared(
        &self,
        st: &Stripe,
        bin: BinNumber,
        size: usize,
        tick: u64,
    ) -> Option<Found<A::Block>> {
        let mut shard = self.shard(bin);
        let sh = &mut *shard;
        let b = sh.bins.get_mut(&bin)?;
        let Some(block) = b.blocks.pop() else {
            // A request touched the bin all the same.
            match st.bin(bin) {
                Some(c) => c.last_tick.store(tick, Relaxed),
                None => b.stats.last_used_tick = tick,
            }
            return None;
        };
        sh.held_bytes -= b.stats.block_bytes;
        self.count_out(st, sh, bin, size, true, tick);
        drop(shard);
        self.note_active(st, size);
        let hit = true;
        Some(Found { block, bin, hit })
    }

    /// Under the larger-bins policy: a held block from one of the `n` bins above `bin`.
    pub(super) fn take_larger(
        &self,
        st: &Stripe,
        bin: BinNumber,
        size: usize,
        tick: u64,
        n: u32,
    ) -> Option<Found<A::Block>> {
        // No block can sit above the bin of the largest size: a huge `larger_bins` looks at the
        // bins that can exist, not at four billion numbers.
        let last = self.layout.bin_number(usize::MAX);
        for k in 1..=n.min(last.saturating_sub(bin)) {
            let from = bin.checked_add(k)?;
            if let Some(found) = self.take_shared(st, from, size, tick) {
                self.larger_bin_hits.fetch_add(1, Relaxed);
                return Some(found);
            }
        }
        None
    }

    /// A block fresh from the allocator for request `tick`: counted as a miss.
    pub(super) fn count_fresh(&self, st: &Stripe, bin: BinNumber, size: usize, tick: u64) {
        let mut shard = self.shard(bin);
        let s = &mut shard.bin_entry(bin, self.layout).stats;
        s.misses += 1;
        s.upstream_allocations += 1;
        self.count_out(st, &mut shard, bin, size, false, tick);
        drop(shard);
        self.note_active(st, size);
    }

    /// Counts the return of a block of `bin` requested as `size` bytes (caller holds that shard
    /// when no stripe counts the bin).
    #[inline]
    pub(super) fn count_in(
        st: &Stripe,
        shard: Option<&mut Shard<A::Block>>,
        bin: BinNumber,
        size: usize,
    ) {
        sub(&st.active_bytes, size);
        match (st.bin(bin), shard) {
            (Some(c), _) => {
                sub(&c.active, 1);
                sub(&c.requested, size);
            }
            (None, Some(shard)) => {
                if let Some(b) = shard.bins.get_mut(&bin) {
                    b.stats.active_blocks = b.stats.active_blocks.wrapping_sub(1);
                    b.stats.active_requested_bytes =
                        b.stats.active_requested_bytes.wrapping_sub(size);
                }
            }
            (None, None) => {}
        }
    }

    /// A returned block goes to its shared bin (PyOpenCL's `free(block, size)`), or to the
    /// allocator after `stop_holding`, once the pool closed, or past the held-bytes cap.
    pub(super) fn put_shared(&self, st: &Stripe, block: A::Block, bin: BinNumber, size: usize) {
        let bytes = self.layout.alloc_size(bin);
        let cap = self.policy.held_cap.load(Relaxed);
        let hold = !self.stop_holding.load(Relaxed)
            && !self.closed.load(Relaxed)
            && (cap == NONE
                || self
                    .shared_held_bytes()
                    .checked_add(bytes)
                    .is_some_and(|n| n <= cap));
        let mut shard = self.shard(bin);
        // Read again under the shard's lock: a `stop_holding` (or close) that freed this shard
        // before we took it is seen here, so no block stays held after it.
        let hold = hold && !self.stop_holding.load(SeqCst) && !self.closed.load(SeqCst);
        Self::count_in(st, Some(&mut shard), bin, size);
        let to_free = if hold {
            self.push_shared(st, &mut shard, bin, vec![block]);
            None
        } else {
            shard.bin_entry(bin, self.layout).stats.upstream_frees += 1;
            self.managed_bytes.fetch_sub(bytes, Relaxed);
            Some(block)
        };
        drop(shard);
        if let Some(block) = to_free {
            self.free_upstream(block);
        }
    }

    /// Blocks of `bin` (oldest first) onto the top of its shared bin, as held (caller holds that
    /// shard; `st`: the stripe of the thread that moves them, whose view of the bin follows).
    pub(super) fn push_shared(
        &self,
        st: &Stripe,
        shard: &mut Shard<A::Block>,
        bin: BinNumber,
        blocks: Vec<A::Block>,
    ) {
        let b = shard.bin_entry(bin, self.layout);
        let bytes = blocks.len() * b.stats.block_bytes;
        b.blocks.extend(blocks);
        b.stats.peak_held_blocks = b.stats.peak_held_blocks.max(b.blocks.len());
        let len = b.blocks.len();
        shard.held_bytes += bytes;
        if let Some(c) = st.bin(bin) {
            c.shared_seen.store(len, Relaxed);
            raise(&c.peak_held, len + c.held.load(Relaxed));
        }
    }

    /// Held bytes in the shared bins.
    pub(super) fn shared_held_bytes(&self) -> usize {
        self.shards.iter().map(|s| s.lock().held_bytes).sum()
    }

    // ---- the allocator ----

    /// One upstream allocation of `rounded` bytes, within the managed limit.
    pub(super) fn upstream_allocate(&self, rounded: usize) -> Result<A::Block, Upstream<A::Error>> {
        // A miss (or a reclaim retry): the only pool path that calls the driver, so the only
        // one with a span; hits stay free of tracing.
        let _span = tracing::debug_span!("cl_pool::miss", bytes = rounded).entered();
        // The caller's limit, and always the hard bound: the managed bytes are reserved before
        // the allocator is asked, so no sum of blocks past `MAX_MANAGED_BYTES` is ever counted.
        let limit = self.policy.limit.load(Relaxed).min(MAX_MANAGED_BYTES);
        let reserved = self.managed_bytes.fetch_update(Relaxed, Relaxed, |m| {
            m.checked_add(rounded).filter(|&n| n <= limit)
        });
        let Ok(before) = reserved else {
            return Err(Upstream::Limit);
        };
        // Given back unless a block comes: on an error, and if the allocator panics.
        let reservation = Reservation(&self.managed_bytes, rounded);
        let t0 = Instant::now();
        let r = self.allocator.allocate(rounded);
        self.timings.lock().allocate.record(t0.elapsed());
        if let Ok(Some(block)) = r {
            std::mem::forget(reservation);
            self.note_managed(before + rounded);
            return Ok(block);
        }
        drop(reservation);
        Err(match r {
            Ok(_) => Upstream::Fatal(PoolError::NoBlock { size: rounded }),
            Err(e) if e.is_out_of_memory() => Upstream::Oom(e),
            Err(e) => Upstream::Fatal(PoolError::Allocator(e)),
        })
    }

    pub(super) fn free_upstream(&self, block: A::Block) {
        let t0 = Instant::now();
        let r = self.allocator.free(block);
        self.timings.lock().free.record(t0.elapsed());
        if let Err(e) = r {
            self.free_errors.fetch_add(1, Relaxed);
            tracing::warn!(error = %e, "memory pool: freeing a block failed");
        }
    }

    /// Frees blocks taken out of the pool's held ones (`reclaim`: count them as reclaims).
    fn free_taken(&self, taken: Vec<(BinNumber, A::Block)>, reclaim: bool) -> usize {
        let mut freed = 0;
        for (bin, block) in taken {
            let bytes = self.layout.alloc_size(bin);
            self.managed_bytes.fetch_sub(bytes, Relaxed);
            freed += bytes;
            if reclaim {
                self.reclaims.fetch_add(1, Relaxed);
            }
            self.free_upstream(block);
        }
        freed
    }

    // ---- walks over the shared bins ----

    /// Each bin's last request tick, from the shards and every stripe.
    pub(super) fn last_ticks(&self) -> HashMap<BinNumber, u64> {
        let mut t = HashMap::new();
        for shard in self.shards.iter() {
            for (&bin, b) in &shard.lock().bins {
                t.insert(bin, b.stats.last_used_tick);
            }
        }
        for st in self.stripes() {
            for (i, c) in st.bins.iter().enumerate() {
                if let (Ok(bin), tick @ 1..) = (BinNumber::try_from(i), c.last_tick.load(Relaxed)) {
                    let e = t.entry(bin).or_insert(0);
                    *e = (*e).max(tick);
                }
            }
        }
        t
    }

    /// Takes the shared bins' blocks that `pick(bin, blocks held)` selects, ascending by bin.
    fn take_shared_where(
        &self,
        mut pick: impl FnMut(BinNumber, usize) -> bool,
    ) -> Vec<(BinNumber, A::Block)> {
        let mut taken = Vec::new();
        for shard in self.shards.iter() {
            let mut shard = shard.lock();
            let sh = &mut *shard;
            for (&bin, b) in &mut sh.bins {
                if !b.blocks.is_empty() && pick(bin, b.blocks.len()) {
                    b.stats.upstream_frees += b.blocks.len() as u64;
                    sh.held_bytes -= b.blocks.len() * b.stats.block_bytes;
                    taken.extend(b.blocks.drain(..).map(|blk| (bin, blk)));
                }
            }
        }
        taken.sort_by_key(|(bin, _)| *bin);
        taken
    }

    /// Frees every block of the shared bins (PyOpenCL's `free_held`); returns the count.
    pub(super) fn free_shared(&self, reclaim: bool) -> usize {
        let taken = self.take_shared_where(|_, _| true);
        let n = taken.len();
        self.free_taken(taken, reclaim);
        n
    }

    /// Frees the shared blocks of bins last used before tick `before` (except `keep`).
    pub(super) fn release_idle_before(&self, before: u64, keep: Option<BinNumber>) -> usize {
        let ticks = self.last_ticks();
        let taken = self.take_shared_where(|bin, _| {
            Some(bin) != keep && ticks.get(&bin).copied().unwrap_or(0) < before
        });
        self.free_taken(taken, false)
    }

    /// Frees one held block of the shared bins, the policy's eviction order first (PyOpenCL's
    /// `try_to_free_memory`: the highest non-empty bin).
    pub(super) fn reclaim_one(&self, count: bool) -> bool {
        let eviction = self.policy.eviction();
        let ticks = (eviction == Eviction::LeastRecentlyUsedBin).then(|| self.last_ticks());
        loop {
            // Score: larger is freed first.
            let mut best: Option<((u64, BinNumber), BinNumber)> = None;
            for shard in self.shards.iter() {
                for (&bin, b) in &shard.lock().bins {
                    if b.blocks.is_empty() {
                        continue;
                    }
                    let first = match (&ticks, eviction) {
                        (Some(t), _) => u64::MAX - t.get(&bin).copied().unwrap_or(0),
                        (None, Eviction::FullestBinFirst) => b.blocks.len() as u64,
                        (None, _) => 0,
                    };
                    if best.is_none_or(|(s, _)| (first, bin) > s) {
                        best = Some(((first, bin), bin));
                    }
                }
            }
            let Some((_, bin)) = best else {
                return false;
            };
            let block = {
                let mut shard = self.shard(bin);
                let sh = &mut *shard;
                let b = sh.bin_entry(bin, self.layout);
                let block = b.blocks.pop();
                if block.is_some() {
                    b.stats.upstream_frees += 1;
                    let bytes = b.stats.block_bytes;
                    sh.held_bytes -= bytes;
                }
                block
            };
            // Emptied meanwhile by another thread: look again.
            if let Some(block) = block {
                self.free_taken(vec![(bin, block)], count);
                return true;
            }
        }
    }

    pub(super) fn oom_report(
        &self,
        requested: usize,
        rounded: usize,
        active: usize,
        held: usize,
    ) -> OomReport {
        let largest = self
            .shards
            .iter()
            .flat_map(|s| {
                s.lock()
                    .bins
                    .values()
                    .filter(|b| !b.blocks.is_empty())
                    .map(|b| b.stats.block_bytes)
                    .max()
            })
            .max()
            .unwrap_or(0);
        let limit = self.policy.limit.load(Relaxed);
        OomReport {
            requested,
            rounded,
            managed_bytes: self.managed_bytes.load(Relaxed),
            active_bytes: active,
            held_bytes: held,
            largest_held_block: largest,
            limit: (limit != NONE).then_some(limit),
        }
    }
}

impl<A: Allocator> Drop for Inner<A> {
    fn drop(&mut self) {
        // PyOpenCL's destructor runs free_held(). (No thread cache holds a block now: each holds
        // the pool while it does.)
        self.free_shared(false);
    }
}
