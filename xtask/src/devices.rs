//! `cargo xtask devices`: the OpenCL platforms and devices found, with versions.
//!
//! Prefers `cl-tests`' `cl-devices` binary (which reads them through cl-mem); when that cannot be built or
//! run (no libOpenCL to link against, a crate mid-edit) it falls back to parsing `clinfo --raw`.

use std::process::Command;

use crate::util::{self, Result};

/// Prints the platforms and devices.
pub(crate) fn run() -> Result {
    let mut cmd = util::cargo();
    cmd.args(["run", "--quiet", "-p", "cl-tests", "--bin", "cl-devices"]);
    match util::run(&mut cmd) {
        Ok(()) => Ok(()),
        Err(e) => {
            eprintln!("cl-devices did not run ({e}); falling back to clinfo");
            clinfo_fallback()
        }
    }
}

fn clinfo_fallback() -> Result {
    let raw = util::output(Command::new("clinfo").arg("--raw")).ok_or(
        "`clinfo --raw` failed: run `cargo xtask setup` to install clinfo and the runtimes",
    )?;
    let field = |l: &str, key: &str| -> Option<String> {
        let rest = l.trim_start();
        let rest = match rest.strip_prefix('[') {
            Some(r) => r.split_once(']').map(|(_, r)| r.trim_start())?,
            None => rest,
        };
        rest.strip_prefix(key).map(|v| v.trim().to_owned())
    };
    let mut n = 0usize;
    for l in raw.lines() {
        if l.starts_with("  CL_PLATFORM_NAME") {
            if let Some(v) = field(l, "CL_PLATFORM_NAME") {
                println!("platform {n}: {v}");
                n += 1;
            }
        } else if let Some(v) = field(l, "CL_PLATFORM_VERSION").filter(|_| l.starts_with("  ")) {
            println!("  version: {v}");
        } else if let Some(v) = field(l, "CL_DEVICE_NAME") {
            println!("  device: {v}");
        } else if let Some(v) = field(l, "CL_DEVICE_VERSION") {
            println!("    version: {v}");
        } else if let Some(v) = field(l, "CL_DRIVER_VERSION") {
            println!("    driver: {v}");
        }
    }
    if n == 0 {
        println!("no OpenCL platform found: run `cargo xtask setup`");
    }
    Ok(())
}
