//! The device test matrix: every registered test runs once per selected device (`CL_TEST`, else
//! `PYOPENCL_TEST`, else all devices). See `docs/TESTING.md`.
//!
//! Suites are by subject: one file, or a directory whose `mod.rs` holds the helpers its files
//! share; helpers several suites use are in `common.rs`. A test registers itself with
//! `cl_tests::device_test!(name)` just above its function; a host test
//! (`cargo test -p cl-tests --lib`) fails when a test function has no registration. To add a
//! suite, add its `mod` line below (rustfmt keeps them sorted).

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
mod common;
mod external;
mod faults;
mod futures;
mod harness;
mod images;
mod kernels;
mod maps;
mod multi_device;
mod parity;
mod pools;
mod raw_handles;
mod runtime;
mod samplers_pipes;
mod soak;
mod svm;
mod tracking;
mod transfers;

fn main() -> std::process::ExitCode {
    cl_tests::main()
}
