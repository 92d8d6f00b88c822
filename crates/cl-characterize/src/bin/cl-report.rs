//! `cl-report`: the device report. For every OpenCL device, its facts and every
//! `pyopencl.characterize` result (plus the queried alternatives and PyOpenCL's warnings) as a
//! readable table; with `--json PATH` the same as JSON, whose `char` objects use the keys of
//! PyOpenCL's `pyopencl_probe.py`.
//!
//! ```text
//! cl-report [--json PATH] [--compare PYOPENCL.json] [--no-kernel-probes]
//! ```
//!
//! - `--json PATH`: write the report as JSON (`-` for stdout, then the table goes to stderr).
//! - `--compare FILE`: compare with the output of `../shared/tools/pyopencl-reference` and print
//!   which keys are identical per device (exit status 3 on any difference).
//! - `--no-kernel-probes`: do not build PyOpenCL's two probe kernels.
//!
//! Exit status: 0 on success, 1 when no platform could be listed, 2 on bad arguments, 3 when
//! `--compare` found a difference.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use cl_characterize::parity;
use cl_characterize::probe::{self, ProbeOptions};
use cl_characterize::DeviceReport;
use serde_json::{json, Value};

struct Args {
    json: Option<PathBuf>,
    compare: Option<PathBuf>,
    options: ProbeOptions,
}

const USAGE: &str =
    "usage: cl-report [--json PATH] [--compare PYOPENCL_REFERENCE.json] [--no-kernel-probes]";

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        json: None,
        compare: None,
        options: ProbeOptions::default(),
    };
    let mut it = std::env::args_os().skip(1);
    while let Some(a) = it.next() {
        match a.to_str() {
            Some("--json") => {
                args.json = Some(it.next().ok_or("--json needs a path")?.into());
            }
            Some("--compare") => {
                args.compare = Some(it.next().ok_or("--compare needs a path")?.into());
            }
            Some("--no-kernel-probes") => args.options.kernel_probes = false,
            Some("-h" | "--help") => return Err(String::new()),
            _ => return Err(format!("unknown argument {a:?}")),
        }
    }
    Ok(args)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("cl-report: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let to_stdout_json = args.json.as_deref().is_some_and(|p| p.as_os_str() == "-");
    let mut table_out: Box<dyn Write> = if to_stdout_json {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    };

    let (devices, errors) = match probe::profile_all(args.options) {
        Ok(x) => x,
        Err(e) => {
            eprintln!(
                "cl-report: no OpenCL platform could be listed: clGetPlatformIDs failed: {e}"
            );
            eprintln!("cl-report: register a runtime first (cargo xtask setup installs PoCL, Oclgrind and the Intel CPU runtime)");
            return ExitCode::from(1);
        }
    };

    let mut reports = Vec::new();
    let mut json_devices = Vec::new();
    for d in &devices {
        let report = DeviceReport::new(&d.profile);
        let _ = writeln!(
            table_out,
            "== [{}/{}] {} / {} ==",
            d.platform_index, d.device_index, d.profile.platform.name, d.profile.name
        );
        let _ = write!(table_out, "{}", report.to_table());
        for n in &d.notes {
            let _ = writeln!(table_out, "  note: {n}");
        }
        let _ = writeln!(table_out);
        let mut v = serde_json::to_value(&report).unwrap_or(Value::Null);
        if let Some(obj) = v.as_object_mut() {
            obj.insert("platform_index".into(), json!(d.platform_index));
            obj.insert("device_index".into(), json!(d.device_index));
            obj.insert("notes".into(), json!(d.notes));
        }
        json_devices.push(v);
        reports.push(report);
    }
    for e in &errors {
        let _ = writeln!(table_out, "error: {e}");
    }
    if devices.is_empty() {
        let _ = writeln!(table_out, "no OpenCL devices found");
    }

    let mut status = ExitCode::SUCCESS;
    let mut parity_json = Value::Null;
    if let Some(path) = &args.compare {
        match std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str::<Value>(&t).map_err(|e| e.to_string()))
            .and_then(|v| parity::compare(&reports, &v))
        {
            Ok(p) => {
                let _ = writeln!(table_out, "== parity with PyOpenCL ({}) ==", path.display());
                let _ = write!(table_out, "{}", p.to_text());
                let identical = p.devices.iter().all(parity::DeviceParity::is_identical);
                if !identical {
                    status = ExitCode::from(3);
                }
                parity_json = json!(p
                    .devices
                    .iter()
                    .map(|d| json!({
                        "platform": d.platform,
                        "device": d.device,
                        "matched": d.matched.len(),
                        "mismatched": d.mismatched.iter().map(|(k, a, b)| json!({"key": k, "ours": a, "pyopencl": b})).collect::<Vec<_>>(),
                    }))
                    .collect::<Vec<_>>());
            }
            Err(e) => {
                eprintln!("cl-report: cannot compare with {}: {e}", path.display());
                status = ExitCode::from(2);
            }
        }
    }

    if let Some(path) = &args.json {
        let doc = json!({
            "tool": "cl-report",
            "cl_characterize": env!("CARGO_PKG_VERSION"),
            "devices": json_devices,
            "errors": errors,
            "parity": parity_json,
        });
        let text = match serde_json::to_string_pretty(&doc) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("cl-report: cannot serialize the report: {e}");
                return ExitCode::from(1);
            }
        };
        let written = if to_stdout_json {
            writeln!(std::io::stdout(), "{text}").map_err(|e| e.to_string())
        } else {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                let _ = std::fs::create_dir_all(dir);
            }
            std::fs::write(path, text + "\n").map_err(|e| e.to_string())
        };
        match written {
            Ok(()) if !to_stdout_json => {
                let _ = writeln!(table_out, "wrote {}", path.display());
            }
            Ok(()) => {}
            Err(e) => {
                eprintln!("cl-report: cannot write {}: {e}", path.display());
                return ExitCode::from(1);
            }
        }
    }
    status
}
