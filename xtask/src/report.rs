//! `cargo xtask report`: the device characterization report of `cl-characterize`'s `cl-report` binary,
//! written to `report.json` and `report.md` in cargo's target directory (`CARGO_TARGET_DIR`, else
//! `target/`) unless the arguments name `-o/--json` or `--markdown`; falls back to `cargo xtask
//! devices` while that binary does not exist.

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
    let named = |names: &[&str]| {
        args.iter().any(|a| {
            names
                .iter()
                .any(|n| a == n || a.starts_with(&format!("{n}=")))
        })
    };
    let target = target_dir();
    if !named(&["-o", "--json"]) {
        cmd.arg("--json").arg(target.join("report.json"));
    }
    if !named(&["--markdown"]) {
        cmd.arg("--markdown").arg(target.join("report.md"));
    }
    cmd.args(args);
    util::run(&mut cmd)
}

/// Cargo's target directory: `CARGO_TARGET_DIR` (relative to where cargo was started, as cargo
/// reads it) or the workspace's `target/`.
fn target_dir() -> std::path::PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => std::env::current_dir().unwrap_or_default().join(dir),
        None => util::root().join("target"),
    }
}

/// Whether `cl-characterize` has the `cl-report` binary's source (declared with
/// `required-features = ["probe"]`).
pub(crate) fn report_binary_exists() -> bool {
    let dir = util::root().join("crates/cl-characterize");
    dir.join("src/bin/cl-report.rs").is_file() || dir.join("src/bin/cl-report/main.rs").is_file()
}
