//! A tight single-thread hit loop for profilers (`perf record`, `valgrind --tool=callgrind`):
//! `cargo run --release -p cl-pool --example hit_loop [owned|local|latency|mixed|device] [N]`.
//! `mixed`: owned blocks of 64 sizes in turn. `latency`: `hit_latency`'s p50 loop (the handle
//! taken out of the `Result` by `?`); `latency_local`: the same with `allocate_local`.
//! `device`: a pooled buffer over `ImmediateAllocator` on the device `create_some_context` picks
//! (what the criterion bench `pool_hit_alloc_free` measures).
use std::hint::black_box;

use cl_mem::{create_some_context, MemFlags, Queue};
use cl_pool::{ImmediateAllocator, MemoryPool, SimulatedAllocator};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "owned".into());
    let n: u64 = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(50_000_000);
    let t0;
    match mode.as_str() {
        "device" => {
            let context = create_some_context()?;
            let queue = Queue::new(&context, &context.devices()[0])?;
            let pool = MemoryPool::new(ImmediateAllocator::new(&queue, MemFlags::READ_WRITE)?);
            drop(pool.allocate(1024)?);
            t0 = std::time::Instant::now();
            for _ in 0..n {
                // The `Result` itself, as criterion's `pool_hit_alloc_free` sees it (`.ok()`
                // would add a copy of the handle).
                let _ = black_box(pool.allocate(black_box(1024)));
            }
        }
        "local" | "owned" => {
            let pool = MemoryPool::new(SimulatedAllocator::new(usize::MAX));
            t0 = std::time::Instant::now();
            for _ in 0..n {
                // The `Result` itself, as criterion's `pool_host/hit_*` see it.
                if mode == "owned" {
                    let _ = black_box(pool.allocate(black_box(4096)));
                } else {
                    let _ = black_box(pool.allocate_local(black_box(4096)));
                }
            }
        }
        "latency" | "latency_local" => {
            // hit_latency's p50 loops: the handle taken out of the `Result` by `?` (a loop per
            // mode, so that neither has a branch inside).
            let pool = MemoryPool::new(SimulatedAllocator::new(usize::MAX));
            t0 = std::time::Instant::now();
            if mode == "latency" {
                for _ in 0..n {
                    black_box(&pool.allocate(black_box(4096))?);
                }
            } else {
                for _ in 0..n {
                    black_box(&pool.allocate_local(black_box(4096))?);
                }
            }
        }
        "mixed" => {
            // 64 sizes in turn (criterion's `pool_host/hit_mixed_sizes`).
            let pool = MemoryPool::new(SimulatedAllocator::new(usize::MAX));
            let sizes: Vec<usize> = (0..64).map(|i| 1000 + i * 7919 % 1_000_000).collect();
            for &s in &sizes {
                drop(pool.allocate(s)?);
            }
            t0 = std::time::Instant::now();
            let mut i = 0usize;
            for _ in 0..n {
                i = (i + 1) & 63;
                let _ = black_box(pool.allocate(black_box(sizes[i])));
            }
        }
        other => {
            return Err(format!(
                "unknown mode {other}: owned, local, latency, latency_local, mixed or device"
            )
            .into())
        }
    }
    #[expect(clippy::cast_precision_loss, reason = "a rate")]
    let ns = t0.elapsed().as_nanos() as f64 / n as f64;
    println!("{mode} hit: {ns:.1} ns");
    Ok(())
}
