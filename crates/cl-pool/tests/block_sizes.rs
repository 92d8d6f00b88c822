//! Blocks of one word and wider blocks (the crate's own host allocators have 16-byte blocks, so
//! these tests bring a one-word one) move through the pool alike: the same decisions, the same
//! counters, every block back, also when the allocator's hand-out hook fails, panics or re-enters
//! the pool. (Until 1ff80b6 the two widths took different hit paths.)
#![expect(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] fns; a failed unwrap is a failed test"
)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use cl_pool::{
    Allocator, HostAllocError, HostBlock, MemoryPool, Policy, PoolError, PoolStats,
    SimulatedAllocator,
};

mod support;

/// What an allocator saw, shared with the test.
#[derive(Default)]
struct Seen {
    /// Blocks allocated and not yet freed.
    live: AtomicUsize,
    /// Hand-outs so far; every `fail_every`-th fails (0: none).
    hand_outs: AtomicU64,
    fail_every: AtomicU64,
    /// The next hand-out panics.
    panic_next: AtomicBool,
    /// The allocator itself was dropped (the pool let it go).
    dropped: AtomicBool,
}

/// One word (the box is what a real block would own).
struct Narrow(#[expect(dead_code, reason = "only its size matters")] Box<u64>);
/// Two words.
struct Wide(
    #[expect(dead_code, reason = "only its size matters")] Box<u64>,
    #[expect(dead_code, reason = "only its size matters")] usize,
);

macro_rules! counting_allocator {
    ($name:ident, $block:ty, $make:expr) => {
        struct $name(Arc<Seen>);

        impl Drop for $name {
            fn drop(&mut self) {
                self.0.dropped.store(true, Ordering::SeqCst);
            }
        }

        impl Allocator for $name {
            type Block = $block;
            type Error = HostAllocError;

            fn allocate(&self, _size: usize) -> Result<Option<$block>, HostAllocError> {
                self.0.live.fetch_add(1, Ordering::SeqCst);
                Ok(Some($make))
            }

            fn free(&self, _block: $block) -> Result<(), HostAllocError> {
                self.0.live.fetch_sub(1, Ordering::SeqCst);
                Ok(())
            }

            fn hand_out_existing_block(&self, _block: &mut $block) -> Result<(), HostAllocError> {
                assert!(
                    !self.0.panic_next.swap(false, Ordering::SeqCst),
                    "the hand-out hook panics (on purpose)"
                );
                let every = self.0.fail_every.load(Ordering::SeqCst);
                let n = self.0.hand_outs.fetch_add(1, Ordering::SeqCst);
                if every != 0 && n.is_multiple_of(every) {
                    Err(HostAllocError::Invalid { requested: 0 })
                } else {
                    Ok(())
                }
            }
        }
    };
}

counting_allocator!(NarrowAllocator, Narrow, Narrow(Box::new(1)));
counting_allocator!(WideAllocator, Wide, Wide(Box::new(1), 2));

/// The statistics without their timings.
fn untimed(mut s: PoolStats) -> PoolStats {
    s.allocate_time = Default::default();
    s.free_time = Default::default();
    s
}

/// A random walk of owned and local allocations, returns on this and other threads and
/// `free_held`, with the figures after every step; and the final statistics.
fn walk<A: Allocator>(pool: &MemoryPool<A>, seed: u64) -> (Vec<String>, PoolStats)
where
    A::Block: Send,
{
    let mut steps = Vec::new();
    let mut x = seed;
    let mut kept = Vec::new();
    for i in 0..3000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let size = [1usize, 100, 1000, 4096, 70_000][usize::try_from(x % 5).unwrap()];
        match (x >> 8) % 4 {
            0 => match pool.allocate(size) {
                Ok(b) => kept.push(b),
                Err(e) => steps.push(format!("{i}: owned {e}")),
            },
            1 => {
                if let Err(e) = pool.allocate_local(size) {
                    steps.push(format!("{i}: local {e}"));
                }
            }
            2 if !kept.is_empty() => {
                let b = kept.swap_remove(usize::try_from(x >> 16).unwrap() % kept.len());
                if (x >> 20).is_multiple_of(3) {
                    std::thread::spawn(move || drop(b)).join().unwrap();
                } else {
                    drop(b);
                }
            }
            _ if (x >> 24).is_multiple_of(50) => pool.free_held(),
            _ => {}
        }
        let s = pool.stats();
        steps.push(format!(
            "{i}: held {} active {} hits {} misses {} bytes {} / {}",
            s.held_blocks, s.active_blocks, s.hits, s.misses, s.active_bytes, s.held_bytes
        ));
    }
    drop(kept);
    (steps, untimed(pool.stats()))
}

#[test]
fn one_word_blocks_and_larger_blocks_make_the_same_decisions() {
    assert_eq!(std::mem::size_of::<Narrow>(), std::mem::size_of::<usize>());
    assert!(std::mem::size_of::<Wide>() > std::mem::size_of::<usize>());
    for fail_every in [0u64, 3, 7] {
        for seed in [1u64, 99, 12_345] {
            let narrow = Arc::new(Seen::default());
            let wide = Arc::new(Seen::default());
            narrow.fail_every.store(fail_every, Ordering::SeqCst);
            wide.fail_every.store(fail_every, Ordering::SeqCst);
            let p1 = MemoryPool::new(NarrowAllocator(Arc::clone(&narrow)));
            let p2 = MemoryPool::new(WideAllocator(Arc::clone(&wide)));
            let (steps1, end1) = walk(&p1, seed);
            let (steps2, end2) = walk(&p2, seed);
            assert_eq!(steps1, steps2, "fail_every {fail_every}, seed {seed}");
            assert_eq!(end1, end2);
            assert_eq!(end1.active_blocks, 0);
            drop((p1, p2));
            for seen in [&narrow, &wide] {
                assert_eq!(
                    seen.live.load(Ordering::SeqCst),
                    0,
                    "a block was never freed"
                );
                assert!(
                    seen.dropped.load(Ordering::SeqCst),
                    "the pool was never let go"
                );
            }
        }
    }
}

/// A hand-out hook that fails or panics on a hit leaves the block in the pool, counted as held,
/// for blocks of either size, from the thread's cache or (`shared`) the shared bins (a panic once
/// leaked the block and the pool, when a one-word block left its cache before the hook ran).
fn hook_failures_return_the_block<A: Allocator<Error = HostAllocError>>(
    make: impl Fn(Arc<Seen>) -> A,
) {
    for shared in [false, true] {
        hook_failures_return_the_block_from(&make, shared);
    }
}

fn hook_failures_return_the_block_from<A: Allocator<Error = HostAllocError>>(
    make: &impl Fn(Arc<Seen>) -> A,
    shared: bool,
) {
    let seen = Arc::new(Seen::default());
    let pool = MemoryPool::new(make(Arc::clone(&seen)));
    pool.set_policy(Policy {
        shared_bins_only: shared,
        ..Policy::default()
    });
    drop(pool.allocate(100).unwrap());
    assert_eq!((pool.held_blocks(), pool.active_blocks()), (1, 0));

    seen.panic_next.store(true, Ordering::SeqCst);
    assert!(catch_unwind(AssertUnwindSafe(|| pool.allocate(100))).is_err());
    assert_eq!((pool.held_blocks(), pool.active_blocks()), (1, 0));
    seen.panic_next.store(true, Ordering::SeqCst);
    assert!(catch_unwind(AssertUnwindSafe(|| pool.allocate_local(100))).is_err());
    assert_eq!((pool.held_blocks(), pool.active_blocks()), (1, 0));

    seen.fail_every.store(1, Ordering::SeqCst);
    assert!(matches!(pool.allocate(100), Err(PoolError::Allocator(_))));
    assert!(matches!(
        pool.allocate_local(100),
        Err(PoolError::Allocator(_))
    ));
    assert_eq!((pool.held_blocks(), pool.active_blocks()), (1, 0));

    seen.fail_every.store(0, Ordering::SeqCst);
    let b = pool.allocate(100).unwrap();
    assert_eq!((pool.held_blocks(), pool.active_blocks()), (0, 1));
    drop(b);
    assert_eq!(seen.live.load(Ordering::SeqCst), 1);

    // After the panics this thread still has its cache: the block just returned is held there,
    // where another thread cannot take it (with shared bins only, it can).
    let before = pool.stats().upstream_allocations;
    std::thread::scope(|s| {
        s.spawn(|| drop(pool.allocate(100).unwrap()))
            .join()
            .unwrap()
    });
    let fresh = pool.stats().upstream_allocations - before;
    assert_eq!(fresh, u64::from(!shared), "shared bins only: {shared}");
    drop(pool);
    assert_eq!(seen.live.load(Ordering::SeqCst), 0);
    assert!(seen.dropped.load(Ordering::SeqCst));
}

#[test]
fn a_failing_or_panicking_hand_out_hook_returns_a_one_word_block() {
    hook_failures_return_the_block(NarrowAllocator);
}

#[test]
fn a_failing_or_panicking_hand_out_hook_returns_a_larger_block() {
    hook_failures_return_the_block(WideAllocator);
}

/// A cached hit runs the hand-out hook on the block in its place, while this thread's cache is in
/// use: a hook that re-enters its own pool (allocates, returns, frees everything held) is served
/// by the shared bins, and every figure balances afterwards.
#[test]
fn a_hand_out_hook_that_reenters_its_pool_leaves_the_figures_balanced() {
    struct Hostile {
        inner: SimulatedAllocator,
        pool: Mutex<Option<MemoryPool<Hostile>>>,
        depth: AtomicUsize,
    }
    impl Allocator for Hostile {
        host_blocks_from!(inner);
        fn hand_out_existing_block(&self, _block: &mut HostBlock) -> Result<(), HostAllocError> {
            let pool = self.pool.lock().unwrap().clone();
            if let (Some(pool), 0) = (pool, self.depth.fetch_add(1, Ordering::SeqCst)) {
                let other = pool.allocate(3000).unwrap();
                drop(pool.allocate_local(5000).unwrap());
                pool.free_held();
                drop(other);
            }
            self.depth.fetch_sub(1, Ordering::SeqCst);
            Ok(())
        }
    }
    let pool = MemoryPool::new(Hostile {
        inner: SimulatedAllocator::new(usize::MAX),
        pool: Mutex::new(None),
        depth: AtomicUsize::new(0),
    });
    for _ in 0..3 {
        drop(pool.allocate(1000).unwrap()); // into this thread's cache
        *pool.allocator().pool.lock().unwrap() = Some(pool.clone());
        let b = pool.allocate(1000).unwrap(); // a cached hit: the hook re-enters
        assert_eq!((b.requested_bytes(), pool.active_blocks()), (1000, 1));
        drop(b);
        pool.allocator().pool.lock().unwrap().take();
        assert_eq!(pool.active_blocks(), 0);
    }
    pool.free_held();
    let s = pool.stats();
    assert_eq!((s.held_blocks, s.managed_bytes), (0, 0));
    // 1000 and 3000 once (the hook's 3000 goes back after its `free_held` and is hit again), 5000
    // in each round (freed by that round's `free_held`).
    assert_eq!((s.upstream_allocations, s.upstream_frees), (5, 5));
}
