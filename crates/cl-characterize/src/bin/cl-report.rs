//! `cl-report`: the device report. For every selected OpenCL device, its basics (compute units,
//! memory, limits, versions), its facts and every `pyopencl.characterize` result (plus the queried
//! alternatives and PyOpenCL's warnings) as a readable table; with `--json PATH` the same as JSON,
//! whose `char` objects use the keys of PyOpenCL's `pyopencl_probe.py`; with `--markdown PATH` one
//! Markdown table with the devices side by side.
//!
//! Run `cl-report --help` for the options. Exit status: 0 on success, 1 when no platform could be
//! listed or a file could not be written, 2 on bad arguments or a selector that matches nothing, 3
//! when `--compare` found a difference.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use cl_characterize::parity;
use cl_characterize::probe::{self, DeviceBasics, ProbeError, ProbeOptions, ProbedDevice};
use cl_characterize::{format_rows, DeviceReport};
use serde_json::{json, Value};

const HELP: &str = "\
cl-report: what pyopencl.characterize says about each OpenCL device, next to the device's basics

usage: cl-report [--device SELECTOR]... [-o|--json PATH] [--markdown PATH]
                 [--compare PYOPENCL_REFERENCE.json] [--no-kernel-probes]

options:
  -d, --device SELECTOR   the devices to report (repeatable; the CL_TEST / PYOPENCL_TEST grammar:
                          `port`, `intel`, `0:1`, `port:pthread;oclgrind`). Without it: CL_TEST,
                          else PYOPENCL_TEST, else every device of every platform
  -o, --json PATH         also write the report as JSON (`-`: to stdout, the table then goes to
                          stderr); `char` uses the keys of PyOpenCL's pyopencl_probe.py
      --markdown PATH     also write a Markdown report, the devices side by side in one table
      --compare FILE      compare with the output of tools/pyopencl-reference and print
                          which keys are identical per device (exit status 3 on any difference)
      --no-kernel-probes  do not build PyOpenCL's two probe kernels
  -h, --help              this text

Answers that do not apply to a device read `n/a (reason)`: the reason is PyOpenCL's.
Exit status: 0 ok, 1 no platform or a file not written, 2 bad arguments or no matching device,
3 a --compare difference.";

struct Args {
    devices: Vec<String>,
    json: Option<PathBuf>,
    markdown: Option<PathBuf>,
    compare: Option<PathBuf>,
    options: ProbeOptions,
}

/// `Ok(None)` for `--help`.
fn parse_args(args: impl IntoIterator<Item = OsString>) -> Result<Option<Args>, lexopt::Error> {
    use lexopt::prelude::*;
    let mut out = Args {
        devices: Vec::new(),
        json: None,
        markdown: None,
        compare: None,
        options: ProbeOptions::default(),
    };
    let mut parser = lexopt::Parser::from_args(args);
    while let Some(arg) = parser.next()? {
        match arg {
            Short('d') | Long("device") => out.devices.push(parser.value()?.string()?),
            Short('o') | Long("json") => out.json = Some(parser.value()?.into()),
            Long("markdown") => out.markdown = Some(parser.value()?.into()),
            Long("compare") => out.compare = Some(parser.value()?.into()),
            Long("no-kernel-probes") => out.options.kernel_probes = false,
            Short('h') | Long("help") => return Ok(None),
            _ => return Err(arg.unexpected()),
        }
    }
    Ok(Some(out))
}

/// The selector and where it came from: `--device` entries joined by `;`, else `CL_TEST`, else
/// `PYOPENCL_TEST` (blank values count as unset), else everything.
fn selector_text(devices: &[String]) -> (String, &'static str) {
    if !devices.is_empty() {
        return (devices.join(";"), "--device");
    }
    for var in ["CL_TEST", "PYOPENCL_TEST"] {
        if let Ok(v) = std::env::var(var) {
            if !v.trim().is_empty() {
                return (v, var);
            }
        }
    }
    (String::new(), "--device")
}

fn mib(bytes: u64) -> String {
    // Display only: the precision of f64 is plenty for a size in MiB.
    #[expect(clippy::cast_precision_loss, reason = "display of a byte count")]
    let m = bytes as f64 / (1024.0 * 1024.0);
    format!("{m:.0} MiB ({bytes} bytes)")
}

/// The basics rows (`[device]` section), in the table's `(label, value)` form.
fn basics_rows(d: &ProbedDevice) -> Vec<(String, String)> {
    let p = &d.profile;
    let mut rows = vec![(
        "[device]".to_owned(),
        format!("platform {} device {}", d.platform_index, d.device_index),
    )];
    let mut row = |k: &str, v: String| rows.push((k.to_owned(), v));
    let opencl_c = |b: &DeviceBasics| {
        b.opencl_c_version
            .clone()
            .unwrap_or_else(|| "n/a (CL_DEVICE_OPENCL_C_VERSION not answered)".to_owned())
    };
    row("OpenCL version", p.version.clone());
    row("driver version", p.driver_version.clone());
    match &d.basics {
        Some(b) => {
            row("OpenCL C version", opencl_c(b));
            row("compute units", b.max_compute_units.to_string());
            row("global memory", mib(b.global_mem_size));
            row("max allocation", mib(b.max_mem_alloc_size));
            row("max work-group size", b.max_work_group_size.to_string());
            row("local memory", format!("{} bytes", b.local_mem_size));
            if b.image_support {
                row(
                    "image 2D max",
                    format!("{} x {}", b.image2d_max[0], b.image2d_max[1]),
                );
                row(
                    "image 3D max",
                    format!(
                        "{} x {} x {}",
                        b.image3d_max[0], b.image3d_max[1], b.image3d_max[2]
                    ),
                );
            } else {
                row("images", "n/a (no image support)".to_owned());
            }
        }
        None => row("basics", "n/a (a query failed: see the notes)".to_owned()),
    }
    rows
}

/// One Markdown table: a row per label, a column per device. Rows are matched by section and label
/// (`driver version` is in two sections); they keep the order of their first appearance, and a row
/// another device lacks (its warnings, a collapsed conflict section) is inserted after the row that
/// precedes it there.
fn markdown(devices: &[(String, Vec<(String, String)>)]) -> String {
    // (section, label) of every row, per device.
    let keyed: Vec<Vec<((&str, &str), &str)>> = devices
        .iter()
        .map(|(_, rows)| {
            let mut section = "";
            rows.iter()
                .map(|(k, v)| {
                    if k.starts_with('[') {
                        section = k;
                    }
                    ((section, k.as_str()), v.as_str())
                })
                .collect()
        })
        .collect();
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for rows in &keyed {
        let mut after: Option<usize> = None;
        for (key, _) in rows {
            match keys.iter().position(|k| k == key) {
                Some(i) => after = Some(i),
                None => {
                    let at = after.map_or(keys.len(), |i| i + 1);
                    keys.insert(at, *key);
                    after = Some(at);
                }
            }
        }
    }
    let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let mut out = String::from("# OpenCL device report (cl-report)\n\n| |");
    for (name, _) in devices {
        let _ = write!(out, " {} |", cell(name));
    }
    out.push_str("\n| --- |");
    for _ in devices {
        out.push_str(" --- |");
    }
    out.push('\n');
    for key in &keys {
        let (_, label) = *key;
        let header = label.starts_with('[');
        if header {
            let _ = write!(out, "| **{}** |", cell(label.trim_matches(['[', ']'])));
        } else {
            let _ = write!(out, "| {} |", cell(label));
        }
        for rows in &keyed {
            let v = rows.iter().find(|(k, _)| k == key).map_or("", |(_, v)| *v);
            if header && !v.is_empty() {
                let _ = write!(out, " *{}* |", cell(v));
            } else {
                let _ = write!(out, " {} |", cell(v));
            }
        }
        out.push('\n');
    }
    out
}

fn write_file(path: &std::path::Path, text: &str) -> Result<(), String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    std::fs::write(path, text).map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args_os().skip(1)) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("cl-report: {e}\n\n{HELP}");
            return ExitCode::from(2);
        }
    };
    let to_stdout_json = args.json.as_deref().is_some_and(|p| p.as_os_str() == "-");
    let mut table_out: Box<dyn Write> = if to_stdout_json {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    };

    let (spec, source) = selector_text(&args.devices);
    let (devices, errors) = match probe::profile_selected(&spec, args.options) {
        Ok(x) => x,
        Err(ProbeError::Select(e)) => {
            eprintln!("cl-report: {source} `{spec}`: {e}");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("cl-report: no OpenCL platform could be listed: {e}");
            eprintln!("cl-report: register a runtime first (cargo xtask setup installs PoCL, Oclgrind and the Intel CPU runtime)");
            return ExitCode::from(1);
        }
    };

    let mut reports = Vec::new();
    let mut json_devices = Vec::new();
    let mut columns = Vec::new();
    for d in &devices {
        let report = DeviceReport::new(&d.profile);
        let title = format!(
            "[{}/{}] {} / {}",
            d.platform_index, d.device_index, d.profile.platform.name, d.profile.name
        );
        let _ = writeln!(table_out, "== {title} ==");
        let mut rows = basics_rows(d);
        rows.extend(report.rows());
        for n in &d.notes {
            rows.push(("note".to_owned(), n.clone()));
        }
        let _ = write!(table_out, "{}", format_rows(&rows));
        let _ = writeln!(table_out);
        let mut v = serde_json::to_value(&report).unwrap_or(Value::Null);
        if let Some(obj) = v.as_object_mut() {
            obj.insert("platform_index".into(), json!(d.platform_index));
            obj.insert("device_index".into(), json!(d.device_index));
            obj.insert("notes".into(), json!(d.notes));
            obj.insert("basics".into(), json!(d.basics));
        }
        json_devices.push(v);
        columns.push((
            format!("{} ({})", d.profile.name, d.profile.platform.name),
            rows,
        ));
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

    if let Some(path) = &args.markdown {
        match write_file(path, &markdown(&columns)) {
            Ok(()) => {
                let _ = writeln!(table_out, "wrote {}", path.display());
            }
            Err(e) => {
                eprintln!("cl-report: cannot write {}: {e}", path.display());
                return ExitCode::from(1);
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
            write_file(path, &(text + "\n"))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Option<Args>, lexopt::Error> {
        parse_args(args.iter().map(OsString::from))
    }

    #[test]
    fn devices_repeat_and_paths_parse() {
        let a = parse(&["--device", "port", "-d", "oclgrind", "-o", "r.json"])
            .unwrap()
            .unwrap();
        assert_eq!(a.devices, ["port", "oclgrind"]);
        assert_eq!(a.json, Some(PathBuf::from("r.json")));
        assert_eq!(
            selector_text(&a.devices),
            ("port;oclgrind".into(), "--device")
        );
        let a = parse(&["--json=x.json", "--markdown", "r.md", "--no-kernel-probes"])
            .unwrap()
            .unwrap();
        assert_eq!(a.json, Some(PathBuf::from("x.json")));
        assert_eq!(a.markdown, Some(PathBuf::from("r.md")));
        assert!(!a.options.kernel_probes);
    }

    #[test]
    fn help_and_bad_arguments() {
        assert!(parse(&["--help"]).unwrap().is_none());
        assert!(parse(&["-h"]).unwrap().is_none());
        assert!(parse(&["--bogus"]).is_err());
        assert!(parse(&["--device"]).is_err());
        assert!(parse(&["stray"]).is_err());
    }

    #[test]
    fn markdown_puts_devices_side_by_side() {
        let rows = |v: &[(&str, &str)]| {
            v.iter()
                .map(|(k, x)| ((*k).to_owned(), (*x).to_owned()))
                .collect::<Vec<_>>()
        };
        let md = markdown(&[
            (
                "A".into(),
                rows(&[
                    ("[facts]", ""),
                    ("x", "1"),
                    ("z", "a|b"),
                    ("[more]", ""),
                    ("x", "5"),
                ]),
            ),
            (
                "B".into(),
                rows(&[("[facts]", ""), ("x", "2"), ("y", "3"), ("z", "4")]),
            ),
        ]);
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(lines[2], "| | A | B |");
        assert_eq!(lines[4], "| **facts** |  |  |");
        assert_eq!(lines[5], "| x | 1 | 2 |");
        assert_eq!(lines[6], "| y |  | 3 |");
        assert_eq!(lines[7], "| z | a\\|b | 4 |");
        // The same label in another section is another row.
        assert_eq!(lines[8], "| **more** |  |  |");
        assert_eq!(lines[9], "| x | 5 |  |");
    }
}
