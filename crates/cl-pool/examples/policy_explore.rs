//! Prints replay figures of RMM's random_allocations trace shape under PyOpenCL's policy and under
//! capped policies (issue 8's claim). `cargo run --release -p cl-pool --example policy_explore`.

use cl_pool::trace::{replay, ReplayConfig};
use cl_pool::{Eviction, InvalidLeadingBits, Policy};

mod support;
use support::{capped_policy, random_trace, ratio, RandomTraceShape};

fn main() -> Result<(), InvalidLeadingBits> {
    println!(
        "| seed | policy | peak managed / peak active | hit rate | upstream allocs | OOM frees |"
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    for seed in 1..=3 {
        let shape = RandomTraceShape {
            seed,
            ..RandomTraceShape::default()
        };
        let t = random_trace(&shape);
        let mut rows = vec![("PyOpenCL (unbounded)".to_owned(), Policy::default())];
        for eviction in [Eviction::LargestBinFirst, Eviction::FullestBinFirst] {
            for larger in [0u32, 4, 8] {
                rows.push((
                    format!("limit 1.25 x cap, {larger} larger bins, {eviction:?}"),
                    capped_policy(shape.active_cap, larger, eviction),
                ));
            }
        }
        for (name, policy) in rows {
            let r = replay(
                &t,
                &ReplayConfig {
                    policy,
                    ..ReplayConfig::default()
                },
            )?;
            println!(
                "| {seed} | {name} | {:.3} | {:.3} | {} | {} |",
                ratio(r.peak_managed_bytes as u64, r.peak_active_bytes as u64),
                ratio(r.hits, r.requests),
                r.upstream_allocations,
                r.oom_frees
            );
        }
    }
    Ok(())
}
