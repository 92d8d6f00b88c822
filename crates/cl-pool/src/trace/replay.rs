//! Replaying a trace against a simulated upstream: [`replay`], [`ReplayReport`], timelines.

use std::collections::HashMap;

use crate::allocator::SimulatedAllocator;
use crate::bins::DEFAULT_LEADING_BITS;
use crate::pool::{MemoryPool, Policy, PoolBlock};

use super::*;

/// How to replay a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayConfig {
    /// Capacity of the simulated upstream in bytes (`usize::MAX`: unlimited).
    pub capacity: usize,
    /// The pool's `leading_bits_in_bin_id`.
    pub leading_bits: u32,
    /// The pool's policy (default: PyOpenCL's behaviour).
    pub policy: Policy,
}

impl Default for ReplayConfig {
    fn default() -> Self {
        Self {
            capacity: usize::MAX,
            leading_bits: DEFAULT_LEADING_BITS,
            policy: Policy::default(),
        }
    }
}

/// What a replay measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplayReport {
    /// Alloc events replayed.
    pub requests: u64,
    /// Requests served from held blocks.
    pub hits: u64,
    /// Requests that failed (out of memory even after reclaiming).
    pub failures: u64,
    /// Blocks obtained from the upstream.
    pub upstream_allocations: u64,
    /// Blocks given back to the upstream (out-of-memory reclaims, caps, idle release).
    pub upstream_frees: u64,
    /// Held blocks freed because of out-of-memory (or the limit).
    pub oom_frees: u64,
    /// Highest managed bytes.
    pub peak_managed_bytes: usize,
    /// Highest active (requested) bytes.
    pub peak_active_bytes: usize,
    /// Highest held bytes observed after any event.
    pub peak_held_bytes: usize,
}

impl ReplayReport {
    /// `hits / requests`.
    #[must_use]
    pub fn hit_rate(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            ratio(self.hits, self.requests)
        }
    }

    /// `peak managed / peak active`: how much memory the pool holds at its peak per byte in use.
    #[must_use]
    pub fn managed_to_active_at_peak(&self) -> f64 {
        ratio(
            self.peak_managed_bytes as u64,
            self.peak_active_bytes as u64,
        )
    }
}

#[expect(
    clippy::cast_precision_loss,
    reason = "ratios of counts; 52 bits of mantissa are plenty"
)]
pub(super) fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// Replays `trace` on a fresh pool over a [`SimulatedAllocator`].
///
/// Frees of requests that failed, or of unknown ids, are ignored.
///
/// # Errors
///
/// [`crate::InvalidLeadingBits`] for a bad `leading_bits`.
pub fn replay(
    trace: &[TraceEvent],
    config: &ReplayConfig,
) -> Result<ReplayReport, crate::InvalidLeadingBits> {
    replay_inner(trace, config, None)
}

/// The pool's gauges after one event of a replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimelinePoint {
    /// Managed bytes (held + active, rounded).
    pub managed_bytes: usize,
    /// Active bytes (requested).
    pub active_bytes: usize,
    /// Held bytes.
    pub held_bytes: usize,
}

/// As [`replay`], also returning the gauges after every event (for plots: [`timeline_svg`]).
///
/// # Errors
///
/// [`crate::InvalidLeadingBits`] for a bad `leading_bits`.
pub fn replay_with_timeline(
    trace: &[TraceEvent],
    config: &ReplayConfig,
) -> Result<(ReplayReport, Vec<TimelinePoint>), crate::InvalidLeadingBits> {
    let mut timeline = Vec::with_capacity(trace.len());
    let report = replay_inner(trace, config, Some(&mut timeline))?;
    Ok((report, timeline))
}

fn replay_inner(
    trace: &[TraceEvent],
    config: &ReplayConfig,
    mut timeline: Option<&mut Vec<TimelinePoint>>,
) -> Result<ReplayReport, crate::InvalidLeadingBits> {
    let pool = MemoryPool::builder(SimulatedAllocator::new(config.capacity))
        .leading_bits(config.leading_bits)
        .policy(config.policy)
        .shards(1)
        .build()?;
    let mut live: HashMap<u64, PoolBlock<SimulatedAllocator>> = HashMap::new();
    let mut report = ReplayReport::default();
    for event in trace {
        match *event {
            TraceEvent::Alloc { id, size } => {
                report.requests += 1;
                match pool.allocate(size) {
                    Ok(block) => {
                        live.insert(id, block);
                    }
                    Err(_) => report.failures += 1,
                }
            }
            TraceEvent::Free { id } => {
                live.remove(&id);
            }
        }
        let held = pool.held_bytes();
        report.peak_held_bytes = report.peak_held_bytes.max(held);
        if let Some(t) = timeline.as_deref_mut() {
            t.push(TimelinePoint {
                managed_bytes: pool.managed_bytes(),
                active_bytes: pool.active_bytes(),
                held_bytes: held,
            });
        }
    }
    let s = pool.stats();
    report.hits = s.hits;
    report.upstream_allocations = s.upstream_allocations;
    report.upstream_frees = s.upstream_frees;
    report.oom_frees = s.reclaims;
    report.peak_managed_bytes = s.peak_managed_bytes;
    report.peak_active_bytes = s.peak_active_bytes;
    drop(live);
    Ok(report)
}
