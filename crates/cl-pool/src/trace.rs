//! Allocation traces: record a pool's requests, store them as JSON lines, replay them against a
//! simulated upstream, and generate RMM-shaped random traces.
//!
//! Fragmentation regressions become unit tests without a GPU: record a real workload once
//! ([`MemoryPool::start_recording`](crate::MemoryPool::start_recording)), save it with
//! [`to_json_lines`], and assert on [`replay`]'s [`ReplayReport`] under any policy.

use std::collections::HashMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::allocator::SimulatedAllocator;
use crate::bins::DEFAULT_LEADING_BITS;
use crate::pool::{MemoryPool, Policy, PoolBlock};

/// One event of an allocation trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum TraceEvent {
    /// A request of `size` bytes; `id` names it for its `Free`.
    Alloc {
        /// Unique within the trace.
        id: u64,
        /// Requested bytes.
        size: usize,
    },
    /// The block of request `id` comes back.
    Free {
        /// The `Alloc` it returns.
        id: u64,
    },
}

/// A line of a JSON-lines trace that does not parse.
#[derive(Debug)]
pub struct TraceParseError {
    /// 1-based line number.
    pub line: usize,
    /// What serde said.
    pub message: String,
}

impl fmt::Display for TraceParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "trace line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for TraceParseError {}

/// Writes a trace as JSON lines (`{"op":"alloc","id":1,"size":100}` / `{"op":"free","id":1}`).
#[must_use]
pub fn to_json_lines(trace: &[TraceEvent]) -> String {
    let mut out = String::new();
    for e in trace {
        // Serialising these plain enums cannot fail.
        if let Ok(line) = serde_json::to_string(e) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

/// Reads a JSON-lines trace (blank lines are skipped).
///
/// # Errors
///
/// [`TraceParseError`] for the first line that is not an event.
pub fn from_json_lines(text: &str) -> Result<Vec<TraceEvent>, TraceParseError> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| TraceParseError {
                line: i + 1,
                message: e.to_string(),
            })
        })
        .collect()
}

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
fn ratio(a: u64, b: u64) -> f64 {
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

/// The shape of RMM's `random_allocations` benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RandomTraceShape {
    /// Allocation requests to make.
    pub allocations: usize,
    /// Sizes are uniform in `1..=max_size`.
    pub max_size: usize,
    /// Percent of steps that try to allocate (RMM: 73).
    pub allocation_percent: u32,
    /// Active bytes never exceed this (RMM: 16,000 MiB); a step that would, frees instead.
    pub active_cap: usize,
    /// Seed of the generator.
    pub seed: u64,
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
pub fn random_trace(shape: &RandomTraceShape) -> Vec<TraceEvent> {
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

/// An SVG line plot of managed (blue) and active (orange) bytes over a replay's events, for a
/// person to look at instead of reading numbers.
#[must_use]
pub fn timeline_svg(points: &[TimelinePoint], title: &str) -> String {
    use std::fmt::Write as _;
    const W: f64 = 900.0;
    const H: f64 = 400.0;
    const M: f64 = 50.0;
    let max = points
        .iter()
        .map(|p| p.managed_bytes.max(p.active_bytes))
        .max()
        .unwrap_or(0)
        .max(1);
    let n = points.len().max(2) - 1;
    let xy = |i: usize, v: usize| {
        let x = M + (W - 2.0 * M) * ratio(i as u64, n as u64);
        let y = H - M - (H - 2.0 * M) * ratio(v as u64, max as u64);
        (x, y)
    };
    let path = |f: &dyn Fn(&TimelinePoint) -> usize| {
        let mut d = String::new();
        for (i, p) in points.iter().enumerate() {
            let (x, y) = xy(i, f(p));
            let _ = write!(d, "{}{x:.1},{y:.1} ", if i == 0 { "M" } else { "L" });
        }
        d
    };
    let esc = title
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    let mib = ratio(max as u64, 1 << 20);
    format!(
        concat!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n",
            "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
            "<text x=\"{m}\" y=\"20\" font-size=\"14\">{title}</text>\n",
            "<line x1=\"{m}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"black\"/>\n",
            "<line x1=\"{m}\" y1=\"{m}\" x2=\"{m}\" y2=\"{b}\" stroke=\"black\"/>\n",
            "<text x=\"5\" y=\"{m}\">{mib:.0} MiB</text>\n",
            "<text x=\"5\" y=\"{b}\">0</text>\n",
            "<text x=\"{r}\" y=\"{lb}\" text-anchor=\"end\">{n} events</text>\n",
            "<path d=\"{managed}\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1\"/>\n",
            "<path d=\"{active}\" fill=\"none\" stroke=\"#ff7f0e\" stroke-width=\"1\"/>\n",
            "<text x=\"{r}\" y=\"40\" text-anchor=\"end\" fill=\"#1f77b4\">managed</text>\n",
            "<text x=\"{r}\" y=\"55\" text-anchor=\"end\" fill=\"#ff7f0e\">active</text>\n",
            "</svg>\n"
        ),
        w = W,
        h = H,
        m = M,
        b = H - M,
        r = W - M,
        lb = H - M + 20.0,
        title = esc,
        mib = mib,
        n = points.len(),
        managed = path(&|p| p.managed_bytes),
        active = path(&|p| p.active_bytes),
    )
}

/// An upstream that gives every block an address (a bump pointer, never reused) and logs
/// PyTorch-style segment events.
#[derive(Debug)]
struct AddressingAllocator {
    inner: SimulatedAllocator,
    state: std::sync::Mutex<AddressingState>,
}

#[derive(Debug, Default)]
struct AddressingState {
    next_addr: u64,
    addr_of: HashMap<u64, (u64, usize)>,
    events: Vec<serde_json::Value>,
}

impl AddressingAllocator {
    fn state(&self) -> std::sync::MutexGuard<'_, AddressingState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl crate::Allocator for AddressingAllocator {
    type Block = crate::HostBlock;
    type Error = crate::HostAllocError;

    fn allocate(&self, size: usize) -> Result<Option<crate::HostBlock>, crate::HostAllocError> {
        let block = self.inner.allocate(size)?;
        if let Some(b) = &block {
            let mut st = self.state();
            let addr = st.next_addr;
            let span = u64::try_from(size).unwrap_or(u64::MAX).div_ceil(512) * 512;
            st.next_addr = st.next_addr.saturating_add(span.max(512));
            st.addr_of.insert(b.id, (addr, size));
            st.events.push(serde_json::json!({
                "action": "segment_alloc", "addr": addr, "size": size, "stream": 0, "frames": []
            }));
        }
        Ok(block)
    }

    fn free(&self, block: crate::HostBlock) -> Result<(), crate::HostAllocError> {
        {
            let mut st = self.state();
            if let Some((addr, size)) = st.addr_of.remove(&block.id) {
                st.events.push(serde_json::json!({
                    "action": "segment_free", "addr": addr, "size": size, "stream": 0, "frames": []
                }));
            }
        }
        self.inner.free(block)
    }
}

/// Replays `trace` and returns a snapshot in the layout of PyTorch's
/// `torch.cuda.memory._snapshot()` (`segments` = upstream allocations, each with its one block,
/// `active_allocated` or `inactive` (held); `device_traces[0]` = `segment_alloc` / `segment_free`
/// for upstream calls and `alloc` / `free_requested` / `free_completed` for pool requests), taken
/// just before the last event.
///
/// PyTorch's viewer (pytorch.org/memory_viz) reads pickles: convert with
/// `python -c "import json,pickle,sys; pickle.dump(json.load(open(sys.argv[1])), open(sys.argv[2],'wb'))" s.json s.pickle`.
/// Addresses are synthetic (a bump pointer over the upstream allocations).
///
/// # Errors
///
/// [`crate::InvalidLeadingBits`] for a bad `leading_bits`.
pub fn pytorch_snapshot(
    trace: &[TraceEvent],
    config: &ReplayConfig,
) -> Result<serde_json::Value, crate::InvalidLeadingBits> {
    let pool = MemoryPool::builder(AddressingAllocator {
        inner: SimulatedAllocator::new(config.capacity),
        state: std::sync::Mutex::new(AddressingState::default()),
    })
    .leading_bits(config.leading_bits)
    .policy(config.policy)
    .build()?;
    let mut live: HashMap<u64, PoolBlock<AddressingAllocator>> = HashMap::new();
    let last = trace.len().saturating_sub(1);
    let mut segments = Vec::new();
    for (i, event) in trace.iter().enumerate() {
        if i == last {
            segments = snapshot_segments(&pool, &live);
        }
        match *event {
            TraceEvent::Alloc { id, size } => {
                if let Ok(block) = pool.allocate(size) {
                    let mut st = pool.allocator().state();
                    let addr = st.addr_of.get(&block.block().id).map_or(0, |a| a.0);
                    let bytes = block.allocated_bytes();
                    st.events.push(serde_json::json!({
                        "action": "alloc", "addr": addr, "size": bytes, "stream": 0, "frames": []
                    }));
                    drop(st);
                    live.insert(id, block);
                } else {
                    let mut st = pool.allocator().state();
                    st.events.push(serde_json::json!({
                        "action": "oom", "addr": 0, "size": size, "stream": 0, "frames": []
                    }));
                }
            }
            TraceEvent::Free { id } => {
                if let Some(block) = live.remove(&id) {
                    let addr = pool
                        .allocator()
                        .state()
                        .addr_of
                        .get(&block.block().id)
                        .map_or(0, |a| a.0);
                    let bytes = block.allocated_bytes();
                    drop(block);
                    let mut st = pool.allocator().state();
                    for action in ["free_requested", "free_completed"] {
                        st.events.push(serde_json::json!({
                            "action": action, "addr": addr, "size": bytes, "stream": 0, "frames": []
                        }));
                    }
                }
            }
        }
    }
    let events = std::mem::take(&mut pool.allocator().state().events);
    drop(live);
    Ok(serde_json::json!({
        "segments": segments,
        "device_traces": [events],
    }))
}

fn snapshot_segments(
    pool: &MemoryPool<AddressingAllocator>,
    live: &HashMap<u64, PoolBlock<AddressingAllocator>>,
) -> Vec<serde_json::Value> {
    let active: HashMap<u64, (usize, usize)> = live
        .values()
        .map(|b| (b.block().id, (b.requested_bytes(), b.allocated_bytes())))
        .collect();
    let st = pool.allocator().state();
    let mut segs: Vec<(u64, u64, usize)> = st
        .addr_of
        .iter()
        .map(|(&id, &(addr, size))| (addr, id, size))
        .collect();
    segs.sort_unstable();
    segs.into_iter()
        .map(|(addr, id, size)| {
            let (state, requested, active_size) = match active.get(&id) {
                Some(&(req, _)) => ("active_allocated", req, size),
                None => ("inactive", 0, 0),
            };
            serde_json::json!({
                "device": 0, "address": addr, "total_size": size, "allocated_size": active_size,
                "active_size": active_size, "requested_size": requested, "stream": 0,
                "segment_type": if size >= (1 << 20) { "large" } else { "small" },
                "segment_pool_id": [0, 0], "is_expandable": false, "frames": [],
                "blocks": [{
                    "address": addr, "size": size, "requested_size": requested, "state": state,
                    "frames": []
                }]
            })
        })
        .collect()
}
