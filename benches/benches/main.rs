//! The one criterion target of `cl-benches`: `cargo bench -p cl-benches` (or `cargo xtask bench`, which
//! also runs PyOpenCL's timings and writes `target/bench-report/`).
//!
//! To add benches: create `benches/benches/<topic>.rs` with `pub fn benches(c: &mut Criterion)`, then add
//! its `mod` line and its name to `criterion_group!` below. Name a group after PyOpenCL's key when one
//! exists (`raw_buffer_create_release/<bytes>` lines up with `raw_buffer_create_release_ns_<bytes>`).

// Bench modules expose `pub fn benches()` by convention; in a bench binary nothing is reachable from
// outside, so the lint would ask for `pub(crate)` in every module.
#![expect(
    unreachable_pub,
    reason = "bench modules expose `pub fn benches()` by convention"
)]
// `criterion_group!` expands to an undocumented `pub fn benches()`.
#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented pub fn"
)]
// clippy.toml's allow-unwrap-in-tests does not reach a `harness = false` target; a bench that cannot
// set up should stop with its message.
#![allow(
    clippy::unwrap_used,
    reason = "benches are test code: a failed unwrap stops with its message"
)]

use criterion::{criterion_group, criterion_main};

mod buffer;
mod enqueue;
mod pool;
mod transfer;

criterion_group!(
    benches,
    buffer::benches,
    enqueue::benches,
    pool::benches,
    transfer::benches
);
criterion_main!(benches);
