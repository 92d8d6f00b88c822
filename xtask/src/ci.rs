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

/// The published crates: everything but the `publish = false` packages.
const LIBRARY_CRATES: [&str; 4] = ["cl-raw", "cl-mem", "cl-pool", "cl-characterize"];

/// Packages every library crate the way `cargo publish` would, verification included (each `.crate`
/// is unpacked and built, the crates depending on each other through a temporary local registry),
/// then checks that no file list holds anything under `tests/` (fixtures need the source tree and are
/// not shipped). `--allow-dirty` so a local run checks the working tree, not the last commit.
/// Verification resolves the crates.io dependencies (the index must be reachable, as for setup).
pub(crate) fn package() -> Result<String> {
    remove_stale_unpacked_crates()?;
    // A target directory of its own, emptied first: cargo takes registry crates as immutable, so it
    // would link the rlib of an earlier cl-raw 0.1.0 into today's cl-mem (seen once).
    let target = util::root().join("target/package-verify");
    if target.exists() {
        std::fs::remove_dir_all(&target)?;
    }
    let mut cmd = util::cargo();
    cmd.args(["package", "--workspace", "--allow-dirty", "--target-dir"]);
    cmd.arg(&target);
    for p in ["cl-tests", "cl-benches", "cl-props", "xtask"] {
        cmd.args(["--exclude", p]);
    }
    util::run(&mut cmd)?;
    let mut shipped = Vec::new();
    for krate in LIBRARY_CRATES {
        let list =
            util::output(util::cargo().args(["package", "--list", "--allow-dirty", "-p", krate]))
                .ok_or_else(|| format!("`cargo package --list -p {krate}` failed"))?;
        let fixtures: Vec<&str> = list.lines().filter(|l| l.starts_with("tests/")).collect();
        if !fixtures.is_empty() {
            return Err(format!("{krate} would ship test files: {}", fixtures.join(", ")).into());
        }
        shipped.push(format!("{krate} {} files", list.lines().count()));
    }
    Ok(shipped.join(", "))
}

/// Verification unpacks each `.crate` of the temporary local registry into
/// `$CARGO_HOME/registry/src/-<hash>/<name>-<version>/` and reuses that directory when it exists,
/// so a second run at an unchanged version builds the *first* run's sources (cl-mem once
/// failed against a stale cl-raw without `select`). Those directories hold only our own crates
/// (local registries are the ones whose directory name starts with `-`); removing them costs one
/// re-unpack.
fn remove_stale_unpacked_crates() -> Result {
    let home = std::env::var_os("CARGO_HOME").map_or_else(
        || std::path::PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cargo"),
        std::path::PathBuf::from,
    );
    let Ok(registries) = std::fs::read_dir(home.join("registry/src")) else {
        return Ok(());
    };
    for registry in registries.flatten() {
        if !registry.file_name().to_string_lossy().starts_with('-') {
            continue;
        }
        for unpacked in std::fs::read_dir(registry.path())?.flatten() {
            let name = unpacked.file_name().to_string_lossy().into_owned();
            if LIBRARY_CRATES
                .iter()
                .any(|c| name.strip_prefix(c).is_some_and(|v| v.starts_with('-')))
            {
                println!("  removing stale unpacked {}", unpacked.path().display());
                std::fs::remove_dir_all(unpacked.path())?;
            }
        }
    }
    Ok(())
}

/// Setup, fmt check, clippy and docs with warnings denied, the library crates without default
/// features, host tests, packaging, then the device matrix.
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
            "clippy (cl-mem, cl-pool without default features)",
            Box::new(|| {
                cargo_step(
                    &[
                        "clippy",
                        "-p",
                        "cl-mem",
                        "-p",
                        "cl-pool",
                        "--all-targets",
                        "--no-default-features",
                        "--",
                        "-D",
                        "warnings",
                    ],
                    false,
                )
            }),
        ),
        (
            "docs -D warnings",
            Box::new(|| cargo_step(&["doc", "--workspace", "--no-deps"], true)),
        ),
        (
            "test-devices (host tests)",
            Box::new(|| matrix::host_tests().map(|()| "ok".into())),
        ),
        ("cargo package (library crates)", Box::new(package)),
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
