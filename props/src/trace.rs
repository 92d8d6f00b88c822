//! Target `trace`: cl-pool's allocation traces (JSON lines) and their replay.
//!
//! Input: the first byte's low bit picks the form. Text form (`0`): the rest is JSON-lines text,
//! parsed with `from_json_lines` and, when it parses, replayed. Structured form (`1`): bytes
//! build a trace (allocs of edge-case sizes, frees of known and unknown ids) and a replay
//! configuration (capacity, `leading_bits` in and out of range, every policy knob).
//!
//! Properties:
//! - `from_json_lines` never panics; an error names a line that exists (1-based);
//! - `to_json_lines` then `from_json_lines` gives the same events;
//! - `replay` returns `InvalidLeadingBits` exactly for `leading_bits > MAX_LEADING_BITS`, else a
//!   report where `requests` counts the allocs, `hits + failures <= requests`, every hit or
//!   success came from a held block or one upstream allocation (`hits + upstream_allocations +
//!   failures >= requests`), the peaks are ordered (`active <= managed`, `held <= managed`,
//!   managed within the capacity and the managed-bytes limit);
//! - `replay` with a timeline gives the same figures and one point per event, each with
//!   `held + active <= managed`;
//! - with an unlimited upstream, no limit and sizes below 2^48, nothing fails.

use cl_pool::trace::{from_json_lines, replay, to_json_lines, ReplayConfig, TraceEvent};
use cl_pool::{Eviction, OomMode, Policy};

/// The largest `leading_bits_in_bin_id` cl-pool documents as accepted (`InvalidLeadingBits`).
const MAX_LEADING_BITS: u32 = 25;

use crate::input::Input;

/// The properties above, for one input.
///
/// # Panics
///
/// When a property does not hold.
pub fn check(data: &[u8]) {
    let mut input = Input::new(data);
    if input.u8() & 1 == 0 {
        let text = input.rest_text();
        match from_json_lines(&text) {
            Ok(trace) => {
                check_round_trip(&trace);
                check_replay(&trace, &ReplayConfig::default());
            }
            Err(e) => {
                let lines = text.lines().count();
                assert!(
                    (1..=lines).contains(&e.line),
                    "error on line {} of a {lines}-line text: {e}",
                    e.line
                );
                assert!(!e.message.is_empty());
            }
        }
    } else {
        let config = config(&mut input);
        let trace = events(&mut input);
        check_round_trip(&trace);
        check_replay(&trace, &config);
    }
}

fn config(input: &mut Input<'_>) -> ReplayConfig {
    let flags = input.u8();
    let capacity = if flags & 1 == 0 {
        usize::MAX
    } else {
        input.size()
    };
    let leading_bits = if flags & 2 == 0 {
        u32::from(input.u8() % 8)
    } else {
        u32::from(input.u8())
    };
    let mut policy = Policy::default();
    if flags & 4 != 0 {
        policy.held_bytes_cap = Some(input.size());
    }
    if flags & 8 != 0 {
        policy.larger_bins = u32::from(input.u8() % 8);
    }
    if flags & 16 != 0 {
        policy.idle_release_after = Some(u64::from(input.u8()));
    }
    if flags & 32 != 0 {
        policy.managed_bytes_limit = Some(input.size());
    }
    if flags & 64 != 0 {
        policy.oom_mode = OomMode::FreeAllRetryOnce;
    }
    policy.eviction = match input.u8() % 3 {
        0 => Eviction::LargestBinFirst,
        1 => Eviction::FullestBinFirst,
        _ => Eviction::LeastRecentlyUsedBin,
    };
    policy.shared_bins_only = flags & 128 != 0;
    ReplayConfig {
        capacity,
        leading_bits,
        policy,
        timeline: false,
    }
}

fn events(input: &mut Input<'_>) -> Vec<TraceEvent> {
    let mut trace = Vec::new();
    let mut next_id = 0u64;
    while !input.is_empty() && trace.len() < 512 {
        let op = input.u8();
        if op & 1 == 0 {
            let size = if op & 2 == 0 {
                input.small(1 << 20)
            } else {
                input.size()
            };
            trace.push(TraceEvent::Alloc { id: next_id, size });
            next_id += 1;
        } else {
            // Mostly a recent id; sometimes one never allocated (or freed twice).
            let back = u64::from(input.u8() % 8);
            let id = next_id.wrapping_sub(back + 1);
            trace.push(TraceEvent::Free { id });
        }
    }
    trace
}

/// JSON lines written and read back give the same events.
///
/// # Panics
///
/// When they do not.
pub fn check_round_trip(trace: &[TraceEvent]) {
    let text = to_json_lines(trace);
    assert_eq!(text.lines().count(), trace.len());
    let back = from_json_lines(&text).expect("to_json_lines output parses");
    assert_eq!(back, trace, "JSON lines round trip");
}

/// The replay properties of the module docs.
///
/// # Panics
///
/// When one does not hold.
pub fn check_replay(trace: &[TraceEvent], config: &ReplayConfig) {
    let report = match replay(trace, config) {
        Ok(r) => {
            assert!(config.leading_bits <= MAX_LEADING_BITS);
            r
        }
        Err(e) => {
            assert!(config.leading_bits > MAX_LEADING_BITS, "{e}");
            assert_eq!(e.0, config.leading_bits);
            return;
        }
    };
    let allocs = trace
        .iter()
        .filter(|e| matches!(e, TraceEvent::Alloc { .. }))
        .count() as u64;
    assert_eq!(report.requests, allocs);
    assert!(
        report.hits + report.failures <= report.requests,
        "{report:?}"
    );
    assert!(
        report.hits + report.upstream_allocations + report.failures >= report.requests,
        "a request served from nowhere: {report:?}"
    );
    assert!(
        report.peak_active_bytes <= report.peak_managed_bytes,
        "{report:?}"
    );
    assert!(
        report.peak_held_bytes <= report.peak_managed_bytes,
        "{report:?}"
    );
    assert!(report.peak_managed_bytes <= config.capacity, "{report:?}");
    if let Some(limit) = config.policy.managed_bytes_limit {
        assert!(
            report.peak_managed_bytes <= limit,
            "{report:?} over {limit}"
        );
    }
    let plain = config.capacity == usize::MAX
        && config.policy.managed_bytes_limit.is_none()
        && trace.iter().all(|e| match e {
            TraceEvent::Alloc { size, .. } => *size < 1 << 48,
            TraceEvent::Free { .. } => true,
        });
    if plain {
        assert_eq!(report.failures, 0, "{report:?}");
    }
    let with_timeline = ReplayConfig {
        timeline: true,
        ..*config
    };
    let mut again = replay(trace, &with_timeline).expect("replayed once already");
    let timeline = std::mem::take(&mut again.timeline);
    assert_eq!(again, report, "replay is deterministic");
    assert_eq!(timeline.len(), trace.len());
    for p in &timeline {
        let used = p.held_bytes.checked_add(p.active_bytes);
        assert!(
            used.is_some_and(|u| u <= p.managed_bytes),
            "held + active > managed: {p:?}"
        );
    }
}
