//! Shared virtual memory: coarse, fine and system grains; allocation options, maps, memcpy, fill,
//! migration; frees that wait for commands; bad input refused before the driver.

use cl_mem::{Error, Kernel, Program, Queue, SvmCapabilities, Version};
use cl_tests::{skip, TestDevice, TestResult};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

mod lifetimes;
mod memory;

/// Skips unless the device (and its platform) can do `cap` SVM.
fn require(dev: &TestDevice, cap: SvmCapabilities, what: &str) -> TestResult {
    let d = &dev.device;
    if d.platform_version() < Version::V2_0 || d.version() < Version::V2_0 {
        return Err(skip(format!(
            "{what} needs OpenCL 2.0; platform {} device {}",
            d.platform_version(),
            d.version()
        )));
    }
    let caps = d.svm_capabilities()?;
    if !caps.contains(cap) {
        return Err(skip(format!(
            "{what}: CL_DEVICE_SVM_CAPABILITIES is {caps:?}"
        )));
    }
    Ok(())
}

const N32: u32 = 1024;

/// Waits (up to 20 s) until `flag` is set.
fn wait_for(flag: &AtomicBool) -> bool {
    let start = Instant::now();
    while !flag.load(Ordering::SeqCst) {
        if start.elapsed() > Duration::from_secs(20) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

const N: usize = N32 as usize;

fn kernel(q: &Queue, name: &str) -> Result<Kernel, Error> {
    Program::build_from_source(q.context(), SOURCE, "")?.kernel(name)
}

const SOURCE: &str = r#"
__kernel void twice(__global float *a) {
    size_t i = get_global_id(0);
    a[i] = 2.0f * a[i];
}
__kernel void plus_one(__global const float *src, __global float *dst) {
    size_t i = get_global_id(0);
    dst[i] = src[i] + 1.0f;
}
__kernel void spin_then_write(__global uint *a, uint iters) {
    size_t i = get_global_id(0);
    uint acc = (uint)i;
    for (uint k = 0; k < iters; ++k) {
        acc = acc * 1103515245u + 12345u;
    }
    a[i] = acc;
}
"#;
