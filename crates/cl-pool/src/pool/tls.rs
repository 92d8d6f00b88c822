//! The calling thread's cache slots (one per pool it used), and its most recently used slot,
//! reached without a search or a type check: the second of cl-pool's two `unsafe` modules.
//!
//! Why: every hit and every return finds the calling thread's slot of its pool. Through the slot
//! list alone that is a search by pool and a downcast of a type-erased slot (two virtual calls):
//! about a fifth of a hit's instructions (callgrind, 2026-11-26). A thread nearly always uses the
//! same pool many times in a row, so the list remembers its last slot as a pointer (`hot`), and a
//! hit whose pool is that one dereferences it directly.
//!
//! # Why the pointer is valid and of the right type
//!
//! - `hot` is `(pool, type, pointer)` copied from an entry of `entries` whose slot was downcast to
//!   its concrete type `S` (the cache's `Slot<A>`; `type` is `TypeId::of::<S>()`; `pointer` is
//!   that slot's address). It is
//!   cleared before any entry leaves `entries` (every removal is in this module, under
//!   `borrow_mut`), so while `hot` is set its entry is in the list, and the entry's `Arc` keeps
//!   the slot alive.
//! - It is read only inside [`with_slot`], which *pins* the list (`pins`, a count of
//!   `with_slot` calls in progress on this thread) while the caller's work runs: no entry can
//!   leave meanwhile ([`insert`], the only removal besides the thread's exit, gives up while the
//!   list is pinned or borrowed), so the reference given to the work outlives nothing it points
//!   to. A count rather than a `RefCell` borrow: a borrow is a checked add and a store each way,
//!   on every hit and every return (issue 12); an unwinding work unpins through a guard.
//! - It is used only when both `pool` and `type` match the request's: the pointer is then the
//!   address of a live slot of the very type the caller names. (Cleared, its `pool` is 0, which
//!   is no pool's address.)
//! - At thread exit the list is destroyed with its key; `with_slot` reaches `hot` only through
//!   the key (`try_with`), which fails from then on. While it succeeds, the list outlives the
//!   call that asked (its destructor runs only after this thread's code returned to the exit
//!   path), so `with_slot` holds a plain reference to it for its own duration, which keeps the
//!   thread-local access out of line of the closure (a closure too large to inline made
//!   `try_with` a call per hit).

use std::any::{Any, TypeId};
use std::cell::{Cell, RefCell};
use std::sync::Arc;

/// What a thread's list keeps of a slot, type-erased (the slot type is the cache module's
/// `Slot<A>`; this module names it only as a type parameter, so it imports nothing of the cache).
pub(super) trait SlotDyn: Send + Sync {
    /// Folds the slot back into its pool (its thread exits, or its entry is dropped).
    fn retire(&self);
    /// Still leasing its pool (a dead slot's entry can go).
    fn alive(&self) -> bool;
    fn as_any(&self) -> &(dyn Any + Send + Sync);
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

/// One pool's slot of this thread.
pub(super) struct TlsEntry {
    pub(super) pool: usize,
    pub(super) slot: Arc<dyn SlotDyn>,
}

impl Drop for TlsEntry {
    fn drop(&mut self) {
        self.slot.retire();
    }
}

#[derive(Clone, Copy)]
struct Hot {
    /// 0 (no pool has that address) while cold.
    pool: usize,
    ty: TypeId,
    slot: *const (),
}

const COLD: Hot = Hot {
    pool: 0,
    ty: TypeId::of::<()>(),
    slot: std::ptr::null(),
};

struct Local {
    entries: RefCell<Vec<TlsEntry>>,
    hot: Cell<Hot>,
    /// `with_slot` calls in progress on this thread: no entry leaves while it is not 0.
    pins: Cell<usize>,
}

thread_local! {
    static LOCAL: Local = const {
        Local {
            entries: RefCell::new(Vec::new()),
            hot: Cell::new(COLD),
            pins: Cell::new(0),
        }
    };
}

/// A pin of the list (see the module docs), let go when dropped (also when the work unwinds).
struct Pin<'a>(&'a Cell<usize>);

impl<'a> Pin<'a> {
    #[inline(always)]
    fn new(pins: &'a Cell<usize>) -> Self {
        pins.set(pins.get() + 1);
        Pin(pins)
    }
}

impl Drop for Pin<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.0.set(self.0.get() - 1);
    }
}

/// The calling thread's identity (the address of its slot list; 0 while the thread exits).
#[inline]
pub(super) fn thread_key() -> usize {
    LOCAL
        .try_with(|l| std::ptr::from_ref(l) as usize)
        .unwrap_or(0)
}

/// Work that [`with_slot`] runs on the calling thread's slot (of type `S`). A trait rather than
/// a closure so that the hit path inlines whole: a closure gets LLVM's default inlining, and the
/// cache's take stayed an out-of-line call that wrote the block through a pointer for the caller
/// to read straight back (store-forwarding stalls, about 15 ns of a device hit, issue 12); an
/// `#[inline(always)]` `run` is inlined into `with_slot` and on into `allocate`.
pub(super) trait SlotWork<S> {
    /// What the work returns.
    type Output;
    /// Runs with `slot` pinned (see [`with_slot`]); `me` is the thread's key.
    fn run(self, slot: &S, me: usize) -> Self::Output;
}

/// Runs `work` on the calling thread's slot of pool `pool` (with the thread's key), or gives
/// `work` back when the thread has none (or is exiting). While it runs no slot of this thread
/// can be removed: the list is pinned, so [`insert`] gives up instead (its new slot is retired at
/// once, as its entry is dropped) and nothing dangles. The work of the cache module runs no user
/// code (no allocator hook, no block's drop) and does not exit the thread, which the reasoning
/// of [`local`] relies on.
#[inline(always)]
pub(super) fn with_slot<S: Any, W: SlotWork<S>>(pool: usize, work: W) -> Result<W::Output, W> {
    // SAFETY: `l` is used only in this call, which does not end the thread (`work` is cache
    // code that runs no user code; see above).
    let Some(l) = (unsafe { local() }) else {
        return Err(work);
    };
    let me = std::ptr::from_ref(l) as usize;
    let mut hot = l.hot.get();
    if hot.pool != pool || hot.ty != TypeId::of::<S>() {
        match find_in::<S>(l, pool) {
            Some(h) => hot = h,
            None => return Err(work),
        }
    }
    // Held until `work` returns: no entry (and so no slot `hot` names) leaves meanwhile. Nothing
    // ran since `hot` was read or remembered (no entry left in between).
    let pin = Pin::new(&l.pins);
    // SAFETY: module docs: `hot` names the slot of an entry still in `entries` (pinned above, so
    // it stays), whose `Arc` keeps it alive, and that slot is an `S` (same `TypeId`).
    let slot = unsafe { &*hot.slot.cast::<S>() };
    let r = work.run(slot, me);
    drop(pin);
    Ok(r)
}

/// The calling thread's list, for the rest of the calling function (`None` while the thread's
/// thread-locals are being destroyed).
///
/// # Safety
///
/// The lifetime `'a` is the caller's to choose, so the caller must keep the reference within
/// its own call on this thread: not store it, not send it, and not use it across anything that
/// could end the thread.
#[inline(always)]
unsafe fn local<'a>() -> Option<&'a Local> {
    let p = LOCAL.try_with(std::ptr::from_ref).ok()?;
    // SAFETY: a thread's thread-locals live until its destructors run at its exit, one key after
    // another; this key's destructor cannot start while a function of this thread uses the
    // reference (it is not running now, or `try_with` would have failed), and the caller keeps
    // the reference within its own call (this function's contract).
    Some(unsafe { &*p })
}

/// The entry of `pool`, typed, remembered as `hot` (and returned).
#[cold]
fn find_in<S: Any>(l: &Local, pool: usize) -> Option<Hot> {
    let entries = l.entries.try_borrow().ok()?;
    let e = entries.iter().find(|e| e.pool == pool)?;
    let slot = e.slot.as_any().downcast_ref::<S>()?;
    let hot = Hot {
        pool,
        ty: TypeId::of::<S>(),
        slot: std::ptr::from_ref(slot).cast(),
    };
    l.hot.set(hot);
    Some(hot)
}

/// A counted reference to the calling thread's slot of `pool`, if it has one.
pub(super) fn find<S: Any + Send + Sync>(pool: usize) -> Option<Arc<S>> {
    let found = LOCAL
        .try_with(|l| {
            l.entries
                .try_borrow()
                .ok()?
                .iter()
                .find(|e| e.pool == pool)
                .map(|e| Arc::clone(&e.slot))
        })
        .ok()??;
    found.into_any().downcast::<S>().ok()
}

/// Registers `slot` as the calling thread's slot of `pool`, dropping any entry of the same pool
/// address and any entry whose slot no longer leases its pool. `false` while the thread exits
/// or its list is pinned or borrowed: the entry is then dropped, which retires the slot (folds it
/// back into its pool), so no slot stays registered with its pool without a thread to retire it.
pub(super) fn insert(pool: usize, slot: Arc<dyn SlotDyn>) -> bool {
    let entry = TlsEntry { pool, slot };
    let stale = LOCAL.try_with(|l| {
        // Pinned: a `with_slot` of this thread is running (module docs).
        if l.pins.get() != 0 {
            return None;
        }
        let Ok(mut v) = l.entries.try_borrow_mut() else {
            return None;
        };
        // Before any entry leaves (module docs).
        l.hot.set(COLD);
        let (keep, stale): (Vec<TlsEntry>, Vec<TlsEntry>) = std::mem::take(&mut *v)
            .into_iter()
            .partition(|e| e.pool != pool && e.slot.alive());
        *v = keep;
        v.push(entry);
        Some(stale)
    });
    match stale {
        // Dropped outside the borrow (retiring may lock the pool).
        Ok(Some(stale)) => {
            drop(stale);
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MemoryPool, SimulatedAllocator};
    use std::sync::atomic::{AtomicBool, Ordering};

    #[derive(Default)]
    struct Probe {
        retired: AtomicBool,
    }

    impl SlotDyn for Probe {
        fn retire(&self) {
            self.retired.store(true, Ordering::SeqCst);
        }
        fn alive(&self) -> bool {
            true
        }
        fn as_any(&self) -> &(dyn Any + Send + Sync) {
            self
        }
        fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
            self
        }
    }

    /// Work that registers another slot while the list is pinned (or panics).
    struct Nested(Option<Arc<Probe>>);

    impl SlotWork<Probe> for Nested {
        type Output = bool;
        fn run(self, _slot: &Probe, _me: usize) -> bool {
            match self.0 {
                Some(p) => insert(0x20, p),
                None => panic!("work that unwinds"),
            }
        }
    }

    /// While a `with_slot` runs, no entry can be added or removed (the reference it gave out
    /// would dangle): `insert` refuses and retires the new slot. A work that unwinds unpins
    /// the list. Miri checks the references.
    #[test]
    fn a_pinned_list_refuses_entries_until_the_work_ends() {
        let first = Arc::new(Probe::default());
        assert!(insert(0x10, Arc::clone(&first) as Arc<dyn SlotDyn>));
        let second = Arc::new(Probe::default());
        let inserted = with_slot::<Probe, _>(0x10, Nested(Some(Arc::clone(&second))));
        assert_eq!(inserted.ok(), Some(false));
        assert!(second.retired.load(Ordering::SeqCst));
        assert!(!first.retired.load(Ordering::SeqCst));

        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            with_slot::<Probe, _>(0x10, Nested(None)).ok()
        }));
        assert!(unwound.is_err());
        let third = Arc::new(Probe::default());
        assert!(insert(0x30, Arc::clone(&third) as Arc<dyn SlotDyn>));
        assert!(!third.retired.load(Ordering::SeqCst));
        // Both registered slots are still found, the first through a fresh lookup.
        assert!(find::<Probe>(0x10).is_some_and(|p| Arc::ptr_eq(&p, &first)));
        assert!(find::<Probe>(0x30).is_some_and(|p| Arc::ptr_eq(&p, &third)));
        // Not a slot of that type: no match, the work comes back.
        assert!(
            with_slot::<super::super::cache::Slot<SimulatedAllocator>, _>(0x10, NoWork).is_err()
        );
    }

    struct NoWork;

    impl SlotWork<super::super::cache::Slot<SimulatedAllocator>> for NoWork {
        type Output = ();
        fn run(self, _slot: &super::super::cache::Slot<SimulatedAllocator>, _me: usize) {}
    }

    /// Two pools of different allocator types used in turn on one thread: the remembered slot
    /// switches with the pool and is never taken for the other pool's (counters stay each
    /// pool's own).
    #[test]
    fn the_remembered_slot_follows_the_pool_and_its_type() {
        let a = MemoryPool::new(SimulatedAllocator::new(usize::MAX));
        let b = MemoryPool::new(crate::TestAllocator::new());
        for round in 0..50u64 {
            drop(a.allocate(100).expect("a"));
            drop(b.allocate(100).expect("b"));
            drop(a.allocate_local(200).expect("a local"));
            let (sa, sb) = (a.stats(), b.stats());
            assert_eq!((sa.hits, sa.misses), (2 * round, 2));
            assert_eq!((sb.hits, sb.misses), (round, 1));
        }
        drop(a);
        // A new pool may reuse the dropped one's address: its slot is its own.
        let c = MemoryPool::new(SimulatedAllocator::new(usize::MAX));
        drop(c.allocate(100).expect("c"));
        drop(c.allocate(100).expect("c"));
        assert_eq!(c.stats().hits, 1);
        assert_eq!(c.held_blocks(), 1);
    }
}
