//! cl-pool: the cost of a pool hit against the allocations it saves.
//!
//! - `pool_host/hit_repeated_size`: allocate + drop from a warm bin (one size), host allocator;
//! - `pool_host/hit_local`: the same through `allocate_local` (the block borrows the pool);
//! - `pool_host/hit_mixed_sizes`: the same over 64 warm bins;
//! - `pool_host/hit_sharded_16`: a repeated-size hit on a pool with 16 lock shards;
//! - `pool_host/miss_simulated`: a request that misses (stop-holding pool over a host allocator):
//!   the pool's own overhead around an upstream call;
//! - on the bench device (the first one `CL_TEST` selects, when there is one), named after
//!   PyOpenCL's keys so `cargo xtask bench` lines them up: `pool_hit_alloc_free/<bytes>` (a pooled
//!   buffer over `ImmediateAllocator`, allocate + drop) and `immediate_allocator/<bytes>` (create +
//!   force + release); `raw_buffer_create_release/<bytes>` is in `buffer.rs`;
//!   `staged_write/<bytes>` (pageable data through the pinned staging pool) against
//!   `pageable_write/<bytes>` (the plain blocking write of the same vector), and `staged_read` /
//!   `pageable_read` the other way; with coarse-grain
//!   SVM, `svm_pool_hit_alloc_free/<bytes>` against `svm_alloc_free/<bytes>`.

use std::hint::black_box;

use cl_pool::{MemoryPool, SimulatedAllocator};
use criterion::Criterion;

/// Registers the group.
pub fn benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("pool_host");
    let pool = MemoryPool::new(SimulatedAllocator::new(usize::MAX));
    drop(pool.allocate(4096));
    g.bench_function("hit_repeated_size", |b| {
        b.iter(|| black_box(pool.allocate(black_box(4096))));
    });
    g.bench_function("hit_local", |b| {
        b.iter(|| black_box(pool.allocate_local(black_box(4096))));
    });
    let sizes: Vec<usize> = (0..64).map(|i| 1000 + i * 7919 % 1_000_000).collect();
    for &s in &sizes {
        drop(pool.allocate(s));
    }
    let mut i = 0usize;
    g.bench_function("hit_mixed_sizes", |b| {
        b.iter(|| {
            i = (i + 1) & 63;
            black_box(pool.allocate(sizes[i]))
        });
    });
    let sharded = MemoryPool::builder(SimulatedAllocator::new(usize::MAX))
        .shards(16)
        .build();
    if let Ok(sharded) = sharded {
        drop(sharded.allocate(4096));
        g.bench_function("hit_sharded_16", |b| {
            b.iter(|| black_box(sharded.allocate(black_box(4096))));
        });
    }
    let stopped = MemoryPool::new(SimulatedAllocator::new(usize::MAX));
    stopped.stop_holding();
    g.bench_function("miss_simulated", |b| {
        b.iter(|| black_box(stopped.allocate(black_box(4096))));
    });
    g.finish();
    device::benches(c);
}

mod device {
    use std::hint::black_box;

    use cl_mem::svm::{Coarse, SvmAllocation, SvmOptions};
    use cl_mem::{MemFlags, SvmCapabilities};
    use cl_pool::{Allocator, ImmediateAllocator, MemoryPool, SvmAllocator};
    use criterion::{BenchmarkId, Criterion};

    /// The sizes of PyOpenCL's reference bench (`pool_hit_alloc_free_ns_<size>`).
    const SIZES: [usize; 3] = [1 << 10, 1 << 20, 64 << 20];

    /// `pool_hit_alloc_free/<bytes>`, `immediate_allocator/<bytes>`, and with coarse-grain SVM
    /// `svm_pool_hit_alloc_free/<bytes>` and `svm_alloc_free/<bytes>`.
    pub(super) fn benches(c: &mut Criterion) {
        let Some(queue) = cl_benches::bench_queue() else {
            return;
        };
        let Ok(imm) = ImmediateAllocator::new(&queue, MemFlags::READ_WRITE) else {
            return;
        };
        let pool = MemoryPool::new(imm.clone());
        let mut g = c.benchmark_group("pool_hit_alloc_free");
        for size in SIZES {
            if pool.allocate(size).is_err() {
                continue;
            }
            g.bench_with_input(BenchmarkId::from_parameter(size), &size, |b, &size| {
                b.iter(|| black_box(pool.allocate(size)));
            });
        }
        g.finish();
        let mut g = c.benchmark_group("immediate_allocator");
        g.sample_size(20);
        for size in SIZES {
            g.bench_with_input(BenchmarkId::from_parameter(size), &size, |b, &size| {
                b.iter(|| {
                    if let Ok(Some(block)) = imm.allocate(size) {
                        let _ = imm.free(block);
                    }
                });
            });
        }
        g.finish();
        queue.finish().ok();

        let svm = queue
            .device()
            .svm_capabilities()
            .is_ok_and(|c| c.contains(SvmCapabilities::COARSE_GRAIN_BUFFER));
        if !svm {
            eprintln!(
                "cl-benches: no coarse-grain SVM on the bench device: SVM pool benches skipped"
            );
            return;
        }
        let svm_pool = MemoryPool::new(SvmAllocator::<Coarse>::new(&queue, SvmOptions::default()));
        let mut g = c.benchmark_group("svm_pool_hit_alloc_free");
        for size in SIZES {
            if svm_pool.allocate(size).is_err() {
                continue;
            }
            g.bench_with_input(BenchmarkId::from_parameter(size), &size, |b, &size| {
                b.iter(|| black_box(svm_pool.allocate(size)));
            });
        }
        g.finish();
        let mut g = c.benchmark_group("svm_alloc_free");
        g.sample_size(20);
        for size in SIZES {
            g.bench_with_input(BenchmarkId::from_parameter(size), &size, |b, &size| {
                b.iter(|| {
                    // clSVMAlloc + clEnqueueSVMFree, finished so the free really happens.
                    drop(SvmAllocation::<Coarse>::new(&queue, size));
                    queue.finish().ok();
                });
            });
        }
        g.finish();
    }
}
