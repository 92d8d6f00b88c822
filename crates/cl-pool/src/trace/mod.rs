//! Allocation traces: record a pool's requests, store them as JSON lines, and replay them against
//! a simulated upstream (`examples/support/` turns traces into SVG plots and PyTorch memory
//! snapshots, and generates RMM-shaped random ones).
//!
//! Fragmentation regressions become unit tests without a GPU: record a real workload once
//! ([`MemoryPool::start_recording`](crate::MemoryPool::start_recording)), save it with
//! [`to_json_lines`], and assert on [`replay`]'s [`ReplayReport`] under any policy.
//!
//! This module is the data (the events and their JSON lines form), which the pool records; the
//! replay is its submodule and depends on the pool, not the other way round.

mod replay;

pub use self::replay::{replay, ReplayConfig, ReplayReport, TimelinePoint};

#[cfg(feature = "serde")]
use std::fmt;

/// One event of an allocation trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "op", rename_all = "snake_case"))]
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
#[cfg(feature = "serde")]
#[derive(Debug)]
pub struct TraceParseError {
    /// 1-based line number.
    pub line: usize,
    /// What serde said.
    pub message: String,
}

#[cfg(feature = "serde")]
impl fmt::Display for TraceParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "trace line {}: {}", self.line, self.message)
    }
}

#[cfg(feature = "serde")]
impl std::error::Error for TraceParseError {}

/// Writes a trace as JSON lines (`{"op":"alloc","id":1,"size":100}` / `{"op":"free","id":1}`).
#[cfg(feature = "serde")]
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
#[cfg(feature = "serde")]
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
