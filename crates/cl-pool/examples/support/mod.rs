//! Trace tools that the pool examples (`policy_explore`, `trace_plot`) and the trace tests share:
//! RMM-shaped random traces, an SVG plot of a replay's timeline, and a replay as a PyTorch
//! memory snapshot. They use cl-pool's public API only (`trace::replay`, `SimulatedAllocator`,
//! `MemoryPool`), so they are example code to copy rather than API of the crate.

#![allow(
    dead_code,
    unused_imports,
    reason = "each example and test binary uses its own part"
)]

mod plot;
mod random;
#[cfg(feature = "serde")]
mod snapshot;

pub(crate) use self::plot::{ratio, timeline_svg};
pub(crate) use self::random::{random_trace, RandomTraceShape};
#[cfg(feature = "serde")]
pub(crate) use self::snapshot::pytorch_snapshot;

use cl_pool::{Eviction, Policy};

/// Issue 8's capped policy: managed bytes limited to 1.25 x `active` (the trace's cap or peak of
/// active bytes), with `larger_bins` bins above a request searched and `eviction` choosing victims.
pub(crate) fn capped_policy(active: usize, larger_bins: u32, eviction: Eviction) -> Policy {
    Policy {
        managed_bytes_limit: Some(active / 4 * 5),
        larger_bins,
        eviction,
        ..Policy::default()
    }
}
