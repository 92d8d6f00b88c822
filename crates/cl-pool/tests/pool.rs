//! Host tests of the pool's bookkeeping over in-memory allocators (no device).
#![expect(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] fns; a failed unwrap is a failed test"
)]

use std::sync::{Arc, Barrier, Mutex};

use cl_pool::{
    Allocator, AllocatorError, Eviction, HostAllocError, HostBlock, MemoryPool, OomMode, Policy,
    PoolBlock, PoolError,
};

mod support;
use support::{AllocatorCall, TestAllocator};

fn figures(p: &MemoryPool<TestAllocator>) -> (usize, usize, usize, usize) {
    (
        p.held_blocks(),
        p.active_blocks(),
        p.managed_bytes(),
        p.active_bytes(),
    )
}

/// Reference section 3.3, "Counter trace for a fresh ImmediateAllocator pool", line by line.
#[test]
fn counter_trace_of_reference_section_3_3_is_reproduced_exactly() {
    let pool = MemoryPool::new(TestAllocator::new());
    let a = pool.allocate(1000).unwrap();
    assert_eq!(figures(&pool), (0, 1, 1023, 1000));
    let b = pool.allocate(1023).unwrap();
    assert_eq!(figures(&pool), (0, 2, 2046, 2023));
    drop(a);
    assert_eq!(figures(&pool), (1, 1, 2046, 1023));
    let c = pool.allocate(1001).unwrap();
    assert_eq!(figures(&pool), (0, 2, 2046, 2024));
    c.release();
    assert_eq!(figures(&pool), (1, 1, 2046, 1023));
    let z = pool.allocate(0).unwrap();
    assert_eq!(figures(&pool), (1, 2, 2047, 1023));
    drop(z);
    assert_eq!(figures(&pool), (2, 1, 2047, 1023));
    pool.free_held();
    assert_eq!(figures(&pool), (0, 1, 1023, 1023));
    pool.stop_holding();
    assert_eq!(figures(&pool), (0, 1, 1023, 1023));
    let d = pool.allocate(64).unwrap();
    assert_eq!(figures(&pool), (0, 2, 1090, 1087));
    drop(d);
    assert_eq!(figures(&pool), (0, 1, 1023, 1023));
    assert_eq!(pool.allocator().in_use(), 1023);
    drop(b);
    assert_eq!(figures(&pool), (0, 0, 0, 0));
    assert_eq!(pool.allocator().in_use(), 0);
}

#[test]
fn zero_size_is_served_by_a_one_byte_block() {
    let pool = MemoryPool::new(TestAllocator::new());
    let z = pool.allocate(0).unwrap();
    assert_eq!(z.requested_bytes(), 0);
    assert_eq!(z.allocated_bytes(), 1);
    assert_eq!(z.block().size, 1);
    assert_eq!(
        pool.allocator().take_log(),
        vec![AllocatorCall::Allocate(1, true)]
    );
    drop(z);
    // Sizes 0 and 1 share bin 0.
    let one = pool.allocate(1).unwrap();
    assert_eq!(pool.stats().hits, 1);
    assert_eq!(one.block().size, 1);
}

#[test]
fn blocks_are_reused_last_in_first_out_within_a_bin() {
    let pool = MemoryPool::new(TestAllocator::new());
    let a = pool.allocate(1000).unwrap();
    let b = pool.allocate(1010).unwrap();
    let (ida, idb) = (a.block().id, b.block().id);
    drop(a);
    drop(b);
    assert_eq!(pool.allocate(1020).unwrap().block().id, idb);
    let x = pool.allocate(1020).unwrap();
    assert_eq!(x.block().id, idb);
    let y = pool.allocate(1000).unwrap();
    assert_eq!(y.block().id, ida);
    assert_eq!(pool.allocator().allocations(), 2);
}

#[test]
fn requested_and_allocated_sizes_are_both_reported() {
    let pool = MemoryPool::new(TestAllocator::new());
    for size in [1usize, 17, 100, 4097, 1 << 20, (1 << 32) + 5] {
        let b = pool.allocate(size).unwrap();
        assert_eq!(b.requested_bytes(), size);
        assert_eq!(b.allocated_bytes(), pool.alloc_size(pool.bin_number(size)));
        assert_eq!(b.block().size, b.allocated_bytes());
        assert!(b.allocated_bytes() >= size);
    }
}

#[test]
fn reclaim_runs_release_hook_then_frees_largest_bins_first_retrying_after_each() {
    let alloc = TestAllocator::with_capacity(9_000);
    let pool = MemoryPool::new(alloc);
    // Hold blocks of 1023 (bin 159), 4351 (bin 192) and 2 x 100 -> 103 (bin 105).
    let held: Vec<_> = [1000, 4096, 100, 100]
        .iter()
        .map(|&s| pool.allocate(s).unwrap())
        .collect();
    drop(held);
    assert_eq!(pool.held_blocks(), 4);
    assert_eq!(pool.managed_bytes(), 1023 + 4351 + 206);
    pool.allocator().take_log();
    // 8191 bytes (bin 207, alloc 8191) needs 8191 of 9000: must free 4351 and 1023 (largest
    // first), not the small ones.
    let big = pool.allocate(8000).unwrap();
    assert_eq!(big.allocated_bytes(), 8191);
    assert_eq!(
        pool.allocator().take_log(),
        vec![
            AllocatorCall::Allocate(8191, false),
            AllocatorCall::TryRelease,
            AllocatorCall::Free(4351),
            AllocatorCall::Allocate(8191, false),
            AllocatorCall::Free(1023),
            AllocatorCall::Allocate(8191, true),
        ]
    );
    let s = pool.stats();
    assert_eq!(s.reclaims, 2);
    assert_eq!(s.oom_events, 1);
    assert_eq!(s.held_blocks, 2);
    assert_eq!(s.managed_bytes, 8191 + 206);
    assert_eq!(s.held_bytes, 206);
}

#[test]
fn final_out_of_memory_error_reports_the_figures() {
    let pool = MemoryPool::new(TestAllocator::with_capacity(5000));
    let keep = pool.allocate(3000).unwrap(); // 3071
    let held = pool.allocate(1000).unwrap(); // 1023
    drop(held);
    let err = pool.allocate(4000).unwrap_err(); // 4095: cannot fit even after freeing 1023
    let PoolError::OutOfMemory { report, source } = &err else {
        panic!("expected OutOfMemory, got {err:?}");
    };
    assert!(source.is_out_of_memory());
    assert_eq!(report.requested, 4000);
    assert_eq!(report.rounded, 4095);
    assert_eq!(report.managed_bytes, 3071);
    assert_eq!(report.active_bytes, 3000);
    assert_eq!(report.held_bytes, 0);
    assert_eq!(report.largest_held_block, 0);
    assert!(err.is_out_of_memory());
    assert_eq!(
        err.to_string(),
        "memory_pool::allocate failed to free memory for allocation: 4000 bytes requested \
         (4095 rounded), managed 3071 / active 3000 / held 0 bytes, largest held block 0 bytes \
         (out of memory: 4095 bytes requested, 3071 of 5000 in use)"
    );
    assert_eq!(pool.stats().oom_failures, 1);
    drop(keep);
}

#[test]
fn non_oom_errors_propagate_with_counters_untouched() {
    let pool = MemoryPool::new(TestAllocator::new());
    let a = pool.allocate(100).unwrap();
    drop(pool.allocate(5000).unwrap());
    let before = pool.stats();
    pool.allocator().fail_next_invalid(1);
    let err = pool.allocate(70_000).unwrap_err();
    assert!(matches!(
        err,
        PoolError::Allocator(HostAllocError::Invalid { requested: 73_727 })
    ));
    assert!(!err.is_out_of_memory());
    let after = pool.stats();
    assert_eq!(before.held_blocks, after.held_blocks);
    assert_eq!(before.active_blocks, after.active_blocks);
    assert_eq!(before.managed_bytes, after.managed_bytes);
    assert_eq!(before.active_bytes, after.active_bytes);
    assert_eq!(before.hits, after.hits);
    assert_eq!(before.misses, after.misses);
    assert_eq!(after.reclaims, 0);
    drop(a);
}

#[test]
fn injected_oom_is_recovered_by_freeing_held_blocks() {
    let pool = MemoryPool::new(TestAllocator::new());
    drop(pool.allocate(100).unwrap());
    pool.allocator().fail_next_out_of_memory(1);
    let b = pool.allocate(5000).unwrap();
    assert_eq!(b.allocated_bytes(), 5119);
    assert_eq!(pool.held_blocks(), 0);
    assert_eq!(pool.stats().reclaims, 1);
}

/// An allocator whose release hook returns blocks kept elsewhere (PyOpenCL's gc.collect()).
struct HookAllocator {
    inner: TestAllocator,
    stash: Mutex<Vec<PoolBlock<HookAllocator>>>,
}

impl Allocator for HookAllocator {
    type Block = HostBlock;
    type Error = HostAllocError;
    fn allocate(&self, size: usize) -> Result<Option<HostBlock>, HostAllocError> {
        self.inner.allocate(size)
    }
    fn free(&self, block: HostBlock) -> Result<(), HostAllocError> {
        self.inner.free(block)
    }
    fn try_release_blocks(&self) {
        let stash = std::mem::take(&mut *self.stash.lock().unwrap());
        drop(stash);
    }
}

#[test]
fn release_hook_returns_blocks_that_then_serve_the_request_without_freeing() {
    let pool = MemoryPool::new(HookAllocator {
        inner: TestAllocator::with_capacity(3000),
        stash: Mutex::new(Vec::new()),
    });
    let garbage = pool.allocate(1000).unwrap();
    let other = pool.allocate(1500).unwrap(); // 1535
    pool.allocator().stash.lock().unwrap().push(garbage);
    // 1023 + 1535 in use; another 1000 needs 1023 more: OOM, the hook returns `garbage`, the pool
    // looks in the bin again and serves it without any free.
    let again = pool.allocate(1000).unwrap();
    assert_eq!(pool.stats().hits, 1);
    assert_eq!(pool.stats().reclaims, 0);
    assert_eq!(pool.allocator().inner.frees(), 0);
    drop((again, other));
}

#[test]
fn managed_limit_triggers_the_reclaim_path_and_then_limit_reached() {
    let pool = MemoryPool::new(TestAllocator::new());
    pool.set_policy(Policy {
        managed_bytes_limit: Some(4000),
        ..pool.policy()
    });
    drop(pool.allocate(2000).unwrap()); // 2047 held
    let a = pool.allocate(3000).unwrap(); // 3071: needs the 2047 freed
    assert_eq!(pool.managed_bytes(), 3071);
    assert_eq!(pool.held_blocks(), 0);
    assert_eq!(pool.stats().reclaims, 1);
    let err = pool.allocate(1000).unwrap_err(); // 1023 + 3071 > 4000, nothing held
    let PoolError::LimitReached(report) = err else {
        panic!("expected LimitReached");
    };
    assert_eq!(report.limit, Some(4000));
    assert_eq!(report.rounded, 1023);
    assert_eq!(report.managed_bytes, 3071);
    assert_eq!(pool.managed_bytes(), 3071);
    pool.set_policy(Policy {
        managed_bytes_limit: None,
        ..pool.policy()
    });
    let b = pool.allocate(1000).unwrap();
    assert_eq!(pool.managed_bytes(), 4094);
    drop((a, b));
}

#[test]
fn free_all_retry_once_mode_frees_everything_then_retries_once() {
    let pool = MemoryPool::builder(TestAllocator::with_capacity(6000))
        .policy(Policy {
            oom_mode: OomMode::FreeAllRetryOnce,
            ..Policy::default()
        })
        .build()
        .unwrap();
    let held: Vec<_> = [1000, 2000, 100]
        .iter()
        .map(|&s| pool.allocate(s).unwrap())
        .collect();
    drop(held);
    pool.allocator().take_log();
    let b = pool.allocate(4000).unwrap();
    assert_eq!(
        pool.allocator().take_log(),
        vec![
            AllocatorCall::Allocate(4095, false),
            AllocatorCall::TryRelease,
            AllocatorCall::Free(103),
            AllocatorCall::Free(1023),
            AllocatorCall::Free(2047),
            AllocatorCall::Allocate(4095, true),
        ]
    );
    assert_eq!(pool.stats().reclaims, 3);
    drop(b);
}

#[test]
fn held_cap_frees_returned_blocks_past_the_cap() {
    let pool = MemoryPool::builder(TestAllocator::new())
        .policy(Policy {
            held_bytes_cap: Some(1500),
            ..Policy::default()
        })
        .build()
        .unwrap();
    let a = pool.allocate(1000).unwrap();
    let b = pool.allocate(1000).unwrap();
    drop(a);
    drop(b); // would make 2046 held > 1500: freed
    assert_eq!(pool.held_blocks(), 1);
    assert_eq!(pool.stats().held_bytes, 1023);
    assert_eq!(pool.managed_bytes(), 1023);
    assert_eq!(pool.allocator().frees(), 1);
    pool.set_policy(Policy {
        held_bytes_cap: Some(0),
        ..Policy::default()
    });
    assert_eq!(
        pool.stats().held_bytes,
        0,
        "set_policy applies a cap at once"
    );
}

#[test]
fn larger_bins_policy_serves_from_the_next_bins_up() {
    let pool = MemoryPool::builder(TestAllocator::new())
        .policy(Policy {
            larger_bins: 2,
            ..Policy::default()
        })
        .build()
        .unwrap();
    drop(pool.allocate(1100).unwrap()); // bin 161 (1151)
    let b = pool.allocate(1000).unwrap(); // bin 159: 161 is within 2 bins
    assert_eq!(b.allocated_bytes(), 1151);
    assert_eq!(b.requested_bytes(), 1000);
    let s = pool.stats();
    assert_eq!((s.hits, s.larger_bin_hits, s.misses), (1, 1, 1));
    assert_eq!(s.active_rounded_bytes, 1151);
    drop(b);
    // Returned to its own bin (161).
    let bins = pool.bin_stats();
    let b161 = bins.iter().find(|b| b.bin == 161).unwrap();
    assert_eq!(b161.held_blocks, 1);
    drop(pool.allocate(900).unwrap()); // bin 156: 161 is 5 bins up, too far
    assert_eq!(pool.stats().misses, 2);
}

#[test]
fn larger_bins_is_bounded_by_the_bins_that_can_exist() {
    // `larger_bins: u32::MAX` made one allocate(64) walk four billion bin numbers (47 s); the
    // walk now stops at the bin of the largest size, with the same results as a sane bound.
    let run = |larger_bins: u32| {
        let pool = MemoryPool::builder(TestAllocator::new())
            .policy(Policy {
                larger_bins,
                ..Policy::default()
            })
            .build()
            .unwrap();
        drop(pool.allocate(1 << 20).unwrap());
        let a = pool.allocate(64).unwrap();
        let b = pool.allocate(64).unwrap();
        let s = pool.stats();
        (
            a.allocated_bytes(),
            b.allocated_bytes(),
            s.hits,
            s.larger_bin_hits,
            s.misses,
        )
    };
    let huge = run(u32::MAX);
    assert_eq!(huge, run(10_000));
    // The 64-byte request is served by the held 1 MiB block (a larger-bin hit), the next one
    // by a fresh block of its own bin.
    let bins = cl_pool::BinLayout::default();
    let rounded = |n: usize| bins.alloc_size(bins.bin_number(n));
    assert_eq!(huge, (rounded(1 << 20), rounded(64), 1, 1, 2));
}

#[test]
fn idle_bins_are_released_by_age() {
    let pool = MemoryPool::new(TestAllocator::new());
    drop(pool.allocate(100).unwrap()); // tick 0, bin 105
    for _ in 0..10 {
        drop(pool.allocate(5000).unwrap());
    }
    // Held bytes of the bins no request touched in the last `n` allocations.
    let idle_held_bytes = |n: u64| {
        let before = pool.stats().tick.saturating_sub(n);
        pool.bin_stats()
            .iter()
            .filter(|b| b.last_used_tick < before)
            .map(|b| b.held_blocks * b.block_bytes)
            .sum::<usize>()
    };
    assert_eq!(idle_held_bytes(5), 103);
    assert_eq!(idle_held_bytes(20), 0);
    assert_eq!(pool.release_idle(5), 103);
    assert_eq!(pool.held_blocks(), 1);
    // As a policy: checked on every miss.
    pool.set_policy(Policy {
        idle_release_after: Some(3),
        ..Policy::default()
    });
    for _ in 0..4 {
        drop(pool.allocate(5000).unwrap()); // hits, no miss
    }
    assert_eq!(pool.held_blocks(), 1);
    drop(pool.allocate(70).unwrap()); // a miss: the 5000-bin was used 1 allocation ago
    assert_eq!(pool.held_blocks(), 2);
    for _ in 0..4 {
        drop(pool.allocate(70).unwrap());
    }
    drop(pool.allocate(10).unwrap()); // miss: the 5000 bin is idle for 5 > 3
    let held: Vec<_> = pool
        .bin_stats()
        .into_iter()
        .filter(|b| b.held_blocks > 0)
        .map(|b| b.block_bytes)
        .collect();
    assert_eq!(held, vec![10, 71]);
}

#[test]
fn per_bin_statistics_match_hand_computed_values() {
    let pool = MemoryPool::new(TestAllocator::new());
    let a = pool.allocate(1000).unwrap();
    let b = pool.allocate(1010).unwrap();
    drop(a);
    let c = pool.allocate(1020).unwrap();
    let d = pool.allocate(20).unwrap();
    drop((b, c, d));
    let bins = pool.bin_stats();
    assert_eq!(bins.len(), 2);
    let small = bins[0];
    assert_eq!((small.bin, small.block_bytes), (pool.bin_number(20), 20));
    assert_eq!(
        (small.hits, small.misses, small.upstream_allocations),
        (0, 1, 1)
    );
    let b159 = bins[1];
    assert_eq!(b159.bin, 159);
    assert_eq!(b159.block_bytes, 1023);
    assert_eq!(b159.hits, 1);
    assert_eq!(b159.misses, 2);
    assert_eq!(b159.upstream_allocations, 2);
    assert_eq!(b159.held_blocks, 2);
    assert_eq!(b159.held_blocks * b159.block_bytes, 2046);
    assert_eq!(b159.peak_active_blocks, 2);
    assert_eq!(b159.peak_held_blocks, 2);
    assert_eq!(b159.active_blocks, 0);
    let s = pool.stats();
    assert_eq!(s.peak_active_bytes, 1010 + 1020 + 20);
    assert_eq!(s.peak_managed_bytes, 2046 + 20);
    assert_eq!(s.held_bytes, 2066);
    assert_eq!(s.largest_held_block, 1023);
    // Fragmentation and hit rate are a line from the figures (documented on `PoolStats`).
    assert_eq!((s.largest_held_block, s.held_bytes), (1023, 2066));
    assert_eq!((s.hits, s.hits + s.misses), (1, 4));
    assert_eq!(s.allocate_time.count, 3);
    let mean_ns = s.allocate_time.total_ns / s.allocate_time.count;
    assert!(s.allocate_time.min_ns <= mean_ns);
    assert!(mean_ns <= s.allocate_time.max_ns);
}

#[test]
fn nested_scopes_report_phase_peaks_without_resetting_the_global_peak() {
    let pool = MemoryPool::new(TestAllocator::new());
    drop(pool.allocate(10_000).unwrap());
    let (r_inner, r_outer) = pool.scope(|| {
        let x = pool.allocate(1000).unwrap();
        let ((), r_inner) = pool.scope(|| {
            let y = pool.allocate(500).unwrap();
            drop(y);
        });
        drop(x);
        let z = pool.allocate(2000).unwrap();
        drop(z);
        r_inner
    });
    assert_eq!(r_inner.peak_active_bytes, 1500);
    assert_eq!(r_inner.misses, 1);
    assert_eq!(r_outer.peak_active_bytes, 2000);
    assert_eq!(r_outer.misses, 3);
    assert_eq!(r_outer.hits, 0);
    assert_eq!(pool.stats().peak_active_bytes, 10_000);
    assert_eq!(r_outer.peak_managed_bytes, 10_239 + 1023 + 511 + 2047);
}

#[test]
fn deferred_allocators_still_make_a_pool() {
    let a = TestAllocator::new();
    a.set_deferred(true);
    let pool = MemoryPool::new(a);
    assert!(pool.allocator().is_deferred());
    assert_eq!(pool.allocate(3).unwrap().allocated_bytes(), 3);
}

#[test]
fn the_pool_frees_held_blocks_when_dropped() {
    let alloc = Arc::new(TestAllocator::new());
    let pool = MemoryPool::new(Arc::clone(&alloc));
    let kept = pool.allocate(100).unwrap();
    drop(pool.allocate(200).unwrap());
    drop(pool);
    assert_eq!(alloc.in_use(), 103 + 207);
    drop(kept); // the last reference: the pool goes, freeing everything
    assert_eq!(alloc.in_use(), 0);
}

#[test]
fn leading_bits_change_the_rounding() {
    let pool = MemoryPool::builder(TestAllocator::new())
        .leading_bits(0)
        .build()
        .unwrap();
    assert_eq!(pool.allocate(1000).unwrap().allocated_bytes(), 1023);
    assert_eq!(pool.allocate(1024).unwrap().allocated_bytes(), 2047);
    assert!(MemoryPool::builder(TestAllocator::new())
        .leading_bits(26)
        .build()
        .is_err());
}

#[test]
fn eviction_orders_pick_the_expected_bin() {
    for (eviction, expect_freed) in [
        (Eviction::LargestBinFirst, 4351),
        (Eviction::FullestBinFirst, 103),
        (Eviction::LeastRecentlyUsedBin, 1023),
    ] {
        let pool = MemoryPool::builder(TestAllocator::with_capacity(7000))
            .policy(Policy {
                eviction,
                ..Policy::default()
            })
            .build()
            .unwrap();
        let v: Vec<_> = [1000, 100, 100, 4096]
            .iter()
            .map(|&s| pool.allocate(s).unwrap())
            .collect();
        drop(v);
        pool.allocator().take_log();
        // needs 2047 more: in_use 5580 + 2047 > 7000 -> free a block
        let b = pool.allocate(2000).unwrap();
        let log = pool.allocator().take_log();
        assert_eq!(
            log[2],
            AllocatorCall::Free(expect_freed),
            "{eviction:?}: {log:?}"
        );
        drop(b);
    }
}

/// splitmix64
fn rng(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[test]
fn random_traces_keep_counters_consistent() {
    for seed in 0..20u64 {
        // A failure names its seed (rerun just that one by narrowing the range).
        let run = std::panic::catch_unwind(|| one_random_trace(seed));
        if let Err(e) = run {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            panic!("random_traces_keep_counters_consistent failed with seed {seed}: {msg}");
        }
    }
}

fn one_random_trace(seed: u64) {
    {
        let mut s = seed;
        let capacity = if seed.is_multiple_of(2) {
            usize::MAX
        } else {
            1 << 22
        };
        let policy = Policy {
            larger_bins: u32::try_from(seed % 3).unwrap(),
            managed_bytes_limit: seed.is_multiple_of(5).then_some(3 << 20),
            held_bytes_cap: seed.is_multiple_of(7).then_some(1 << 20),
            ..Policy::default()
        };
        let pool = MemoryPool::builder(TestAllocator::with_capacity(capacity))
            .shards(1 + usize::try_from(seed % 4).unwrap())
            .leading_bits(u32::try_from(seed % 6).unwrap())
            .policy(policy)
            .build()
            .unwrap();
        let mut live = Vec::new();
        for _ in 0..2000 {
            if live.is_empty() || rng(&mut s) % 100 < 60 {
                let size = usize::try_from(rng(&mut s) % (1 << (rng(&mut s) % 20))).unwrap();
                match pool.allocate(size) {
                    Ok(b) => {
                        assert!(b.allocated_bytes() >= size.max(1));
                        assert_eq!(b.block().size, b.allocated_bytes());
                        live.push(b);
                    }
                    Err(e) => assert!(e.is_out_of_memory()),
                }
            } else {
                let i = usize::try_from(rng(&mut s)).unwrap() % live.len();
                live.swap_remove(i);
            }
            let st = pool.stats();
            assert_eq!(st.active_blocks, live.len());
            assert_eq!(
                st.active_bytes,
                live.iter().map(|b| b.requested_bytes()).sum::<usize>()
            );
            let rounded: usize = live.iter().map(|b| b.allocated_bytes()).sum();
            assert_eq!(st.active_rounded_bytes, rounded);
            assert_eq!(st.managed_bytes, st.held_bytes + rounded);
            assert_eq!(st.managed_bytes, pool.allocator().in_use());
            let bins = pool.bin_stats();
            assert_eq!(
                st.held_blocks,
                bins.iter().map(|b| b.held_blocks).sum::<usize>()
            );
            assert_eq!(
                st.held_bytes,
                bins.iter()
                    .map(|b| b.held_blocks * b.block_bytes)
                    .sum::<usize>()
            );
            if let Some(limit) = policy.managed_bytes_limit {
                assert!(st.managed_bytes <= limit);
            }
            if let Some(cap) = policy.held_bytes_cap {
                assert!(st.held_bytes <= cap);
            }
            assert_eq!(
                st.upstream_allocations - st.upstream_frees,
                u64::try_from(st.held_blocks + st.active_blocks).unwrap()
            );
        }
        drop(live);
        pool.free_held();
        assert_eq!(pool.allocator().in_use(), 0);
    }
}

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

/// set_policy turning the caches off leaves the thread's cached blocks stranded: a request of
/// their bin misses where PyOpenCL hits.
#[test]
fn set_policy_strands_cached_blocks() {
    let pool = MemoryPool::new(TestAllocator::new());
    drop(pool.allocate(1000).unwrap());
    pool.set_policy(Policy {
        shared_bins_only: true,
        ..Policy::default()
    });
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
    pool.set_policy(Policy {
        shared_bins_only: true,
        ..Policy::default()
    });
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
    pool.set_policy(Policy {
        shared_bins_only: true,
        ..Policy::default()
    });
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

/// hand_out_existing_block fails: the block goes to the shared bin below the thread's cached
/// blocks, so the next request gets another block (PyOpenCL / shared_bins_only: the same one).
#[test]
fn hand_out_failure_keeps_lifo() {
    use std::sync::atomic::{AtomicBool, Ordering};
    #[derive(Default)]
    struct F {
        t: TestAllocator,
        fail: AtomicBool,
    }
    impl Allocator for F {
        type Block = HostBlock;
        type Error = HostAllocError;
        fn allocate(&self, s: usize) -> Result<Option<HostBlock>, HostAllocError> {
            self.t.allocate(s)
        }
        fn free(&self, b: HostBlock) -> Result<(), HostAllocError> {
            self.t.free(b)
        }
        fn hand_out_existing_block(&self, _b: &mut HostBlock) -> Result<(), HostAllocError> {
            if self.fail.swap(false, Ordering::SeqCst) {
                Err(HostAllocError::Invalid { requested: 0 })
            } else {
                Ok(())
            }
        }
    }
    for shared in [true, false] {
        let pool = MemoryPool::new(F::default());
        pool.set_policy(Policy {
            shared_bins_only: shared,
            ..Policy::default()
        });
        let a = pool.allocate(1000).unwrap();
        let b = pool.allocate(1000).unwrap();
        let (ia, ib) = (a.block().id, b.block().id);
        drop(a);
        drop(b);
        pool.allocator().fail.store(true, Ordering::SeqCst);
        assert!(pool.allocate(1000).is_err());
        let c = pool.allocate(1000).unwrap();
        eprintln!(
            "shared_bins_only={shared}: a={ia} b={ib} next={}",
            c.block().id
        );
        assert_eq!(c.block().id, ib, "shared_bins_only={shared}");
        // The same through allocate_local (its cached hit builds a LocalBlock in place): the
        // failed block goes back on top, the next request gets it, and nothing stays active.
        drop(c);
        pool.allocator().fail.store(true, Ordering::SeqCst);
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

/// An allocator that counts frees in a shared cell (readable after its pool is gone).
struct CountsFrees {
    inner: TestAllocator,
    frees: Arc<std::sync::atomic::AtomicUsize>,
}

impl Allocator for CountsFrees {
    type Block = HostBlock;
    type Error = HostAllocError;
    fn allocate(&self, size: usize) -> Result<Option<HostBlock>, HostAllocError> {
        self.inner.allocate(size)
    }
    fn free(&self, block: HostBlock) -> Result<(), HostAllocError> {
        self.frees.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.free(block)
    }
}

/// A block allocated by another thread-local's destructor, after the thread's cache list is gone
/// (a thread exiting): it keeps its pool alive like any other, and its free reaches the allocator
/// after the last pool handle went. (Before 2026-11-26 the request got a slot that its own
/// registration had already retired, whose lease was spent: the pool could go first, and the
/// block was then dropped without `free`.)
#[test]
fn a_block_from_a_thread_local_destructor_keeps_its_pool() {
    type Exit = Option<(
        MemoryPool<CountsFrees>,
        std::sync::mpsc::Sender<PoolBlock<CountsFrees>>,
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
    let frees = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let pool = MemoryPool::new(CountsFrees {
        inner: TestAllocator::new(),
        frees: Arc::clone(&frees),
    });
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
    assert_eq!(frees.load(std::sync::atomic::Ordering::SeqCst), 0);
    // The last reference to the pool: the block goes back, then the pool frees what it holds.
    drop(block);
    assert_eq!(frees.load(std::sync::atomic::Ordering::SeqCst), 1);
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
