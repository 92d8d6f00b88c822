//! `cl-devices`: every OpenCL platform and device with its versions (what `cargo xtask devices` prints).
//!
//! Lives in `cl-tests` because xtask links no OpenCL. `--json` prints the same as JSON.

use std::process::ExitCode;

use cl_mem::Platform;
use serde_json::{json, Value};

fn text<T: std::fmt::Display>(r: cl_mem::Result<T>) -> String {
    r.map_or_else(|e| format!("<{e}>"), |v| v.to_string().trim().to_owned())
}

fn main() -> ExitCode {
    let as_json = std::env::args().skip(1).any(|a| a == "--json");
    let platforms = match Platform::list() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut out: Vec<Value> = Vec::new();
    if platforms.is_empty() && !as_json {
        println!("no OpenCL platform found: run `cargo xtask setup`");
    }
    for (pi, p) in platforms.iter().enumerate() {
        let (name, version) = (
            text(p.name()),
            text(p.info::<String>(cl_raw::sys::CL_PLATFORM_VERSION)),
        );
        if !as_json {
            println!("platform {pi}: {name}");
            println!("  vendor:  {}", text(p.vendor()));
            println!("  version: {version}");
        }
        let mut devices = Vec::new();
        match p.devices(cl_mem::DeviceType::ALL) {
            Ok(list) => {
                for (di, d) in list.iter().enumerate() {
                    let dev = json!({
                        "index": format!("{pi}:{di}"),
                        "name": text(d.name()),
                        "vendor": text(d.vendor()),
                        "type": text(d.device_type().map(|t| format!("{t:?}"))),
                        "version": text(d.info::<String>(cl_raw::sys::CL_DEVICE_VERSION)),
                        "driver_version": text(d.info::<String>(cl_raw::sys::CL_DRIVER_VERSION)),
                        "opencl_c_version": text(d.info::<String>(cl_raw::sys::CL_DEVICE_OPENCL_C_VERSION)),
                        "global_mem_bytes": text(d.global_mem_size()),
                        "max_alloc_bytes": text(d.max_mem_alloc_size()),
                    });
                    if !as_json {
                        println!("  device {pi}:{di}: {}", dev["name"].as_str().unwrap_or(""));
                        for k in [
                            "type",
                            "version",
                            "driver_version",
                            "opencl_c_version",
                            "global_mem_bytes",
                            "max_alloc_bytes",
                        ] {
                            println!("    {k:<17} {}", dev[k].as_str().unwrap_or(""));
                        }
                    }
                    devices.push(dev);
                }
            }
            Err(e) => {
                if !as_json {
                    println!("  devices: <{e}>");
                }
            }
        }
        out.push(json!({"index": pi, "name": name, "version": version, "devices": devices}));
    }
    if as_json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"platforms": out})).unwrap_or_default()
        );
    }
    ExitCode::SUCCESS
}
