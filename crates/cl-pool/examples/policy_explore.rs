//! Prints replay figures of the RMM-shaped random trace under several policies.
use cl_pool::trace::{random_trace, replay, RandomTraceShape, ReplayConfig};
use cl_pool::{Eviction, OomMode, Policy};

fn main() {
    for seed in 1..=3 {
        let shape = RandomTraceShape {
            seed,
            ..RandomTraceShape::default()
        };
        let t = random_trace(&shape);
        let base = replay(&t, &ReplayConfig::default()).unwrap();
        println!(
            "seed {seed} unbounded: ratio {:.3} hits {:.3} peak_active {} MiB peak_managed {} MiB",
            base.managed_to_active_at_peak(),
            base.hit_rate(),
            base.peak_active_bytes >> 20,
            base.peak_managed_bytes >> 20
        );
        for ev in [
            Eviction::LargestBinFirst,
            Eviction::FullestBinFirst,
            Eviction::LeastRecentlyUsedBin,
        ] {
            let cap_mib = usize::MAX >> 20;
            for lim in [20_000usize] {
                for larger in [0u32, 4, 8, 12, 16] {
                    let p = Policy {
                        held_bytes_cap: Some(cap_mib << 20),
                        managed_bytes_limit: Some(lim << 20),
                        eviction: ev,
                        larger_bins: larger,
                        oom_mode: OomMode::FreeOneAtATime,
                        ..Policy::default()
                    };
                    let r = replay(
                        &t,
                        &ReplayConfig {
                            policy: p,
                            ..ReplayConfig::default()
                        },
                    )
                    .unwrap();
                    println!("  {ev:?} lim {lim} larger {larger}: ratio {:.3} hits {:.3} fail {} oomfree {}", r.managed_to_active_at_peak(), r.hit_rate(), r.failures, r.oom_frees);
                }
            }
        }
    }
}
