//! The device test harness: every device test runs once per selected OpenCL device.
//!
//! Modelled on wgpu's per-adapter test suite and PyOpenCL's `pytest_generate_tests_for_pyopencl`:
//!
//! | concept | PyOpenCL | here |
//! | --- | --- | --- |
//! | a test run per device | `pytest_generate_tests_for_pyopencl` | [`DeviceTest`], registered in `tests/device_tests/main.rs` |
//! | device selection | `PYOPENCL_TEST` | `CL_TEST` (falls back to `PYOPENCL_TEST`), same grammar, via `cl_mem::select` |
//! | fresh context per test | `ctx_factory()` | [`TestDevice::context`], [`TestDevice::queue`] |
//! | feature missing | `pytest.skip(reason)` | `Err(`[`skip`]`(reason))` |
//! | known driver bug | `pytest.mark.xfail` | an entry in [`expectations::EXPECTATIONS`] linked to `docs/DEVICES.md` |
//!
//! Results are named `[platform/device] suite::test`. A test passes by returning `Ok(())`; it fails by
//! returning an error (any [`std::error::Error`] converts with `?`, or [`fail`]) or by panicking (an
//! `assert!`: panics are caught per test); it is skipped *with a reason* through [`skip`].
//!
//! The `device_tests` binary (`harness = false`) takes libtest's usual arguments (a name filter, `--exact`,
//! `--skip`, `--list`, `-q`) plus `--list-devices` and `--json PATH`; see `docs/TESTING.md`. Plain
//! `cargo test` runs it on every device present; with none it prints a loud notice and passes, unless
//! `CL_TEST_REQUIRE_DEVICES=1` (which `cargo xtask test-devices` sets) makes that a failure.

mod args;
mod device;
pub mod expectations;
mod outcome;
mod runner;

pub use args::Args;
pub use device::{SelectionError, TestDevice};
pub use outcome::{eventually, fail, skip, skip_unless, Outcome, TestError, TestResult};
pub use runner::leaks_deliberately;

/// One device test: run once per selected device.
#[derive(Debug, Clone, Copy)]
pub struct DeviceTest {
    /// The test's name within its suite, saying the behaviour (`read_after_write_roundtrips`); results
    /// show it as `suite::name`.
    pub name: &'static str,
    /// The test body.
    pub run: fn(&TestDevice) -> TestResult,
}

/// A suite: its module name and the function listing its tests.
pub type Suite = (&'static str, fn() -> Vec<DeviceTest>);

/// Runs the suites on the selected devices and returns the process exit code: call it from the
/// `device_tests` binary's `main`.
///
/// Exit codes: 0 all passed (or only skips and expected failures), 101 a failure or an unexpected
/// pass, 2 bad arguments or a selection error, 1 no device while `CL_TEST_REQUIRE_DEVICES=1`.
pub fn main(suites: &[Suite]) -> std::process::ExitCode {
    runner::main(suites)
}

#[cfg(test)]
mod tidy {
    /// Every suite file in `tests/device_tests/` has its `mod` line and its `SUITES` entry: a file
    /// without them would silently never run.
    #[test]
    fn every_suite_file_is_registered() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/device_tests");
        let main = std::fs::read_to_string(format!("{dir}/main.rs")).expect("device_tests/main.rs");
        let mut suites = 0;
        for entry in std::fs::read_dir(dir).expect("device_tests/") {
            let path = entry.expect("dir entry").path();
            let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
                continue;
            };
            if path.extension().is_none_or(|e| e != "rs") || stem == "main" {
                continue;
            }
            suites += 1;
            assert!(
                main.contains(&format!("mod {stem};")),
                "device_tests/main.rs lacks `mod {stem};`"
            );
            assert!(
                main.contains(&format!("(\"{stem}\", {stem}::tests)")),
                "device_tests/main.rs lacks `(\"{stem}\", {stem}::tests),` in SUITES"
            );
        }
        assert!(suites > 0, "no suite files found in {dir}");
    }
}
