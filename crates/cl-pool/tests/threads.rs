//! Host tests of the pool with threads: thread caches, blocks crossing threads, spare handles,
//! policy changes under load, allocators that call back (no device).
#![expect(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] fns; a failed unwrap is a failed test"
)]

use std::sync::{Arc, Barrier, Mutex};

use cl_pool::{
    Allocator, AllocatorError, HostAllocError, HostBlock, MemoryPool, Policy, PoolBlock, PoolError,
};

mod support;
use support::{figures, rng, TestAllocator};

/// Issue 12's contention check: 16 threads allocating and freeing random sizes (per-thread
/// caches on, blocks crossing threads) leave every counter balanced and every block accounted for.
#[test]
fn sixteen_threads_with_random_sizes_leave_every_counter_balanced() {
    let pool = MemoryPool::new(TestAllocator::new());
    let (tx, rx) = std::sync::mpsc::channel::<PoolBlock<TestAllocator>>();
    let rx = std::sync::Mutex::new(rx);
    std::thread::scope(|sc| {
        for t in 0..16u64 {
            let pool = pool.clone();
            let tx = tx.clone();
            let rx = &rx;
            sc.spawn(move || {
                let mut s = t + 1;
                let mut live = Vec::new();
                for step in 0..4000 {
                    let r = rng(&mut s);
                    if live.len() < 12 && !r.is_multiple_of(3) {
                        let size = usize::try_from(r % 200_000).unwrap();
                        live.push(pool.allocate(size).unwrap());
                    } else if let Some(b) = live.pop() {
                        // Every 7th block is freed by another thread.
                        if step % 7 == 0 {
                            tx.send(b).unwrap();
                        }
                    }
                    if step % 5 == 0 {
                        if let Ok(b) = rx.lock().unwrap().try_recv() {
                            drop(b);
                        }
                    }
                }
            });
        }
    });
    drop(tx);
    for b in rx.lock().unwrap().try_iter() {
        drop(b);
    }
    let s = pool.stats();
    assert_eq!(s.active_blocks, 0, "{s:?}");
    assert_eq!(s.active_bytes, 0);
    assert_eq!(s.managed_bytes, s.held_bytes);
    assert_eq!(s.managed_bytes, pool.allocator().in_use());
    assert_eq!(
        u64::try_from(s.held_blocks).unwrap(),
        s.upstream_allocations - s.upstream_frees
    );
    let held: usize = pool.bin_stats().iter().map(|b| b.held_blocks).sum();
    assert_eq!(held, s.held_blocks);
    pool.free_held();
    // A scoped thread's thread-locals may still be going when its scope returns: such a
    // thread's cache frees its blocks at its exit (asked by `free_held`), moments later.
    for _ in 0..3000 {
        if pool.allocator().in_use() == 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(pool.allocator().in_use(), 0);
    assert_eq!(pool.held_blocks(), 0);
}

#[test]
fn threads_share_a_pool_and_counters_balance() {
    for shards in [1, 4] {
        threads_share_a_pool(shards);
    }
}

fn threads_share_a_pool(shards: usize) {
    let pool = MemoryPool::builder(TestAllocator::new())
        .shards(shards)
        .build()
        .unwrap();
    std::thread::scope(|sc| {
        for t in 0..8usize {
            let pool = pool.clone();
            sc.spawn(move || {
                let mut s = t as u64;
                let mut live = Vec::new();
                for _ in 0..5000 {
                    if live.len() < 8 && rng(&mut s).is_multiple_of(2) {
                        let size = 64 * (t + 1) + usize::try_from(rng(&mut s) % 4096).unwrap();
                        live.push(pool.allocate(size).unwrap());
                    } else if !live.is_empty() {
                        live.pop();
                    }
                }
            });
        }
    });
    let s = pool.stats();
    assert_eq!(s.active_blocks, 0);
    assert_eq!(s.active_bytes, 0);
    assert_eq!(s.managed_bytes, s.held_bytes);
    assert_eq!(s.managed_bytes, pool.allocator().in_use());
    assert_eq!(
        u64::try_from(s.held_blocks).unwrap(),
        s.upstream_allocations
    );
    assert!(s.hits > s.misses);
}

#[test]
fn pool_error_is_a_std_error_with_its_source() {
    let pool = MemoryPool::new(TestAllocator::with_capacity(10));
    let e = pool.allocate(100).unwrap_err();
    let dyn_err: &dyn std::error::Error = &e;
    assert!(dyn_err.source().is_some());
    let PoolError::OutOfMemory { report, .. } = &e else {
        panic!("expected OutOfMemory: {e}");
    };
    assert_eq!(report.rounded, 103);
}

#[test]
fn local_blocks_count_and_return_like_pooled_blocks() {
    let pool = MemoryPool::new(TestAllocator::new());
    pool.start_recording();
    let a = pool.allocate_local(1000).unwrap();
    assert_eq!((a.requested_bytes(), a.allocated_bytes()), (1000, 1023));
    let id = a.block().id;
    assert_eq!(figures(&pool), (0, 1, 1023, 1000));
    drop(a);
    assert_eq!(figures(&pool), (1, 0, 1023, 0));
    let b = pool.allocate(1001).unwrap();
    assert_eq!(b.block().id, id);
    drop(b);
    assert_eq!(pool.stop_recording().len(), 4);
}

/// An allocator that calls back into its own pool from every hook: if the pool held one of its
/// locks while calling the allocator, these calls would deadlock.
struct Reentrant {
    inner: TestAllocator,
    pool: Mutex<Option<MemoryPool<Reentrant>>>,
    calls: std::sync::atomic::AtomicUsize,
}

impl Reentrant {
    fn poke(&self) {
        let pool = self.pool.lock().unwrap().clone();
        if let Some(pool) = pool {
            let s = pool.stats();
            std::hint::black_box(s);
            std::hint::black_box(pool.bin_stats());
            self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

impl Allocator for Reentrant {
    type Block = HostBlock;
    type Error = HostAllocError;
    fn allocate(&self, size: usize) -> Result<Option<HostBlock>, HostAllocError> {
        self.poke();
        self.inner.allocate(size)
    }
    fn free(&self, block: HostBlock) -> Result<(), HostAllocError> {
        self.poke();
        self.inner.free(block)
    }
    fn try_release_blocks(&self) {
        self.poke();
    }
    fn hand_out_existing_block(&self, _block: &mut HostBlock) -> Result<(), HostAllocError> {
        self.poke();
        Ok(())
    }
}

#[test]
fn allocator_calls_are_made_without_pool_locks_held() {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for shards in [1, 4] {
            let pool = MemoryPool::builder(Reentrant {
                inner: TestAllocator::with_capacity(4000),
                pool: Mutex::new(None),
                calls: 0.into(),
            })
            .shards(shards)
            .policy(Policy {
                held_bytes_cap: Some(2500),
                idle_release_after: Some(50),
                ..Policy::default()
            })
            .build()
            .unwrap();
            *pool.allocator().pool.lock().unwrap() = Some(pool.clone());
            let a = pool.allocate(1000).unwrap(); // miss: allocate
            drop(a);
            let b = pool.allocate(1000).unwrap(); // hit: hand_out
            let c = pool.allocate(2000).unwrap(); // miss
            drop(b);
            drop(c); // over the held cap: freed through the allocator
            let _d = pool.allocate(3500).unwrap(); // OOM: release hook, reclaim (free), retry
            pool.free_held();
            pool.stop_holding();
            assert!(
                pool.allocator()
                    .calls
                    .load(std::sync::atomic::Ordering::SeqCst)
                    >= 7
            );
            // Break the cycle pool -> allocator -> pool.
            pool.allocator().pool.lock().unwrap().take();
        }
        tx.send(()).unwrap();
    });
    rx.recv_timeout(std::time::Duration::from_secs(20))
        .expect("an allocator call re-entering the pool deadlocked: a pool lock was held");
}

/// Records the level and message of every `tracing` event in its scope.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<(tracing::Level, String)>>>);

struct Message(String);

impl tracing::field::Visit for Message {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut m = Message(String::new());
        event.record(&mut m);
        self.0
            .lock()
            .unwrap()
            .push((*event.metadata().level(), m.0));
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// PyOpenCL's `UserWarning` for a deferred allocator, as a `tracing` warning with its text; none
/// for a non-deferred one.
#[test]
fn a_deferred_allocator_makes_the_pool_warn() {
    let capture = Capture::default();
    let (deferred, immediate) = tracing::subscriber::with_default(capture.clone(), || {
        let a = TestAllocator::new();
        a.set_deferred(true);
        let deferred = MemoryPool::new(a);
        let before = capture.0.lock().unwrap().len();
        let immediate = MemoryPool::builder(TestAllocator::new()).build().unwrap();
        (
            (deferred, before),
            (immediate, capture.0.lock().unwrap().len() - before),
        )
    });
    let events = capture.0.lock().unwrap().clone();
    assert_eq!(deferred.1, 1, "{events:?}");
    assert_eq!(immediate.1, 0, "{events:?}");
    assert_eq!(events[0].0, tracing::Level::WARN);
    assert_eq!(
        events[0].1,
        "Memory pools expect non-deferred semantics from their allocators. You passed a deferred \
         allocator, i.e. an allocator whose allocations can turn out to be unavailable long after \
         allocation."
    );
}

/// Owned blocks returned on their own thread leave spare slot references in that thread's TLS;
/// blocks freed on another thread count back through the other thread's cache. Whatever mix,
/// the counters balance, the spares keep no pool alive, and a pool dropped while blocks are still
/// out (on this thread and another) frees everything once they come back, also when pools come
/// and go at reused addresses.
#[test]
fn spare_slot_references_keep_counts_and_let_pools_go() {
    let alloc = Arc::new(TestAllocator::new());
    for round in 0..200usize {
        let pool = MemoryPool::new(Arc::clone(&alloc));
        // Same-thread churn: spares are left and reused.
        for _ in 0..50 {
            let a = pool.allocate(1000).unwrap();
            let b = pool.allocate(1000).unwrap();
            drop((a, b));
        }
        let s = pool.stats();
        assert_eq!((s.active_blocks, s.held_blocks), (0, 2), "round {round}");
        // Blocks handed to another thread and freed there.
        let out: Vec<_> = (0..4).map(|_| pool.allocate(1000).unwrap()).collect();
        std::thread::spawn(move || drop(out)).join().unwrap();
        let s = pool.stats();
        assert_eq!(s.active_blocks, 0, "round {round}: {s:?}");
        // The pool goes while blocks are still out here and on another thread.
        let kept_here = pool.allocate(2000).unwrap();
        let kept_there = pool.allocate(3000).unwrap();
        drop(pool);
        assert!(alloc.in_use() > 0);
        std::thread::spawn(move || drop(kept_there)).join().unwrap();
        drop(kept_here);
        assert_eq!(
            alloc.in_use(),
            0,
            "round {round}: the dropped pool kept blocks"
        );
    }
    assert_eq!(alloc.allocations(), alloc.frees());
}

/// "Held" with thread caches: blocks a live thread keeps in its cache count as held;
/// `free_held` and `stop_holding` called on another thread ask that cache to free them, which it
/// does at its thread's next pool call (which then misses); a thread's exit gives its cached
/// blocks back to the shared bins, where another thread hits them.
#[test]
fn thread_caches_are_held_freed_from_other_threads_and_given_back_at_exit() {
    for stop in [false, true] {
        let pool = MemoryPool::new(TestAllocator::new());
        let rounded = pool.allocate(1000).unwrap().allocated_bytes();
        pool.free_held();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        // A plain thread, joined: a scoped thread's TLS destructors (which give its cache back)
        // may still be running when its scope returns.
        let p = pool.clone();
        let owner = std::thread::spawn(move || {
            let blocks: Vec<_> = (0..3).map(|_| p.allocate(1000).unwrap()).collect();
            drop(blocks); // into this thread's cache
            ready_tx.send(()).unwrap();
            go_rx.recv().unwrap(); // alive while the other thread asks for the cache
            let misses = p.stats().upstream_allocations;
            let b = p.allocate(1000).unwrap();
            assert_eq!(p.stats().upstream_allocations, misses + 1, "a miss");
            assert_eq!(p.held_blocks(), 0, "the cache freed its blocks first");
            assert_eq!(p.allocator().in_use(), 1023);
            drop(b); // cached again, unless the pool stopped holding
        });
        ready_rx.recv().unwrap();
        assert_eq!(pool.held_blocks(), 3);
        assert_eq!(pool.stats().held_bytes, 3 * rounded);
        let bins = pool.bin_stats();
        assert_eq!(bins.iter().map(|b| b.held_blocks).sum::<usize>(), 3);
        if stop {
            pool.stop_holding();
        } else {
            pool.free_held();
        }
        // Another thread's cache: asked, it frees its blocks at its thread's next pool call.
        assert_eq!(
            (pool.held_blocks(), pool.allocator().in_use()),
            (3, 3 * rounded)
        );
        go_tx.send(()).unwrap();
        owner.join().unwrap();
        if stop {
            assert_eq!((pool.held_blocks(), pool.allocator().in_use()), (0, 0));
            continue;
        }
        // The thread exited with one block cached: it is in the shared bins now.
        assert_eq!(pool.held_blocks(), 1);
        let before = pool.stats().upstream_allocations;
        let b = pool.allocate(1000).unwrap();
        assert_eq!(pool.stats().upstream_allocations, before, "a hit");
        drop(b);
        pool.free_held();
        assert_eq!(pool.allocator().in_use(), 0);
    }
}

/// Threads that come and go one after another each get a cache list (an exited thread's, reused)
/// and give every cached block back at exit: a reused list brings none of them along.
#[test]
fn threads_one_after_another_give_their_caches_back() {
    let pool = MemoryPool::new(TestAllocator::new());
    // This thread has its own list before the others come and go.
    drop(pool.allocate(1).unwrap());
    for round in 1..=40 {
        let p = pool.clone();
        std::thread::spawn(move || drop(p.allocate(1000 * round).unwrap()))
            .join()
            .unwrap();
        let not_held = pool.stats().upstream_allocations - pool.held_blocks() as u64;
        assert_eq!((not_held, pool.active_blocks()), (0, 0), "round {round}");
    }
    // Every block is in the shared bins, which this thread's free_held frees at once.
    pool.free_held();
    assert_eq!((pool.held_blocks(), pool.allocator().in_use()), (0, 0));
}

// Exactness when the per-thread caches switch off at run time, and the stop_holding race: found
// by a review of issue 12's caches (2026-11-26); each failed before the fix in engine.rs
// (`refresh_cache_on` serialised and folding the caches back) and mod.rs (a failed hand-out goes
// back on top of the thread's cache).

/// stop_holding turns the caches off; the first (solo) thread then takes the shortcut with
/// own = 0 although its slot still carries an active-bytes delta of -1000.
#[test]
fn solo_peak_after_stop_holding() {
    let pool = MemoryPool::new(TestAllocator::new());
    drop(pool.allocate(1000).unwrap());
    pool.stop_holding();
    pool.reset_peaks();
    assert_eq!(pool.active_bytes(), 0);
    let _b = pool.allocate(5000).unwrap();
    assert_eq!(pool.active_bytes(), 5000);
    assert_eq!(pool.stats().peak_active_bytes, 5000, "PyOpenCL: 5000");
}

/// `set_policy` with the per-thread caches off (`on`: every return goes to the shared bins, as
/// in PyOpenCL) or on, the rest of the policy default.
fn shared_bins_only(pool: &MemoryPool<TestAllocator>, on: bool) {
    pool.set_policy(Policy {
        shared_bins_only: on,
        ..Policy::default()
    });
}

/// set_policy turning the caches off leaves the thread's cached blocks stranded: a request of
/// their bin misses where PyOpenCL hits.
#[test]
fn set_policy_strands_cached_blocks() {
    let pool = MemoryPool::new(TestAllocator::new());
    drop(pool.allocate(1000).unwrap());
    shared_bins_only(&pool, true);
    assert_eq!(pool.held_blocks(), 1);
    let _b = pool.allocate(1000).unwrap();
    let s = pool.stats();
    assert_eq!(
        (s.hits, s.misses, s.upstream_allocations),
        (1, 1, 1),
        "{s:?}"
    );
}

/// While the caches are off, every return goes to the shared bins: through a slot that was
/// open when they went off and through one made while they were off (the other thread gets the
/// block just returned, shared LIFO). Switched on again, each thread's returns are its own
/// (the other thread does not see them).
#[test]
fn caches_off_then_on_across_registered_slots() {
    use std::sync::mpsc::channel;
    let pool = MemoryPool::new(TestAllocator::new());
    // This thread's slot exists (and caches) before the switch.
    drop(pool.allocate(1000).unwrap());
    shared_bins_only(&pool, true);
    let (to_main, from_t) = channel::<u64>();
    let (to_t, from_main) = channel::<u64>();
    let pool = &pool;
    // `move`: a failed check here drops `to_t`, which ends the other thread's wait (no hang).
    std::thread::scope(move |sc| {
        sc.spawn(move || {
            // Made while the caches are off.
            let x = pool.allocate(1000).unwrap();
            let id = x.block().id;
            drop(x);
            to_main.send(id).unwrap();
            // This thread's slot stays registered (the thread alive) while the other checks.
            let returned_by_main = from_main.recv().unwrap();
            let y = pool.allocate(1000).unwrap();
            assert_eq!(y.block().id, returned_by_main, "caches off: shared LIFO");
            drop(y);
            to_main.send(0).unwrap();
            // Caches on again: the other thread's return stays in its cache, and this thread's
            // slot (made while they were off) caches again: the other thread does not get `z`.
            let kept_by_main = from_main.recv().unwrap();
            let z = pool.allocate(1000).unwrap();
            assert_ne!(
                z.block().id,
                kept_by_main,
                "caches on: a thread's own cache"
            );
            let kept_here = z.block().id;
            drop(z);
            to_main.send(kept_here).unwrap();
            from_main.recv().unwrap();
        });
        let id = from_t.recv().unwrap();
        let a = pool.allocate(1000).unwrap();
        assert_eq!(a.block().id, id, "caches off: shared LIFO");
        let ida = a.block().id;
        drop(a);
        to_t.send(ida).unwrap();
        from_t.recv().unwrap();
        pool.set_policy(Policy::default());
        let b = pool.allocate(1000).unwrap();
        let idb = b.block().id;
        drop(b);
        // Cached here: this thread's next request gets it back.
        let again = pool.allocate(1000).unwrap();
        assert_eq!(again.block().id, idb);
        drop(again);
        to_t.send(idb).unwrap();
        let kept_by_t = from_t.recv().unwrap();
        // This thread's own cached block first (so that its cache is empty), then one more: that
        // one comes from the shared bins or the allocator, where `z` is not if the other
        // thread's slot cached it.
        let d = pool.allocate(1000).unwrap();
        assert_eq!(d.block().id, idb);
        let c = pool.allocate(1000).unwrap();
        assert_ne!(
            c.block().id,
            kept_by_t,
            "caches on: a slot made while they were off caches again"
        );
        drop(c);
        drop(d);
        to_t.send(0).unwrap();
    });
    let s = pool.stats();
    assert_eq!(s.active_blocks, 0, "{s:?}");
}

/// Held-bytes cap set at run time: the cached block is not seen by the cap check.
#[test]
fn set_policy_cap_ignores_cached_blocks() {
    let pool = MemoryPool::new(TestAllocator::new());
    let a = pool.allocate(1000).unwrap();
    let b = pool.allocate(1000).unwrap();
    drop(a); // cached: held 1023
    pool.set_policy(Policy {
        held_bytes_cap: Some(1023),
        ..Policy::default()
    });
    drop(b); // PyOpenCL-with-cap: 1023 + 1023 > cap -> freed
    assert!(
        pool.stats().held_bytes <= 1023,
        "held {} > cap 1023",
        pool.stats().held_bytes
    );
}

/// After cached hits, the solo shortcut draws ticks without the thread's cached requests:
/// release_idle(1) frees the bin the very last request used.
#[test]
fn solo_tick_after_caches_off() {
    let pool = MemoryPool::new(TestAllocator::new());
    drop(pool.allocate(1000).unwrap());
    for _ in 0..10 {
        drop(pool.allocate(1000).unwrap());
    }
    shared_bins_only(&pool, true);
    drop(pool.allocate(100_000).unwrap());
    let big = pool.alloc_size(pool.bin_number(100_000));
    let freed = pool.release_idle(1);
    let s = pool.stats();
    let bs = pool.bin_stats();
    assert!(
        freed < big,
        "freed {freed} incl. the last-used bin; tick {} bins {:?}",
        s.tick,
        bs.iter()
            .map(|b| (b.bin, b.last_used_tick))
            .collect::<Vec<_>>()
    );
}

/// hand_out_existing_block fails: the block stays on top of its bin, so the next request gets it
/// (PyOpenCL's LIFO), with caches on and off. A failure on a block of the thread's cache counts
/// nothing; one on a block of the shared bins counts a hit and a return.
#[test]
fn hand_out_failure_keeps_lifo() {
    for shared in [true, false] {
        let pool = MemoryPool::new(TestAllocator::new());
        shared_bins_only(&pool, shared);
        let a = pool.allocate(1000).unwrap();
        let b = pool.allocate(1000).unwrap();
        let (ia, ib) = (a.block().id, b.block().id);
        drop(a);
        drop(b);
        pool.allocator().fail_next_hand_out(1);
        assert!(pool.allocate(1000).is_err());
        let c = pool.allocate(1000).unwrap();
        eprintln!(
            "shared_bins_only={shared}: a={ia} b={ib} next={}",
            c.block().id
        );
        assert_eq!(c.block().id, ib, "shared_bins_only={shared}");
        // The same through allocate_local: the failed block stays on top, the next request gets
        // it, and nothing stays active.
        drop(c);
        pool.allocator().fail_next_hand_out(1);
        assert!(pool.allocate_local(1000).is_err());
        assert_eq!(pool.active_blocks(), 0, "shared_bins_only={shared}");
        let d = pool.allocate_local(1000).unwrap();
        assert_eq!(d.block().id, ib, "shared_bins_only={shared}");
        assert_eq!(pool.active_blocks(), 1);
        drop(d);
        let s = pool.stats();
        assert_eq!(
            (s.active_blocks, s.held_blocks),
            (0, 2),
            "shared_bins_only={shared}"
        );
        // Two misses and two hits served; the two failed hand-outs count as hits only where the
        // block came from a shared bin.
        assert_eq!(
            (s.misses, s.hits),
            (2, if shared { 4 } else { 2 }),
            "shared_bins_only={shared}"
        );
    }
}

/// A thread's first allocation (new_slot -> refresh_cache_on) racing stop_holding on another
/// thread left cache_on = true after stop_holding (a stale `true` stored after the `false`):
/// returned blocks were then kept. The window is a few instructions: `CLPOOL_WIDEN=1` sleeps in
/// the race to make a regression show, `ITERS` sets the rounds.
#[test]
fn stop_holding_races_a_first_allocation() {
    let slot: Arc<Mutex<Option<MemoryPool<TestAllocator>>>> = Arc::default();
    let b = Arc::new(Barrier::new(2));
    let iters = std::env::var("ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000u32);
    let w = {
        let (slot, b) = (slot.clone(), b.clone());
        std::thread::spawn(move || {
            for _ in 0..iters {
                b.wait();
                let p = slot.lock().unwrap().clone().unwrap();
                let blk = p.allocate(1000).unwrap();
                b.wait();
                drop(blk);
                b.wait();
            }
        })
    };
    let mut bad = 0;
    for i in 0..iters {
        *slot.lock().unwrap() = Some(MemoryPool::new(TestAllocator::new()));
        let p = slot.lock().unwrap().clone().unwrap();
        // warm: this thread registers first, so the worker's allocation makes a second slot
        drop(p.allocate(8).unwrap());
        b.wait();
        if std::env::var_os("CLPOOL_WIDEN").is_some() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        p.stop_holding();
        b.wait();
        b.wait();
        if p.held_blocks() != 0 {
            bad += 1;
            if bad < 5 {
                eprintln!(
                    "iteration {i}: {} blocks held after stop_holding",
                    p.held_blocks()
                );
            }
        }
    }
    w.join().unwrap();
    assert_eq!(
        bad, 0,
        "{bad} of {iters} iterations held blocks after stop_holding"
    );
}

/// A block allocated by another thread-local's destructor, after the thread's cache list is gone
/// (a thread exiting): it keeps its pool alive like any other, and its free reaches the allocator
/// after the last pool handle went. (Before 2026-11-26 the request got a slot that its own
/// registration had already retired, whose lease was spent: the pool could go first, and the
/// block was then dropped without `free`.)
#[test]
fn a_block_from_a_thread_local_destructor_keeps_its_pool() {
    type Exit = Option<(
        MemoryPool<Arc<TestAllocator>>,
        std::sync::mpsc::Sender<PoolBlock<Arc<TestAllocator>>>,
    )>;
    struct OnExit(std::cell::RefCell<Exit>);
    impl Drop for OnExit {
        fn drop(&mut self) {
            if let Some((pool, tx)) = self.0.borrow_mut().take() {
                // The cache list of this thread is already destroyed (registered after this).
                tx.send(pool.allocate(100).unwrap()).unwrap();
            }
        }
    }
    thread_local! {
        static ON_EXIT: OnExit = const { OnExit(std::cell::RefCell::new(None)) };
    }
    // A shared allocator: its frees are readable after the pool is gone.
    let test = Arc::new(TestAllocator::new());
    let pool = MemoryPool::new(Arc::clone(&test));
    let (tx, rx) = std::sync::mpsc::channel();
    let p = pool.clone();
    std::thread::spawn(move || {
        // First this destructor's registration, then the pool's cache list (destroyed first).
        ON_EXIT.with(|e| *e.0.borrow_mut() = Some((p.clone(), tx)));
        drop(p.allocate(100).unwrap());
    })
    .join()
    .unwrap();
    let block = rx.recv().unwrap();
    assert_eq!(block.requested_bytes(), 100);
    drop(pool);
    assert_eq!(test.frees(), 0);
    // The last reference to the pool: the block goes back, then the pool frees what it holds.
    drop(block);
    assert_eq!(test.frees(), 1);
}

/// `ThreadCacheLimits`: a block above `max_block_bytes` never sits in a thread's cache, so another
/// thread's `free_held` frees it at once; under the default limits the same block stays in the
/// (live) returning thread's cache until that thread's next pool call.
#[test]
fn thread_cache_limits_keep_large_blocks_in_the_shared_bins() {
    let freed_by_another_thread = |limits: cl_pool::ThreadCacheLimits| {
        let pool = MemoryPool::builder(TestAllocator::new())
            .thread_cache(limits)
            .build()
            .unwrap();
        let (returned, done) = (Barrier::new(2), Barrier::new(2));
        std::thread::scope(|s| {
            s.spawn(|| {
                drop(pool.allocate(8192).unwrap());
                returned.wait();
                done.wait(); // alive, and away from the pool, while the other thread frees
            });
            returned.wait();
            pool.free_held();
            let frees = pool.stats().upstream_frees;
            done.wait();
            frees
        })
    };
    let small_blocks_only = cl_pool::ThreadCacheLimits {
        max_block_bytes: 4096,
        ..cl_pool::ThreadCacheLimits::default()
    };
    assert_eq!(freed_by_another_thread(small_blocks_only), 1);
    assert_eq!(
        freed_by_another_thread(cl_pool::ThreadCacheLimits::default()),
        0
    );
    let off = cl_pool::ThreadCacheLimits {
        max_blocks: 0,
        ..cl_pool::ThreadCacheLimits::default()
    };
    assert_eq!(freed_by_another_thread(off), 1);
}

#[test]
fn test_allocator_returns_nothing_for_zero() {
    let a = TestAllocator::new();
    assert!(a.allocate(0).unwrap().is_none());
    assert_eq!(a.allocations(), 0);
}

#[test]
fn test_allocator_enforces_capacity_and_injected_failures() {
    let a = TestAllocator::with_capacity(100);
    let b = a.allocate(60).unwrap().unwrap();
    assert_eq!(b.size, 60);
    let e = a.allocate(41).unwrap_err();
    assert!(e.is_out_of_memory());
    assert_eq!(
        e.to_string(),
        "out of memory: 41 bytes requested, 60 of 100 in use"
    );
    a.fail_next_invalid(1);
    let e = a.allocate(1).unwrap_err();
    assert!(!e.is_out_of_memory());
    a.fail_next_out_of_memory(1);
    assert!(a.allocate(1).unwrap_err().is_out_of_memory());
    assert_eq!(a.in_use(), 60);
    let c = a.allocate(40).unwrap().unwrap();
    a.free(b).unwrap();
    a.free(c).unwrap();
    assert_eq!(a.in_use(), 0);
    assert_eq!(a.frees(), 2);
}
