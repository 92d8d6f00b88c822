//! The pool's engine: bins, shards, the shared state ([`Inner`]) and every path that moves a block
//! between a bin, a caller and the allocator.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use crate::allocator::{Allocator, AllocatorError};
use crate::bins::{BinLayout, BinNumber};
use crate::error::{OomReport, PoolError};
use crate::stats::{BinStats, TimingStats};
use crate::trace::TraceEvent;

use super::cache::{Own, Slot};
use super::policy::*;

pub(super) struct Bin<B> {
    pub(super) blocks: Vec<B>,
    pub(super) stats: BinStats,
}

/// Bin numbers are small distinct integers: one multiplication spreads them well enough.
#[derive(Default, Clone, Copy)]
pub(super) struct BinHasher(u64);

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

pub(super) type BinMap<B> = HashMap<BinNumber, Bin<B>, BuildHasherDefault<BinHasher>>;

pub(super) struct Shard<B> {
    pub(super) bins: BinMap<B>,
}

/// A shard on its own cache lines, so two threads locking neighbouring shards do not false-share.
#[repr(align(128))]
pub(super) struct Padded<T>(pub(super) T);

#[derive(Debug, Default)]
pub(super) struct Timings {
    pub(super) allocate: TimingStats,
    pub(super) free: TimingStats,
}

#[derive(Debug, Default)]
pub(super) struct ScopeStack {
    pub(super) saved: Vec<(usize, usize)>,
}

pub(super) type Shards<B> = Box<[Padded<Mutex<Shard<B>>>]>;

pub(super) struct Inner<A: Allocator> {
    pub(super) allocator: A,
    pub(super) layout: BinLayout,
    pub(super) shards: Shards<A::Block>,
    /// One shard: the hit-path gauges are written with plain load/store under that shard's lock
    /// (no atomic read-modify-write); several shards: atomic read-modify-write.
    pub(super) single: bool,
    pub(super) policy: PolicyCell,
    pub(super) stop_holding: AtomicBool,
    pub(super) tick: AtomicU64,
    pub(super) active_bytes: AtomicUsize,
    pub(super) managed_bytes: AtomicUsize,
    pub(super) held_bytes: AtomicUsize,
    pub(super) peak_active: AtomicUsize,
    pub(super) peak_managed: AtomicUsize,
    pub(super) larger_bin_hits: AtomicU64,
    pub(super) reclaims: AtomicU64,
    pub(super) oom_events: AtomicU64,
    pub(super) oom_failures: AtomicU64,
    pub(super) free_errors: AtomicU64,
    pub(super) timings: Mutex<Timings>,
    pub(super) scopes_open: AtomicUsize,
    pub(super) scope_peak_active: AtomicUsize,
    pub(super) scope_peak_managed: AtomicUsize,
    pub(super) scope_stack: Mutex<ScopeStack>,
    pub(super) recording: AtomicBool,
    pub(super) next_trace_id: AtomicU64,
    pub(super) trace: Mutex<Vec<TraceEvent>>,
    /// The per-thread caches (`cache.rs`), held strongly while the pool is open.
    pub(super) registry: Mutex<Vec<Arc<Slot<A>>>>,
    /// Whether hits and returns may go through the per-thread caches now (policy and state).
    pub(super) cache_on: AtomicBool,
    /// `MemoryPool` handles alive; the pool closes when the last goes.
    pub(super) handles: AtomicUsize,
    pub(super) closed: AtomicBool,
    /// The thread that registered first: while the caches are off it needs no slot on the hit
    /// path (a single-threaded program pays nothing for the caches).
    pub(super) solo: AtomicUsize,
}

/// A wrapped (below-zero) estimate counts as zero.
pub(super) fn clamp(v: usize) -> usize {
    if isize::try_from(v).is_ok() {
        v
    } else {
        0
    }
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while a pool lock is held; if a user's code did, the data is still consistent.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A block on its way out of the pool, before it is wrapped.
pub(super) struct Acquired<B> {
    pub(super) block: B,
    pub(super) bin: BinNumber,
    pub(super) size: usize,
    pub(super) trace_id: u64,
}

/// Where a block found in a bin came from.
pub(super) enum Found<B> {
    Block(B, BinNumber),
    Nothing,
}

pub(super) enum Upstream<E> {
    Fatal(PoolError<E>),
    Oom(E),
    Limit,
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

impl<A: Allocator> Inner<A> {
    #[inline]
    pub(super) fn shard(&self, bin: BinNumber) -> MutexGuard<'_, Shard<A::Block>> {
        // The shard count is a power of two: a mask, not a division (a `div` costs several
        // nanoseconds, twice per hit). usize has at least 32 bits on every platform we build for.
        let idx = usize::try_from(bin).unwrap_or(0) & (self.shards.len() - 1);
        lock(&self.shards[idx].0)
    }

    pub(super) fn fold_bins<T>(&self, init: T, mut f: impl FnMut(T, &Bin<A::Block>) -> T) -> T {
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
    pub(super) fn bump_peak(peak: &AtomicUsize, value: usize) {
        if value > peak.load(Ordering::Relaxed) {
            peak.fetch_max(value, Ordering::Relaxed);
        }
    }

    // The hit-path gauges (active, held, tick, active peaks). In single-shard mode every writer
    // holds the one shard lock, so a plain load + store is exact and avoids a locked instruction;
    // callers must hold a shard lock. With several shards: atomic read-modify-write.

    #[inline]
    pub(super) fn gauge_add(&self, g: &AtomicUsize, d: usize) -> usize {
        if self.single {
            let v = g.load(Ordering::Relaxed).wrapping_add(d);
            g.store(v, Ordering::Relaxed);
            v
        } else {
            g.fetch_add(d, Ordering::Relaxed).wrapping_add(d)
        }
    }

    #[inline]
    pub(super) fn gauge_sub(&self, g: &AtomicUsize, d: usize) {
        // Wrapping: with per-thread caches a shared gauge may dip below zero while a thread's
        // delta is above it (the sums are right).
        if self.single {
            g.store(g.load(Ordering::Relaxed).wrapping_sub(d), Ordering::Relaxed);
        } else {
            g.fetch_sub(d, Ordering::Relaxed);
        }
    }

    #[inline]
    pub(super) fn gauge_peak(&self, peak: &AtomicUsize, value: usize) {
        if value > peak.load(Ordering::Relaxed) {
            if self.single {
                peak.store(value, Ordering::Relaxed);
            } else {
                peak.fetch_max(value, Ordering::Relaxed);
            }
        }
    }

    #[inline]
    pub(super) fn next_tick(&self) -> u64 {
        if self.single {
            let t = self.tick.load(Ordering::Relaxed);
            self.tick.store(t + 1, Ordering::Relaxed);
            t
        } else {
            self.tick.fetch_add(1, Ordering::Relaxed)
        }
    }

    /// Caller holds a shard lock. `own`: the calling thread's cache delta of the active bytes
    /// (so that the peak is exact when one thread uses the pool).
    #[inline]
    pub(super) fn add_active(&self, size: usize, own: isize) {
        let now = clamp(
            self.gauge_add(&self.active_bytes, size)
                .wrapping_add_signed(own),
        );
        self.gauge_peak(&self.peak_active, now);
        if self.scopes_open.load(Ordering::Relaxed) > 0 {
            self.gauge_peak(&self.scope_peak_active, now);
        }
    }

    /// After a hit from a thread's cache: the pool-wide active bytes as that thread sees them
    /// (exact with one thread; with several, other threads' cached hits are not in it), for the
    /// peaks. Shared lines are only read unless a peak rises.
    #[inline]
    pub(super) fn note_cached_active(&self, own: isize) {
        let now = clamp(
            self.active_bytes
                .load(Ordering::Relaxed)
                .wrapping_add_signed(own),
        );
        Self::bump_peak(&self.peak_active, now);
        if self.scopes_open.load(Ordering::Relaxed) > 0 {
            Self::bump_peak(&self.scope_peak_active, now);
        }
    }

    /// Whether the per-thread caches may be used now.
    #[inline]
    pub(super) fn cache_on(&self) -> bool {
        self.cache_on.load(Ordering::Relaxed)
    }

    /// Recomputes [`Inner::cache_on`] from the policy and the pool's state.
    pub(super) fn refresh_cache_on(&self) {
        // Serialised (a stale `true` must not overwrite a newer `false`), and under the registry
        // lock so that turning the caches off folds every cache back at once.
        let reg = lock(&self.registry);
        let p = self.policy.load();
        let on = !self.stop_holding.load(Ordering::SeqCst)
            && !self.closed.load(Ordering::SeqCst)
            && p.larger_bins == 0
            && !p.shared_bins_only
            && p.held_bytes_cap.is_none()
            && p.idle_release_after.is_none()
            && p.eviction != Eviction::LeastRecentlyUsedBin;
        let was = self.cache_on.swap(on, Ordering::SeqCst);
        if was && !on {
            for slot in reg.iter() {
                let (bins, active, held, requests) = slot.take_state(super::cache::OFF);
                self.fold(bins, active, held, requests);
            }
        } else if on && !was {
            for slot in reg.iter() {
                slot.set_caching(true);
            }
        }
    }

    /// Blocks of `bin` (oldest first) onto the top of the shared bin, as held.
    pub(super) fn push_held(&self, bin: BinNumber, blocks: Vec<A::Block>, last_tick: u64) {
        if blocks.is_empty() {
            return;
        }
        let mut shard = self.shard(bin);
        let bytes = blocks.len() * self.layout.alloc_size(bin);
        self.gauge_add(&self.held_bytes, bytes);
        let b = shard.bin_entry(bin, self.layout);
        b.stats.last_used_tick = b.stats.last_used_tick.max(last_tick);
        b.blocks.extend(blocks);
        b.stats.peak_held_blocks = b.stats.peak_held_blocks.max(b.blocks.len());
    }

    /// Moves every block cached by a thread to the shared bins (a walk that must see every held
    /// block: free, reclaim, idle release, caps).
    pub(super) fn flush_slots(&self) {
        // Under the registry lock, so that a reader (which holds it too) never sees a block in
        // neither place.
        let reg = lock(&self.registry);
        for slot in reg.iter() {
            for d in slot.drain() {
                self.push_held(d.bin, d.blocks, d.last_tick);
            }
        }
    }

    /// Folds an exiting thread's slot into the shared state: its blocks onto the shared bins, its
    /// counter deltas into the bins' figures and the gauges.
    pub(super) fn retire_slot(&self, slot: &Slot<A>) {
        let mut reg = lock(&self.registry);
        let Some(i) = reg.iter().position(|s| std::ptr::eq(Arc::as_ptr(s), slot)) else {
            return; // closed, or retired already
        };
        let mine = reg.swap_remove(i);
        let (bins, active, held, requests) = mine.take_state(super::cache::RETIRED);
        self.fold(bins, active, held, requests);
        drop(reg);
        drop(mine);
    }

    /// A slot's blocks and deltas into the shared state (caller holds the registry lock).
    pub(super) fn fold(
        &self,
        bins: Vec<(BinNumber, Box<super::cache::CacheBin<A::Block>>)>,
        active: isize,
        held: isize,
        requests: u64,
    ) {
        for (bin, mut c) in bins {
            let mut shard = self.shard(bin);
            let b = shard.bin_entry(bin, self.layout);
            b.stats.hits += c.hits;
            b.stats.peak_held_blocks = b.stats.peak_held_blocks.max(c.peak_held);
            b.stats.peak_active_blocks = b.stats.peak_active_blocks.max(c.peak_active);
            b.stats.last_used_tick = b.stats.last_used_tick.max(c.last_tick);
            b.stats.active_blocks = b.stats.active_blocks.wrapping_add_signed(c.active_blocks);
            b.stats.active_requested_bytes = b
                .stats
                .active_requested_bytes
                .wrapping_add_signed(c.active_requested);
            b.blocks.extend(c.blocks.take_all());
            b.stats.peak_held_blocks = b.stats.peak_held_blocks.max(b.blocks.len());
        }
        self.with_gauges(|| {
            self.gauge_add_signed(&self.active_bytes, active);
            self.gauge_add_signed(&self.held_bytes, held);
            if self.single {
                let t = self.tick.load(Ordering::Relaxed);
                self.tick.store(t + requests, Ordering::Relaxed);
            } else {
                self.tick.fetch_add(requests, Ordering::Relaxed);
            }
        });
    }

    /// Caller may write the gauges (see [`Inner::with_gauges`]).
    pub(super) fn gauge_add_signed(&self, g: &AtomicUsize, d: isize) {
        if d >= 0 {
            self.gauge_add(g, d.unsigned_abs());
        } else {
            self.gauge_sub(g, d.unsigned_abs());
        }
    }

    /// Runs `f` where the hit-path gauges may be written (single mode: under the shard lock).
    pub(super) fn with_gauges<R>(&self, f: impl FnOnce() -> R) -> R {
        if self.single {
            let _guard = lock(&self.shards[0].0);
            f()
        } else {
            f()
        }
    }

    pub(super) fn note_managed(&self, now: usize) {
        // managed_bytes changes only off the hit path: always atomic read-modify-write.
        Self::bump_peak(&self.peak_managed, now);
        if self.scopes_open.load(Ordering::Relaxed) > 0 {
            Self::bump_peak(&self.scope_peak_managed, now);
        }
    }

    /// Pops the most recent held block of `bin`, counting a hit. `tick: None` starts a new
    /// request (draws its tick); returns the request's tick.
    #[inline]
    pub(super) fn take_held(
        &self,
        bin: BinNumber,
        size: usize,
        tick: Option<u64>,
        own: Own,
    ) -> (Found<A::Block>, u64) {
        // A request's tick counts the calling thread's cached requests too.
        let tick = match tick {
            Some(t) => Some(t),
            None if !self.single => Some(self.next_tick() + own.requests),
            None => None,
        };
        let mut shard = self.shard(bin);
        let tick = tick.unwrap_or_else(|| self.next_tick() + own.requests);
        let Some(b) = shard.bins.get_mut(&bin) else {
            return (Found::Nothing, tick);
        };
        b.stats.last_used_tick = tick;
        let Some(block) = b.blocks.pop() else {
            return (Found::Nothing, tick);
        };
        let s = &mut b.stats;
        s.hits += 1;
        s.active_blocks = s.active_blocks.wrapping_add(1);
        s.active_requested_bytes = s.active_requested_bytes.wrapping_add(size);
        s.peak_active_blocks = s.peak_active_blocks.max(clamp(s.active_blocks));
        self.gauge_sub(&self.held_bytes, s.block_bytes);
        self.add_active(size, own.active);
        drop(shard);
        (Found::Block(block, bin), tick)
    }

    pub(super) fn take_larger(
        &self,
        bin: BinNumber,
        size: usize,
        tick: u64,
        n: u32,
        own: Own,
    ) -> Found<A::Block> {
        // No block can sit above the bin of the largest size: a huge `larger_bins`
        // (`u32::MAX`) looks at the bins that can exist, not at four billion numbers.
        let last = self.layout.bin_number(usize::MAX);
        let n = n.min(last.saturating_sub(bin));
        for k in 1..=n {
            let Some(b) = bin.checked_add(k) else {
                break;
            };
            if let (Found::Block(block, from), _) = self.take_held(b, size, Some(tick), own) {
                self.larger_bin_hits.fetch_add(1, Ordering::Relaxed);
                return Found::Block(block, from);
            }
        }
        Found::Nothing
    }

    /// One upstream allocation of `rounded` bytes, within the managed limit.
    pub(super) fn upstream_allocate(&self, rounded: usize) -> Result<A::Block, Upstream<A::Error>> {
        // A miss (or a reclaim retry): the only pool path that calls the driver, so the only
        // one with a span; hits stay free of tracing.
        let _span = tracing::debug_span!("cl_pool::miss", bytes = rounded).entered();
        // The caller's limit, and always the hard bound: the managed bytes are reserved before
        // the allocator is asked, so no block (or sum of blocks) past `MAX_MANAGED_BYTES` is ever
        // counted (found by the `trace` fuzz target: a block of `usize::MAX - 255` bytes overflowed
        // the per-thread caches' signed gauges).
        let limit = self
            .policy
            .limit
            .load(Ordering::Relaxed)
            .min(MAX_MANAGED_BYTES);
        let reserved = self
            .managed_bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |m| {
                m.checked_add(rounded).filter(|&n| n <= limit)
            });
        if reserved.is_err() {
            return Err(Upstream::Limit);
        }
        let t0 = Instant::now();
        let r = self.allocator.allocate(rounded);
        lock(&self.timings).allocate.record(t0.elapsed());
        let unreserve = || {
            self.managed_bytes.fetch_sub(rounded, Ordering::Relaxed);
        };
        match r {
            Ok(Some(block)) => {
                self.note_managed(self.managed_bytes.load(Ordering::Relaxed));
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

    pub(super) fn free_upstream(&self, block: A::Block) {
        let t0 = Instant::now();
        let r = self.allocator.free(block);
        lock(&self.timings).free.record(t0.elapsed());
        if let Err(e) = r {
            self.free_errors.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(error = %e, "memory pool: freeing a block failed");
        }
    }

    /// A block comes back (PyOpenCL's `free(block, size)`).
    pub(super) fn give_back(&self, block: A::Block, bin: BinNumber, size: usize) {
        let bytes = self.layout.alloc_size(bin);
        let to_free = {
            let mut shard = self.shard(bin);
            self.gauge_sub(&self.active_bytes, size);
            let hold = if self.stop_holding.load(Ordering::Relaxed)
                || self.closed.load(Ordering::Relaxed)
            {
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
            s.active_blocks = s.active_blocks.wrapping_sub(1);
            s.active_requested_bytes = s.active_requested_bytes.wrapping_sub(size);
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
    pub(super) fn reclaim_one(&self) -> bool {
        self.reclaim_one_counted(true)
    }

    pub(super) fn reclaim_one_counted(&self, count: bool) -> bool {
        self.flush_slots();
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
    pub(super) fn free_held_counted(&self, reclaim: bool) -> usize {
        self.flush_slots();
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
    pub(super) fn release_idle_before(&self, before: u64, keep: Option<BinNumber>) -> usize {
        self.flush_slots();
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

    pub(super) fn oom_report(&self, requested: usize, rounded: usize) -> OomReport {
        let largest = self.fold_bins(0, |acc, b| {
            if b.blocks.is_empty() {
                acc
            } else {
                acc.max(b.stats.block_bytes)
            }
        });
        let limit = self.policy.limit.load(Ordering::Relaxed);
        // Read under the registry lock, as the statistics are (see `MemoryPool::stats`).
        let (active, held, shared_active, shared_held) = {
            let reg = lock(&self.registry);
            let (a, h) = reg.iter().fold((0isize, 0isize), |(a, h), slot| {
                let st = slot.lock();
                (
                    a.wrapping_add(st.active_bytes),
                    h.wrapping_add(st.held_bytes),
                )
            });
            (
                a,
                h,
                self.active_bytes.load(Ordering::Relaxed),
                self.held_bytes.load(Ordering::Relaxed),
            )
        };
        OomReport {
            requested,
            rounded,
            managed_bytes: self.managed_bytes.load(Ordering::Relaxed),
            active_bytes: shared_active.wrapping_add_signed(active),
            held_bytes: shared_held.wrapping_add_signed(held),
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
