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
//! - `hot` is `(pool, pointer)` copied from an entry of `entries` whose slot was downcast to its
//!   concrete type (`pool` is the address of the pool's shared state, the entry's *key*; `pointer`
//!   that slot's address). It is cleared before any entry leaves `entries` (every removal is in
//!   this module, under `borrow_mut`), so while `hot` is set its entry is in the list, and the
//!   entry's `Arc` keeps the slot alive.
//! - It is read only inside [`with_slot`], which *pins* the list (`pins`, a count of
//!   `with_slot` calls in progress on this thread) while the caller's work runs: no entry can
//!   leave meanwhile ([`insert`], the only removal besides the thread's exit, gives up while the
//!   list is pinned or borrowed), so the reference given to the work outlives nothing it points
//!   to. A count rather than a `RefCell` borrow: a borrow is a checked add and a store each way,
//!   on every hit and every return (issue 12); an unwinding work unpins through a guard.
//! - It is used only when the work names its entry's key, by an `Arc<K>` or a `Weak<K>` the work
//!   holds (borrowed while [`with_slot`] compares): the pool's handle (a hit, a local block's
//!   return) or the lease of an owned block's slot (its return, on any thread). No type check is
//!   needed: every entry keeps its key's allocation (a `Weak`, which frees the key's value when the
//!   pool goes but not its memory), so no other object can take that address while the entry is
//!   listed, and the work's `Arc<K>` or `Weak<K>` also keeps an allocation made for a `K` (an
//!   `Arc`'s value sits inside its allocation, after the counts, even when zero-sized). One address
//!   in two allocations alive at once cannot be, so the work's key is the entry's own, and the entry
//!   was registered ([`insert`]) for a `K`, with a `K::Slot` (whose address, taken from the
//!   entry's own `Arc`, is what `hot` keeps).
//!   A dangling `Weak` (`Weak::new`, no allocation) has no such address: its `as_ptr` is a
//!   sentinel (`usize::MAX`) that no allocation has, so it matches nothing.
//!   (Cleared, `hot`'s key and slot are 0 and null, the address of nothing an `Arc` holds.)
//! - At thread exit the list is destroyed with its key; `with_slot` reaches `hot` only through
//!   the key (`try_with`), which fails from then on. While it succeeds, the list outlives the
//!   call that asked (its destructor runs only after this thread's code returned to the exit
//!   path), so `with_slot` holds a plain reference to it for its own duration, which keeps the
//!   thread-local access out of line of the closure (a closure too large to inline made
//!   `try_with` a call per hit).

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::sync::{Arc, Weak};

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

/// A pool's shared state as the key of its slots (the cache module's `Inner<A>`, whose slot type
/// is `Slot<A>`): one slot type per key type, so that an entry found by its key's address is of
/// the slot type the caller names (module docs).
pub(super) trait SlotKey: Any + Send + Sync {
    /// The type of the key's slots.
    type Slot: SlotDyn + Any;
}

/// One pool's slot of this thread.
pub(super) struct TlsEntry {
    /// The key's address.
    pub(super) pool: usize,
    /// Keeps the key's memory (not its value) while the entry is listed: no other object takes
    /// the address `pool` meanwhile (module docs).
    _key: Weak<dyn Any + Send + Sync>,
    pub(super) slot: Arc<dyn SlotDyn>,
}

impl Drop for TlsEntry {
    fn drop(&mut self) {
        self.slot.retire();
    }
}

#[derive(Clone, Copy)]
struct Hot {
    /// The entry's key address; 0 (no `Arc` has that address) while cold.
    pool: usize,
    /// The entry's slot; null while cold.
    slot: *const (),
}

const COLD: Hot = Hot {
    pool: 0,
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

/// How a [`SlotWork`] names the pool whose slot (of the calling thread) it wants: by a handle of
/// the pool's key, or by a `Weak` of it (borrowed from the work while [`with_slot`] compares;
/// module docs). A dangling `Weak` (`Weak::new`) names no pool.
pub(super) enum Names<'a, K: SlotKey> {
    /// The pool, by a handle.
    Pool(&'a Arc<K>),
    /// The pool, by a `Weak` (an owned block's slot names its pool so).
    Lease(&'a Weak<K>),
}

/// Work that [`with_slot`] runs on the calling thread's slot of a pool with key type `K`. A
/// trait rather than a closure so that the hit path inlines whole: a closure gets LLVM's default
/// inlining, and the cache's take stayed an out-of-line call that wrote the block through a
/// pointer for the caller to read straight back (store-forwarding stalls, about 15 ns of a device
/// hit, issue 12); an `#[inline(always)]` `run` is inlined into `with_slot` and on into
/// `allocate`.
pub(super) trait SlotWork<K: SlotKey> {
    /// What the work returns.
    type Output;
    /// The pool whose slot the work is for. Must only return a reference (it runs inside
    /// [`with_slot`] before the list is read, and must not touch the list).
    fn names(&self) -> Names<'_, K>;
    /// Runs with `slot` pinned (see [`with_slot`]); `me` is the thread's key.
    fn run(self, slot: &K::Slot, me: usize) -> Self::Output;
}

/// Runs `work` on the calling thread's slot of the pool `work` names (with the thread's key), or
/// gives `work` back when the thread has none (or is exiting). While it runs no slot of this
/// thread can be removed: the list is pinned, so [`insert`] gives up instead (its new slot is
/// retired at once, as its entry is dropped) and nothing dangles. The work of the cache module
/// runs no user code (no allocator hook, no block's drop) and does not exit the thread, which
/// the reasoning of [`local`] relies on.
#[inline(always)]
pub(super) fn with_slot<K: SlotKey, W: SlotWork<K>>(work: W) -> Result<W::Output, W> {
    // SAFETY: `l` is used only in this call, which does not end the thread (`work` is cache
    // code that runs no user code; see above).
    let Some(l) = (unsafe { local() }) else {
        return Err(work);
    };
    let me = std::ptr::from_ref(l) as usize;
    let pool = match work.names() {
        Names::Pool(key) => Arc::as_ptr(key) as usize,
        Names::Lease(key) => Weak::as_ptr(key) as usize,
    };
    // Read after the work named its pool: no code of the work runs between this read and the
    // pin below.
    let mut hot = l.hot.get();
    if hot.pool != pool {
        match find_in::<K>(l, pool) {
            Some(h) => hot = h,
            None => return Err(work),
        }
    }
    // Held until `work` returns: no entry (and so no slot `hot` names) leaves meanwhile. Nothing
    // ran since `hot` was read or remembered (no entry left in between).
    let pin = Pin::new(&l.pins);
    // SAFETY: module docs: `hot` names the slot of an entry still in `entries` (pinned above, so
    // it stays), whose `Arc` keeps it alive, and that slot is a `K::Slot` (the work's key is the
    // entry's own).
    let slot = unsafe { &*hot.slot.cast::<K::Slot>() };
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

/// The entry of `pool`, remembered as `hot` (and returned). Its slot is a `K::Slot` (module
/// docs); checked here too, on the entry's own object (the address comes from its `Arc`, not
/// from what `as_any` returns).
#[cold]
fn find_in<K: SlotKey>(l: &Local, pool: usize) -> Option<Hot> {
    #[cfg(test)]
    tests::LOOKUPS.with(|n| n.set(n.get() + 1));
    let entries = l.entries.try_borrow().ok()?;
    let e = entries.iter().find(|e| e.pool == pool)?;
    let at = Arc::as_ptr(&e.slot).cast::<()>();
    let typed = e.slot.as_any().downcast_ref::<K::Slot>()?;
    if !std::ptr::eq(std::ptr::from_ref(typed).cast::<()>(), at) {
        return None;
    }
    let hot = Hot { pool, slot: at };
    l.hot.set(hot);
    Some(hot)
}

/// A counted reference to the calling thread's slot of the pool `key`, if it has one.
pub(super) fn find<K: SlotKey>(key: &Arc<K>) -> Option<Arc<K::Slot>> {
    let pool = Arc::as_ptr(key) as usize;
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
    found.into_any().downcast::<K::Slot>().ok()
}

/// Registers `slot` as the calling thread's slot of the pool `key`, dropping any entry of the
/// same key address and any entry whose slot no longer leases its pool. `false` while the thread
/// exits or its list is pinned or borrowed: the entry is then dropped, which retires the slot
/// (folds it back into its pool), so no slot stays registered with its pool without a thread to
/// retire it.
pub(super) fn insert<K: SlotKey>(key: &Arc<K>, slot: Arc<K::Slot>) -> bool {
    let pool = Arc::as_ptr(key) as usize;
    let weak: Weak<K> = Arc::downgrade(key);
    let entry = TlsEntry {
        pool,
        _key: weak,
        slot,
    };
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

    thread_local! {
        /// This thread's searches of its list (`find_in`): what tells a remembered slot from a
        /// looked-up one.
        pub(super) static LOOKUPS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    fn lookups() -> usize {
        LOOKUPS.with(std::cell::Cell::get)
    }

    struct Probe {
        retired: AtomicBool,
    }

    impl Probe {
        fn new() -> Arc<Probe> {
            Arc::new(Probe {
                retired: AtomicBool::new(false),
            })
        }
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

    /// A key (not zero-sized: its `Arc`s have addresses of their own either way).
    struct ProbeKey(#[expect(dead_code, reason = "gives the key a size")] u8);

    impl SlotKey for ProbeKey {
        type Slot = Probe;
    }

    /// A key of another type, with the same slot type.
    struct OtherKey(#[expect(dead_code, reason = "gives the key a size")] u8);

    impl SlotKey for OtherKey {
        type Slot = Probe;
    }

    fn key() -> Arc<ProbeKey> {
        Arc::new(ProbeKey(0))
    }

    /// Work that registers another slot while the list is pinned (or panics).
    struct Nested<'a>(&'a Arc<ProbeKey>, Option<(Arc<ProbeKey>, Arc<Probe>)>);

    impl SlotWork<ProbeKey> for Nested<'_> {
        type Output = bool;
        fn names(&self) -> Names<'_, ProbeKey> {
            Names::Pool(self.0)
        }
        fn run(self, _slot: &Probe, _me: usize) -> bool {
            match self.1 {
                Some((k, p)) => insert(&k, p),
                None => panic!("work that unwinds"),
            }
        }
    }

    /// Work that names its pool by a handle or a `Weak`, and tells which slot it ran on.
    struct Which<'a, K: SlotKey>(Names<'a, K>);

    impl<K: SlotKey> SlotWork<K> for Which<'_, K> {
        type Output = usize;
        fn names(&self) -> Names<'_, K> {
            match self.0 {
                Names::Pool(k) => Names::Pool(k),
                Names::Lease(k) => Names::Lease(k),
            }
        }
        fn run(self, slot: &K::Slot, _me: usize) -> usize {
            std::ptr::from_ref(slot) as usize
        }
    }

    /// While a `with_slot` runs, no entry can be added or removed (the reference it gave out
    /// would dangle): `insert` refuses and retires the new slot. A work that unwinds unpins
    /// the list. A slot is reached by a handle and by a `Weak` of its pool's key, remembered (no
    /// search) or looked up; an entry keeps its key's address while listed. Miri checks the
    /// references.
    #[test]
    fn a_pinned_list_refuses_entries_until_the_work_ends() {
        let (k1, k2, k3) = (key(), key(), key());
        let first = Probe::new();
        assert!(insert(&k1, Arc::clone(&first)));
        let second = Probe::new();
        let inserted = with_slot(Nested(&k1, Some((Arc::clone(&k2), Arc::clone(&second)))));
        assert_eq!(inserted.ok(), Some(false));
        assert!(second.retired.load(Ordering::SeqCst));
        assert!(!first.retired.load(Ordering::SeqCst));

        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            with_slot(Nested(&k1, None)).ok()
        }));
        assert!(unwound.is_err());
        let third = Probe::new();
        assert!(insert(&k3, Arc::clone(&third)));
        assert!(!third.retired.load(Ordering::SeqCst));
        // Both registered slots are still found, the first through a fresh lookup.
        assert!(find(&k1).is_some_and(|p| Arc::ptr_eq(&p, &first)));
        assert!(find(&k3).is_some_and(|p| Arc::ptr_eq(&p, &third)));
        // By a handle and by a `Weak`: looked up once, then remembered across both ways of
        // naming the pool (a hit names it by a handle, an owned block's return by a `Weak`).
        let at = |p: &Arc<Probe>| Some(Arc::as_ptr(p) as usize);
        let (w1, w3) = (Arc::downgrade(&k1), Arc::downgrade(&k3));
        let before = lookups();
        assert_eq!(with_slot(Which(Names::Pool(&k3))).ok(), at(&third));
        assert_eq!(lookups(), before + 1);
        assert_eq!(with_slot(Which(Names::Pool(&k3))).ok(), at(&third));
        assert_eq!(with_slot(Which(Names::Lease(&w3))).ok(), at(&third));
        assert_eq!(lookups(), before + 1, "remembered: no search");
        assert_eq!(with_slot(Which(Names::Lease(&w1))).ok(), at(&first));
        assert_eq!(with_slot(Which(Names::Pool(&k1))).ok(), at(&first));
        assert_eq!(lookups(), before + 2);
        // The refused slot is not listed: its key finds nothing, nor does a dangling `Weak`.
        assert!(find(&k2).is_none());
        assert!(with_slot(Which(Names::Pool(&k2))).is_err());
        assert!(with_slot(Which(Names::Lease(&Weak::<ProbeKey>::new()))).is_err());
        // A key whose last handle and last `Weak` outside the list went is still its entry's:
        // the entry keeps its memory, so no new key takes that address while it is listed.
        let gone = Arc::as_ptr(&k3) as usize;
        drop(k3);
        drop(w3);
        // Keys of another type made now (of the same size, so the allocator would hand them that
        // address were it free) neither take it nor reach the entry's slot.
        let fresh: Vec<Arc<OtherKey>> = (0..64).map(|_| Arc::new(OtherKey(0))).collect();
        assert!(fresh.iter().all(|k| Arc::as_ptr(k) as usize != gone));
        assert!(fresh
            .iter()
            .all(|k| with_slot(Which(Names::Pool(k))).is_err()));
    }

    /// An owned block freed on another thread that last used the same pool reaches that
    /// thread's remembered slot without a search (a producer and a consumer; ed5016f: named by
    /// the slot's `Weak` of its pool, not by the slot, which is the other thread's).
    #[test]
    fn an_owned_block_freed_on_another_thread_needs_no_search() {
        let pool = MemoryPool::new(SimulatedAllocator::new(usize::MAX));
        let block = pool.allocate(100).expect("this thread's block");
        std::thread::scope(|sc| {
            let pool = &pool;
            sc.spawn(move || {
                // This thread's own slot, remembered after its first use.
                drop(pool.allocate(200).expect("that thread's block"));
                drop(pool.allocate(200).expect("that thread's block"));
                let before = lookups();
                drop(block);
                assert_eq!(lookups(), before, "the remembered slot, no search");
            });
        });
        assert_eq!(pool.active_blocks(), 0);
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
        // A new pool of the same type gets a slot of its own (the dropped pool's entry, still
        // listed, keeps that pool's address, so the new one has another).
        let c = MemoryPool::new(SimulatedAllocator::new(usize::MAX));
        drop(c.allocate(100).expect("c"));
        drop(c.allocate(100).expect("c"));
        assert_eq!(c.stats().hits, 1);
        assert_eq!(c.held_blocks(), 1);
    }
}
