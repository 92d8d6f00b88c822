//! `cargo xtask ci`: everything CI checks, in order, stopping at the first failure.

use crate::matrix;
use crate::util::{self, Result, StepLog};

/// fmt check, clippy and docs with warnings denied, host tests, then the device matrix.
pub(crate) fn run() -> Result {
    let mut log = StepLog::new();
    // Always (idempotent, seconds when done): CI must test all three CPU platforms, not just whichever
    // happened to be registered already.
    log.step("cargo xtask setup", || {
        crate::setup::run().map(|()| "ok".into())
    })?;
    log.step("cargo fmt --check", || {
        util::run(util::cargo().args(["fmt", "--all", "--check"])).map(|()| "ok".into())
    })?;
    log.step("clippy (default features)", || {
        util::run(util::cargo().args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ]))
        .map(|()| "ok".into())
    })?;
    log.step("clippy (all features)", || {
        util::run(util::cargo().args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--all-features",
            "--",
            "-D",
            "warnings",
        ]))
        .map(|()| "ok".into())
    })?;
    log.step("docs -D warnings", || {
        util::run(util::cargo().env("RUSTDOCFLAGS", "-Dwarnings").args([
            "doc",
            "--workspace",
            "--no-deps",
        ]))
        .map(|()| "ok".into())
    })?;
    log.step("test-devices (host tests)", || {
        matrix::host_tests().map(|()| "ok".into())
    })?;
    log.step("test-devices (matrix)", || {
        matrix::device_matrix(&matrix::Options::default()).map(|()| "ok".into())
    })?;
    log.print("ci summary");
    Ok(())
}
