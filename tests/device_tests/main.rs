//! The device test matrix: every suite below runs once per selected device (`CL_TEST`, else
//! `PYOPENCL_TEST`, else all devices). See `docs/TESTING.md`.
//!
//! To add a suite: create `tests/device_tests/<suite>.rs` with `pub fn tests() -> Vec<cl_tests::DeviceTest>`,
//! then add its `mod` line (rustfmt keeps them sorted) and its line in `SUITES` (which sets the run order);
//! a host test (`cargo test -p cl-tests --lib`) fails when a suite file is not registered in both.

// Suite modules expose `pub fn tests()` by convention (docs/TESTING.md); in a binary nothing is
// reachable from outside, so the lint would ask for `pub(crate)` in every suite.
#![expect(
    unreachable_pub,
    reason = "suite modules expose `pub fn tests()` by convention"
)]
// clippy.toml's allow-unwrap-in-tests covers `cfg(test)` code only, and a `harness = false` target is not
// compiled with `--test`. A failed unwrap here is a failed test with its message (panics are caught per
// test), so unwrapping is as fine as in a `#[test]`. `allow`, not `expect`: whether any suite unwraps
// changes as suites are edited.
#![allow(
    clippy::unwrap_used,
    reason = "device tests are tests: a failed unwrap is a failed test"
)]

mod buffers;
mod characterize;
mod core;
mod edges;
mod external;
mod faults;
mod futures;
mod harness;
mod images;
mod multi_device;
mod parity;
mod pool;
mod safety;
mod soak;
mod staged;
mod svm;

/// The suites, in the order they run: `(module name, its test list)`.
const SUITES: &[cl_tests::Suite] = &[
    ("harness", harness::tests),
    ("core", core::tests),
    ("characterize", characterize::tests),
    ("pool", pool::tests),
    ("buffers", buffers::tests),
    ("svm", svm::tests),
    ("images", images::tests),
    ("safety", safety::tests),
    ("edges", edges::tests),
    ("parity", parity::tests),
    ("multi_device", multi_device::tests),
    ("staged", staged::tests),
    ("futures", futures::tests),
    ("faults", faults::tests),
    ("external", external::tests),
    ("soak", soak::tests),
];

fn main() -> std::process::ExitCode {
    cl_tests::main(SUITES)
}
