//! Per-thread caches of held blocks in front of the shared bins (tcmalloc's per-thread caches,
//! Bonwick's magazines): a hit and a return touch only the calling thread's [`Slot`].
//!
//! # Design (decided 2026-11-24, issue 12)
//!
//! - Each thread that uses a pool gets one [`Slot`] for it: a small spin-locked state with, per bin,
//!   a LIFO stack of up to [`CACHE_BLOCKS`] held blocks and the bin's counter *deltas* (hits,
//!   active blocks, requested bytes), plus the thread's deltas of the pool-wide gauges (active and
//!   held bytes, requests). Only its thread locks it on the hit path (one locked instruction; the
//!   unlock is a plain store); pool-wide walks (statistics, `free_held`, out-of-memory reclaim,
//!   closing) lock every slot in turn.
//! - A hit pops the newest block of the bin from the slot, else from the shared bin (PyOpenCL's
//!   LIFO order is kept: every block in the shared bin from this thread is older than every block
//!   in its slot, because an overflowing slot moves its *oldest* half to the shared bin's top). A
//!   return pushes onto the returning thread's slot. With one thread the pool therefore makes
//!   exactly PyOpenCL's decisions and its counters, summed, are exactly PyOpenCL's.
//! - Blocks in slots are **held**: `held_blocks`, `held_bytes`, the statistics and every walk that
//!   frees held blocks (`free_held`, `stop_holding`, the out-of-memory reclaim, `release_idle`,
//!   `enforce_held_cap`) see them; the walks first move them back to the shared bins. A thread's
//!   slot is folded back into the shared bins when the thread exits.
//! - Lifetimes without a shared reference count per hit: the pool's registry holds each slot
//!   (strong) while the pool is open, a slot holds the pool's `Inner`, a thread's TLS holds its slot
//!   weakly, and a [`PoolBlock`](super::PoolBlock) holds the slot it came from (a count on that
//!   thread's own cache line). When the last [`MemoryPool`](super::MemoryPool) handle goes, the
//!   pool closes: the registry drops its slots, cached blocks are freed, and blocks still out free
//!   themselves when dropped; the last of them drops the `Inner`.
//! - The cache is bypassed (every hit goes through the shared bins, as before) while a policy
//!   needs pool-wide order or totals on every hit: a held-bytes cap, idle release, least-recently-
//!   used eviction, [`Policy::shared_bins_only`](super::Policy), after `stop_holding`, and while
//!   the pool is closing.

use std::any::Any;
use std::cell::RefCell;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use crate::allocator::Allocator;
use crate::bins::BinNumber;

use super::engine::*;

/// Most blocks of one bin a thread keeps to itself; past this, the oldest half goes to the shared
/// bin.
pub(super) const CACHE_BLOCKS: usize = 16;

/// One bin of one thread's cache.
pub(super) struct CacheBin<B> {
    pub(super) blocks: Vec<B>,
    pub(super) hits: u64,
    pub(super) active_blocks: isize,
    pub(super) active_requested: isize,
}

impl<B> Default for CacheBin<B> {
    fn default() -> Self {
        CacheBin {
            blocks: Vec::new(),
            hits: 0,
            active_blocks: 0,
            active_requested: 0,
        }
    }
}

pub(super) struct SlotState<B> {
    pub(super) bins:
        std::collections::HashMap<BinNumber, CacheBin<B>, std::hash::BuildHasherDefault<BinHasher>>,
    /// Deltas of the pool-wide gauges made through this slot.
    pub(super) active_bytes: isize,
    pub(super) held_bytes: isize,
    pub(super) requests: u64,
    /// Folded back into the shared state (its thread exited): takes no more blocks.
    pub(super) retired: bool,
}

/// One thread's cache of one pool.
pub(crate) struct Slot<A: Allocator> {
    pub(super) inner: Arc<Inner<A>>,
    pub(super) state: spin::Mutex<SlotState<A::Block>>,
}

impl<A: Allocator> Slot<A> {
    pub(super) fn new(inner: Arc<Inner<A>>) -> Slot<A> {
        Slot {
            inner,
            state: spin::Mutex::new(SlotState {
                bins: std::collections::HashMap::default(),
                active_bytes: 0,
                held_bytes: 0,
                requests: 0,
                retired: false,
            }),
        }
    }

    /// Pops the newest cached block of `bin` (a hit), or `None`.
    #[inline]
    pub(super) fn take(&self, bin: BinNumber, size: usize) -> Option<A::Block> {
        let mut s = self.state.lock();
        let c = s.bins.get_mut(&bin)?;
        let block = c.blocks.pop()?;
        c.hits += 1;
        c.active_blocks += 1;
        c.active_requested += signed(size);
        s.active_bytes += signed(size);
        s.held_bytes -= signed(self.inner.layout.alloc_size(bin));
        s.requests += 1;
        let own = s.active_bytes;
        drop(s);
        self.inner.note_cached_active(own);
        Some(block)
    }

    /// Keeps a returned block (`Err` gives it back when this slot takes no more: retired).
    /// Past [`CACHE_BLOCKS`] in the bin, the oldest half moves to the shared bin.
    #[inline]
    pub(super) fn put(&self, bin: BinNumber, size: usize, block: A::Block) -> Result<(), A::Block> {
        let bytes = self.inner.layout.alloc_size(bin);
        let mut s = self.state.lock();
        if s.retired {
            return Err(block);
        }
        let c = s.bins.entry(bin).or_default();
        c.active_blocks -= 1;
        c.active_requested -= signed(size);
        c.blocks.push(block);
        let overflow = (c.blocks.len() > CACHE_BLOCKS)
            .then(|| c.blocks.drain(..CACHE_BLOCKS / 2).collect::<Vec<_>>());
        let moved = overflow.as_ref().map_or(0, Vec::len);
        s.active_bytes -= signed(size);
        s.held_bytes += signed(bytes) * (1 - signed(moved));
        drop(s);
        if let Some(v) = overflow {
            self.inner.push_held(bin, v);
        }
        Ok(())
    }

    /// The calling thread's delta of the active bytes (for the peaks of a shared-path hit).
    pub(super) fn own_active(&self) -> isize {
        self.state.lock().active_bytes
    }

    /// Takes every cached block out (counted as no longer held by this slot), for a walk that
    /// moves them to the shared bins or frees them.
    pub(super) fn drain(&self) -> Vec<(BinNumber, Vec<A::Block>)> {
        let mut s = self.state.lock();
        let mut out = Vec::new();
        let mut bytes = 0usize;
        for (&bin, b) in &mut s.bins {
            if !b.blocks.is_empty() {
                bytes += b.blocks.len() * self.inner.layout.alloc_size(bin);
                out.push((bin, std::mem::take(&mut b.blocks)));
            }
        }
        s.held_bytes -= signed(bytes);
        out
    }
}

fn signed(n: usize) -> isize {
    isize::try_from(n).unwrap_or(isize::MAX)
}

/// What a thread's TLS keeps of a slot: a weak handle (so that an idle thread does not keep a
/// dropped pool alive) that folds the slot back when the thread exits.
trait SlotDyn: Send + Sync {
    fn retire(&self);
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

impl<A: Allocator + 'static> SlotDyn for Slot<A> {
    fn retire(&self) {
        self.inner.retire_slot(self);
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}

struct TlsEntry {
    pool: usize,
    slot: Weak<dyn SlotDyn>,
}

impl Drop for TlsEntry {
    fn drop(&mut self) {
        if let Some(s) = self.slot.upgrade() {
            s.retire();
        }
    }
}

thread_local! {
    static SLOTS: RefCell<Vec<TlsEntry>> = const { RefCell::new(Vec::new()) };
}

/// The calling thread's slot of the pool `inner` (made and registered on first use); `None` while
/// the thread is exiting (its TLS is gone) or the pool is closed.
pub(super) fn my_slot<A: Allocator + 'static>(inner: &Arc<Inner<A>>) -> Option<Arc<Slot<A>>> {
    let id = Arc::as_ptr(inner) as usize;
    let found = SLOTS
        .try_with(|v| {
            let v = v.borrow();
            v.iter().find(|e| e.pool == id).map(|e| e.slot.upgrade())
        })
        .ok()?;
    match found {
        Some(Some(slot)) => slot.into_any().downcast::<Slot<A>>().ok(),
        // Not yet, or the slot died with an earlier pool at the same address: make one.
        _ => new_slot(inner, id),
    }
}

/// The calling thread's identity for [`Inner::solo`] (the address of its TLS; 0 while exiting).
#[inline]
pub(super) fn thread_key() -> usize {
    SLOTS
        .try_with(|v| std::ptr::from_ref(v) as usize)
        .unwrap_or(0)
}

/// True when `slot` is the calling thread's slot for its pool (no reference count touched).
pub(super) fn is_mine<A: Allocator + 'static>(slot: &Arc<Slot<A>>) -> bool {
    let id = Arc::as_ptr(&slot.inner) as usize;
    let want = Arc::as_ptr(slot).cast::<()>();
    SLOTS
        .try_with(|v| {
            v.borrow()
                .iter()
                .any(|e| e.pool == id && e.slot.as_ptr().cast::<()>() == want)
        })
        .unwrap_or(false)
}

#[cold]
fn new_slot<A: Allocator + 'static>(inner: &Arc<Inner<A>>, id: usize) -> Option<Arc<Slot<A>>> {
    let slot = Arc::new(Slot::new(Arc::clone(inner)));
    {
        let mut reg = lock(&inner.registry);
        if inner.closed.load(Ordering::Acquire) {
            return None;
        }
        if reg.is_empty() {
            inner.solo.store(thread_key(), Ordering::Relaxed);
        }
        reg.push(Arc::clone(&slot));
    }
    // A second thread turns the caches on.
    inner.refresh_cache_on();
    let weak: Weak<dyn SlotDyn> = Arc::downgrade(&(Arc::clone(&slot) as Arc<dyn SlotDyn>));
    let stale = SLOTS
        .try_with(|v| {
            let mut v = v.borrow_mut();
            // Entries of dead slots (dropped pools) go; an old entry for this address too.
            let stale: Vec<TlsEntry> = {
                let (keep, stale): (Vec<TlsEntry>, Vec<TlsEntry>) = std::mem::take(&mut *v)
                    .into_iter()
                    .partition(|e| e.pool != id && e.slot.strong_count() > 0);
                *v = keep;
                stale
            };
            v.push(TlsEntry {
                pool: id,
                slot: weak,
            });
            stale
        })
        .ok();
    // Dropped outside the borrow: a stale entry whose slot still lives retires it.
    drop(stale);
    Some(slot)
}
