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
    /// Record the pool's gauges after every event in [`ReplayReport::timeline`] (for plots).
    pub timeline: bool,
}

impl Default for ReplayConfig {
    fn default() -> Self {
        Self {
            capacity: usize::MAX,
            leading_bits: DEFAULT_LEADING_BITS,
            policy: Policy::default(),
            timeline: false,
        }
    }
}

/// What a replay measured (the hit rate is `hits / requests`; the memory held at the peak per
/// byte in use is `peak_managed_bytes / peak_active_bytes`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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
    /// The gauges after every event, when [`ReplayConfig::timeline`] asked for them (else
    /// empty).
    pub timeline: Vec<TimelinePoint>,
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

/// Replays `trace` on a fresh pool over a [`SimulatedAllocator`]; with
/// [`ReplayConfig::timeline`], the report has the gauges after every event.
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
    let pool = MemoryPool::builder(SimulatedAllocator::new(config.capacity))
        .leading_bits(config.leading_bits)
        .policy(config.policy)
        .shards(1)
        .build()?;
    let mut live: HashMap<u64, PoolBlock<SimulatedAllocator>> = HashMap::new();
    let mut report = ReplayReport {
        timeline: Vec::with_capacity(if config.timeline { trace.len() } else { 0 }),
        ..ReplayReport::default()
    };
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
        if config.timeline {
            report.timeline.push(TimelinePoint {
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
