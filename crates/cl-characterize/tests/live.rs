//! Parity with PyOpenCL on the devices of this machine (feature `probe`).
//!
//! Runs `tools/pyopencl-reference` (or reads the JSON named by
//! `CL_PYOPENCL_REFERENCE_JSON`), profiles every local device, and requires every key of PyOpenCL's
//! `char_report` (all 50 bank-conflict cases included) to be identical, device by device. Where
//! PyOpenCL cannot be run (its first run installs it from PyPI) or no OpenCL platform is
//! registered, the test prints why and passes: the per-device suite in `tests/device_tests`
//! reports that case as a skip.
#![cfg(feature = "probe")]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cl_characterize::probe::{profile_selected, ProbeError, ProbeOptions};
use cl_characterize::{parity, DeviceReport};
use serde_json::Value;

fn pyopencl_reference() -> Result<Value, String> {
    if let Some(path) = std::env::var_os("CL_PYOPENCL_REFERENCE_JSON") {
        let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
        return serde_json::from_str(&text).map_err(|e| e.to_string());
    }
    let tool = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/pyopencl-reference");
    if !tool.exists() {
        return Err(format!("{} not found", tool.display()));
    }
    let out_path =
        std::env::temp_dir().join(format!("cl-characterize-pyref-{}.json", std::process::id()));
    let file = std::fs::File::create(&out_path).map_err(|e| e.to_string())?;
    let mut child = Command::new(&tool)
        .stdout(file)
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", tool.display()))?;
    // The first run installs PyOpenCL from PyPI; without network pip retries for a while.
    let deadline = Instant::now() + Duration::from_secs(300);
    let status = loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(s) => break s,
            None if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(200)),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("pyopencl-reference took over 5 minutes".into());
            }
        }
    };
    let text = std::fs::read_to_string(&out_path).unwrap_or_default();
    let _ = std::fs::remove_file(&out_path);
    if !status.success() {
        return Err(format!("pyopencl-reference failed ({status})"));
    }
    serde_json::from_str(&text).map_err(|e| format!("no JSON from pyopencl-reference: {e}"))
}

#[test]
fn local_devices_match_pyopencl_on_every_key() {
    // Under `cargo xtask test-devices` / `ci` devices are required: then "nothing to compare" is a
    // failure, not a notice.
    let required = std::env::var_os("CL_TEST_REQUIRE_DEVICES").is_some();
    let (devices, errors) = match profile_selected("", ProbeOptions::default()) {
        Ok(found) => found,
        Err(e @ (ProbeError::Platforms(_) | ProbeError::Select(_))) => {
            assert!(!required, "no OpenCL device ({e}); nothing compared");
            eprintln!("NOTICE: no OpenCL device ({e}); nothing compared");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    assert!(errors.is_empty(), "{errors:?}");
    let reference = match pyopencl_reference() {
        Ok(v) => v,
        Err(e) => {
            eprintln!("NOTICE: PyOpenCL reference unavailable ({e}); nothing compared");
            return;
        }
    };
    let reports: Vec<DeviceReport> = devices
        .iter()
        .map(|d| DeviceReport::new(&d.profile))
        .collect();
    let p = parity::compare(&reports, &reference).unwrap();
    eprintln!("{}", p.to_text());
    assert_eq!(p.devices.len(), devices.len(), "{}", p.to_text());
    for d in &p.devices {
        assert!(d.is_identical(), "{}", p.to_text());
        assert_eq!(d.matched.len(), 79);
    }
}
