//! `cargo xtask devices`: the OpenCL platforms and devices found, with versions.
//!
//! Prefers `cl-tests`' `cl-devices` binary (which reads them through cl-mem); when that cannot be built or
//! run (no libOpenCL to link against, a crate mid-edit) it falls back to parsing `clinfo --raw`.

use std::process::Command;

use crate::util::{self, Result};

/// Prints the platforms and devices; `--clinfo` skips the cl-devices binary.
pub(crate) fn run(args: &[String]) -> Result {
    match args.first().map(String::as_str) {
        None => {}
        Some("--clinfo") => return clinfo_fallback(),
        Some(a) => {
            return Err(format!("devices: unexpected argument `{a}` (only --clinfo)").into())
        }
    }
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
    print!("{}", summarize_clinfo_raw(&raw));
    Ok(())
}

/// Platforms and devices from `clinfo --raw`: a summary block of unprefixed `CL_PLATFORM_*` lines, then
/// per platform `[TAG/*] CL_PLATFORM_NAME` followed by `[TAG/n] CL_DEVICE_*` lines.
fn summarize_clinfo_raw(raw: &str) -> String {
    let mut versions = Vec::new();
    let mut out = String::new();
    let mut platform = 0usize;
    for l in raw.lines() {
        let Some(rest) = l.strip_prefix('[') else {
            if let Some(v) = l.trim_start().strip_prefix("CL_PLATFORM_VERSION") {
                versions.push(v.trim().to_owned());
            }
            continue;
        };
        let Some((tag, body)) = rest.split_once(']') else {
            continue;
        };
        let body = body.trim_start();
        let (key, value) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
        let value = value.trim();
        match key {
            "CL_PLATFORM_NAME" if tag.ends_with("/*") => {
                out.push_str(&format!("platform {platform}: {value}\n"));
                if let Some(v) = versions.get(platform) {
                    out.push_str(&format!("  version: {v}\n"));
                }
                platform += 1;
            }
            "CL_DEVICE_NAME" => out.push_str(&format!(
                "  device {}: {value}\n",
                tag.rsplit('/').next().unwrap_or("?")
            )),
            "CL_DEVICE_VERSION" => out.push_str(&format!("    version: {value}\n")),
            "CL_DRIVER_VERSION" => out.push_str(&format!("    driver:  {value}\n")),
            _ => {}
        }
    }
    if platform == 0 {
        out.push_str("no OpenCL platform found: run `cargo xtask setup`\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clinfo_raw_is_grouped_by_platform() {
        let raw =
            "  CL_PLATFORM_NAME   Oclgrind\n  CL_PLATFORM_VERSION   OpenCL 1.2 (Oclgrind 21.10)\n\
                   [oclg/*]   CL_PLATFORM_NAME   Oclgrind\n\
                   [oclg/0]   CL_DEVICE_NAME   Oclgrind Simulator\n\
                   [oclg/0]   CL_DEVICE_VERSION   OpenCL 1.2 (Oclgrind 21.10)\n\
                   [oclg/0]   CL_DRIVER_VERSION   Oclgrind 21.10\n";
        assert_eq!(
            summarize_clinfo_raw(raw),
            "platform 0: Oclgrind\n  version: OpenCL 1.2 (Oclgrind 21.10)\n  device 0: Oclgrind Simulator\n    \
             version: OpenCL 1.2 (Oclgrind 21.10)\n    driver:  Oclgrind 21.10\n"
        );
        assert!(summarize_clinfo_raw("").starts_with("no OpenCL platform"));
    }
}
