//! `cargo xtask ci`: everything CI checks. Setup must succeed first; after it every check runs even when
//! an earlier one failed (one CI run shows every problem), and the command fails at the end if any did.

use crate::matrix;
use crate::util::{self, Result, StepLog};

/// One CI check: its name and what runs it.
type Check<'a> = (&'a str, Box<dyn FnOnce() -> Result<String>>);

fn cargo_step(args: &[&str], rustdocflags: bool) -> Result<String> {
    let mut cmd = util::cargo();
    if rustdocflags {
        cmd.env("RUSTDOCFLAGS", "-Dwarnings");
    }
    util::run(cmd.args(args)).map(|()| "ok".into())
}

/// Setup, fmt check, clippy and docs with warnings denied, host tests, then the device matrix.
pub(crate) fn run() -> Result {
    let mut log = StepLog::new();
    // Always (idempotent, seconds when done): CI must test all three CPU platforms, not just whichever
    // happened to be registered already.
    log.step("cargo xtask setup", || {
        crate::setup::run().map(|()| "ok".into())
    })?;
    let clippy = [
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ];
    let clippy_all = [
        "clippy",
        "--workspace",
        "--all-targets",
        "--all-features",
        "--",
        "-D",
        "warnings",
    ];
    let checks: Vec<Check<'_>> = vec![
        (
            "cargo fmt --check",
            Box::new(|| cargo_step(&["fmt", "--all", "--check"], false)),
        ),
        (
            "clippy (default features)",
            Box::new(move || cargo_step(&clippy, false)),
        ),
        (
            "clippy (all features)",
            Box::new(move || cargo_step(&clippy_all, false)),
        ),
        (
            "docs -D warnings",
            Box::new(|| cargo_step(&["doc", "--workspace", "--no-deps"], true)),
        ),
        (
            "test-devices (host tests)",
            Box::new(|| matrix::host_tests().map(|()| "ok".into())),
        ),
        (
            "test-devices (matrix)",
            Box::new(|| matrix::device_matrix(&matrix::Options::default()).map(|()| "ok".into())),
        ),
        (
            "examples on every device",
            Box::new(|| crate::examples::run().map(|()| "ok".into())),
        ),
    ];
    let mut failed = Vec::new();
    for (name, check) in checks {
        if log.step_continue(name, check).is_err() {
            failed.push(name);
        }
    }
    log.print("ci summary");
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("ci failed: {}", failed.join(", ")).into())
    }
}
