//! Trace record / replay, the PyOpenCL re-computation check, and the random-trace policy claim.
#![expect(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] fns; a failed unwrap is a failed test"
)]

use std::collections::{BTreeMap, HashMap};

use cl_pool::trace::{
    from_json_lines, replay, to_json_lines, ReplayConfig, ReplayReport, TraceEvent,
};
use cl_pool::{BinLayout, Eviction, MemoryPool, Policy};

mod support;
use support::TestAllocator;

// The trace tools of the examples (random traces, plots, snapshots), tested here.
#[path = "../examples/support/mod.rs"]
mod trace_tools;
use trace_tools::{
    capped_policy, pytorch_snapshot, random_trace, ratio, timeline_svg, RandomTraceShape,
};

/// `peak managed / peak active`: the memory a replay held at its peak per byte in use.
fn managed_to_active_at_peak(r: &ReplayReport) -> f64 {
    ratio(r.peak_managed_bytes as u64, r.peak_active_bytes as u64)
}

/// `hits / requests`.
fn hit_rate(r: &ReplayReport) -> f64 {
    ratio(r.hits, r.requests)
}

/// The most bytes a pool manages (`Policy::managed_bytes_limit`'s documented bound).
const MAX_MANAGED_BYTES: usize = isize::MAX as usize;

/// `TraceEvent::Alloc` and `TraceEvent::Free` in short, so that a hand-written trace reads as
/// the sequence of steps it is.
fn alloc(id: u64, size: usize) -> TraceEvent {
    TraceEvent::Alloc { id, size }
}

fn free(id: u64) -> TraceEvent {
    TraceEvent::Free { id }
}

/// A straightforward re-computation of PyOpenCL's algorithm (reference section 10.2) over a
/// simulated upstream: counts only, written independently of the pool.
fn pyopencl_recompute(trace: &[TraceEvent], capacity: usize, l: u32) -> ReplayReport {
    let layout = BinLayout::new(l).unwrap();
    let mut bins: BTreeMap<u32, usize> = BTreeMap::new();
    let mut live: HashMap<u64, (u32, usize)> = HashMap::new();
    let (mut in_use, mut managed, mut active) = (0usize, 0usize, 0usize);
    let mut r = ReplayReport::default();
    let mut held_bytes = 0usize;
    for e in trace {
        match *e {
            TraceEvent::Alloc { id, size } => {
                r.requests += 1;
                let b = layout.bin_number(size);
                let slot = bins.entry(b).or_insert(0);
                if *slot > 0 {
                    *slot -= 1;
                    held_bytes -= layout.alloc_size(b);
                    r.hits += 1;
                    active += size;
                    r.peak_active_bytes = r.peak_active_bytes.max(active);
                    live.insert(id, (b, size));
                    r.peak_held_bytes = r.peak_held_bytes.max(held_bytes);
                    continue;
                }
                let a = layout.alloc_size(b);
                let mut ok = in_use + a <= capacity;
                while !ok {
                    let Some((&top, n)) = bins.iter_mut().rev().find(|(_, n)| **n > 0) else {
                        break;
                    };
                    *n -= 1;
                    let freed = layout.alloc_size(top);
                    in_use -= freed;
                    managed -= freed;
                    held_bytes -= freed;
                    r.oom_frees += 1;
                    r.upstream_frees += 1;
                    ok = in_use + a <= capacity;
                }
                if ok {
                    in_use += a;
                    managed += a;
                    active += size;
                    r.upstream_allocations += 1;
                    r.peak_managed_bytes = r.peak_managed_bytes.max(managed);
                    r.peak_active_bytes = r.peak_active_bytes.max(active);
                    live.insert(id, (b, size));
                } else {
                    r.failures += 1;
                }
            }
            TraceEvent::Free { id } => {
                if let Some((b, size)) = live.remove(&id) {
                    active -= size;
                    *bins.entry(b).or_insert(0) += 1;
                    held_bytes += layout.alloc_size(b);
                }
            }
        }
        r.peak_held_bytes = r.peak_held_bytes.max(held_bytes);
    }
    r
}

#[test]
fn recorded_trace_roundtrips_through_json_lines_and_replays_to_the_same_figures() {
    let pool = MemoryPool::new(TestAllocator::new());
    pool.start_recording();
    let a = pool.allocate(1000).unwrap();
    let b = pool.allocate(1023).unwrap();
    drop(a);
    let c = pool.allocate(1001).unwrap();
    drop((b, c));
    let z = pool.allocate(0).unwrap();
    drop(z);
    let trace = pool.stop_recording();
    assert_eq!(
        trace,
        vec![
            alloc(1, 1000),
            alloc(2, 1023),
            free(1),
            alloc(3, 1001),
            free(2),
            free(3),
            alloc(4, 0),
            free(4),
        ]
    );
    let text = to_json_lines(&trace);
    assert!(text.starts_with("{\"op\":\"alloc\",\"id\":1,\"size\":1000}\n"));
    assert_eq!(from_json_lines(&text).unwrap(), trace);
    let r = replay(&trace, &ReplayConfig::default()).unwrap();
    let s = pool.stats();
    assert_eq!(r.hits, s.hits);
    assert_eq!(r.upstream_allocations, s.upstream_allocations);
    assert_eq!(r.peak_managed_bytes, s.peak_managed_bytes);
    assert_eq!(r.peak_active_bytes, s.peak_active_bytes);
    assert_eq!(
        (r.hits, r.upstream_allocations, r.peak_managed_bytes),
        (1, 3, 2047)
    );
}

/// Local blocks are recorded as owned ones, from the thread's cache and from the shared bins (the
/// path that returns a block, its bin and its trace id before the handle is built).
#[test]
fn local_blocks_are_recorded_on_every_path() {
    for shared_bins_only in [false, true] {
        let pool = MemoryPool::new(TestAllocator::new());
        pool.set_policy(Policy {
            shared_bins_only,
            ..Policy::default()
        });
        pool.start_recording();
        let a = pool.allocate_local(1000).unwrap();
        drop(a);
        let b = pool.allocate_local(1001).unwrap();
        let c = pool.allocate_local(1002).unwrap();
        drop((c, b));
        assert_eq!(
            pool.stop_recording(),
            vec![
                alloc(1, 1000),
                free(1),
                alloc(2, 1001),
                alloc(3, 1002),
                free(3),
                free(2),
            ],
            "shared_bins_only={shared_bins_only}"
        );
        assert_eq!((pool.stats().hits, pool.stats().misses), (1, 2));
    }
}

#[test]
fn malformed_trace_lines_are_reported_with_their_line_number() {
    let e = from_json_lines("{\"op\":\"free\",\"id\":1}\n\n{\"op\":\"grow\"}\n").unwrap_err();
    assert_eq!(e.line, 3);
}

#[test]
fn replay_matches_a_recomputation_of_pyopencls_algorithm() {
    for seed in 1..=6u64 {
        let shape = RandomTraceShape {
            allocations: 3000,
            max_size: if seed % 2 == 0 { 1 << 20 } else { 256 << 20 },
            active_cap: if seed % 2 == 0 {
                200 << 20
            } else {
                16_000 << 20
            },
            seed,
            ..RandomTraceShape::default()
        };
        let trace = random_trace(&shape);
        for l in [4u32, 0, 2, 8] {
            for capacity in [usize::MAX, shape.active_cap + shape.active_cap / 4] {
                let cfg = ReplayConfig {
                    capacity,
                    leading_bits: l,
                    ..ReplayConfig::default()
                };
                let ours = replay(&trace, &cfg).unwrap();
                let reference = pyopencl_recompute(&trace, capacity, l);
                assert_eq!(ours, reference, "seed {seed} L={l} capacity {capacity}");
            }
        }
    }
}

#[test]
fn random_trace_has_rmm_shape() {
    let shape = RandomTraceShape::default();
    let t = random_trace(&shape);
    let allocs = t
        .iter()
        .filter(|e| matches!(e, TraceEvent::Alloc { .. }))
        .count();
    assert_eq!(allocs, 10_000);
    assert_eq!(t.len(), 20_000); // every allocation is freed
    let mut active = 0usize;
    let mut sizes = HashMap::new();
    for e in &t {
        match *e {
            TraceEvent::Alloc { id, size } => {
                assert!((1..=256 << 20).contains(&size));
                sizes.insert(id, size);
                active += size;
                assert!(active <= 16_000 << 20);
            }
            TraceEvent::Free { id } => active -= sizes[&id],
        }
    }
    assert_eq!(random_trace(&shape), t, "deterministic per seed");
}

/// Issue 8's claim on RMM's random_allocations shape (10,000 requests up to 256 MiB, 73 %
/// allocations, 16,000 MiB active cap): PyOpenCL's unbounded policy holds about 3x the active
/// memory at peak; under a managed limit of 1.25x (enforced: the pool never holds more) ours still
/// serves the whole trace, >= 85 % of it from held blocks.
#[test]
fn a_1_25x_managed_limit_is_enforced_and_still_serves_85_percent_hits() {
    for seed in 1..=3u64 {
        let shape = RandomTraceShape {
            seed,
            ..RandomTraceShape::default()
        };
        let trace = random_trace(&shape);
        let unbounded = replay(&trace, &ReplayConfig::default()).unwrap();
        let ratio = managed_to_active_at_peak(&unbounded);
        assert!(
            ratio > 2.9 && ratio < 3.3,
            "seed {seed}: unbounded ratio {ratio}"
        );
        let capped = replay(
            &trace,
            &ReplayConfig {
                // The 1.25x bound is the limit's (with room up to 1.5x the pool fills it: 1.4998x
                // on seed 1), so the ratio check below tests that the limit is enforced; what the
                // policies add is that the trace still runs without a failure and with >= 85 %
                // hits under it.
                policy: capped_policy(shape.active_cap, 8, Eviction::FullestBinFirst),
                ..ReplayConfig::default()
            },
        )
        .unwrap();
        let ratio = managed_to_active_at_peak(&capped);
        assert!(
            ratio <= 1.25,
            "seed {seed}: the managed limit was overshot: ratio {ratio}"
        );
        assert!(
            hit_rate(&capped) >= 0.85,
            "seed {seed}: hits {}",
            hit_rate(&capped)
        );
        assert_eq!(capped.failures, 0);
    }
}

#[test]
fn timeline_follows_the_gauges_and_plots_as_svg() {
    let trace = vec![alloc(1, 1000), alloc(2, 100), free(1), free(2)];
    let report = replay(
        &trace,
        &ReplayConfig {
            timeline: true,
            ..ReplayConfig::default()
        },
    )
    .unwrap();
    let t = &report.timeline;
    assert_eq!(report.upstream_allocations, 2);
    let got: Vec<_> = t
        .iter()
        .map(|p| (p.managed_bytes, p.active_bytes, p.held_bytes))
        .collect();
    assert_eq!(
        got,
        vec![
            (1023, 1000, 0),
            (1126, 1100, 0),
            (1126, 100, 1023),
            (1126, 0, 1126)
        ]
    );
    let svg = timeline_svg(t, "a <small> trace");
    assert!(svg.starts_with("<svg"));
    assert!(svg.contains("a &lt;small&gt; trace"));
    assert_eq!(svg.matches("<path").count(), 2);
}

#[test]
fn pytorch_snapshot_lists_segments_and_events() {
    let trace = vec![
        alloc(1, 1000),
        alloc(2, 100),
        free(1),
        alloc(3, 1001),
        free(2),
        free(3),
    ];
    let snap = pytorch_snapshot(&trace, &ReplayConfig::default()).unwrap();
    let segs = snap["segments"].as_array().unwrap();
    assert_eq!(segs.len(), 2);
    assert_eq!(segs[0]["address"], 0);
    assert_eq!(segs[0]["total_size"], 1023);
    assert_eq!(segs[0]["blocks"][0]["state"], "active_allocated");
    assert_eq!(segs[0]["blocks"][0]["requested_size"], 1001);
    assert_eq!(segs[1]["address"], 1024);
    assert_eq!(segs[1]["total_size"], 103);
    assert_eq!(segs[1]["blocks"][0]["state"], "inactive");
    let actions: Vec<(String, u64)> = snap["device_traces"][0]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["action"].as_str().unwrap().to_owned(),
                e["addr"].as_u64().unwrap(),
            )
        })
        .collect();
    let expect = [
        ("segment_alloc", 0),
        ("alloc", 0),
        ("segment_alloc", 1024),
        ("alloc", 1024),
        ("free_requested", 0),
        ("free_completed", 0),
        ("alloc", 0),
        ("free_requested", 1024),
        ("free_completed", 1024),
        ("free_requested", 0),
        ("free_completed", 0),
    ];
    let expect: Vec<(String, u64)> = expect.iter().map(|(a, n)| ((*a).to_owned(), *n)).collect();
    assert_eq!(actions, expect);
}

/// Regression (fuzz target `trace`, `fuzz/corpus/trace/seed-structured`): a block of
/// `usize::MAX - 255` bytes from an unlimited simulated upstream overflowed the per-thread
/// cache's signed gauges when it came back. Past `MAX_MANAGED_BYTES` a request now fails like
/// one over the managed-bytes limit, and the pool stays usable.
#[test]
fn a_request_past_max_managed_bytes_fails_instead_of_overflowing() {
    let trace = [
        alloc(0, 8192),
        free(0),
        alloc(1, usize::MAX - 255),
        free(0),
        alloc(2, MAX_MANAGED_BYTES / 2 + 1),
        alloc(3, MAX_MANAGED_BYTES / 2 + 1),
        alloc(4, 100),
    ];
    let config = ReplayConfig {
        leading_bits: 5,
        ..ReplayConfig::default()
    };
    let report = replay(&trace, &config).unwrap();
    assert_eq!(report.requests, 5);
    // The huge request, and the second of two halves (the sum would pass the bound).
    assert_eq!(report.failures, 2);
    assert!(report.peak_managed_bytes <= MAX_MANAGED_BYTES);

    let pool = MemoryPool::new(cl_pool::SimulatedAllocator::new(usize::MAX));
    let err = pool.allocate(usize::MAX).unwrap_err();
    assert!(matches!(err, cl_pool::PoolError::LimitReached(_)), "{err}");
    assert_eq!(pool.allocate(64).unwrap().requested_bytes(), 64);
}

/// Regression (fuzz target `trace`, `fuzz/corpus/trace/regression-slot-delta-wraps`): a block
/// of 65,282 bytes returned into the thread's cache left a delta of -65,282 there; a block of
/// exactly `isize::MAX` bytes (within `MAX_MANAGED_BYTES` once the first was reclaimed) returned
/// the same way took the delta to `-65282 - isize::MAX`, which overflowed although every real
/// figure fits. The deltas now wrap, as the sums that read them always did.
#[test]
fn per_thread_deltas_wrap_while_the_figures_stay_exact() {
    let trace = [
        alloc(1, 65282),
        free(1),
        alloc(2, MAX_MANAGED_BYTES),
        free(2),
    ];
    let config = ReplayConfig {
        leading_bits: 7,
        timeline: true,
        ..ReplayConfig::default()
    };
    let report = replay(&trace, &config).unwrap();
    let timeline = &report.timeline;
    assert_eq!((report.requests, report.failures), (2, 0));
    // The second block needed the first one's bytes back: one reclaim.
    assert_eq!(report.oom_frees, 1);
    let last = timeline.last().unwrap();
    assert_eq!(last.active_bytes, 0);
    assert_eq!(last.held_bytes, MAX_MANAGED_BYTES);
    assert_eq!(last.managed_bytes, MAX_MANAGED_BYTES);
}
