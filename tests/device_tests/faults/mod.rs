//! Issue 16, "out of memory everywhere": `CL_MEM_OBJECT_ALLOCATION_FAILURE`, `CL_OUT_OF_RESOURCES`
//! and `CL_OUT_OF_HOST_MEMORY` injected at every allocation and enqueue site of cl-raw (feature
//! `fault-injection`, see `cl_raw::fault`), each reached through the public API of cl-mem or
//! cl-pool. For each site and status: the call returns the typed error carrying that status, the
//! fault fired exactly once (so the scenario really reached the site), reference counts, live
//! events and live maps are unchanged, and the same call without a fault then works and gives the
//! right data. `sites::every_site_is_injected` computes the coverage: every entry of
//! `cl_raw::fault::SITES` injected in this process, or listed as unreachable (with the reason).

use cl_mem::ClError;
use cl_tests::{TestDevice, TestResult};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// One scenario: a device test that injects at `sites`, registered by [`scenario!`] beside it.
struct Scenario {
    name: &'static str,
    sites: &'static [&'static str],
    run: fn(&TestDevice) -> TestResult,
}

cl_tests::inventory::collect!(Scenario);

/// `scenario!(f, sites = &[..])` registers the device test `f` and the fault sites it injects,
/// which `sites::every_site_is_injected` counts (and runs `f` for, when they were not injected yet).
macro_rules! scenario {
    ($f:ident, sites = $sites:expr) => {
        cl_tests::device_test!($f);
        cl_tests::inventory::submit! {
            super::Scenario { name: stringify!($f), sites: $sites, run: $f }
        }
    };
}

/// The image sites: one scenario reaches them, and only where the device has images.
const IMAGE_SITES: &[&str] = &[
    "clCreateImage",
    "clCreateImage2D",
    "clCreateImage3D",
    "clEnqueueWriteImage",
    "clEnqueueReadImage",
    "clEnqueueFillImage",
    "clEnqueueCopyImage",
    "clEnqueueCopyImageToBuffer",
    "clEnqueueCopyBufferToImage",
    "clEnqueueMapImage",
];

/// The SVM sites: one scenario reaches them, and only with coarse-grain SVM.
const SVM_SITES: &[&str] = &[
    "clSVMAlloc",
    "clEnqueueSVMMemFill",
    "clEnqueueSVMMemcpy",
    "clEnqueueSVMMigrateMem",
    "clEnqueueSVMMap",
    "clEnqueueSVMUnmap",
    "clEnqueueSVMFree",
];

mod objects;
mod recovery;
mod sites;

/// The counts once they match `before`, or after two seconds: drivers release their own
/// references to queues and events of finished commands asynchronously (PoCL's worker thread
/// drops a queue reference just after a command's event completes; callbacks of earlier tests
/// release events), so one read right after a command can see a transient extra reference.
fn settled(counts: Counts<'_>, before: &[u64]) -> Vec<u64> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    loop {
        let now = counts();
        if now == before || std::time::Instant::now() > deadline {
            return now;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// What must not change when a call fails: reference counts and live events and maps.
type Counts<'a> = &'a dyn Fn() -> Vec<u64>;

/// Injections made by this process, per site and status (filled by `inject`).
static SEEN: Mutex<BTreeMap<&'static str, u32>> = Mutex::new(BTreeMap::new());

/// The three out-of-memory statuses (`ClError::is_out_of_memory`).
const STATUSES: [ClError; 3] = [
    ClError::MemObjectAllocationFailure,
    ClError::OutOfResources,
    ClError::OutOfHostMemory,
];

/// The counts once three reads 10 ms apart agree (at most two seconds): a baseline taken while
/// the driver still holds a transient reference of an earlier command would make a later, settled
/// read look like a release (or hide a leak).
fn stable(counts: Counts<'_>) -> Vec<u64> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    let mut last = counts();
    let mut same = 0;
    while same < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
        let now = counts();
        same = if now == last { same + 1 } else { 0 };
        last = now;
    }
    last
}
