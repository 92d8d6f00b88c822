//! Fault injection at every allocation and enqueue site (issue 16, "out of memory everywhere").
//!
//! Every wrapper of this crate that creates an OpenCL object, allocates memory or enqueues a
//! command starts with `fault::check("clCName")?`: a *site*, named by its C function. With the
//! `fault-injection` feature off (the default, and what every library crate builds), `check` is an
//! inlined `Ok(())`. With it on, a test can [`arm`] a site ("fail the Nth call of
//! `clEnqueueWriteBuffer` with `CL_OUT_OF_RESOURCES`"); the armed call returns that status
//! **before** the driver is called, so no driver object or command exists for it, exactly as
//! when the driver itself refuses. [`SITES`] lists every site; `tests/tidy.rs` checks that every
//! allocating or enqueuing wrapper names one and every entry is named by a wrapper, so "sites
//! covered against sites that exist" is computed.
//!
//! # Cost
//!
//! Feature off: nothing (the call is an empty inline function). Feature on, nothing armed: one
//! relaxed atomic load per wrapper call. Armed: a mutex, only while a site is armed.
//!
//! # Threads
//!
//! An armed site counts the calls of the thread that armed it ([`Threads::Current`]: a site
//! armed by one test cannot hit another test's calls on another thread) or of every thread
//! ([`Threads::Any`]: for paths that enqueue from helper threads, such as cl-mem's staged
//! transfers, whose chunk commands are enqueued by worker threads).
//!
//! # Why a feature of cl-raw, not an ICD-level shim
//!
//! See docs/ARCHITECTURE.md ("Decisions: fault injection"): a shim ICD would need a C library
//! registered with the loader and forwarding ~100 entry points to a real driver, per runtime, and
//! could not be armed from a Rust test without a side channel; the wrapper layer is where every
//! call of the workspace already passes, so a check there covers every site with one line each.

#[cfg(feature = "fault-injection")]
use std::ops::RangeInclusive;
#[cfg(feature = "fault-injection")]
use std::sync::atomic::{AtomicUsize, Ordering};
#[cfg(feature = "fault-injection")]
use std::sync::Mutex;
#[cfg(feature = "fault-injection")]
use std::thread::ThreadId;

use crate::ClError;

/// Every fault-injection site: the C function of each wrapper that allocates or enqueues.
///
/// Checked against the wrappers by `crates/cl-raw/tests/tidy.rs` (each allocating or enqueuing
/// `pub unsafe fn` of a wrapper module calls `fault::check` with its own C name, and each entry
/// here is called by one wrapper).
pub const SITES: &[&str] = &[
    // Object creation and allocation.
    "clCreateContext",
    "clCreateCommandQueue",
    "clCreateCommandQueueWithProperties",
    "clCreateSubDevices",
    "clCreateBuffer",
    "clCreateBufferWithProperties",
    "clCreateSubBuffer",
    "clCreateImage",
    "clCreateImage2D",
    "clCreateImage3D",
    "clCreateSampler",
    "clCreateSamplerWithProperties",
    "clCreatePipe",
    "clSVMAlloc",
    "clCreateProgramWithSource",
    "clBuildProgram",
    "clCreateKernel",
    "clCreateUserEvent",
    // The driver allocates a callback record; cl-mem's keep-alives depend on it.
    "clSetEventCallback",
    // Commands.
    "clEnqueueReadBuffer",
    "clEnqueueWriteBuffer",
    "clEnqueueReadBufferRect",
    "clEnqueueWriteBufferRect",
    "clEnqueueCopyBuffer",
    "clEnqueueCopyBufferRect",
    "clEnqueueFillBuffer",
    "clEnqueueReadImage",
    "clEnqueueWriteImage",
    "clEnqueueCopyImage",
    "clEnqueueCopyImageToBuffer",
    "clEnqueueCopyBufferToImage",
    "clEnqueueFillImage",
    "clEnqueueMapBuffer",
    "clEnqueueMapImage",
    "clEnqueueUnmapMemObject",
    "clEnqueueMigrateMemObjects",
    "clEnqueueNDRangeKernel",
    "clEnqueueMarkerWithWaitList",
    "clEnqueueBarrierWithWaitList",
    "clEnqueueMarker",
    "clEnqueueSVMFree",
    "clEnqueueSVMMemcpy",
    "clEnqueueSVMMemFill",
    "clEnqueueSVMMap",
    "clEnqueueSVMUnmap",
    "clEnqueueSVMMigrateMem",
];

/// Which threads' calls an armed site counts.
#[cfg(feature = "fault-injection")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Threads {
    /// Only the thread that armed the site.
    Current,
    /// Every thread (paths that enqueue from helper threads).
    Any,
}

/// Number of armed plans: the fast path reads only this.
#[cfg(feature = "fault-injection")]
static ARMED: AtomicUsize = AtomicUsize::new(0);

#[cfg(feature = "fault-injection")]
struct Slot {
    id: u64,
    site: &'static str,
    status: ClError,
    calls_to_fail: RangeInclusive<u64>,
    threads: Threads,
    thread: ThreadId,
    calls: u64,
    fired: u64,
}

#[cfg(feature = "fault-injection")]
static PLANS: Mutex<(u64, Vec<Slot>)> = Mutex::new((0, Vec::new()));

#[cfg(feature = "fault-injection")]
fn plans() -> std::sync::MutexGuard<'static, (u64, Vec<Slot>)> {
    // A panic while holding the lock cannot leave the list inconsistent (plain pushes and removes).
    PLANS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// An armed site; dropping it disarms.
#[cfg(feature = "fault-injection")]
#[derive(Debug)]
#[must_use = "dropping the guard disarms the site at once"]
pub struct Armed {
    id: u64,
}

/// Makes the calls numbered `calls` (1-based, counted from now: `1..=1` is the next call, `5..=6`
/// the fifth and sixth) of `site` on `threads` return `status` before the driver is called,
/// until the returned guard is dropped. For `clSVMAlloc`, which has no status, the call returns
/// a null pointer.
///
/// # Panics
///
/// When `site` is not one of [`SITES`], or `calls` is empty or starts at 0 (calls count from
/// 1): either would otherwise never fire.
#[cfg(feature = "fault-injection")]
pub fn arm(
    site: &'static str,
    status: ClError,
    calls: RangeInclusive<u64>,
    threads: Threads,
) -> Armed {
    assert!(
        SITES.contains(&site),
        "{site} is not a fault-injection site"
    );
    assert!(
        *calls.start() >= 1 && !calls.is_empty(),
        "{site}: calls {calls:?} never fire (calls count from 1)"
    );
    let mut p = plans();
    p.0 += 1;
    let id = p.0;
    p.1.push(Slot {
        id,
        site,
        status,
        calls_to_fail: calls,
        threads,
        thread: std::thread::current().id(),
        calls: 0,
        fired: 0,
    });
    ARMED.fetch_add(1, Ordering::SeqCst);
    Armed { id }
}

#[cfg(feature = "fault-injection")]
impl Armed {
    /// Calls this guard failed so far.
    pub fn fired(&self) -> u64 {
        plans()
            .1
            .iter()
            .find(|s| s.id == self.id)
            .map_or(0, |s| s.fired)
    }
}

#[cfg(feature = "fault-injection")]
impl Drop for Armed {
    fn drop(&mut self) {
        let mut p = plans();
        if let Some(i) = p.1.iter().position(|s| s.id == self.id) {
            p.1.swap_remove(i);
            ARMED.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// The site check every allocating or enqueuing wrapper makes before calling the driver.
#[cfg(feature = "fault-injection")]
#[inline]
pub(crate) fn check(site: &'static str) -> Result<(), ClError> {
    if ARMED.load(Ordering::Relaxed) == 0 {
        return Ok(());
    }
    check_armed(site)
}

#[cfg(feature = "fault-injection")]
#[cold]
fn check_armed(site: &'static str) -> Result<(), ClError> {
    let me = std::thread::current().id();
    let mut p = plans();
    let mut result = Ok(());
    for s in p.1.iter_mut() {
        if s.site != site || (s.threads == Threads::Current && s.thread != me) {
            continue;
        }
        s.calls += 1;
        if result.is_ok() && s.calls_to_fail.contains(&s.calls) {
            s.fired += 1;
            result = Err(s.status);
        }
    }
    result
}

/// Without the `fault-injection` feature: nothing is ever injected.
#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub(crate) fn check(_site: &'static str) -> Result<(), ClError> {
    Ok(())
}

#[cfg(all(test, feature = "fault-injection"))]
mod tests {
    use super::*;

    #[test]
    fn nothing_armed_passes_and_the_nth_call_fails_once() {
        assert_eq!(check("clCreateBuffer"), Ok(()));
        let armed = arm(
            "clCreateBuffer",
            ClError::OutOfResources,
            2..=2,
            Threads::Current,
        );
        assert_eq!(check("clCreateBuffer"), Ok(()));
        assert_eq!(check("clEnqueueReadBuffer"), Ok(()));
        assert_eq!(check("clCreateBuffer"), Err(ClError::OutOfResources));
        assert_eq!(check("clCreateBuffer"), Ok(()));
        assert_eq!(armed.fired(), 1);
        drop(armed);
        assert_eq!(check("clCreateBuffer"), Ok(()));
    }

    #[test]
    fn a_current_thread_plan_ignores_other_threads() {
        let armed = arm(
            "clCreateKernel",
            ClError::OutOfHostMemory,
            1..=2,
            Threads::Current,
        );
        std::thread::spawn(|| assert_eq!(check("clCreateKernel"), Ok(())))
            .join()
            .unwrap();
        assert_eq!(check("clCreateKernel"), Err(ClError::OutOfHostMemory));
        assert_eq!(check("clCreateKernel"), Err(ClError::OutOfHostMemory));
        assert_eq!(check("clCreateKernel"), Ok(()));
        assert_eq!(armed.fired(), 2);
    }

    /// A careless call panics (a test-only API): the site must be one of [`SITES`] and the
    /// range must hold a call from 1 on.
    #[rstest::rstest]
    #[should_panic(expected = "not a fault-injection site")]
    #[case::an_unknown_site_is_refused("clCreateBuffers", 1..=1)]
    #[should_panic(expected = "never fire")]
    #[case::a_range_from_call_0_is_refused("clCreateBuffer", 0..=0)]
    #[should_panic(expected = "never fire")]
    #[case::an_empty_range_is_refused("clCreateBuffer", RangeInclusive::new(3, 2))]
    fn careless_arming_is_refused(#[case] site: &'static str, #[case] calls: RangeInclusive<u64>) {
        let _ = arm(site, ClError::OutOfResources, calls, Threads::Current);
    }
}
