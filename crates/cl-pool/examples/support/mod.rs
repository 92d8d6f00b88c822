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
