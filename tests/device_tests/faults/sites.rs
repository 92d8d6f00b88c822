//! The coverage figure. This file sorts after the other files of the suite so that its test runs last
//! and finds every scenario already injected (it runs any that is not, e.g. under a filter).

use super::{Scenario, IMAGE_SITES, SEEN, SVM_SITES};
use cl_mem::{SvmCapabilities, Version};
use cl_raw::fault::SITES;
use cl_tests::{device_test, fail, TestDevice, TestResult};

/// Sites no public cl-mem / cl-pool call reaches, with the reason; `every_site_is_injected`
/// requires every other site to have been injected.
const UNREACHABLE: &[(&str, &str)] = &[
    (
        "clCreateBufferWithProperties",
        "called only to import external memory (Buffer::from_external), refused before the driver on every device without cl_khr_external_memory; the CUDA tests of the external suite reach it on NVIDIA",
    ),
    (
        "clCreateSubDevices",
        "reached through Device::create_sub_devices, interned for the process (runtime/partition.rs): a second partition returns the cached sub-devices without a driver call, so an injection would depend on test order",
    ),
];

/// Sites reached only on some platforms: (site, whether this device reaches it, why not).
fn device_dependent(dev: &TestDevice) -> Vec<(&'static str, bool, String)> {
    let d = &dev.device;
    let pv = d.platform_version();
    let v2 = pv >= Version::V2_0 && d.version() >= Version::V2_0;
    let svm = v2
        && d.svm_capabilities()
            .is_ok_and(|c| c.contains(SvmCapabilities::COARSE_GRAIN_BUFFER));
    let svm_migrate = svm && pv >= Version::new(2, 1) && d.version() >= Version::new(2, 1);
    let images = d.image_support().unwrap_or(false);
    let pipes = v2 && d.pipe_support().unwrap_or(false);
    let mut out = vec![
        (
            "clCreateCommandQueue",
            !v2,
            format!("OpenCL 2.0+ ({pv}): queues come from clCreateCommandQueueWithProperties"),
        ),
        (
            "clCreateCommandQueueWithProperties",
            v2,
            format!("OpenCL {pv}: before 2.0 queues come from clCreateCommandQueue"),
        ),
        (
            "clCreateSampler",
            !v2,
            format!("OpenCL 2.0+ ({pv}): samplers come from clCreateSamplerWithProperties"),
        ),
        (
            "clCreateSamplerWithProperties",
            v2 && images,
            format!("OpenCL {pv} or no images: clCreateSampler is used"),
        ),
        (
            "clEnqueueMarker",
            pv < Version::V1_2,
            format!("OpenCL 1.2+ ({pv}): markers come from clEnqueueMarkerWithWaitList"),
        ),
        (
            "clCreatePipe",
            pipes,
            "no pipe support (OpenCL 2.0 pipes)".into(),
        ),
        (
            "clEnqueueSVMMigrateMem",
            svm_migrate,
            "needs OpenCL 2.1 coarse-grain SVM".into(),
        ),
    ];
    // clEnqueueSVMMigrateMem has its own condition above (2.1).
    for &s in SVM_SITES.iter().filter(|&&s| s != "clEnqueueSVMMigrateMem") {
        out.push((s, svm, "no coarse-grain SVM (OpenCL 2.0)".into()));
    }
    for &s in IMAGE_SITES {
        out.push((s, images, "no image support".into()));
    }
    out
}

device_test!(every_site_is_injected);
/// The coverage figure: every site injected in this process (a scenario whose sites were not
/// injected yet, e.g. under a filter, is run here), or unreachable with a reason.
fn every_site_is_injected(dev: &TestDevice) -> TestResult {
    let dependent = device_dependent(dev);
    let reachable = |site: &str| {
        !UNREACHABLE.iter().any(|(s, _)| *s == site)
            && dependent
                .iter()
                .find(|(s, _, _)| *s == site)
                .is_none_or(|(_, r, _)| *r)
    };
    for s in cl_tests::inventory::iter::<Scenario>() {
        let missing = s
            .sites
            .iter()
            .any(|site| reachable(site) && !SEEN.lock().unwrap().contains_key(site));
        if missing {
            match (s.run)(dev) {
                Ok(()) => {}
                Err(e) if e.is_skip() => {}
                Err(e) => return Err(fail(format!("{}: {}", s.name, e.message()))),
            }
        }
    }
    let seen = SEEN.lock().unwrap().clone();
    let mut not_here = Vec::new();
    let mut missing = Vec::new();
    for site in SITES {
        // A scenario counts a site only after its guard's `fired()` confirmed the injection.
        if seen.contains_key(site) {
            continue;
        }
        if let Some((_, why)) = UNREACHABLE.iter().find(|(s, _)| s == site) {
            not_here.push(format!("{site} (unreachable: {why})"));
        } else if let Some((_, _, why)) = dependent.iter().find(|(s, r, _)| s == site && !r) {
            not_here.push(format!("{site} (not on this device: {why})"));
        } else {
            missing.push(*site);
        }
    }
    let tried: u32 = seen.values().sum();
    println!(
        "    fault sites injected: {} / {} ({} injections: 3 statuses each, plus the pool and staged paths); not reached: {}",
        seen.len(),
        SITES.len(),
        tried,
        not_here.len()
    );
    for n in &not_here {
        println!("      {n}");
    }
    for s in cl_tests::inventory::iter::<Scenario>() {
        for site in s.sites {
            assert!(SITES.contains(site), "{}: {site} is not a site", s.name);
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(fail(format!(
            "sites never injected on this device: {missing:?}"
        )))
    }
}
