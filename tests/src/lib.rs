//! The device test harness: every device test runs once per selected OpenCL device.
//!
//! Modelled on wgpu's per-adapter test suite and PyOpenCL's `pytest_generate_tests_for_pyopencl`:
//!
//! | concept | PyOpenCL | here |
//! | --- | --- | --- |
//! | a test run per device | `pytest_generate_tests_for_pyopencl` | a function registered beside itself with [`device_test!`] |
//! | device selection | `PYOPENCL_TEST` | `CL_TEST` (falls back to `PYOPENCL_TEST`), same grammar, via `cl_mem::select` |
//! | fresh context per test | `ctx_factory()` | [`TestDevice::context`], [`TestDevice::queue`] |
//! | feature missing | `pytest.skip(reason)` | `Err(`[`skip`]`(reason))` |
//! | known driver bug | `pytest.mark.xfail` | an [`Expectation`] in the test's `device_test!`, linked to `docs/DEVICES.md` |
//!
//! Results are named `[platform/device] suite::test`: the suite is the first module under
//! `tests/device_tests/` (`buffers` for both `buffers/creation.rs` and `buffers/bad_input.rs`), the
//! test its function's name. Suites run in alphabetical order, `harness` first and `soak` last
//! ([`SUITE_ORDER`]); a suite's files in alphabetical order; each file's tests in source order.
//! A test passes by returning `Ok(())`; it fails by
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
pub use expectations::Expectation;
pub use outcome::{eventually, fail, skip, skip_unless, Outcome, TestError, TestResult};
pub use runner::leaks_deliberately;

#[doc(hidden)]
pub use inventory;

/// One device test, run once per selected device: made by [`device_test!`] beside its function.
#[derive(Debug, Clone, Copy)]
pub struct DeviceTest {
    /// `module_path!()` where it was registered (`device_tests::buffers::creation`); its first
    /// module below the crate is the suite.
    pub module: &'static str,
    /// The function's name, saying the behaviour (`read_after_write_roundtrips`); results show
    /// it as `suite::name`.
    pub name: &'static str,
    /// The registration's line: tests of a file run in source order.
    pub line: u32,
    /// The test body.
    pub run: fn(&TestDevice) -> TestResult,
    /// Known driver bugs that make it fail, each linked to its `docs/DEVICES.md` section.
    pub expected: &'static [Expectation],
}

impl DeviceTest {
    /// The fields [`device_test!`] does not set.
    pub const DEFAULT: DeviceTest = DeviceTest {
        module: "",
        name: "",
        line: 0,
        run: |_| Ok(()),
        expected: &[],
    };

    /// The suite: the first module of [`DeviceTest::module`] below the crate.
    pub fn suite(&self) -> &'static str {
        self.module.split("::").nth(1).unwrap_or(self.module)
    }

    /// The file's module below the suite (`""` for the suite's own file), which orders files.
    fn file(&self) -> &'static str {
        self.module.splitn(3, "::").nth(2).unwrap_or("")
    }

    /// `suite::name`, as results, filters and `--exact` name it.
    pub fn id(&self) -> String {
        format!("{}::{}", self.suite(), self.name)
    }
}

inventory::collect!(DeviceTest);

/// Registers the device test `f` (a `fn(&TestDevice) -> TestResult` in scope), optionally with
/// its known driver bugs. Write it just above the function's doc comment:
///
/// ```ignore
/// device_test!(fill_every_pattern_size);
/// /// Every pattern size of the spec fills the buffer.
/// fn fill_every_pattern_size(dev: &TestDevice) -> TestResult { .. }
///
/// device_test!(
///     marker_waits_for_user_event,
///     expected = &[Expectation { platform: "nvidia", version: "580.", .. }]
/// );
/// ```
#[macro_export]
macro_rules! device_test {
    ($f:ident $(,)?) => {
        $crate::device_test!($f, expected = &[]);
    };
    ($f:ident, expected = $expected:expr $(,)?) => {
        $crate::inventory::submit! {
            $crate::DeviceTest {
                module: ::core::module_path!(),
                name: ::core::stringify!($f),
                line: ::core::line!(),
                run: $f,
                expected: $expected,
            }
        }
    };
}

/// The run order of suites named here; any other suite runs between `harness` and `soak`, in
/// alphabetical order. `harness` checks the plumbing every other suite relies on; `soak` is the
/// longest and runs where nothing else is left to report.
pub const SUITE_ORDER: (&[&str], &[&str]) = (&["harness"], &["soak"]);

/// Every registered test in run order: by suite ([`SUITE_ORDER`]), file, then line.
pub fn registered() -> Vec<DeviceTest> {
    let mut all: Vec<DeviceTest> = inventory::iter::<DeviceTest>().copied().collect();
    sort_in_run_order(&mut all);
    all
}

/// Sorts by suite ([`SUITE_ORDER`], then alphabetically), file, then line.
fn sort_in_run_order(tests: &mut [DeviceTest]) {
    tests.sort_by_key(|t| (suite_rank(t.suite()), t.suite(), t.file(), t.line));
}

fn suite_rank(suite: &str) -> u8 {
    let (first, last) = SUITE_ORDER;
    if first.contains(&suite) {
        0
    } else if last.contains(&suite) {
        2
    } else {
        1
    }
}

/// Runs every registered test on the selected devices and returns the process exit code: call it
/// from the `device_tests` binary's `main`.
///
/// Exit codes: 0 all passed (or only skips and expected failures), 101 a failure or an unexpected
/// pass, 2 bad arguments, a selection error or a bad registration (two tests of one name, an
/// expectation without its `docs/DEVICES.md` section), 1 no device while
/// `CL_TEST_REQUIRE_DEVICES=1`.
pub fn main() -> std::process::ExitCode {
    runner::main(&registered())
}

#[cfg(test)]
mod tidy {
    use std::path::Path;

    /// Every function of a suite file that takes a `&TestDevice` and returns a `TestResult` is
    /// registered with `device_test!` (or the faults suite's `scenario!`) in the same file: one
    /// without it would silently never run. Helpers that take more arguments or return another
    /// type are not tests (a guard such as soak's `skip_on_oclgrind` returns
    /// `Result<(), TestError>`, the same type, spelt so as not to read as a test).
    #[test]
    fn every_test_function_is_registered() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/device_tests");
        let mut files = Vec::new();
        walk(Path::new(dir), &mut files);
        let mut tests = 0;
        for path in files {
            let text = std::fs::read_to_string(&path).expect("suite file");
            let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
            let mut rest = flat.as_str();
            while let Some(i) = rest.find("fn ") {
                rest = &rest[i + 3..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let sig = rest[name.len()..].split('{').next().unwrap_or("");
                let args = sig.trim_start_matches('(').split(')').next().unwrap_or("");
                let is_test = sig.starts_with('(')
                    && args.matches(':').count() == 1
                    && args
                        .trim_end_matches(',')
                        .trim_end()
                        .ends_with("&TestDevice")
                    && sig.trim_end().ends_with("-> TestResult");
                if !is_test {
                    continue;
                }
                tests += 1;
                assert!(
                    text.contains(&format!("device_test!({name}"))
                        || text.contains(&format!("device_test!(\n    {name}"))
                        || flat.contains(&format!("device_test!( {name}"))
                        || flat.contains(&format!("scenario!({name}"))
                        || flat.contains(&format!("scenario!( {name}")),
                    "{}: `fn {name}` is not registered: add `device_test!({name});` above it",
                    path.display()
                );
            }
        }
        assert!(
            tests > 200,
            "only {tests} device test functions found in {dir}"
        );
    }

    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("device_tests/") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
}
