//! Thread caches: each thread's held blocks of each pool it uses, touched by that thread alone.
//!
//! # Design
//!
//! mimalloc's thread-owned heaps and tcmalloc's per-thread caches, in safe Rust:
//!
//! - A thread's caches live in a list of its own (`CACHES`): one [`ThreadCache`] per pool,
//!   found by the pool's address. No other thread can reach them, so a hit and a return take no
//!   lock and no locked instruction. Their figures are published in the thread's [`Stripe`]
//!   (counters with one writer, summed by the readers of statistics).
//! - Other threads reach a cache only by messages: a pool-wide generation (`Hot::gen`) that every
//!   pool call of the thread compares with the one it last saw (one load of a line that only rare
//!   events write). A change makes the thread give its blocks back to the shared bins (or free
//!   them, after `free_held` or `stop_holding`) and read the pool's state again (caches on or
//!   off, closed). At thread exit `Exit`'s destructor does the same for every pool.
//! - A block returned on another thread goes into *that* thread's cache (tcmalloc's way): a block
//!   belongs to a bin, not to a thread, so no remote-free queue is needed; a thread's figures are
//!   deltas (a block counted out by one stripe and in by another), whose sums are exact.
//! - An owned block ([`PoolBlock`](super::PoolBlock)) holds a pool handle (`Arc`). A cache keeps
//!   the handles of blocks returned on its thread as spares for its next owned hits, so that in
//!   the steady state a hit and a return make no reference-count operation (each is a locked
//!   instruction on the pool's one shared count).
//! - A cache holds its pool while it may hold blocks (their allocator lives in the pool); when
//!   the pool closes it gives its blocks back and lets the pool go, at its thread's next call or
//!   exit. Entries of closed pools are dropped when the thread next adds one.
//!
//! Why not `thread_local::ThreadLocal` in the pool: its values pass to the next thread given the
//! same id, so an exit could not give its blocks back; a pool call from another thread-local's
//! destructor, after that crate's id guard is gone, panics (tests/threads.rs,
//! `a_block_from_a_thread_local_destructor_keeps_its_pool`); and a cache reached through its
//! pool cannot keep that pool's handles as spares.

use std::any::{Any, TypeId};
use std::borrow::Borrow;
use std::cell::Cell;
use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use crate::allocator::Allocator;
use crate::bins::BinNumber;

use super::engine::{add, raise, sub, Inner, Stripe};

/// Most spare pool handles a cache keeps.
const SPARES: usize = 64;

thread_local! {
    /// The thread's caches while no call of this thread uses them: a call takes them out, so a
    /// nested call (allocator, hand-out hook) takes the shared bins. No destructor: reading it is
    /// one load, inlined into the hit (a `try_with` closure was not).
    static CACHES: Cell<Option<&'static mut Vec<Entry>>> = const { Cell::new(None) };
    /// Whether the thread has had its list (then a missing one is in use, or the thread exits).
    static STARTED: Cell<bool> = const { Cell::new(false) };
    static EXIT: Exit = const { Exit };
}

/// Lists of exited threads, emptied, for new threads: each list is allocated once, so there are
/// at most as many as threads that used a pool at the same time.
static LISTS: Mutex<Vec<&'static mut Vec<Entry>>> = Mutex::new(Vec::new());

/// The thread's list, taken out for one call; put back when dropped (by a panic too).
struct Lease(Option<&'static mut Vec<Entry>>);

impl Drop for Lease {
    #[inline(always)]
    fn drop(&mut self) {
        let list = self.0.take();
        CACHES.with(|c| c.set(list));
    }
}

#[inline(always)]
fn lease() -> Option<Lease> {
    match CACHES.with(Cell::take) {
        Some(list) => Some(Lease(Some(list))),
        None => first_lease(),
    }
}

#[cold]
#[inline(never)]
fn first_lease() -> Option<Lease> {
    if STARTED.replace(true) {
        return None;
    }
    // Registers the destructor that gives the caches back (fails while the thread exits).
    EXIT.try_with(|_| ()).ok()?;
    let reused = LISTS.lock().unwrap_or_else(PoisonError::into_inner).pop();
    let list = reused.unwrap_or_else(|| Box::leak(Box::default()));
    Some(Lease(Some(list)))
}

/// At thread exit, gives every cache back, then the list to [`LISTS`]. A pool call made
/// meanwhile or later (an allocator's `free`, another thread-local's destructor) finds no list
/// and takes the shared bins with a lent stripe.
struct Exit;

impl Drop for Exit {
    fn drop(&mut self) {
        if let Some(list) = CACHES.with(Cell::take) {
            for mut e in std::mem::take(list) {
                (e.retire)(&mut e.cache, true);
            }
            let mut lists = LISTS.lock().unwrap_or_else(PoisonError::into_inner);
            lists.push(list);
        }
    }
}

struct Entry {
    /// The pool's address (kept from reuse by the cache's `Weak`).
    key: usize,
    cache: Slot,
    /// Retires the cache if told to or if its pool closed (`true`: it did), for the entry's `A`.
    retire: fn(&mut Slot, bool) -> bool,
}

/// Declares [`Slot`]: a cache by value, a variant per allocator of this crate (matched, its
/// `Any` check folds to the tag compare), boxed as `dyn Any` for other crates' allocators.
macro_rules! slots {
    ($($variant:ident($alloc:ty)),* $(,)?) => {
        enum Slot {
            $($variant(ThreadCache<$alloc>),)*
            Other(Box<dyn Any + Send>),
        }

        impl Slot {
            fn new<A: Allocator>(cache: ThreadCache<A>) -> Slot {
                let mut cache = Some(cache);
                let any: &mut dyn Any = &mut cache;
                $(if let Some(c) = any.downcast_mut::<Option<ThreadCache<$alloc>>>().and_then(Option::take) {
                    return Slot::$variant(c);
                })*
                Slot::Other(Box::new(cache))
            }

            /// One tag compare for a crate allocator (the guards fold; a `match` made a jump table).
            #[inline(always)]
            fn get<A: Allocator>(&mut self) -> Option<&mut ThreadCache<A>> {
                $(if TypeId::of::<A>() == TypeId::of::<$alloc>() {
                    let Slot::$variant(c) = self else { return None };
                    return (c as &mut dyn Any).downcast_mut();
                })*
                let Slot::Other(c) = self else { return None };
                c.downcast_mut::<Option<ThreadCache<A>>>()?.as_mut()
            }
        }
    };
}

slots!(
    Simulated(crate::SimulatedAllocator),
    Immediate(crate::ImmediateAllocator),
    Deferred(crate::DeferredAllocator),
    Pinned(crate::PinnedAllocator),
    SvmCoarse(crate::SvmAllocator<cl_mem::svm::Coarse>),
    SvmFine(crate::SvmAllocator<cl_mem::svm::Fine>),
);

/// One thread's cache of one pool. Aligned as [`Stripe`]: its thread writes it on every hit and
/// return, and no other thread's data shares its lines.
#[repr(align(128))]
pub(super) struct ThreadCache<A: Allocator> {
    /// Holds the pool while this cache may hold its blocks; `None` once the pool closed.
    pool: Option<Arc<Inner<A>>>,
    /// Keeps the pool's address, the entry's key, from being reused while the entry is listed.
    key: Weak<Inner<A>>,
    pub(super) stripe: Arc<Stripe>,
    /// The pool's generation and free generation when last read.
    seen: u64,
    seen_free: u64,
    caching: bool,
    /// Held blocks by bin: grown to a bin when the first block of it is kept, emptied when
    /// caching stops (a bin present here may take blocks).
    bins: Vec<CacheBin<A::Block>>,
    /// Blocks held (their bytes are the stripe's `held_bytes`: this cache is its one writer).
    blocks: usize,
    /// At most its capacity: [`SPARES`] while the cache holds its pool, none once it let it go
    /// (a spare is kept only where there is room, so the push never grows it).
    spares: Vec<Arc<Inner<A>>>,
}

/// One bin of a thread's cache.
struct CacheBin<B> {
    /// The first `held` places hold its blocks, newest last (the rest are `None`), where `held`
    /// is the bin's published counter (`BinCounters::held`): the length is kept once. A block
    /// moves in by `mem::swap` and out by `Option::take` of whole `Option`s (`tools/sf`:
    /// `Vec::push` and `pop` stored it as two words and loaded it as one, a store-forwarding
    /// stall on every hit; a `take` in, or a `swap` out, cost instructions or stalls).
    places: Vec<Option<B>>,
    /// The bin's block size (`alloc_size`), kept so that a hit and a return do not compute it.
    bytes: usize,
}

/// Runs `f` on the calling thread's cache of the pool `p` names (made on first use), handing
/// `p` on; gives `p` back when there is none: the thread is exiting, the caches are in use
/// further up the stack (a pool call from an allocator call), or the pool is closed.
#[inline(always)]
pub(super) fn with<A, P, R>(p: P, f: impl FnOnce(&mut ThreadCache<A>, P) -> R) -> Result<R, P>
where
    A: Allocator,
    P: Borrow<Arc<Inner<A>>>,
{
    let mut lease = lease();
    match lease
        .as_mut()
        .and_then(|l| cache_of(l.0.as_deref_mut()?, p.borrow()))
    {
        Some(tc) => Ok(f(tc, p)),
        None => Err(p),
    }
}

/// The cache of `inner`'s pool in the thread's list (made on first use), having read the
/// pool's messages.
#[inline(always)]
fn cache_of<'l, A: Allocator>(
    list: &'l mut Vec<Entry>,
    inner: &Arc<Inner<A>>,
) -> Option<&'l mut ThreadCache<A>> {
    let key = Arc::as_ptr(inner).addr();
    // The pool used last is first in the list.
    if list.first().is_none_or(|e| e.key != key) {
        find_entry(list, inner)?;
    }
    let tc = list.first_mut()?.cache.get::<A>()?;
    if tc.seen != inner.hot.gen.load(Relaxed) {
        tc.sync(inner);
    }
    Some(tc)
}

/// A hit from this thread's cache of `inner`'s pool, and what `spare` takes from the cache (an
/// owned block's pool handle). `Err(None)` is a miss (the request takes the full path);
/// `Err(Some(e))`: the allocator's hand-out hook failed, and the block stays on top of its bin.
/// Not through [`with`]: the pool is borrowed here, so nothing is handed back on a miss.
#[inline(always)]
pub(super) fn hit<A: Allocator, S>(
    inner: &Arc<Inner<A>>,
    bin: BinNumber,
    size: usize,
    spare: impl FnOnce(&mut ThreadCache<A>) -> S,
) -> Result<(A::Block, S), Option<A::Error>> {
    let mut lease = lease().ok_or(None)?;
    let tc = cache_of(lease.0.as_deref_mut().ok_or(None)?, inner).ok_or(None)?;
    let block = tc.take(inner, bin, size)?;
    Ok((block, spare(tc)))
}

/// What an owned block's pool handle is when the thread's cache takes it as a spare.
pub(super) trait Spare<A: Allocator>: Borrow<Arc<Inner<A>>> {
    /// The handle, for a cache to keep; `None` for a borrowed one.
    fn into_spare(self) -> Option<Arc<Inner<A>>>;
}

impl<A: Allocator> Spare<A> for Arc<Inner<A>> {
    #[inline]
    fn into_spare(self) -> Option<Arc<Inner<A>>> {
        Some(self)
    }
}

impl<A: Allocator> Spare<A> for &Arc<Inner<A>> {
    #[inline]
    fn into_spare(self) -> Option<Arc<Inner<A>>> {
        None
    }
}

/// A return that makes no call: the block on top of its bin in the cache of the pool used
/// last, which holds that bin with a free place and no message waiting, when no limit would be
/// passed; an owned block's handle kept as a spare. `Err` gives `p` back, nothing done: the
/// full path decides.
#[inline(always)]
pub(super) fn put_fast<A: Allocator, P: Spare<A>>(
    p: P,
    block: &mut Option<A::Block>,
    bin: BinNumber,
    size: usize,
) -> Result<(), P> {
    let mut lease = Lease(CACHES.with(Cell::take));
    let list = lease.0.as_deref_mut();
    let Some(tc) = list.and_then(|l| keep_fast(l, p.borrow(), block, bin, size)) else {
        return Err(p);
    };
    let extra = p.into_spare().and_then(|h| tc.keep_spare(h));
    drop(lease);
    drop(extra);
    Ok(())
}

#[inline(always)]
fn keep_fast<'l, A: Allocator>(
    list: &'l mut [Entry],
    inner: &Arc<Inner<A>>,
    block: &mut Option<A::Block>,
    bin: BinNumber,
    size: usize,
) -> Option<&'l mut ThreadCache<A>> {
    let e = list
        .first_mut()
        .filter(|e| e.key == Arc::as_ptr(inner).addr())?;
    let tc = e
        .cache
        .get::<A>()
        .filter(|tc| tc.seen == inner.hot.gen.load(Relaxed))?;
    let i = usize::try_from(bin).ok()?;
    let (cb, c) = (tc.bins.get(i)?, tc.stripe.bins.get(i)?);
    let len = c.held.load(Relaxed);
    let lim = &inner.limits;
    (block.is_some()
        && len < cb.places.len()
        && tc.blocks < lim.max_blocks
        && (lim.max_bytes.checked_sub(cb.bytes))
            .is_some_and(|m| tc.stripe.held_bytes.load(Relaxed) <= m))
    .then(|| tc.keep(block, i, len, size))?;
    Some(tc)
}

#[cold]
#[inline(never)]
fn find_entry<A: Allocator>(list: &mut Vec<Entry>, inner: &Arc<Inner<A>>) -> Option<()> {
    let key = Arc::as_ptr(inner).addr();
    let i = match list.iter().position(|e| e.key == key) {
        Some(i) => i,
        None => add_entry(list, inner)?,
    };
    list.swap(0, i);
    Some(())
}

fn add_entry<A: Allocator>(list: &mut Vec<Entry>, inner: &Arc<Inner<A>>) -> Option<usize> {
    if inner.closed.load(Relaxed) {
        return None;
    }
    list.retain_mut(|e| !(e.retire)(&mut e.cache, false));
    let cache = ThreadCache {
        pool: Some(Arc::clone(inner)),
        key: Arc::downgrade(inner),
        stripe: inner.take_stripe(),
        // Read the pool's state at the first call.
        seen: u64::MAX,
        seen_free: inner.free_gen.load(Relaxed),
        caching: false,
        bins: Vec::new(),
        blocks: 0,
        spares: Vec::with_capacity(SPARES),
    };
    list.push(Entry {
        key: Arc::as_ptr(inner).addr(),
        cache: Slot::new(cache),
        // A closed pool is let go (with its allocator and held blocks) when the thread next
        // adds an entry, not at its exit.
        retire: |c, now| {
            let Some(c) = c.get::<A>() else { return true };
            let go = now || c.pool.as_ref().is_none_or(|p| p.closed.load(Relaxed));
            if go {
                c.retire();
            }
            go
        },
    });
    Some(list.len() - 1)
}

impl<A: Allocator> ThreadCache<A> {
    /// The pool's generation moved: a message. Gives every block back (frees them after a
    /// `free_held` or `stop_holding`), then reads whether to cache and whether the pool closed.
    #[cold]
    #[inline(never)]
    fn sync(&mut self, inner: &Inner<A>) {
        // The generation first: a message sent after this read is seen at the next call.
        self.seen = inner.hot.gen.load(Acquire);
        self.drain(inner);
        self.caching = self.pool.is_some() && inner.cache_on.load(Relaxed);
        if inner.closed.load(Relaxed) {
            self.caching = false;
            self.spares = Vec::new();
            self.pool = None;
        }
        if !self.caching {
            // Drained: a return finds no bin and gives its block back.
            self.bins = Vec::new();
        }
    }

    /// Gives every cached block back to the shared bins, or frees them when a `free_held` or
    /// `stop_holding` was called since the last drain. Decided under `moves`, which `free_held`
    /// waits for before it frees the shared bins: a block is either freed here or on the shared
    /// bins by the time it frees them.
    pub(super) fn drain(&mut self, inner: &Inner<A>) {
        let mut to_free = Vec::new();
        {
            let _moving = inner.moves.read();
            let free_gen = inner.free_gen.load(Acquire);
            let free = free_gen != self.seen_free;
            self.seen_free = free_gen;
            if self.blocks == 0 {
                return;
            }
            for (i, bin) in (0..self.bins.len()).zip(0..) {
                let (v, bytes) = self.out(i, self.stripe.bins[i].held.load(Relaxed));
                if v.is_empty() {
                    continue;
                }
                let mut shard = inner.shard(bin);
                if free {
                    let frees = &mut shard.bin_entry(bin, inner.layout).stats.upstream_frees;
                    *frees += v.len() as u64;
                    inner.managed_bytes.fetch_sub(bytes, Relaxed);
                    to_free.extend(v);
                } else {
                    inner.push_shared(&self.stripe, &mut shard, bin, v);
                }
            }
        }
        for block in to_free {
            inner.free_upstream(block);
        }
    }

    /// The thread exits (or the entry of a closed pool goes): blocks back, stripe back.
    fn retire(&mut self) {
        self.spares = Vec::new();
        let Some(inner) = self.pool.take().or_else(|| self.key.upgrade()) else {
            return;
        };
        self.drain(&inner);
        inner.return_stripe(Arc::clone(&self.stripe));
    }

    /// A hit: the newest cached block of `bin` for a request of `size` bytes, after the
    /// allocator's hand-out hook ran on it in its place. A miss, or a failed (or panicking) hook,
    /// changes nothing: the block stays on top of its bin and the request is not counted.
    #[inline(always)]
    pub(super) fn take(
        &mut self,
        inner: &Inner<A>,
        bin: BinNumber,
        size: usize,
    ) -> Result<A::Block, Option<A::Error>> {
        let i = usize::try_from(bin).map_err(|_| None)?;
        let cb = self.bins.get_mut(i).ok_or(None)?;
        let st = &*self.stripe;
        let c = st.bins.get(i).ok_or(None)?;
        let top = c.held.load(Relaxed).checked_sub(1).ok_or(None)?;
        let place = cb.places.get_mut(top).ok_or(None)?;
        inner
            .allocator
            .hand_out_existing_block(place.as_mut().ok_or(None)?)
            .map_err(Some)?;
        // Taken whole (see `CacheBin::places`).
        let out = place.take();
        c.held.store(top, Relaxed);
        let bytes = cb.bytes;
        let tick = st.next_tick();
        self.blocks -= 1;
        c.count_out(size, tick, true);
        sub(&st.held_bytes, bytes);
        inner.note_active(st, size);
        out.ok_or(None)
    }

    /// A return (the full path): keeps the block in `block` (taken, counted back in) unless
    /// there is none or its bin is not cached (`false`: left there).
    pub(super) fn put(
        &mut self,
        inner: &Inner<A>,
        block: &mut Option<A::Block>,
        bin: BinNumber,
        size: usize,
    ) -> bool {
        let i = usize::try_from(bin).unwrap_or(usize::MAX);
        if block.is_none() || !(i < self.bins.len() || self.caching && i < inner.cache_bins) {
            return false;
        }
        while self.bins.len() <= i {
            let bytes =
                BinNumber::try_from(self.bins.len()).map_or(0, |b| inner.layout.alloc_size(b));
            self.bins.push(CacheBin {
                places: Vec::new(),
                bytes,
            });
        }
        let len = self.stripe.bins[i].held.load(Relaxed);
        if len == self.bins[i].places.len() {
            self.bins[i].places.push(None);
        }
        self.keep(block, i, len, size);
        if self.blocks > inner.limits.max_blocks
            || self.stripe.held_bytes.load(Relaxed) > inner.limits.max_bytes
        {
            self.overflow(inner, i, bin);
        }
        true
    }

    /// The block in `block` to place `len` of bin `i` (which has it), counted back in.
    #[inline(always)]
    fn keep(&mut self, block: &mut Option<A::Block>, i: usize, len: usize, size: usize) {
        let st = &*self.stripe;
        let c = &st.bins[i];
        let cb = &mut self.bins[i];
        std::mem::swap(&mut cb.places[len], block);
        c.held.store(len + 1, Relaxed);
        sub(&st.active_bytes, size);
        sub(&c.active, 1);
        sub(&c.requested, size);
        self.blocks += 1;
        raise(&c.peak_held, len + 1 + c.shared_seen.load(Relaxed));
        add(&st.held_bytes, cb.bytes);
    }

    /// Past a limit: the oldest half of bin `i` (at least one block) to the top of its shared
    /// bin. Every block of the shared bin from this thread stays older than every block it
    /// caches, so with one thread the order of hits is PyOpenCL's LIFO.
    #[cold]
    #[inline(never)]
    fn overflow(&mut self, inner: &Inner<A>, i: usize, bin: BinNumber) {
        let _moving = inner.moves.read();
        let (moved, _) = self.out(i, (self.stripe.bins[i].held.load(Relaxed) / 2).max(1));
        inner.push_shared(&self.stripe, &mut inner.shard(bin), bin, moved);
    }

    /// The `n` oldest blocks of bin `i` taken out (caller holds `moves`), and their bytes.
    fn out(&mut self, i: usize, n: usize) -> (Vec<A::Block>, usize) {
        let (cb, c) = (&mut self.bins[i], &self.stripe.bins[i]);
        let moved: Vec<A::Block> = cb.places.drain(..n).flatten().collect();
        let bytes = n * cb.bytes;
        self.blocks -= n;
        sub(&c.held, n);
        sub(&self.stripe.held_bytes, bytes);
        (moved, bytes)
    }

    /// A spare pool handle for an owned hit, if there is one.
    #[inline(always)]
    pub(super) fn spare(&mut self) -> Option<Arc<Inner<A>>> {
        self.spares.pop()
    }

    /// Keeps the handle of an owned block returned on this thread as a spare (gives it back
    /// when the spares are full or the pool closed).
    #[inline(always)]
    pub(super) fn keep_spare(&mut self, p: Arc<Inner<A>>) -> Option<Arc<Inner<A>>> {
        if self.spares.len() < self.spares.capacity() {
            self.spares.push(p);
            None
        } else {
            Some(p)
        }
    }
}
