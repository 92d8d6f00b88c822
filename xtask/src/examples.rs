//! `cargo xtask examples`: builds the user-facing examples and runs each once per device (in its own
//! process, `CL_TEST=<platform>:<device>`, which `cl_mem::create_some_context` honours), plus the
//! device-independent ones once. A failing or hanging example fails CI: the examples are the first
//! code a new user runs.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::matrix;
use crate::util::{self, Ended, Result};

/// Examples run on every device: (package, example, cargo features).
pub(crate) const PER_DEVICE: &[(&str, &str, &str)] = &[
    ("cl-pool", "quick_start", ""),
    ("cl-pool", "tracing", ""),
    ("cl-mem", "image_blur", ""),
    ("cl-mem", "svm", ""),
    ("cl-mem", "async_read", ""),
    ("cl-mem", "pyopencl_demo", ""),
    ("cl-mem", "pyopencl_transpose", ""),
    ("cl-mem", "pyopencl_svm", ""),
    ("cl-mem", "pyopencl_image_filters", ""),
    // Prints the typed refusal where there is no CUDA or no external memory (every CPU runtime).
    ("cl-mem", "cuda_interop", "cuda"),
];

/// Examples that look at every device themselves: run once.
const ONCE: &[(&str, &str, &str)] = &[("cl-characterize", "characterize", "probe")];

/// One example's limit: the slowest device (Oclgrind, a simulator) takes seconds.
const LIMIT: Duration = Duration::from_secs(180);

/// Builds one example (release for the GPU bundle) and returns its executable.
pub(crate) fn build(
    package: &str,
    example: &str,
    features: &str,
    release: bool,
) -> Result<PathBuf> {
    let mut cmd = util::cargo();
    cmd.args([
        "build",
        "-p",
        package,
        "--example",
        example,
        "--message-format=json-render-diagnostics",
    ]);
    if release {
        cmd.arg("--release");
    }
    if !features.is_empty() {
        cmd.args(["--features", features]);
    }
    matrix::executable(&mut cmd, example)
}

fn run_one(bin: &PathBuf, label: &str, selector: Option<&str>) -> Result<Duration> {
    let mut cmd = Command::new(bin);
    if let Some(sel) = selector {
        // CL_CTX would win over CL_TEST in create_some_context: every run would use its device.
        cmd.env("CL_TEST", sel).env_remove("CL_CTX");
    }
    println!(
        "  $ {}{}",
        selector
            .map(|s| format!("CL_TEST={s} "))
            .unwrap_or_default(),
        bin.display()
    );
    let start = Instant::now();
    match util::run_with_timeout(&mut cmd, LIMIT)? {
        Ended::Exited(s) if s.success() => Ok(start.elapsed()),
        Ended::Exited(s) => Err(format!("example {label} failed ({s})").into()),
        Ended::TimedOut => Err(format!("example {label} ran past {}", util::secs(LIMIT)).into()),
    }
}

/// Builds and runs every example; an error names each one that failed.
pub(crate) fn run() -> Result {
    let devices = matrix::selected_devices(None)?;
    let mut failed = Vec::new();
    let mut ran = 0usize;
    for &(package, example, features) in PER_DEVICE {
        let bin = build(package, example, features, false)?;
        for (p, d, name) in &devices {
            let label = format!("{example} on {name}");
            match run_one(&bin, &label, Some(&format!("{p}:{d}"))) {
                Ok(t) => println!("  ok: {label} ({})", util::secs(t)),
                Err(e) => failed.push(e.to_string()),
            }
            ran += 1;
        }
    }
    for &(package, example, features) in ONCE {
        let bin = build(package, example, features, false)?;
        match run_one(&bin, example, None) {
            Ok(t) => println!("  ok: {example} ({})", util::secs(t)),
            Err(e) => failed.push(e.to_string()),
        }
        ran += 1;
    }
    println!(
        "examples: {} passed, {} failed",
        ran - failed.len(),
        failed.len()
    );
    if failed.is_empty() {
        Ok(())
    } else {
        Err(failed.join("; ").into())
    }
}
