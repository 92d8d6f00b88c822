//! A tight single-thread hit loop for profilers (`perf record`): `cargo run --release -p cl-pool
//! --example hit_loop [owned|local] [iterations]`.
use std::hint::black_box;

use cl_pool::{MemoryPool, SimulatedAllocator};

fn main() {
    let mut args = std::env::args().skip(1);
    let owned = args.next().is_none_or(|a| a == "owned");
    let n: u64 = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(50_000_000);
    let pool = MemoryPool::new(SimulatedAllocator::new(usize::MAX));
    let t0 = std::time::Instant::now();
    for _ in 0..n {
        if owned {
            black_box(pool.allocate(black_box(4096)).ok());
        } else {
            black_box(pool.allocate_local(black_box(4096)).ok());
        }
    }
    #[expect(clippy::cast_precision_loss, reason = "a rate")]
    let ns = t0.elapsed().as_nanos() as f64 / n as f64;
    println!("{} hit: {ns:.1} ns", if owned { "owned" } else { "local" });
}
