//! cl-characterize on live devices: the probed profile, PyOpenCL's kernel probes, and every
//! characterization result against PyOpenCL itself.
//!
//! - `matches_pyopencl_reference_output`: runs `tools/pyopencl-reference` once (or reads
//!   the JSON named by `CL_PYOPENCL_REFERENCE_JSON`) and compares every key of PyOpenCL's
//!   `char_report`, each bank-conflict case included, for this device. Skipped with the reason when
//!   PyOpenCL cannot be run (no network for its install) or does not list the device.
//! - `matches_recorded_pyopencl_values`: the values PyOpenCL gave on this device kind when the
//!   reference was written (`docs/reference/pyopencl-semantics.md` section 6.4), so the check
//!   runs even where Python is missing.
//! - the probe tests: kernel probes, version gating, vendor attributes only when advertised, and
//!   the live profile equal to the recorded one where this machine's device was recorded.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use cl_characterize::probe::{self, ProbeOptions};

/// The recorded profiles, embedded (`PROFILES`).
#[path = "../../crates/cl-characterize/tests/embedded/mod.rs"]
mod embedded;
use cl_characterize::{
    get_pocl_version, get_simd_group_size, has_coarse_grain_buffer_svm, has_fine_grain_buffer_svm,
    has_fine_grain_buffer_svm_atomics, has_fine_grain_system_svm,
    has_fine_grain_system_svm_atomics, has_src_build_cache, has_struct_arg_count_bug,
    local_memory_bank_count, reasonable_work_group_size_multiple,
    simultaneous_work_items_on_local_access, CharacterizeError, DeviceProfile, DeviceReport,
    StructArgCountBug,
};
use cl_tests::{device_test, fail, skip, TestDevice, TestResult};
use serde_json::Value;

/// Whether the profile's `CL_DEVICE_TYPE` has the CPU bit.
fn is_cpu(p: &DeviceProfile) -> bool {
    p.device_type & cl_raw::sys::CL_DEVICE_TYPE_CPU != 0
}

fn profile(t: &TestDevice) -> Result<(DeviceProfile, Vec<String>), cl_tests::TestError> {
    Ok(probe::profile(&t.device, ProbeOptions::default())?)
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from(".."), Path::to_path_buf)
}

/// PyOpenCL's own output for every device here, computed once per process.
fn pyopencl_reference() -> &'static Result<Value, String> {
    static REF: OnceLock<Result<Value, String>> = OnceLock::new();
    REF.get_or_init(|| {
        if let Some(path) = std::env::var_os("CL_PYOPENCL_REFERENCE_JSON") {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read CL_PYOPENCL_REFERENCE_JSON: {e}"))?;
            return serde_json::from_str(&text).map_err(|e| e.to_string());
        }
        let tool = std::env::var_os("PYOPENCL_REFERENCE").map_or_else(
            || workspace_root().join("tools/pyopencl-reference"),
            PathBuf::from,
        );
        if !tool.exists() {
            return Err(format!("{} not found", tool.display()));
        }
        let out = std::env::temp_dir().join(format!("cl-tests-pyref-{}.json", std::process::id()));
        let file = std::fs::File::create(&out).map_err(|e| e.to_string())?;
        let mut child = Command::new(&tool)
            .stdout(file)
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", tool.display()))?;
        // Its first run installs PyOpenCL from PyPI; give it a few minutes, then give up.
        let deadline = Instant::now() + Duration::from_secs(600);
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break s,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(200))
                }
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err("pyopencl-reference took over 10 minutes".into());
                }
                Err(e) => return Err(e.to_string()),
            }
        };
        let text = std::fs::read_to_string(&out).unwrap_or_default();
        let _ = std::fs::remove_file(&out);
        if !status.success() {
            return Err(format!(
                "pyopencl-reference failed ({status}): PyOpenCL could not be installed or run here"
            ));
        }
        serde_json::from_str(&text).map_err(|e| format!("pyopencl-reference printed no JSON: {e}"))
    })
}

device_test!(matches_pyopencl_reference_output);
fn matches_pyopencl_reference_output(t: &TestDevice) -> TestResult {
    let reference = match pyopencl_reference() {
        Ok(v) => v,
        Err(e) => return Err(skip(format!("PyOpenCL reference unavailable: {e}"))),
    };
    let (p, _) = profile(t)?;
    let report = DeviceReport::new(&p);
    let parity =
        cl_characterize::parity::compare(std::slice::from_ref(&report), reference).map_err(fail)?;
    let Some(d) = parity.devices.first() else {
        return Err(skip(format!(
            "PyOpenCL's output does not list {} / {}",
            p.platform.name, p.name
        )));
    };
    assert!(
        d.matched.len() >= 79,
        "only {} keys compared: {:?}",
        d.matched.len(),
        d.mismatched
    );
    if !d.is_identical() {
        return Err(fail(format!(
            "{} of {} keys differ from PyOpenCL:\n{}",
            d.mismatched.len(),
            d.matched.len() + d.mismatched.len(),
            parity.to_text()
        )));
    }
    Ok(())
}

device_test!(matches_recorded_pyopencl_values);
/// PyOpenCL's values on this device kind (reference §6.4 and `docs/reference/devices`).
fn matches_recorded_pyopencl_values(t: &TestDevice) -> TestResult {
    let (p, _) = profile(t)?;
    let svm = |p: &DeviceProfile| -> Vec<Result<bool, CharacterizeError>> {
        vec![
            has_coarse_grain_buffer_svm(p),
            has_fine_grain_buffer_svm(p),
            has_fine_grain_system_svm(p),
            has_fine_grain_buffer_svm_atomics(p),
            has_fine_grain_system_svm_atomics(p),
        ]
    };
    let bools = |v: [bool; 5]| v.map(Ok).to_vec();
    let report = serde_json::to_value(DeviceReport::new(&p)).map_err(|e| fail(e.to_string()))?;
    let banks = local_memory_bank_count(&p);
    let sim = simultaneous_work_items_on_local_access(&p);
    if p.platform.name == "Portable Computing Language" && is_cpu(&p) {
        assert_eq!(get_simd_group_size(&p, 4)?, Some(1));
        assert_eq!((sim.value, sim.is_guess()), (1, false));
        assert_eq!(banks, Err(CharacterizeError::BankCountMeaningless));
        let v = get_pocl_version(&p, None)
            .value
            .ok_or_else(|| fail("no PoCL version"))?;
        assert!(v >= (3, 0), "PoCL {v:?}");
        assert_eq!(has_struct_arg_count_bug(&p)?.value, StructArgCountBug::None);
        assert_eq!(has_src_build_cache(&p), Some(true));
        assert_eq!(svm(&p), bools([true, true, false, true, false]));
        assert_eq!(reasonable_work_group_size_multiple(&p)?, 8);
    } else if p.platform.name == "Oclgrind" {
        assert_eq!(get_simd_group_size(&p, 4)?, Some(1));
        assert_eq!((sim.value, sim.is_guess()), (16, true));
        let banks = banks?;
        assert_eq!((banks.value, banks.is_guess()), (16, true));
        assert_eq!(has_struct_arg_count_bug(&p)?.value, StructArgCountBug::None);
        assert_eq!(has_src_build_cache(&p), None);
        assert_eq!(svm(&p), bools([false; 5]));
        assert_eq!(reasonable_work_group_size_multiple(&p)?, 1);
        assert_eq!(
            report["char"]["type"],
            "ACCELERATOR | ALL | CPU | DEFAULT | GPU | _is_bitfield"
        );
    } else if p.platform.name == "Intel(R) OpenCL" && is_cpu(&p) {
        assert_eq!(get_simd_group_size(&p, 4)?, Some(1));
        assert_eq!((sim.value, sim.is_guess()), (1, false));
        assert_eq!(banks, Err(CharacterizeError::BankCountMeaningless));
        assert_eq!(get_pocl_version(&p, None).value, None);
        assert_eq!(has_src_build_cache(&p), None);
        assert_eq!(svm(&p), bools([true; 5]));
        assert_eq!(reasonable_work_group_size_multiple(&p)?, 128);
    } else if p.platform.name == "NVIDIA CUDA" {
        // The H100 reference: CC 9.0, warp 32, guessed 32 banks.
        assert_eq!(get_simd_group_size(&p, 4)?, Some(32));
        assert_eq!((sim.value, sim.is_guess()), (32, true));
        assert_eq!(banks?.value, 32);
        assert_eq!(has_src_build_cache(&p), Some(true));
        assert!(p.nv_compute_capability.is_some());
    } else {
        return Err(skip(format!(
            "no recorded PyOpenCL values for {} / {}",
            p.platform.name, p.name
        )));
    }
    Ok(())
}

device_test!(kernel_probes_give_pyopencl_values);
fn kernel_probes_give_pyopencl_values(t: &TestDevice) -> TestResult {
    let (p, notes) = profile(t)?;
    let multiple = p
        .kernel_preferred_work_group_size_multiple
        .ok_or_else(|| fail(format!("work-group multiple probe failed: {notes:?}")))?;
    let bug = p
        .pocl_struct_arg_count_bug
        .ok_or_else(|| fail(format!("struct-argument probe failed: {notes:?}")))?;
    assert!(multiple >= 1);
    // No runtime here predates PoCL 0.14's fix.
    assert!(!bug, "struct argument counted as several");
    let want = match p.platform.name.as_str() {
        "Portable Computing Language" if is_cpu(&p) => Some(8),
        "Intel(R) OpenCL" => Some(128),
        "Oclgrind" => Some(1),
        "NVIDIA CUDA" => Some(32),
        _ => None,
    };
    if let Some(want) = want {
        assert_eq!(
            multiple, want,
            "PyOpenCL's reasonable_work_group_size_multiple"
        );
    }
    Ok(())
}

device_test!(newer_queries_are_gated_by_version);
fn newer_queries_are_gated_by_version(t: &TestDevice) -> TestResult {
    let (p, notes) = profile(t)?;
    let version = t.device.version();
    assert_eq!(
        p.svm_capabilities.is_some(),
        version.major >= 2,
        "SVM capabilities read iff OpenCL >= 2.0 ({notes:?})"
    );
    assert_eq!(
        p.preferred_work_group_size_multiple.is_some(),
        version.major >= 3,
        "preferred multiple read iff OpenCL >= 3.0 ({notes:?})"
    );
    if let (Some(dev), Some(kernel)) = (
        p.preferred_work_group_size_multiple,
        p.kernel_preferred_work_group_size_multiple,
    ) {
        assert!(dev >= 1 && kernel >= 1);
    }
    Ok(())
}

device_test!(vendor_attributes_read_only_when_advertised);
fn vendor_attributes_read_only_when_advertised(t: &TestDevice) -> TestResult {
    let (p, notes) = profile(t)?;
    let nv = p.has_extension("cl_nv_device_attribute_query");
    let amd = p.has_extension("cl_amd_device_attribute_query");
    let intel = p.has_extension("cl_intel_required_subgroup_size");
    assert_eq!(p.nv_compute_capability.is_some(), nv, "{notes:?}");
    assert_eq!(p.nv_warp_size.is_some(), nv, "{notes:?}");
    assert_eq!(p.amd_wavefront_width.is_some(), amd, "{notes:?}");
    assert_eq!(p.intel_sub_group_sizes.is_some(), intel, "{notes:?}");
    if let Some(sizes) = &p.intel_sub_group_sizes {
        assert!(
            !sizes.is_empty() && sizes.iter().all(|&s| s.is_power_of_two()),
            "{sizes:?}"
        );
    }
    if p.platform.name == "Intel(R) OpenCL" {
        assert_eq!(
            p.intel_sub_group_sizes.as_deref(),
            Some(&[4, 8, 16, 32, 64][..])
        );
    }
    Ok(())
}

device_test!(live_profile_equals_recorded_profile);
/// Where this machine's device was recorded (`crates/cl-characterize/tests/profiles`), the live
/// profile is the recorded one.
fn live_profile_equals_recorded_profile(t: &TestDevice) -> TestResult {
    let (mut live, _) = profile(t)?;
    // Compiled in, not read from the source tree: the GPU bundle runs this binary without it.
    let mut recorded = None;
    for &(name, text) in embedded::PROFILES {
        let p: DeviceProfile = serde_json::from_str(text)?;
        if p.name == live.name && p.platform.version == live.platform.version {
            recorded = Some((name, p));
            break;
        }
    }
    let Some((name, mut recorded)) = recorded else {
        return Err(skip(format!(
            "no recorded profile of {} / {}",
            live.platform.name, live.name
        )));
    };
    // The struct-argument probe is recorded only where PyOpenCL would run it.
    if recorded.pocl_struct_arg_count_bug.is_none() {
        live.pocl_struct_arg_count_bug = None;
    }
    // A runtime update changes the driver version without changing what is characterized.
    recorded.driver_version.clone_from(&live.driver_version);
    assert_eq!(
        live, recorded,
        "live profile differs from crates/cl-characterize/tests/profiles/{name}.json"
    );
    Ok(())
}
