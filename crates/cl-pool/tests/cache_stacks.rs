//! The per-thread caches: a bin's blocks past the cache's limits, spare pool handles past their
//! 64, counters of blocks returned on another thread, and the host allocator shared through an
//! `Arc` (which forwards every call, also tested here).
#![allow(clippy::unwrap_used)]
use cl_pool::MemoryPool;
use std::sync::Arc;

mod support;
use support::TestAllocator;

/// Up to 100 blocks of one bin freed oldest first pass a 16-block cache several times over: the
/// next allocations must come back newest first (PyOpenCL LIFO), with exact held figures.
#[test]
fn lifo_and_held_figures_through_overflow() {
    let limits = cl_pool::ThreadCacheLimits {
        max_blocks: 16,
        ..cl_pool::ThreadCacheLimits::default()
    };
    for n in [15usize, 16, 17, 18, 33, 50, 100] {
        let pool = MemoryPool::builder(TestAllocator::new())
            .thread_cache(limits)
            .build()
            .unwrap();
        let blocks: Vec<_> = (0..n).map(|_| pool.allocate(1000).unwrap()).collect();
        let ids: Vec<u64> = blocks.iter().map(|b| b.block().id).collect();
        let per = pool.alloc_size(pool.bin_number(1000));
        for (i, b) in blocks.into_iter().enumerate() {
            drop(b);
            assert_eq!(pool.held_blocks(), i + 1, "n {n} i {i}");
            assert_eq!(pool.stats().held_bytes, (i + 1) * per);
            let s = pool.stats();
            assert_eq!((s.held_blocks, s.active_blocks), (i + 1, n - i - 1));
        }
        let again: Vec<_> = (0..n).map(|_| pool.allocate(1000).unwrap()).collect();
        let got: Vec<u64> = again.iter().map(|b| b.block().id).collect();
        let want: Vec<u64> = ids.iter().rev().copied().collect();
        assert_eq!(got, want, "n {n}");
        assert_eq!(pool.held_blocks(), 0);
        assert_eq!(pool.stats().held_bytes, 0);
        assert_eq!(pool.allocator().allocations(), n as u64);
        drop(again);
        // a walk drains the cache; refill and drain again
        pool.free_held();
        assert_eq!((pool.held_blocks(), pool.stats().held_bytes), (0, 0));
        let v: Vec<_> = (0..n).map(|_| pool.allocate(1000).unwrap()).collect();
        drop(v);
        assert_eq!((pool.held_blocks(), pool.stats().held_bytes), (n, n * per));
        let bs: usize = pool.bin_stats().iter().map(|b| b.held_blocks).sum();
        assert_eq!(bs, n);
    }
}

/// More owned blocks out than SPARE_MAX, returned on their own thread and on another one:
/// nothing leaks and the pool (and its allocator) goes when its last handle and blocks go.
#[test]
fn spare_overflow_keeps_counts_and_lets_the_pool_go() {
    let alloc = Arc::new(TestAllocator::new());
    std::thread::spawn({
        let alloc = alloc.clone();
        move || {
            let pool = MemoryPool::new(Arc::clone(&alloc));
            for round in 0..5 {
                let v: Vec<_> = (0..200)
                    .map(|i| pool.allocate(64 << (i % 5)).unwrap())
                    .collect();
                drop(v);
                let v: Vec<_> = (0..200)
                    .map(|i| pool.allocate(64 << (i % 5)).unwrap())
                    .collect();
                let (a, b): (Vec<_>, Vec<_>) =
                    v.into_iter().enumerate().partition(|(i, _)| i % 2 == 0);
                std::thread::spawn(move || drop(a)).join().unwrap();
                drop(b);
                let s = pool.stats();
                assert_eq!(s.active_blocks, 0, "round {round}");
            }
            let kept: Vec<_> = (0..100).map(|_| pool.allocate(5000).unwrap()).collect();
            drop(pool);
            drop(kept);
            assert_eq!(alloc.in_use(), 0);
        }
    })
    .join()
    .unwrap();
    assert_eq!(alloc.allocations(), alloc.frees());
    assert_eq!(
        Arc::strong_count(&alloc),
        1,
        "the pool's allocator was leaked"
    );
}

/// An `Arc` of an allocator forwards every call, the hooks included (a forgotten hook would fall
/// back to the trait's default silently): `is_deferred`, `try_release_blocks` on an
/// out-of-memory, and `hand_out_existing_block` on every cached hit.
#[test]
fn a_shared_allocator_forwards_every_hook() {
    use cl_pool::Allocator;

    let test = Arc::new(TestAllocator::with_capacity(1 << 20));
    test.set_deferred(true);
    let pool = MemoryPool::new(Arc::clone(&test));
    assert!(pool.allocator().is_deferred());
    let kept = pool.allocate(2048).unwrap();
    drop(pool.allocate(1024).unwrap());
    test.fail_next_out_of_memory(1);
    let again = pool.allocate(2000).unwrap();
    assert_eq!(test.release_calls(), 1);
    drop((kept, again));

    let counting = Arc::new(TestAllocator::new());
    let pool = MemoryPool::new(Arc::clone(&counting));
    for _ in 0..10 {
        drop(pool.allocate(100).unwrap());
    }
    assert_eq!(counting.hand_outs(), 9);
    drop(pool);
    assert_eq!(counting.in_use(), 0);
}

/// A thread that returns another thread's blocks counts them in as deltas (its own active
/// figure goes below zero): its hits must not raise the bin's peak to a wrapped figure.
#[test]
fn returns_from_another_thread_keep_the_peak_sane() {
    let pool = MemoryPool::new(TestAllocator::new());
    let blocks: Vec<_> = (0..3).map(|_| pool.allocate(1000).unwrap()).collect();
    let p = pool.clone();
    std::thread::spawn(move || {
        drop(blocks);
        let again: Vec<_> = (0..2).map(|_| p.allocate(1000).unwrap()).collect();
        let bin = p.bin_stats()[0];
        assert_eq!((bin.active_blocks, bin.peak_active_blocks), (2, 3));
        drop(again);
    })
    .join()
    .unwrap();
    let s = pool.stats();
    assert_eq!((s.active_blocks, s.held_blocks, s.hits), (0, 3, 2));
}

/// A return that would pass a thread-cache limit moves the oldest half of its bin to the shared
/// bins, also when the bin has a free place (where a return makes no call): another thread's
/// `free_held` then frees those two at once. At the limit exactly, nothing moves.
#[test]
fn a_return_past_a_cache_limit_overflows_even_with_a_free_place() {
    use cl_pool::ThreadCacheLimits;
    use std::sync::Barrier;
    let shared_after = |limits: ThreadCacheLimits| {
        let pool = MemoryPool::builder(TestAllocator::new())
            .thread_cache(limits)
            .build()
            .unwrap();
        let (returned, done) = (Barrier::new(2), Barrier::new(2));
        std::thread::scope(|s| {
            s.spawn(|| {
                drop(
                    (0..4)
                        .map(|_| pool.allocate(1000).unwrap())
                        .collect::<Vec<_>>(),
                );
                let one = pool.allocate(1000).unwrap(); // leaves a free place in its bin
                drop(pool.allocate(5000).unwrap()); // another bin: the cache is full again
                drop(one);
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
    let probe = MemoryPool::new(TestAllocator::new());
    let size = |s| probe.alloc_size(probe.bin_number(s));
    let (s1, s2) = (size(1000), size(5000));
    let blocks = |max_blocks| ThreadCacheLimits {
        max_blocks,
        ..ThreadCacheLimits::default()
    };
    let bytes = |max_bytes| ThreadCacheLimits {
        max_bytes,
        ..ThreadCacheLimits::default()
    };
    assert_eq!(shared_after(blocks(4)), 2);
    assert_eq!(shared_after(blocks(5)), 0);
    assert_eq!(shared_after(bytes(4 * s1 + s2 - 1)), 2);
    assert_eq!(shared_after(bytes(4 * s1 + s2)), 0);
}
