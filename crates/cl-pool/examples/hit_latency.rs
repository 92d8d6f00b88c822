//! Median / p99 latency of a pool hit (allocate + drop from a warm bin) over a host allocator, and
//! total throughput of 1, 2, 4, 8 and 16 threads on distinct sizes, owned and local blocks,
//! repeated and mixed sizes, as ratios to one thread (each figure the median of 5 runs of
//! 1,000,000 hits per thread, timed from a barrier after each thread's warm-up), and the same loop
//! with a pool per thread as the control (nothing shared: the host's own scaling).
//! `cargo run --release -p cl-pool --example hit_latency`.

use std::hint::black_box;
use std::time::Instant;

use cl_pool::{InvalidLeadingBits, MemoryPool, PoolError, SimulatedAllocator};

const BATCH: u32 = 1000;

fn percentiles(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    let p = |q: f64| {
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "an index"
        )]
        let i = ((v.len() - 1) as f64 * q) as usize;
        v[i]
    };
    (p(0.5), p(0.99))
}

fn measure(
    pool: &MemoryPool<SimulatedAllocator>,
    sizes: &[usize],
) -> Result<(f64, f64), PoolError<cl_pool::HostAllocError>> {
    assert!(sizes.len().is_power_of_two(), "sizes are indexed by a mask");
    for &s in sizes {
        drop(pool.allocate(s)?);
    }
    let mut samples = Vec::new();
    for _ in 0..2000 {
        let t0 = Instant::now();
        for i in 0..BATCH as usize {
            // A mask, not `%`: the size lists have 1 or 64 entries, and a division costs more
            // than the hit being measured.
            let b = pool.allocate(sizes[i & (sizes.len() - 1)])?;
            black_box(&b);
        }
        samples.push(t0.elapsed().as_nanos() as f64 / f64::from(BATCH));
    }
    Ok(percentiles(samples))
}

fn measure_local(
    pool: &MemoryPool<SimulatedAllocator>,
) -> Result<(f64, f64), PoolError<cl_pool::HostAllocError>> {
    drop(pool.allocate_local(4096)?);
    let mut samples = Vec::new();
    for _ in 0..2000 {
        let t0 = Instant::now();
        for _ in 0..BATCH {
            let b = pool.allocate_local(4096)?;
            black_box(&b);
        }
        samples.push(t0.elapsed().as_nanos() as f64 / f64::from(BATCH));
    }
    Ok(percentiles(samples))
}

/// Total hits per second of `threads` threads, each doing `n` allocate + drop on its own sizes:
/// the median of [`REPEATS`] runs. Each thread first warms its sizes up (its first request of a
/// size is a miss to the allocator, not a hit), then all start together at a barrier, and a run
/// lasts from the barrier until the last thread is done (thread start-up is outside it).
/// `pool: None`: the control, each thread on a pool of its own (nothing of a pool is shared, so
/// what limits its scaling is the host, not the pool).
fn throughput(
    pool: Option<&MemoryPool<SimulatedAllocator>>,
    threads: usize,
    owned: bool,
    mixed: bool,
    n: usize,
) -> f64 {
    let mut rates: Vec<f64> = (0..REPEATS)
        .map(|_| {
            let start = std::sync::Barrier::new(threads + 1);
            let elapsed = std::thread::scope(|sc| {
                let start = &start;
                let handles: Vec<_> = (0..threads)
                    .map(|t| {
                        sc.spawn(move || {
                            let own;
                            let pool = match pool {
                                Some(p) => p,
                                None => {
                                    own = MemoryPool::new(SimulatedAllocator::new(usize::MAX));
                                    &own
                                }
                            };
                            let sizes: Vec<usize> = if mixed {
                                (0..64)
                                    .map(|i| 1000 + (t * 64 + i) * 7919 % 1_000_000)
                                    .collect()
                            } else {
                                vec![1 << (10 + t % 12)]
                            };
                            let run = |count: usize| {
                                for i in 0..count {
                                    let s = sizes[i & (sizes.len() - 1)];
                                    if owned {
                                        black_box(pool.allocate(s).ok());
                                    } else {
                                        black_box(pool.allocate_local(s).ok());
                                    }
                                }
                            };
                            run(sizes.len() * 4);
                            start.wait();
                            run(n);
                            Instant::now()
                        })
                    })
                    .collect();
                start.wait();
                let t0 = Instant::now();
                let last = handles
                    .into_iter()
                    .filter_map(|h| h.join().ok())
                    .max()
                    .unwrap_or(t0);
                last.duration_since(t0)
            });
            #[expect(clippy::cast_precision_loss, reason = "a rate")]
            let hits = (threads * n) as f64;
            hits / elapsed.as_secs_f64()
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

/// Runs of [`throughput`] (the median is reported).
const REPEATS: usize = 5;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mixed: Vec<usize> = (0..64).map(|i| 1000 + i * 7919 % 1_000_000).collect();
    for shards in [1usize, 16] {
        let pool = MemoryPool::builder(SimulatedAllocator::new(usize::MAX))
            .shards(shards)
            .build()
            .map_err(|e: InvalidLeadingBits| e.to_string())?;
        let (p50, p99) = measure(&pool, &[4096]).map_err(|e| e.to_string())?;
        println!("shards {shards:2}: repeated size  p50 {p50:6.1} ns  p99 {p99:6.1} ns");
        let (p50, p99) = measure(&pool, &mixed).map_err(|e| e.to_string())?;
        println!("shards {shards:2}: mixed sizes    p50 {p50:6.1} ns  p99 {p99:6.1} ns");
        let (p50, p99) = measure_local(&pool).map_err(|e| e.to_string())?;
        println!("shards {shards:2}: allocate_local p50 {p50:6.1} ns  p99 {p99:6.1} ns");
        let (measured, _) = pool.scope(|| measure(&pool, &[4096]));
        let (p50, _) = measured.map_err(|e| e.to_string())?;
        println!("shards {shards:2}: inside a scope p50 {p50:6.1} ns");
        if shards != 1 {
            continue;
        }
        // Thread scaling: total throughput against one thread (> 1: faster in total).
        let n = 1_000_000usize;
        println!("\n| blocks | sizes | 1 thread (M hits/s) | 2 | 4 | 8 | 16 |");
        println!("| --- | --- | ---: | ---: | ---: | ---: | ---: |");
        for owned in [true, false] {
            for mixed in [false, true] {
                let one = throughput(Some(&pool), 1, owned, mixed, n);
                let mut row = format!(
                    "| {} | {} | {:.1} |",
                    if owned { "owned" } else { "local" },
                    if mixed { "mixed" } else { "repeated" },
                    one / 1e6
                );
                for threads in [2usize, 4, 8, 16] {
                    let r = throughput(Some(&pool), threads, owned, mixed, n) / one;
                    row.push_str(&format!(" {r:.2}x |"));
                }
                println!("{row}");
            }
        }
        // The control: the same loops, each thread on a pool of its own.
        for owned in [true, false] {
            let one = throughput(None, 1, owned, false, n);
            let mut row = format!(
                "| {} | repeated, a pool per thread (control) | {:.1} |",
                if owned { "owned" } else { "local" },
                one / 1e6
            );
            for threads in [2usize, 4, 8, 16] {
                let r = throughput(None, threads, owned, false, n) / one;
                row.push_str(&format!(" {r:.2}x |"));
            }
            println!("{row}");
        }
        let s = pool.stats();
        println!(
            "after the runs: active {} blocks, held {} blocks, hits {}, misses {}",
            s.active_blocks, s.held_blocks, s.hits, s.misses
        );
    }
    // Does sharding the shared bins help anywhere? Owned blocks, total hits per second (M/s) of
    // 1, 2, 8 and 16 threads, with the per-thread caches and with every hit on the shared bins.
    println!(
        "\n| shared bins | caches | 1 thread (M hits/s) | 2 threads | 8 threads | 16 threads |"
    );
    println!("| --- | --- | ---: | ---: | ---: | ---: |");
    for shared_only in [false, true] {
        for shards in [1usize, 16] {
            let pool = MemoryPool::builder(SimulatedAllocator::new(usize::MAX))
                .shards(shards)
                .policy(cl_pool::Policy {
                    shared_bins_only: shared_only,
                    ..cl_pool::Policy::default()
                })
                .build()
                .map_err(|e: InvalidLeadingBits| e.to_string())?;
            let n = 200_000usize;
            let r: Vec<f64> = [1usize, 2, 8, 16]
                .iter()
                .map(|&t| throughput(Some(&pool), t, true, true, n) / 1e6)
                .collect();
            println!(
                "| {shards} shard{} | {} | {:.1} | {:.1} | {:.1} | {:.1} |",
                if shards == 1 { "" } else { "s" },
                if shared_only { "off" } else { "on" },
                r[0],
                r[1],
                r[2],
                r[3]
            );
        }
    }
    Ok(())
}
