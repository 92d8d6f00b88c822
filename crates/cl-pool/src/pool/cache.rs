//! Per-thread caches of held blocks in front of the shared bins (tcmalloc's per-thread caches,
//! Bonwick's magazines): a hit and a return touch only the calling thread's [`Slot`].
//!
//! # Design (decided 2026-11-24, issue 12)
//!
//! - Each thread that uses a pool gets one [`Slot`] for it: a small locked state with, per bin,
//!   a LIFO stack of up to [`CACHE_BLOCKS`] held blocks and the bin's counter *deltas* (hits,
//!   active blocks, requested bytes), plus the thread's deltas of the pool-wide gauges (active and
//!   held bytes, requests). Only its thread locks it on the hit path, and the lock is biased
//!   towards that thread (`biased.rs`, 2026-11-26): no locked instruction and no fence on Linux,
//!   where pool-wide walks (statistics, `free_held`, out-of-memory reclaim, closing), which lock
//!   every slot in turn, pay a `membarrier` per slot instead. An owned block returned on another
//!   thread counts itself back with one atomic add on its slot, without locking it. The thread
//!   finds its slot through its thread-local slot list (`tls.rs`), which remembers the slot it
//!   used last: a hit on the same pool as the one before makes no search and no downcast.
//! - A hit and a return move the block once: the hit is inlined into the caller; a block of one
//!   word (a pooled buffer's) is popped into a local and the handle built from registers, a
//!   larger one is popped straight into the handle; a return takes the block from the handle
//!   (`&mut Option`) straight into the cache (`Slot::put`; a new or full bin goes to the cold
//!   `Slot::put_slow`). What decides it is store forwarding: a value written as words and read
//!   back at once by a wider load (a copy of the handle, a 16-byte block) stalls, which cost the
//!   device hit about a fifth of its time (2026-11-26; `Slot::take`, and the layouts of
//!   `CacheBin` and `SlotState` for the same reason).
//! - A hit pops the newest block of the bin from the slot, else from the shared bin (PyOpenCL's
//!   LIFO order is kept: every block in the shared bin from this thread is older than every block
//!   in its slot, because an overflowing slot moves its *oldest* half to the shared bin's top). A
//!   return pushes onto the returning thread's slot. With one thread the pool therefore makes
//!   exactly PyOpenCL's decisions and its counters, summed, are exactly PyOpenCL's.
//! - Blocks in slots are **held**: `held_blocks`, `held_bytes`, the statistics and every walk that
//!   frees held blocks (`free_held`, `stop_holding`, the out-of-memory reclaim, `release_idle`,
//!   `enforce_held_cap`) see them; the walks first move them back to the shared bins. A thread's
//!   slot is folded back into the shared bins when the thread exits.
//! - Lifetimes without a shared reference count per hit: a thread's TLS and the pool's registry
//!   hold its slot; the slot holds a *lease* on the pool's `Inner` (an `Arc`, taken once) while
//!   the pool is open or owned blocks it handed out are still alive (a plain count under its
//!   lock); a [`PoolBlock`](super::PoolBlock) holds the slot it came from (a reference count on
//!   that thread's own cache line, not the pool's). A block returned on its own thread leaves
//!   that reference in the slot as a spare, and the thread's next owned hit takes it:
//!   in the steady state an owned hit + free makes no reference-count operation and, with the
//!   biased lock, no locked instruction at all. When the last [`MemoryPool`](super::MemoryPool)
//!   handle goes, the pool closes: the caches go back to the shared bins, and each slot gives its
//!   lease up once its blocks are back, so an idle thread's TLS keeps nothing of a dropped pool
//!   but an empty slot.
//! - A pool used by one thread keeps using the cache (PyOpenCL's exact decisions, see above); the
//!   per-bin peaks and last-use ticks stay exact with one thread through each cache bin's view of
//!   its shared bin, refreshed whenever the thread's request goes through the shared bin.
//! - The cache is bypassed (every hit goes through the shared bins, as before) while a policy
//!   needs pool-wide order or totals on every hit: a held-bytes cap, idle release, least-recently-
//!   used eviction, [`Policy::shared_bins_only`](super::Policy), after `stop_holding`, and while
//!   the pool is closing. Switching the caches off folds every slot back into the shared bins
//!   at once, under the registry lock that also serialises the switch (so the bins, the cap and
//!   the one-thread figures stay exact, and a racing first allocation cannot switch them back
//!   on).

use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use crate::allocator::Allocator;
use crate::bins::{BinLayout, BinNumber};

use super::biased::{BiasedGuard, BiasedLock};
use super::engine::*;
use super::tls::{self, Names, SlotDyn, SlotKey};

/// Most blocks of one bin a thread keeps to itself; past this, the oldest half goes to the shared
/// bin.
pub(super) const CACHE_BLOCKS: usize = 16;

/// Bins below this number sit in a vector indexed by bin (every bin of sizes up to 2^64 with the
/// default 4 leading bits); higher bins (more leading bits) in a map.
const DIRECT_BINS: usize = 1280;

/// A cache bin's blocks, newest last: [`CACHE_BLOCKS`] + 1 places inside the bin itself that
/// never grow, so that a return's push is a length check and a store, inline, and a hit's pop
/// reads no vector header first. (`Vec::push` stayed an out-of-line call on the return path;
/// callgrind, issue 12, 2026-11-26.) `arrayvec` rather than hand-written `unsafe`: cl-pool keeps
/// its own `unsafe` to two modules.
#[repr(transparent)]
pub(super) struct BlockStack<B> {
    places: arrayvec::ArrayVec<B, { CACHE_BLOCKS + 1 }>,
}

impl<B> BlockStack<B> {
    fn new() -> Self {
        BlockStack {
            places: arrayvec::ArrayVec::new(),
        }
    }

    /// Blocks in the stack.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.places.len()
    }

    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.places.is_empty()
    }

    /// The newest block.
    #[inline(always)]
    fn pop(&mut self) -> Option<B> {
        self.places.pop()
    }

    /// Pushes `b` unless every place is taken (then gives it back).
    #[inline(always)]
    fn push(&mut self, b: B) -> Result<(), B> {
        self.places
            .try_push(b)
            .map_err(arrayvec::CapacityError::element)
    }

    /// The `n` oldest blocks (oldest first); the rest move down.
    fn take_oldest(&mut self, n: usize) -> Vec<B> {
        let n = n.min(self.places.len());
        self.places.drain(..n).collect()
    }

    /// Every block (oldest first).
    pub(super) fn take_all(&mut self) -> Vec<B> {
        self.places.drain(..).collect()
    }
}

/// One bin of one thread's cache (boxed in [`CacheBins`]: its blocks are inside it).
///
/// `repr(C)`, in this order: a hit and a return both update `active_blocks`, `active_requested`
/// and the length of `blocks`, and LLVM pairs adjacent counters into one 16-byte load and store
/// when a path updates both. When the hit paired different neighbours than the return
/// (`hits` with `active_blocks`; the return `active_blocks` with `active_requested`), each load
/// read back half of the other's store, which cannot be forwarded: two store-forwarding stalls
/// per hit + free (2026-11-26). So every counter both paths write sits between fields neither
/// writes (`shared_*`, `alloc`; the stack's length is its first field, in arrayvec 0.7's
/// `repr(C)` `ArrayVec`), and the counters only one path writes (`peak_held` the return; `hits`,
/// `peak_active`, `last_tick` the hit) sit apart from them. A layout change that brings a stall back shows in criterion's `pool_host/*` and
/// `pool_hit_alloc_free` benches, not in a test; the objdump check is in docs/PERFORMANCE.md.
#[repr(C)]
pub(super) struct CacheBin<B> {
    pub(super) peak_held: usize,
    pub(super) hits: u64,
    pub(super) peak_active: usize,
    /// The pool's allocation tick (as this thread counts it) of the bin's last cached hit.
    pub(super) last_tick: u64,
    /// The shared bin's held and active blocks when this thread last saw them (exact while no
    /// other thread uses the bin): with the cache's own figures, the bin's peaks.
    pub(super) shared_held: usize,
    pub(super) active_blocks: isize,
    pub(super) shared_active: usize,
    pub(super) active_requested: isize,
    /// The bin's block size (`alloc_size(bin)`), kept so a hit does not recompute it.
    pub(super) alloc: usize,
    pub(super) blocks: BlockStack<B>,
}

impl<B> CacheBin<B> {
    fn new(alloc: usize, shared_held: usize, shared_active: usize) -> Box<Self> {
        Box::new(CacheBin {
            // Room for a full bin plus the block that overflows it: a return never grows it.
            blocks: BlockStack::new(),
            alloc,
            hits: 0,
            active_blocks: 0,
            active_requested: 0,
            shared_held,
            shared_active,
            peak_held: 0,
            peak_active: 0,
            last_tick: 0,
        })
    }
}

/// A slot's bins: direct-indexed for the usual bin numbers.
pub(super) struct CacheBins<B> {
    direct: Vec<Option<Box<CacheBin<B>>>>,
    other: std::collections::HashMap<
        BinNumber,
        Box<CacheBin<B>>,
        std::hash::BuildHasherDefault<BinHasher>,
    >,
}

impl<B> Default for CacheBins<B> {
    fn default() -> Self {
        CacheBins {
            direct: Vec::new(),
            other: std::collections::HashMap::default(),
        }
    }
}

impl<B> CacheBins<B> {
    /// One bounds check on the hit path: `direct` never grows past [`DIRECT_BINS`] places, so a
    /// bin past its end is either a direct bin this thread has not cached (the map, cold and
    /// empty for it, says so) or a higher one.
    #[inline]
    fn get_mut(&mut self, bin: BinNumber) -> Option<&mut CacheBin<B>> {
        let i = usize::try_from(bin).unwrap_or(usize::MAX);
        if i < self.direct.len() {
            self.direct.get_mut(i).and_then(Option::as_deref_mut)
        } else {
            self.other_mut(bin)
        }
    }

    #[cold]
    #[inline(never)]
    fn other_mut(&mut self, bin: BinNumber) -> Option<&mut CacheBin<B>> {
        self.other.get_mut(&bin).map(|b| &mut **b)
    }

    #[inline]
    fn get_or_insert_with(
        &mut self,
        bin: BinNumber,
        f: impl FnOnce() -> Box<CacheBin<B>>,
    ) -> &mut CacheBin<B> {
        match usize::try_from(bin) {
            Ok(i) if i < DIRECT_BINS => {
                if self.direct.len() <= i {
                    self.direct.resize_with(i + 1, || None);
                }
                self.direct[i].get_or_insert_with(f)
            }
            _ => self.other.entry(bin).or_insert_with(f),
        }
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (BinNumber, &CacheBin<B>)> {
        self.direct
            .iter()
            .enumerate()
            .filter_map(|(i, b)| Some((BinNumber::try_from(i).ok()?, b.as_deref()?)))
            .chain(self.other.iter().map(|(&k, v)| (k, &**v)))
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = (BinNumber, &mut CacheBin<B>)> {
        self.direct
            .iter_mut()
            .enumerate()
            .filter_map(|(i, b)| Some((BinNumber::try_from(i).ok()?, b.as_deref_mut()?)))
            .chain(self.other.iter_mut().map(|(&k, v)| (k, &mut **v)))
    }

    pub(super) fn take_all(&mut self) -> Vec<(BinNumber, Box<CacheBin<B>>)> {
        let mut out: Vec<(BinNumber, Box<CacheBin<B>>)> = self
            .direct
            .iter_mut()
            .enumerate()
            .filter_map(|(i, b)| Some((BinNumber::try_from(i).ok()?, b.take()?)))
            .collect();
        out.extend(self.other.drain());
        out
    }
}

/// A slot's state, under its lock.
///
/// `repr(C)`, in this order for the reason given at [`CacheBin`]: the counters a hit and a
/// return both write (`active_bytes`, `held_bytes`, `outstanding`, the length of `spare`, its
/// first field) each sit between fields neither writes, and `requests` (the hit's alone) apart
/// from them, past the spares' places.
#[repr(C)]
pub(super) struct SlotState<A: Allocator> {
    /// Deltas of the pool-wide gauges made through this slot.
    pub(super) active_bytes: isize,
    /// The lease on the pool: `Some` while the pool is open or blocks handed out through this
    /// slot are alive.
    pub(super) inner: Option<Arc<Inner<A>>>,
    pub(super) held_bytes: isize,
    /// Why the slot caches nothing now: any of [`RETIRED`] (folded back into the shared state,
    /// its thread exited), [`CLOSED`] (the pool's last handle went) and [`OFF`] (the pool's caches
    /// are switched off); 0 while it caches. One byte, so that a hit and a return test one field
    /// instead of two flags, the lease and the pool's switch (issue 12).
    pub(super) shut: u8,
    /// Owned blocks handed out through this slot, less those returned on the slot's own thread
    /// (those returned elsewhere are counted in `Slot::returned_elsewhere`).
    pub(super) outstanding: usize,
    pub(super) bins: CacheBins<A::Block>,
    /// Spare references to this slot, left by owned blocks returned on the slot's thread and
    /// handed to its next owned hits: in the steady state an owned block costs no reference-count
    /// operation (each is a locked instruction). Dropped when the slot retires (they are a cycle
    /// until then). In place, as a bin's blocks are (`BlockStack`): a push is inline.
    spare: arrayvec::ArrayVec<Arc<Slot<A>>, SPARE_MAX>,
    pub(super) requests: u64,
}

impl<A: Allocator> SlotState<A> {
    /// An owned block of this slot came back on the slot's thread: its reference to the slot
    /// becomes a spare (returned when the spares are full, to be dropped after the lock).
    #[inline]
    fn keep_spare(&mut self, o: Arc<Slot<A>>) -> Option<Arc<Slot<A>>> {
        self.outstanding -= 1;
        self.spare
            .try_push(o)
            .err()
            .map(arrayvec::CapacityError::element)
    }
}

/// [`SlotState::shut`]: the slot's thread exited and the slot was folded back.
pub(super) const RETIRED: u8 = 1;
/// [`SlotState::shut`]: the pool closed.
pub(super) const CLOSED: u8 = 2;
/// [`SlotState::shut`]: the pool's caches are off (set and cleared with [`Inner::cache_on`],
/// under the registry lock, for every registered slot).
pub(super) const OFF: u8 = 4;

/// One thread's cache of one pool.
pub(crate) struct Slot<A: Allocator> {
    pub(super) layout: BinLayout,
    /// The pool, for an owned block that must reach the shared bins: always upgradable while
    /// such a block is alive (the slot's lease holds the pool then). Also the pool's identity
    /// for the thread's slot list, where an owned block's return names it (`tls::Names::Lease`).
    weak: Weak<Inner<A>>,
    /// Owned blocks of this slot returned on other threads (or to the shared bins): counted with
    /// one atomic add, so that such a return does not lock the slot (which, from another thread,
    /// costs the biased lock's heavy fence).
    returned_elsewhere: AtomicUsize,
    /// Retired or closed (set under the lock): a return elsewhere must then see whether it was
    /// the last one the lease waited for.
    ended: AtomicBool,
    /// Biased towards the slot's thread (`biased.rs`): its hits and returns take it with no
    /// locked instruction; other threads' walks pay an asymmetric fence.
    state: BiasedLock<SlotState<A>>,
}

/// A thread's own share of the pool-wide figures, for exact peaks and ticks with one thread.
#[derive(Clone, Copy, Default)]
pub(super) struct Own {
    pub(super) active: isize,
    pub(super) requests: u64,
}

/// What a drained cache bin hands back.
pub(super) struct Drained<B> {
    pub(super) bin: BinNumber,
    pub(super) blocks: Vec<B>,
    pub(super) last_tick: u64,
}

/// A byte count as a signed delta, wrapping. The slot deltas are modular: they are summed with
/// the shared gauges by `wrapping_add_signed`, and only that sum (at most `MAX_MANAGED_BYTES`)
/// is a real figure. One slot's delta alone can pass `isize::MAX` (a block counted active on the
/// shared path and returned into this slot leaves `-size` here), so neither saturation nor
/// checked arithmetic is right (found by the `trace` fuzz target: `-65282 - isize::MAX`).
fn signed(n: usize) -> isize {
    n.cast_signed()
}

impl<A: Allocator> Slot<A> {
    /// A slot owned by the calling thread.
    fn new(inner: Arc<Inner<A>>) -> Slot<A> {
        Slot {
            layout: inner.layout,
            weak: Arc::downgrade(&inner),
            returned_elsewhere: AtomicUsize::new(0),
            ended: AtomicBool::new(false),
            state: BiasedLock::new(
                thread_key(),
                SlotState {
                    inner: Some(inner),
                    outstanding: 0,
                    bins: CacheBins::default(),
                    active_bytes: 0,
                    held_bytes: 0,
                    requests: 0,
                    spare: arrayvec::ArrayVec::new(),
                    shut: 0,
                },
            ),
        }
    }

    /// Locks the slot (from any thread; the slot's own thread takes the cheap path).
    #[inline]
    pub(super) fn lock(&self) -> BiasedGuard<'_, SlotState<A>> {
        self.state.lock_as(thread_key())
    }

    /// The lease, once nothing needs it any more (taken out to be dropped after the lock).
    fn spent_lease(&self, s: &mut SlotState<A>) -> Option<Arc<Inner<A>>> {
        let live = s
            .outstanding
            .wrapping_sub(self.returned_elsewhere.load(Ordering::SeqCst));
        if live == 0 && s.shut & (RETIRED | CLOSED) != 0 {
            s.inner.take()
        } else {
            None
        }
    }

    /// The shared bin's held and active blocks now (slot lock held by the caller: slot -> shard).
    fn shared_view(inner: &Inner<A>, bin: BinNumber) -> (usize, usize) {
        let shard = inner.shard(bin);
        shard
            .bins
            .get(&bin)
            .map_or((0, 0), |b| (b.blocks.len(), b.stats.active_blocks))
    }

    /// Pops the newest cached block of `bin` into `out` (a hit; `None`: a miss, `out` untouched).
    /// `owned`: the block keeps this slot (and through it the pool) alive, and a spare
    /// reference to the slot comes with it if there is one. `out` is the caller's handle for a
    /// block larger than a word (moved once, as it was stored, so the return's copy of it reads
    /// back a store of its own width), a local for a one-word block (kept in a register: the
    /// handle is then built from registers). Either way a copy of the handle never reads back
    /// fields just written one by one as one wider load, which stalls on store forwarding
    /// (2026-11-26).
    #[inline(always)]
    fn take(
        &self,
        inner: &Inner<A>,
        bin: BinNumber,
        size: usize,
        owned: bool,
        me: usize,
        out: &mut Option<A::Block>,
    ) -> Option<Option<Arc<Slot<A>>>> {
        let mut guard = self.state.lock_as(me);
        let s = &mut *guard;
        if s.shut != 0 {
            return None;
        }
        let c = s.bins.get_mut(bin)?;
        *out = Some(c.blocks.pop()?);
        c.hits += 1;
        c.active_blocks += 1;
        c.active_requested = c.active_requested.wrapping_add(signed(size));
        c.peak_active = c
            .peak_active
            .max(clamp(c.shared_active.wrapping_add_signed(c.active_blocks)));
        c.last_tick = inner.tick.load(Ordering::Relaxed) + s.requests;
        s.held_bytes = s.held_bytes.wrapping_sub(signed(c.alloc));
        s.active_bytes = s.active_bytes.wrapping_add(signed(size));
        s.requests += 1;
        let spare = if owned {
            s.outstanding += 1;
            s.spare.pop()
        } else {
            None
        };
        let own = s.active_bytes;
        drop(guard);
        inner.note_cached_active(own);
        Some(spare)
    }

    /// Keeps the returned block in `block` (moved once, from the caller's handle into the cache),
    /// or leaves it there and gives `here` back (`Err`: the slot is retired or the pool closed or
    /// its caches off). `here`: the block was an owned block of this slot, whose reference to
    /// the slot is kept as a spare (its lease count drops); `Ok(Some)`: a reference to drop after
    /// the lock (spares full). The common case (a bin this thread has cached before, with room)
    /// is this function; a new bin or a full one continues in [`Slot::put_slow`] under the same
    /// lock.
    #[inline(always)]
    fn put(
        &self,
        bin: BinNumber,
        size: usize,
        block: &mut Option<A::Block>,
        here: Option<Arc<Slot<A>>>,
        me: usize,
    ) -> Result<SlotRef<A>, SlotRef<A>> {
        let mut guard = self.state.lock_as(me);
        let s = &mut *guard;
        // Open, so the lease is held (it goes only once the slot is retired or closed) and the
        // caches are on.
        if s.shut != 0 {
            return Err(here);
        }
        let Some(c) = s
            .bins
            .get_mut(bin)
            // A full bin (or a new one) goes the slow way, which moves the oldest half out.
            .filter(|c| c.blocks.len() < CACHE_BLOCKS)
        else {
            return match block.take() {
                Some(b) => Ok(self.put_slow(guard, bin, size, b, here)),
                None => Err(here),
            };
        };
        let Some(b) = block.take() else {
            return Err(here);
        };
        if let Err(b) = c.blocks.push(b) {
            // Not reached (`len < CACHE_BLOCKS` was checked above); if it were, nothing is
            // counted yet and the block goes back to its handle.
            *block = Some(b);
            return Err(here);
        }
        c.active_blocks -= 1;
        c.active_requested = c.active_requested.wrapping_sub(signed(size));
        c.peak_held = c.peak_held.max(c.shared_held + c.blocks.len());
        let bytes = c.alloc;
        s.active_bytes = s.active_bytes.wrapping_sub(signed(size));
        s.held_bytes = s.held_bytes.wrapping_add(signed(bytes));
        Ok(here.and_then(|o| s.keep_spare(o)))
    }

    /// The rest of [`Slot::put`] (under its lock, its checks passed) for a bin this thread has
    /// not cached yet, or a full one: past [`CACHE_BLOCKS`] in the bin, the oldest half moves to
    /// the shared bin.
    #[cold]
    #[inline(never)]
    fn put_slow(
        &self,
        mut guard: BiasedGuard<'_, SlotState<A>>,
        bin: BinNumber,
        size: usize,
        block: A::Block,
        here: Option<Arc<Slot<A>>>,
    ) -> SlotRef<A> {
        let s = &mut *guard;
        // `put` saw the slot open, so the lease is held (an overflow needs it).
        debug_assert!(s.inner.is_some(), "an open slot holds its lease");
        let layout = self.layout;
        let inner = s.inner.as_ref();
        let c = s.bins.get_or_insert_with(bin, || {
            let (held, active) = inner.map_or((0, 0), |i| Self::shared_view(i, bin));
            CacheBin::new(layout.alloc_size(bin), held, active)
        });
        let bytes = c.alloc;
        c.active_blocks -= 1;
        c.active_requested = c.active_requested.wrapping_sub(signed(size));
        // Room for a full bin plus the block that overflows it (`BlockStack`), so the push is
        // not refused; if it were, the oldest half would go first and LIFO order still hold.
        let overflow = match c.blocks.push(block) {
            Ok(()) => {
                (c.blocks.len() > CACHE_BLOCKS).then(|| c.blocks.take_oldest(CACHE_BLOCKS / 2))
            }
            Err(b) => {
                let mut oldest = c.blocks.take_oldest(CACHE_BLOCKS / 2);
                if let Err(b) = c.blocks.push(b) {
                    oldest.push(b);
                }
                Some(oldest)
            }
        };
        let moved = overflow.as_ref().map_or(0, Vec::len);
        c.shared_held += moved;
        c.peak_held = c.peak_held.max(c.shared_held + c.blocks.len());
        s.active_bytes = s.active_bytes.wrapping_sub(signed(size));
        s.held_bytes = s
            .held_bytes
            .wrapping_add(signed(bytes).wrapping_mul(1 - signed(moved)));
        let extra = here.and_then(|o| s.keep_spare(o));
        if let (Some(v), Some(inner)) = (overflow, s.inner.as_ref()) {
            // Lock order slot -> shard, as everywhere. (`put` checked that the lease is held.)
            inner.push_held(bin, v, 0);
        }
        extra
    }

    /// After this thread's request went through the shared bin of `bin`: refresh its view of
    /// that bin and the bin's active peak; `owned`: the block keeps this slot alive.
    pub(super) fn after_shared(&self, inner: &Inner<A>, bin: BinNumber, cached: bool, owned: bool) {
        let mut s = self.lock();
        s.outstanding += usize::from(owned);
        if !cached {
            return;
        }
        let (held, active) = Self::shared_view(inner, bin);
        let alloc = self.layout.alloc_size(bin);
        let c = s
            .bins
            .get_or_insert_with(bin, || CacheBin::new(alloc, held, active));
        c.shared_held = held;
        c.shared_active = active;
        c.peak_active = c
            .peak_active
            .max(clamp(active.wrapping_add_signed(c.active_blocks)));
    }

    /// The calling thread's share of the active bytes and requests.
    pub(super) fn own(&self) -> Own {
        let s = self.lock();
        Own {
            active: s.active_bytes,
            requests: s.requests,
        }
    }

    /// An owned block of this slot went back some other way (another thread's cache, or the
    /// shared bins): its lease count drops, and a spent lease is let go.
    pub(super) fn returned(&self) {
        // One atomic add; the slot is locked only when its lease may be waiting for this block
        // (the slot retired or the pool closed). Both sides are SeqCst, so of this add-then-load
        // and `end`'s store-then-load at least one sees the other (both may: taking is
        // idempotent).
        self.returned_elsewhere.fetch_add(1, Ordering::SeqCst);
        if self.ended.load(Ordering::SeqCst) {
            let spent = {
                let mut s = self.lock();
                self.spent_lease(&mut s)
            };
            drop(spent);
        }
    }

    /// The pool itself, for an owned block that must reach the shared bins (its slot's lease is
    /// held while the block is alive).
    pub(super) fn lease(&self) -> Option<Arc<Inner<A>>> {
        self.weak.upgrade()
    }

    /// Takes every cached block out (counted as no longer held by this slot), for a walk that
    /// moves them to the shared bins or frees them.
    pub(super) fn drain(&self) -> Vec<Drained<A::Block>> {
        let mut s = self.lock();
        let mut out = Vec::new();
        let mut bytes = 0usize;
        for (bin, b) in s.bins.iter_mut() {
            if !b.blocks.is_empty() {
                bytes += b.blocks.len() * b.alloc;
                b.shared_held += b.blocks.len();
                out.push(Drained {
                    bin,
                    blocks: b.blocks.take_all(),
                    last_tick: b.last_tick,
                });
            }
        }
        s.held_bytes = s.held_bytes.wrapping_sub(signed(bytes));
        out
    }

    /// The pool closed: no more caching; the lease goes once the blocks are back.
    pub(super) fn close(&self) -> Vec<Drained<A::Block>> {
        let out = self.drain();
        let spent = {
            let mut s = self.lock();
            s.shut |= CLOSED;
            self.ended.store(true, Ordering::SeqCst);
            self.spent_lease(&mut s)
        };
        drop(spent);
        out
    }

    /// Shuts the slot (`why`: [`RETIRED`], its thread exited, or [`OFF`], the pool's caches
    /// were switched off) and takes its bins and deltas out for folding.
    #[expect(
        clippy::type_complexity,
        reason = "a private tuple, taken apart at once"
    )]
    pub(super) fn take_state(
        &self,
        why: u8,
    ) -> (Vec<(BinNumber, Box<CacheBin<A::Block>>)>, isize, isize, u64) {
        let mut s = self.lock();
        s.shut |= why;
        if why & RETIRED != 0 {
            self.ended.store(true, Ordering::SeqCst);
        }
        let bins = s.bins.take_all();
        let out = (bins, s.active_bytes, s.held_bytes, s.requests);
        s.active_bytes = 0;
        s.held_bytes = 0;
        s.requests = 0;
        out
    }

    /// The pool's caches are on (`true`) or off: caching allowed again, or not (the caller
    /// holds the registry lock, under which the switch changes; switching off also takes the
    /// slot's state out, through [`Slot::take_state`]).
    pub(super) fn set_caching(&self, on: bool) {
        let mut s = self.lock();
        if on {
            s.shut &= !OFF;
        } else {
            s.shut |= OFF;
        }
    }

    /// After retiring: let a spent lease go.
    pub(super) fn release_if_spent(&self) {
        let spent = {
            let mut s = self.lock();
            self.spent_lease(&mut s)
        };
        drop(spent);
    }
}

impl<A: Allocator> SlotDyn for Slot<A> {
    fn retire(&self) {
        // The lease itself (not `lease()`): a slot whose lease is spent has nothing to fold.
        let held = self.lock().inner.clone();
        if let Some(inner) = held {
            inner.retire_slot(self);
        }
        self.release_if_spent();
        // The spare references to this slot are a cycle: broken here (not the last reference:
        // the TLS entry being dropped holds one).
        let spares = std::mem::take(&mut self.lock().spare);
        drop(spares);
    }

    fn alive(&self) -> bool {
        self.lock().inner.is_some()
    }

    fn as_any(&self) -> &(dyn Any + Send + Sync) {
        self
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}

impl<A: Allocator> SlotKey for Inner<A> {
    type Slot = Slot<A>;
}

/// A reference to a slot, when there is one to hand on (a spare, or one given back).
type SlotRef<A> = Option<Arc<Slot<A>>>;

/// Most spare references a slot keeps to itself (more owned blocks out than this: the extra
/// references are dropped as usual).
const SPARE_MAX: usize = 64;

pub(super) use super::tls::thread_key;

/// A hit from the calling thread's cache into `out`, without touching a shared line or (for
/// local blocks) any reference count: `None` on a miss; for owned blocks `Some` carries the slot
/// they keep alive.
#[inline(always)]
pub(super) fn take_cached<A: Allocator>(
    inner: &Arc<Inner<A>>,
    bin: BinNumber,
    size: usize,
    owned: bool,
    out: &mut Option<A::Block>,
) -> Option<Option<Arc<Slot<A>>>> {
    let work = Take {
        inner,
        bin,
        size,
        owned,
        out,
    };
    let spare = tls::with_slot(work).ok()??;
    Some(match spare {
        Some(s) => Some(s),
        // No spare reference (more owned blocks out than returned): a counted one.
        None if owned => tls::find(inner),
        None => None,
    })
}

/// The block in `block` into the calling thread's cache (`false`, the block left in place, when
/// there is none: caches off, no slot, thread exiting). Local blocks come this way: no slot
/// reference involved.
#[inline]
pub(super) fn put_cached<A: Allocator>(
    inner: &Arc<Inner<A>>,
    bin: BinNumber,
    size: usize,
    block: &mut Option<A::Block>,
) -> bool {
    // No spare reference is involved: `Ok` carries none.
    matches!(
        tls::with_slot(Put {
            inner,
            bin,
            size,
            block
        }),
        Ok(Ok(_))
    )
}

/// The owned block in `block`, of `origin`, comes back (no pool handle needed: the pool is found
/// by its id) into the calling thread's cache. On the thread that allocated it, `origin` is kept
/// as a spare reference for the next owned hit; from another thread, `origin`'s count of blocks
/// out drops and the reference goes. `Err` gives the reference back (the block left in place)
/// when no cache takes it.
#[inline]
pub(super) fn put_owned<A: Allocator>(
    origin: Arc<Slot<A>>,
    bin: BinNumber,
    size: usize,
    block: &mut Option<A::Block>,
) -> Result<(), Arc<Slot<A>>> {
    let work = PutOwned {
        origin,
        bin,
        size,
        block,
    };
    match tls::with_slot(work) {
        Ok(Ok((extra, foreign))) => {
            // Not the last reference (the thread's list holds one).
            drop(extra);
            // An owned block of another thread's slot: its count of blocks out drops after the
            // list's borrow ended (`returned` may let the pool go, whose frees may reach this
            // thread's list).
            if let Some(o) = foreign {
                o.returned();
            }
            Ok(())
        }
        Ok(Err(back)) => Err(back),
        Err(work) => Err(work.origin),
    }
}

/// [`Slot::take`] as [`tls::with_slot`] work (the hit).
struct Take<'a, A: Allocator> {
    inner: &'a Arc<Inner<A>>,
    bin: BinNumber,
    size: usize,
    owned: bool,
    out: &'a mut Option<A::Block>,
}

impl<A: Allocator> tls::SlotWork<Inner<A>> for Take<'_, A> {
    type Output = Option<SlotRef<A>>;

    #[inline(always)]
    fn names(&self) -> Names<'_, Inner<A>> {
        Names::Pool(self.inner)
    }

    #[inline(always)]
    fn run(self, slot: &Slot<A>, me: usize) -> Self::Output {
        slot.take(self.inner, self.bin, self.size, self.owned, me, self.out)
    }
}

/// [`Slot::put`] of a local block (no slot reference involved) as [`tls::with_slot`] work.
struct Put<'a, A: Allocator> {
    inner: &'a Arc<Inner<A>>,
    bin: BinNumber,
    size: usize,
    block: &'a mut Option<A::Block>,
}

impl<A: Allocator> tls::SlotWork<Inner<A>> for Put<'_, A> {
    type Output = Result<SlotRef<A>, SlotRef<A>>;

    #[inline(always)]
    fn names(&self) -> Names<'_, Inner<A>> {
        Names::Pool(self.inner)
    }

    #[inline(always)]
    fn run(self, slot: &Slot<A>, me: usize) -> Self::Output {
        slot.put(self.bin, self.size, self.block, None, me)
    }
}

/// The return of an owned block of `origin` as [`tls::with_slot`] work: `Ok` carries the
/// reference to drop after the list's borrow and, for another thread's slot, `origin`.
struct PutOwned<'a, A: Allocator> {
    origin: Arc<Slot<A>>,
    bin: BinNumber,
    size: usize,
    block: &'a mut Option<A::Block>,
}

impl<A: Allocator> tls::SlotWork<Inner<A>> for PutOwned<'_, A> {
    type Output = Result<(SlotRef<A>, SlotRef<A>), Arc<Slot<A>>>;

    /// The pool of the block's slot, by the slot's `Weak` of it (whose memory the slot keeps): on
    /// the thread that took the block, and on any other thread that last used this pool, the
    /// thread's remembered slot, matched without a search.
    #[inline(always)]
    fn names(&self) -> Names<'_, Inner<A>> {
        Names::Lease(&self.origin.weak)
    }

    #[inline(always)]
    fn run(self, slot: &Slot<A>, me: usize) -> Self::Output {
        let PutOwned {
            origin,
            bin,
            size,
            block,
        } = self;
        // One `put` (inlined once): the block's own slot keeps `origin` as a spare; another
        // thread's slot takes the block only, and `origin` is handed back as foreign.
        let (here, foreign) = if std::ptr::eq(Arc::as_ptr(&origin), slot) {
            (Some(origin), None)
        } else {
            (None, Some(origin))
        };
        match slot.put(bin, size, block, here, me) {
            Ok(extra) => Ok((extra, foreign)),
            Err(here) => Err(here.or(foreign).unwrap_or_else(unreachable_origin)),
        }
    }
}

#[cold]
fn unreachable_origin<T>() -> T {
    unreachable!("Slot::put gives back the reference it was given")
}

/// The calling thread's slot of the pool (made and registered on first use); `None` while the
/// thread is exiting or the pool is closed.
pub(super) fn slot_for<A: Allocator>(inner: &Arc<Inner<A>>) -> Option<Arc<Slot<A>>> {
    if let Some(s) = tls::find(inner) {
        if s.lock().inner.is_some() {
            return Some(s);
        }
    }
    new_slot(inner)
}

#[cold]
fn new_slot<A: Allocator>(inner: &Arc<Inner<A>>) -> Option<Arc<Slot<A>>> {
    let slot = Arc::new(Slot::new(Arc::clone(inner)));
    {
        let mut reg = lock(&inner.registry);
        if inner.closed.load(Ordering::Acquire) {
            return None;
        }
        if reg.is_empty() {
            inner.solo.store(thread_key(), Ordering::Relaxed);
        }
        // Every registered slot is shut while the caches are off (the switch changes under
        // this lock, and walks the registered slots).
        slot.set_caching(inner.cache_on());
        reg.push(Arc::clone(&slot));
    }
    inner.refresh_cache_on();
    if !tls::insert(inner, Arc::clone(&slot)) {
        // The thread is exiting (an allocation from another thread-local's destructor): its
        // entry was dropped, which retired the slot. The request goes without one, so an owned
        // block holds a pool handle (a retired slot's lease may already be spent).
        return None;
    }
    Some(slot)
}
