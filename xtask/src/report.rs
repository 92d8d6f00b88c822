//! `cargo xtask report`: the device characterization report of `cl-characterize`'s `cl-report` binary,
//! written to `target/report.json`; falls back to `cargo xtask devices` while that binary does not exist.

use crate::util::{self, Result};

/// Runs setup when no platform is present, then the report (extra args go to `cl-report`).
pub(crate) fn run(args: &[String]) -> Result {
    crate::setup::ensure_platform()?;
    if !report_binary_exists() {
        println!("cl-characterize has no `cl-report` binary yet: listing devices instead");
        return crate::devices::run(&[]);
    }
    let mut cmd = util::cargo();
    cmd.args([
        "run",
        "--release",
        "-p",
        "cl-characterize",
        "--features",
        "probe",
        "--bin",
        "cl-report",
        "--",
    ]);
    if args.is_empty() {
        cmd.args(["--json", "target/report.json"]);
    } else {
        cmd.args(args);
    }
    util::run(&mut cmd)
}

/// Whether `cl-characterize` has the `cl-report` binary's source (declared with
/// `required-features = ["probe"]`).
pub(crate) fn report_binary_exists() -> bool {
    let dir = util::root().join("crates/cl-characterize");
    dir.join("src/bin/cl-report.rs").is_file() || dir.join("src/bin/cl-report/main.rs").is_file()
}
