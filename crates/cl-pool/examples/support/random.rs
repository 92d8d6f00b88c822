//! RMM-shaped random traces ([`random_trace`]).

use cl_pool::trace::TraceEvent;

/// The shape of RMM's `random_allocations` benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RandomTraceShape {
    /// Allocation requests to make.
    pub(crate) allocations: usize,
    /// Sizes are uniform in `1..=max_size`.
    pub(crate) max_size: usize,
    /// Percent of steps that try to allocate (RMM: 73).
    pub(crate) allocation_percent: u32,
    /// Active bytes never exceed this (RMM: 16,000 MiB); a step that would, frees instead.
    pub(crate) active_cap: usize,
    /// Seed of the generator.
    pub(crate) seed: u64,
}

impl Default for RandomTraceShape {
    fn default() -> Self {
        Self {
            allocations: 10_000,
            max_size: 256 << 20,
            allocation_percent: 73,
            active_cap: 16_000 << 20,
            seed: 1,
        }
    }
}

/// splitmix64: deterministic, dependency-free.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0), by rejection.
    fn below(&mut self, n: u64) -> u64 {
        let zone = u64::MAX - u64::MAX % n;
        loop {
            let r = self.next();
            if r < zone {
                return r % n;
            }
        }
    }
}

/// A random trace in the shape of RMM's `random_allocations` benchmark: at each step, allocate
/// with probability `allocation_percent` (while allocations remain and the active cap allows),
/// otherwise free a uniformly chosen live allocation; everything still live is freed at the end.
#[must_use]
pub(crate) fn random_trace(shape: &RandomTraceShape) -> Vec<TraceEvent> {
    if shape.active_cap == 0 {
        return Vec::new();
    }
    let mut rng = Rng(shape.seed);
    let mut live: Vec<(u64, usize)> = Vec::new();
    let mut active = 0usize;
    let mut made = 0usize;
    let mut next_id = 1u64;
    let mut out = Vec::with_capacity(shape.allocations * 2);
    let max = u64::try_from(shape.max_size.max(1)).unwrap_or(u64::MAX);
    while made < shape.allocations {
        let size = usize::try_from(1 + rng.below(max)).unwrap_or(usize::MAX);
        let want_alloc = live.is_empty() || rng.below(100) < u64::from(shape.allocation_percent);
        if want_alloc && active.saturating_add(size) <= shape.active_cap {
            out.push(TraceEvent::Alloc { id: next_id, size });
            live.push((next_id, size));
            next_id += 1;
            made += 1;
            active += size;
        } else if !live.is_empty() {
            let n = u64::try_from(live.len()).unwrap_or(u64::MAX);
            let idx = usize::try_from(rng.below(n)).unwrap_or(0);
            let (id, size) = live.swap_remove(idx);
            out.push(TraceEvent::Free { id });
            active -= size;
        }
    }
    for (id, _) in live {
        out.push(TraceEvent::Free { id });
    }
    out
}
