//! Issue 16, "out of memory everywhere": `CL_MEM_OBJECT_ALLOCATION_FAILURE`, `CL_OUT_OF_RESOURCES`
//! and `CL_OUT_OF_HOST_MEMORY` injected at every allocation and enqueue site of cl-raw (feature
//! `fault-injection`, see `cl_raw::fault`), each reached through the public API of cl-mem or
//! cl-pool. For each site and status: the call returns the typed error carrying that status, the
//! fault fired exactly once (so the scenario really reached the site), reference counts, live
//! events and live maps are unchanged, and the same call without a fault then works and gives the
//! right data. `every_site_is_injected` computes the coverage: every entry of
//! `cl_raw::fault::SITES` injected in this process, or listed as unreachable (with the reason).

use cl_mem::{enqueue_copy, svm::enqueue_svm_migrate, Transfer};
use std::collections::BTreeMap;
use std::sync::Mutex;

use cl_mem::svm::{csvm_empty, SvmMigrateFlags};
use cl_mem::RawHandle;
use cl_mem::{
    enqueue_migrate_mem_objects, AddressingMode, Buffer, ChannelOrder, ChannelType, ClError,
    Context, Error, Event, FillColor, FilterMode, Image, ImageDesc, ImageFormat, MapAccess,
    MemFlags, MemObject, MigrationFlags, Pipe, Program, Queue, Rect, Sampler, SvmCapabilities,
    TransferOptions, UserEvent, Version,
};
use cl_pool::{ImmediateAllocator, MemoryPool, PoolError};
use cl_raw::fault::{self, Plan, SITES};
use cl_tests::{eventually, fail, skip, DeviceTest, TestDevice, TestResult};

/// The three out-of-memory statuses (`ClError::is_out_of_memory`).
const STATUSES: [ClError; 3] = [
    ClError::MemObjectAllocationFailure,
    ClError::OutOfResources,
    ClError::OutOfHostMemory,
];

/// The suite.
pub fn tests() -> Vec<DeviceTest> {
    let mut v: Vec<DeviceTest> = SCENARIOS
        .iter()
        .map(|s| DeviceTest {
            name: s.name,
            run: s.run,
        })
        .collect();
    v.push(DeviceTest {
        name: "every_site_is_injected",
        run: every_site_is_injected,
    });
    v
}

/// One scenario: a test that injects at `sites`.
struct Scenario {
    name: &'static str,
    sites: &'static [&'static str],
    run: fn(&TestDevice) -> TestResult,
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

const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "context_and_queue_creation_fail_typed",
        sites: &[
            "clCreateContext",
            "clCreateCommandQueue",
            "clCreateCommandQueueWithProperties",
        ],
        run: context_and_queue_creation_fail_typed,
    },
    Scenario {
        name: "buffer_and_sub_buffer_creation_fail_typed",
        sites: &["clCreateBuffer", "clCreateSubBuffer"],
        run: buffer_and_sub_buffer_creation_fail_typed,
    },
    Scenario {
        name: "buffer_transfers_fail_typed_and_leave_data_unchanged",
        sites: &[
            "clEnqueueWriteBuffer",
            "clEnqueueReadBuffer",
            "clEnqueueWriteBufferRect",
            "clEnqueueReadBufferRect",
            "clEnqueueCopyBuffer",
            "clEnqueueCopyBufferRect",
            "clEnqueueFillBuffer",
            "clEnqueueMigrateMemObjects",
        ],
        run: buffer_transfers_fail_typed_and_leave_data_unchanged,
    },
    Scenario {
        name: "buffer_maps_and_unmaps_fail_typed_and_leave_nothing_mapped",
        sites: &["clEnqueueMapBuffer", "clEnqueueUnmapMemObject"],
        run: buffer_maps_and_unmaps_fail_typed_and_leave_nothing_mapped,
    },
    Scenario {
        name: "programs_kernels_and_launches_fail_typed",
        sites: &[
            "clCreateProgramWithSource",
            "clBuildProgram",
            "clCreateKernel",
            "clEnqueueNDRangeKernel",
        ],
        run: programs_kernels_and_launches_fail_typed,
    },
    Scenario {
        name: "markers_barriers_and_user_events_fail_typed",
        sites: &[
            "clEnqueueMarkerWithWaitList",
            "clEnqueueBarrierWithWaitList",
            "clEnqueueMarker",
            "clCreateUserEvent",
        ],
        run: markers_barriers_and_user_events_fail_typed,
    },
    Scenario {
        name: "event_callbacks_fail_typed_and_a_migration_keeps_its_list_without_one",
        sites: &["clSetEventCallback"],
        run: event_callbacks_fail_typed_and_a_migration_keeps_its_list_without_one,
    },
    Scenario {
        name: "images_fail_typed_at_every_site",
        sites: IMAGE_SITES,
        run: images_fail_typed_at_every_site,
    },
    Scenario {
        name: "samplers_and_pipes_fail_typed",
        sites: &[
            "clCreateSampler",
            "clCreateSamplerWithProperties",
            "clCreatePipe",
        ],
        run: samplers_and_pipes_fail_typed,
    },
    Scenario {
        name: "svm_fails_typed_at_every_site",
        sites: SVM_SITES,
        run: svm_fails_typed_at_every_site,
    },
    Scenario {
        name: "pool_reclaims_on_injected_upstream_failures_and_stays_balanced",
        sites: &["clCreateBuffer", "clEnqueueMigrateMemObjects"],
        run: pool_reclaims_on_injected_upstream_failures_and_stays_balanced,
    },
    Scenario {
        name: "pooled_block_handed_to_another_queue_keeps_its_old_queue_when_the_sync_fails",
        sites: &[
            "clEnqueueMarkerWithWaitList",
            "clEnqueueBarrierWithWaitList",
        ],
        run: pooled_block_handed_to_another_queue_keeps_its_old_queue_when_the_sync_fails,
    },
    Scenario {
        name: "staged_transfer_failing_mid_way_is_an_error_and_the_retry_is_whole",
        sites: &["clEnqueueWriteBuffer", "clEnqueueReadBuffer"],
        run: staged_transfer_failing_mid_way_is_an_error_and_the_retry_is_whole,
    },
    Scenario {
        name: "staged_copy_between_devices_failing_mid_way_is_an_error_and_the_retry_is_whole",
        sites: &["clEnqueueWriteBuffer", "clEnqueueReadBuffer"],
        run: staged_copy_between_devices_failing_mid_way_is_an_error_and_the_retry_is_whole,
    },
];

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

/// Injections made by this process, per site and status (filled by `inject`).
static SEEN: Mutex<BTreeMap<&'static str, u32>> = Mutex::new(BTreeMap::new());

/// What must not change when a call fails: reference counts and live events and maps.
type Counts<'a> = &'a dyn Fn() -> Vec<u64>;

/// The context's and queue's reference counts and the live `Event` wrappers, plus `more`.
fn base_counts(q: &Queue, more: &[&dyn MemObject]) -> Vec<u64> {
    let mut v = vec![
        u64::from(q.context().reference_count().unwrap()),
        u64::from(q.reference_count().unwrap()),
        Event::live_count() as u64,
    ];
    for m in more {
        v.push(u64::from(m.mem_reference_count().unwrap()));
        v.push(u64::from(m.mem_map_count().unwrap()));
    }
    v
}

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

/// Arms `site` with each status in turn and runs `op`: it must fail with `Error::Cl` carrying
/// the status (or, for `clSVMAlloc`, which has no status, `SvmAllocFailed`), the fault must have
/// fired once, `counts` must be unchanged. Then runs `op` unarmed and returns its value.
fn inject<T>(
    site: &'static str,
    counts: Counts<'_>,
    op: &dyn Fn() -> Result<T, Error>,
) -> Result<T, cl_tests::TestError> {
    inject_then(site, counts, op, &|| Ok(()))
}

/// As [`inject`], and `unchanged` checks after each failure that no data changed.
fn inject_then<T>(
    site: &'static str,
    counts: Counts<'_>,
    op: &dyn Fn() -> Result<T, Error>,
    unchanged: &dyn Fn() -> TestResult,
) -> Result<T, cl_tests::TestError> {
    // cl-mem tries clSVMAlloc SVM_ALLOC_ATTEMPTS (8) times before a NULL is an error (NVIDIA's
    // spurious NULLs, docs/DEVICES.md): an out-of-memory there is a NULL every time.
    let times = if site == "clSVMAlloc" { 8 } else { 1 };
    for status in STATUSES {
        let before = stable(counts);
        let armed = fault::arm(Plan::next(site, status).times(times));
        let r = op();
        // Exactly `times` firings count as the one injected failure the loop expects.
        let fired = if armed.fired() == times {
            1
        } else {
            armed.fired()
        };
        drop(armed);
        match r {
            Ok(_) => {
                return Err(fail(format!(
                    "{site} with {status} injected: the call succeeded"
                )))
            }
            Err(e) => {
                let typed = if site == "clSVMAlloc" {
                    matches!(e, Error::SvmAllocFailed { .. })
                } else {
                    e.cl_status() == Some(status) && e.to_string().contains(site)
                };
                if !typed || !e.is_out_of_memory() {
                    return Err(fail(format!(
                        "{site} with {status} injected: wrong error {e:?}"
                    )));
                }
            }
        }
        if fired != 1 {
            return Err(fail(format!(
                "{site} with {status}: the fault fired {fired} times"
            )));
        }
        let after = settled(counts, &before);
        if before != after {
            return Err(fail(format!(
                "{site} with {status} injected: counts changed (leak) from {before:?} to {after:?}"
            )));
        }
        unchanged()?;
        *SEEN.lock().unwrap().entry(site).or_default() += 1;
    }
    op().map_err(|e| {
        fail(format!(
            "{site}: the call after the injected failures failed: {e}"
        ))
    })
}

fn context_and_queue_creation_fail_typed(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let devices = [dev.device];
    let counts = || vec![Event::live_count() as u64];
    let ctx = inject("clCreateContext", &counts, &|| Context::new(&devices))?;
    assert_eq!(ctx.reference_count()?, 1);
    let counts = || base_counts(&q, &[]);
    let site = if dev.device.platform_version() >= Version::V2_0
        && dev.device.version() >= Version::V2_0
    {
        "clCreateCommandQueueWithProperties"
    } else {
        "clCreateCommandQueue"
    };
    let q2 = inject(site, &counts, &|| Queue::new(q.context(), &dev.device))?;
    let b = Buffer::from_slice(q.context(), MemFlags::READ_WRITE, &[5u32; 4])?;
    assert_eq!(b.to_vec::<u32>(&q2)?, [5; 4]);
    Ok(())
}

fn buffer_and_sub_buffer_creation_fail_typed(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context().clone();
    let counts = || base_counts(&q, &[]);
    let b = inject("clCreateBuffer", &counts, &|| {
        Buffer::from_slice(&ctx, MemFlags::READ_WRITE, &[7u32; 256])
    })?;
    assert_eq!(b.to_vec::<u32>(&q)?, vec![7; 256]);
    let counts = || base_counts(&q, &[&b]);
    let sub = inject("clCreateSubBuffer", &counts, &|| {
        b.sub_buffer(0, 64, MemFlags::READ_WRITE)
    })?;
    assert_eq!(sub.to_vec::<u32>(&q)?, vec![7; 16]);
    Ok(())
}

fn buffer_transfers_fail_typed_and_leave_data_unchanged(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let a = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &[1u32; 64])?;
    let b = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &[2u32; 64])?;
    let counts = || base_counts(&q, &[&a, &b]);
    let seq: Vec<u32> = (0..64).collect();

    // A failed write leaves the buffer as it was.
    inject_then(
        "clEnqueueWriteBuffer",
        &counts,
        &|| a.write(&q, &seq, &[]),
        &|| {
            assert_eq!(a.read_vec_of::<u32>(&q, 64)?, vec![1; 64]);
            Ok(())
        },
    )?;
    assert_eq!(a.to_vec::<u32>(&q)?, seq);

    let out = Mutex::new(vec![9u32; 64]);
    // A failed read leaves the host memory as it was.
    inject_then(
        "clEnqueueReadBuffer",
        &counts,
        &|| a.read(&q, &mut out.lock().unwrap()[..], &[]),
        &|| {
            assert_eq!(*out.lock().unwrap(), vec![9; 64]);
            Ok(())
        },
    )?;
    assert_eq!(*out.lock().unwrap(), seq);

    let rect = Rect::new([16, 2, 1]).src_pitches(64, 0).dst_pitches(64, 0);
    let host = vec![3u8; 128];
    inject("clEnqueueWriteBufferRect", &counts, &|| {
        b.write(&q, &host, Transfer::default().rect(rect))
    })?;
    assert_eq!(b.read_vec_of::<u8>(&q, 16)?, vec![3; 16]);
    let back = Mutex::new(vec![0u8; 128]);
    inject("clEnqueueReadBufferRect", &counts, &|| {
        b.read(
            &q,
            &mut back.lock().unwrap()[..],
            Transfer::default().rect(rect),
        )
    })?;
    assert_eq!(back.lock().unwrap()[..16], [3; 16]);

    inject_then(
        "clEnqueueCopyBuffer",
        &counts,
        &|| enqueue_copy(&q, &b, &a, &[]),
        &|| {
            assert_eq!(b.read_vec_of::<u32>(&q, 64)?[60..], [2; 4]);
            Ok(())
        },
    )?;
    assert_eq!(b.to_vec::<u32>(&q)?, seq);
    let crect = Rect::new([8, 1, 1])
        .src_pitches(64, 0)
        .dst_pitches(64, 0)
        .dst_origin([128, 0, 0]);
    inject("clEnqueueCopyBufferRect", &counts, &|| {
        enqueue_copy(&q, &b, &a, Transfer::default().rect(crect))
    })?;
    assert_eq!(b.to_vec::<u32>(&q)?[32..34], [0, 1]);

    if dev.device.platform_version() >= Version::V1_2 && dev.device.version() >= Version::V1_2 {
        inject_then(
            "clEnqueueFillBuffer",
            &counts,
            &|| a.fill(&q, &[11u32], &[]),
            &|| {
                assert_eq!(a.read_vec_of::<u32>(&q, 64)?, seq);
                Ok(())
            },
        )?;
        assert_eq!(a.to_vec::<u32>(&q)?, vec![11; 64]);
        inject("clEnqueueMigrateMemObjects", &counts, &|| {
            enqueue_migrate_mem_objects(&q, &[&a], MigrationFlags::empty(), &[])
        })?
        .wait()?;
        assert_eq!(a.to_vec::<u32>(&q)?, vec![11; 64]);
    }
    Ok(())
}

fn buffer_maps_and_unmaps_fail_typed_and_leave_nothing_mapped(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let a = Buffer::from_slice(q.context(), MemFlags::READ_WRITE, &[4u32; 32])?;
    let counts = || {
        let mut v = base_counts(&q, &[&a]);
        v.push(a.live_maps() as u64);
        v
    };
    let sum = inject("clEnqueueMapBuffer", &counts, &|| {
        a.with_map::<u32, _, _>(&q, cl_mem::ReadOnly, .., |s| s.iter().sum::<u32>())
    })?;
    assert_eq!(sum, 128);
    // Warm up: the buffer's command record then holds a write (the unmap of a writable map),
    // as after the retried unmap below, so the counts compare like for like.
    a.with_map::<u32, _, _>(
        &q,
        cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE,
        ..,
        |s| s[1] = 4,
    )?;
    // The unmap fails: the scope reports it, and the region must not stay mapped (the guard's
    // drop unmaps again) nor stay claimed.
    inject("clEnqueueUnmapMemObject", &counts, &|| {
        a.with_map::<u32, _, _>(
            &q,
            cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE,
            ..,
            |s| s[0] = 5,
        )
    })?;
    assert_eq!(a.to_vec::<u32>(&q)?[0], 5);
    a.write(&q, &[6u32], Transfer::default().dst_offset(4))?;
    assert_eq!(a.to_vec::<u32>(&q)?[..2], [5, 6]);
    Ok(())
}

const SOURCE: &str =
    "__kernel void twice(__global uint *a) { size_t i = get_global_id(0); a[i] = 2 * a[i]; }";

fn programs_kernels_and_launches_fail_typed(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let counts = || base_counts(&q, &[]);
    let program = inject("clCreateProgramWithSource", &counts, &|| {
        Program::build_from_source(ctx, SOURCE, "")
    })?;
    drop(program);
    let program = inject("clBuildProgram", &counts, &|| {
        Program::build_from_source(ctx, SOURCE, "")
    })?;
    let pc = || {
        let mut v = base_counts(&q, &[]);
        v.push(u64::from(program.reference_count().unwrap()));
        v
    };
    let mut kernel = inject("clCreateKernel", &pc, &|| program.kernel("twice"))?;
    let a = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &[3u32; 16])?;
    kernel.set_arg(0, &a)?;
    let kc = || {
        let mut v = base_counts(&q, &[&a]);
        v.push(u64::from(kernel.reference_count().unwrap()));
        v
    };
    inject_then(
        "clEnqueueNDRangeKernel",
        &kc,
        &|| kernel.run(&q, &[16]),
        &|| {
            assert_eq!(a.read_vec_of::<u32>(&q, 16)?, vec![3; 16]);
            Ok(())
        },
    )?
    .wait()?;
    assert_eq!(a.to_vec::<u32>(&q)?, vec![6; 16]);
    Ok(())
}

fn markers_barriers_and_user_events_fail_typed(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let counts = || base_counts(&q, &[]);
    let user = inject("clCreateUserEvent", &counts, &|| {
        UserEvent::new(q.context())
    })?;
    let marker_site = if dev.device.platform_version() >= Version::V1_2 {
        "clEnqueueMarkerWithWaitList"
    } else {
        "clEnqueueMarker"
    };
    let e = inject(marker_site, &counts, &|| q.enqueue_marker(&[]))?;
    e.wait()?;
    if dev.device.platform_version() >= Version::V1_2 {
        let gate: &Event = &user;
        let b = inject("clEnqueueBarrierWithWaitList", &counts, &|| {
            q.enqueue_barrier(&[gate])
        })?;
        user.set_complete()?;
        b.wait()?;
    }
    Ok(())
}

/// `Event::on_complete` fails typed (the closure dropped, not run). A migration whose list's
/// completion callback cannot be registered still succeeds and does not wait for its command:
/// held back by a user event set only afterwards, it would never return if it waited (it did
/// until 2026-11-26's review; the list is leaked instead, a few bytes).
fn event_callbacks_fail_typed_and_a_migration_keeps_its_list_without_one(
    dev: &TestDevice,
) -> TestResult {
    let q = dev.queue();
    let counts = || base_counts(&q, &[]);
    let user = UserEvent::new(q.context())?;
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let r = std::sync::Arc::clone(&ran);
    inject("clSetEventCallback", &counts, &|| {
        let r = std::sync::Arc::clone(&r);
        user.on_complete(move |_| {
            r.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        })
    })?;
    if dev.device.platform_version() >= Version::V1_2 {
        let b = Buffer::new(q.context(), MemFlags::READ_WRITE, 4096)?;
        let gate = UserEvent::new(q.context())?;
        let kept_before = cl_mem::live_objects().kept_lists;
        let armed = fault::arm(Plan::next("clSetEventCallback", ClError::OutOfHostMemory));
        let migrated = enqueue_migrate_mem_objects(
            &q,
            &[&b],
            MigrationFlags::CONTENT_UNDEFINED,
            &[gate.event()],
        );
        let fired = armed.fired();
        drop(armed);
        let migrated = migrated?;
        if fired != 1 {
            return Err(fail(format!(
                "the list's callback registration was not reached ({fired} firings)"
            )));
        }
        gate.set_complete()?;
        migrated.wait()?;
        b.write(&q, &[3u8; 64], &[])?;
        assert_eq!(b.read_vec_of::<u8>(&q, 64)?, vec![3u8; 64]);
        // The list is leaked, not freed while the driver may still read it.
        assert_eq!(cl_mem::live_objects().kept_lists, kept_before + 1);
        cl_tests::leaks_deliberately(
            "a migration's object list whose release callback could not be registered",
        );
    }
    user.set_complete()?;
    // Only the registration made after the injected failures runs.
    eventually("the registered callback ran", || {
        Ok(ran.load(std::sync::atomic::Ordering::SeqCst) > 0)
    })?;
    assert_eq!(ran.load(std::sync::atomic::Ordering::SeqCst), 1);
    Ok(())
}

const RGBA_U8: ImageFormat = ImageFormat::new(ChannelOrder::Rgba, ChannelType::UnsignedInt8);

fn images_fail_typed_at_every_site(dev: &TestDevice) -> TestResult {
    if !dev.device.image_support()? {
        return Err(skip("no image support"));
    }
    let q = dev.queue();
    let ctx = q.context();
    let desc = ImageDesc::d2(8, 4);
    let px: Vec<u8> = (0..128u8).collect();
    let counts = || base_counts(&q, &[]);
    let legacy2 = inject("clCreateImage2D", &counts, &|| {
        Image::new_through_legacy_calls(
            ctx,
            MemFlags::READ_WRITE | MemFlags::COPY_HOST_PTR,
            RGBA_U8,
            &desc,
            Some(&px),
        )
    })?;
    let mut got = vec![0u8; 128];
    legacy2.read(&q, &mut got, Transfer::default().rect(Rect::new([8, 4, 1])))?;
    assert_eq!(got, px);
    let d3 = ImageDesc::d3(4, 4, 2);
    inject("clCreateImage3D", &counts, &|| {
        Image::new_through_legacy_calls::<u8>(ctx, MemFlags::READ_WRITE, RGBA_U8, &d3, None)
    })?;
    if dev.device.platform_version() < Version::V1_2 {
        return Ok(());
    }
    let img = inject("clCreateImage", &counts, &|| {
        Image::new(ctx, MemFlags::READ_WRITE, RGBA_U8, &desc)
    })?;
    let buf = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &[0u8; 128])?;
    let counts = || base_counts(&q, &[&img, &legacy2, &buf]);
    inject("clEnqueueWriteImage", &counts, &|| {
        img.write(&q, &px, Transfer::default().rect(Rect::new([8, 4, 1])))
    })?;
    let out = Mutex::new(vec![0u8; 128]);
    inject("clEnqueueReadImage", &counts, &|| {
        img.read(
            &q,
            &mut out.lock().unwrap()[..],
            Transfer::default().rect(Rect::new([8, 4, 1])),
        )
    })?;
    assert_eq!(*out.lock().unwrap(), px);
    inject("clEnqueueCopyImageToBuffer", &counts, &|| {
        enqueue_copy(
            &q,
            &buf,
            &img,
            Transfer::default().rect(Rect::new([8, 4, 1])),
        )
    })?;
    assert_eq!(buf.to_vec::<u8>(&q)?, px);
    inject("clEnqueueFillImage", &counts, &|| {
        img.fill(
            &q,
            FillColor::Uint([1, 2, 3, 4]),
            Transfer::default().rect(Rect::new([8, 4, 1])),
        )
    })?;
    let mut filled = vec![0u8; 128];
    img.read(
        &q,
        &mut filled,
        Transfer::default().rect(Rect::new([8, 4, 1])),
    )?;
    assert_eq!(filled[..8], [1, 2, 3, 4, 1, 2, 3, 4]);
    inject("clEnqueueCopyImage", &counts, &|| {
        enqueue_copy(
            &q,
            &img,
            &legacy2,
            Transfer::default().rect(Rect::new([8, 4, 1])),
        )
    })?;
    img.read(
        &q,
        &mut filled,
        Transfer::default().rect(Rect::new([8, 4, 1])),
    )?;
    assert_eq!(filled, px);
    // Waited for: an in-flight command holds a driver reference to the buffer, which would
    // make the reference counts below move by themselves.
    buf.fill(&q, &[9u8], &[])?.wait()?;
    inject("clEnqueueCopyBufferToImage", &counts, &|| {
        enqueue_copy(
            &q,
            &img,
            &buf,
            Transfer::default().rect(Rect::new([8, 4, 1])),
        )
    })?;
    img.read(
        &q,
        &mut filled,
        Transfer::default().rect(Rect::new([8, 4, 1])),
    )?;
    assert_eq!(filled, vec![9; 128]);
    let first = inject("clEnqueueMapImage", &counts, &|| {
        img.map(&q, MapAccess::Read, &[], &[], &[], |m| m.bytes()[0])
    })?;
    assert_eq!(first, 9);
    Ok(())
}

fn samplers_and_pipes_fail_typed(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let v2 =
        dev.device.platform_version() >= Version::V2_0 && dev.device.version() >= Version::V2_0;
    let counts = || base_counts(&q, &[]);
    if dev.device.image_support()? {
        let site = if v2 {
            "clCreateSamplerWithProperties"
        } else {
            "clCreateSampler"
        };
        let s = inject(site, &counts, &|| {
            Sampler::new(ctx, false, AddressingMode::Clamp, FilterMode::Nearest)
        })?;
        assert_eq!(s.reference_count()?, 1);
        assert!(!s.normalized_coords()?);
    }
    let pipes = v2 && dev.device.pipe_support()?;
    if pipes {
        let p = inject("clCreatePipe", &counts, &|| {
            Pipe::new(ctx, MemFlags::READ_WRITE, 4, 16)
        })?;
        assert_eq!(p.mem_reference_count()?, 1);
    }
    if !dev.device.image_support()? && !pipes {
        return Err(cl_tests::skip(
            "neither images (samplers) nor pipes on this device",
        ));
    }
    Ok(())
}

fn svm_fails_typed_at_every_site(dev: &TestDevice) -> TestResult {
    let d = &dev.device;
    if d.platform_version() < Version::V2_0
        || d.version() < Version::V2_0
        || !d
            .svm_capabilities()?
            .contains(SvmCapabilities::COARSE_GRAIN_BUFFER)
    {
        return Err(skip("needs OpenCL 2.0 coarse-grain SVM"));
    }
    let q = dev.queue();
    let counts = || base_counts(&q, &[]);
    let a = Mutex::new(inject("clSVMAlloc", &counts, &|| {
        csvm_empty::<u32>(&q, 64)
    })?);
    // One spurious NULL (NVIDIA's under concurrent frees) is retried, not an error.
    {
        let armed = fault::arm(Plan::next("clSVMAlloc", ClError::OutOfResources));
        let once = csvm_empty::<u32>(&q, 64);
        assert_eq!(armed.fired(), 1);
        drop(armed);
        assert!(
            once.is_ok(),
            "a single NULL from clSVMAlloc was not retried: {once:?}"
        );
    }
    let b = Mutex::new(csvm_empty::<u32>(&q, 64)?);
    inject("clEnqueueSVMMemFill", &counts, &|| {
        a.lock().unwrap().fill(&q, &[8], &[])
    })?
    .wait()?;
    inject("clEnqueueSVMMemcpy", &counts, &|| {
        enqueue_copy(&q, &*b.lock().unwrap(), &*a.lock().unwrap(), &[])
    })?
    .wait()?;
    if d.platform_version() >= Version::new(2, 1) && d.version() >= Version::new(2, 1) {
        inject("clEnqueueSVMMigrateMem", &counts, &|| {
            enqueue_svm_migrate(&q, &[&*b.lock().unwrap()], SvmMigrateFlags::empty(), &[])
        })?
        .wait()?;
    }
    let sum = inject("clEnqueueSVMMap", &counts, &|| {
        b.lock()
            .unwrap()
            .with_map(&q, cl_mem::ReadOnly, .., |s| s.iter().sum::<u32>())
    })?;
    assert_eq!(sum, 8 * 64);
    // The unmap fails: the mapping stays recorded (so it is unmapped as a leftover before the
    // next map, command or free) instead of staying mapped for good; counts compared after that.
    for status in STATUSES {
        let before = stable(&counts);
        let armed = fault::arm(Plan::next("clEnqueueSVMUnmap", status));
        let r = b.lock().unwrap().with_map(
            &q,
            cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE,
            ..,
            |s| s[0] = 1,
        );
        assert_eq!(armed.fired(), 1);
        drop(armed);
        match r {
            Err(e) => assert_eq!(e.cl_status(), Some(status), "{e}"),
            Ok(()) => return Err(fail("an injected SVM unmap failure was not reported")),
        }
        assert_eq!(
            b.lock()
                .unwrap()
                .with_map(&q, cl_mem::ReadOnly, .., |s| s[0])?,
            1
        );
        assert_eq!(
            settled(&counts, &before),
            before,
            "{status}: the failed SVM unmap leaked"
        );
        *SEEN.lock().unwrap().entry("clEnqueueSVMUnmap").or_default() += 1;
    }
    // The ordered free fails: the drop falls back to waiting and clSVMFree (no leak, no panic).
    let b = b.into_inner().unwrap();
    let armed = fault::arm(Plan::next("clEnqueueSVMFree", ClError::OutOfResources));
    drop(b);
    let fired = armed.fired();
    drop(armed);
    assert_eq!(fired, 1, "the SVM free did not reach clEnqueueSVMFree");
    *SEEN.lock().unwrap().entry("clEnqueueSVMFree").or_default() += 1;
    let c = csvm_empty::<u32>(&q, 64)?;
    c.fill(&q, &[2], &[])?.wait()?;
    Ok(())
}

fn pool_reclaims_on_injected_upstream_failures_and_stays_balanced(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let pool = MemoryPool::new(ImmediateAllocator::new(&q, MemFlags::READ_WRITE)?);
    for status in STATUSES {
        pool.free_held();
        let held: Vec<_> = [100usize, 5000]
            .iter()
            .map(|&s| pool.allocate(s))
            .collect::<Result<_, _>>()?;
        drop(held);
        assert_eq!(pool.held_blocks(), 2);
        let before = pool.stats();
        // One failure at the upstream create: the pool frees its largest held block and retries.
        let armed = fault::arm(Plan::next("clCreateBuffer", status));
        let b = pool.allocate(1 << 16)?;
        assert_eq!(armed.fired(), 1);
        drop(armed);
        *SEEN.lock().unwrap().entry("clCreateBuffer").or_default() += 1;
        let s = pool.stats();
        assert_eq!(
            s.reclaims,
            before.reclaims + 1,
            "{status}: the reclaim path did not run"
        );
        assert_eq!(s.held_blocks, 1);
        assert_eq!(s.managed_bytes, s.held_bytes + s.active_rounded_bytes);
        b.write(&q, &[1u32, 2, 3], &[])?;
        assert_eq!(b.read_vec_of::<u32>(&q, 3)?, [1, 2, 3]);
        drop(b);
        // Every try fails: a typed out-of-memory error, nothing held, counters balanced.
        let armed = fault::arm(Plan::next("clCreateBuffer", status).times(10));
        match pool.allocate(1 << 20) {
            Err(e @ PoolError::OutOfMemory { .. }) => {
                assert!(e.is_out_of_memory());
                assert!(e.to_string().contains(status.name()), "{e}");
            }
            other => {
                return Err(fail(format!(
                    "{status}: expected OutOfMemory, got {other:?}"
                )))
            }
        }
        drop(armed);
        let s = pool.stats();
        assert_eq!((s.held_blocks, s.active_blocks, s.managed_bytes), (0, 0, 0));
        // The force step (migration, 1.2+) fails: the new buffer is released, not leaked.
        if dev.device.version() >= Version::V1_2 && dev.device.platform_version() >= Version::V1_2 {
            let refs_and_events = || {
                vec![
                    u64::from(q.context().reference_count().unwrap_or(0)),
                    Event::live_count() as u64,
                ]
            };
            let before = stable(&refs_and_events);
            let armed = fault::arm(Plan::next("clEnqueueMigrateMemObjects", status));
            let r = pool.allocate(4096);
            assert_eq!(armed.fired(), 1);
            drop(armed);
            *SEEN
                .lock()
                .unwrap()
                .entry("clEnqueueMigrateMemObjects")
                .or_default() += 1;
            match r {
                Err(e) => assert!(e.to_string().contains(status.name()), "{e}"),
                Ok(_) => return Err(fail("an injected migration failure was not reported")),
            }
            assert_eq!(
                settled(&refs_and_events, &before),
                before,
                "{status}: migration failure leaked"
            );
            let s = pool.stats();
            assert_eq!((s.held_blocks, s.active_blocks, s.managed_bytes), (0, 0, 0));
        }
        let b = pool.allocate(256)?;
        b.write(&q, &[7u8; 4], &[])?;
        assert_eq!(b.read_vec_of::<u8>(&q, 4)?, [7; 4]);
    }
    Ok(())
}

fn staged_transfer_failing_mid_way_is_an_error_and_the_retry_is_whole(
    dev: &TestDevice,
) -> TestResult {
    let q = dev.queue();
    let n = 64 * 1024;
    let a = Buffer::new(q.context(), MemFlags::READ_WRITE, n)?;
    a.fill(&q, &[0u8], Transfer::default().byte_count(n))
        .or_else(|_| a.write(&q, &vec![0u8; n], &[]))?;
    let data: Vec<u8> = (0..n).map(|i| u8::try_from(i % 251).unwrap()).collect();
    // One copying thread on Oclgrind: it crashes under concurrent API calls from several host
    // threads (docs/DEVICES.md), as the staged suite already knows.
    let threads = if dev.platform_name().contains("Oclgrind") {
        1
    } else {
        2
    };
    let opts = TransferOptions::staged(4096, threads);
    // Warm up: the buffer's command record then holds its last write and read, and the pinned
    // chunks are cached, so the live-event count before and after a failure compare like for like.
    a.write(&q, &data, Transfer::default().options(opts))?;
    a.read(&q, &mut vec![0u8; n], Transfer::default().options(opts))?;
    let live_events = || vec![Event::live_count() as u64];
    for status in STATUSES {
        // Worker threads release their chunk events asynchronously: compare settled counts.
        let events = stable(&live_events);
        // The fifth of sixteen chunk writes fails, on whichever worker thread enqueues it.
        let armed = fault::arm(
            Plan::next("clEnqueueWriteBuffer", status)
                .nth(5)
                .any_thread(),
        );
        let r = a.write(&q, &data, Transfer::default().options(opts));
        assert_eq!(armed.fired(), 1);
        drop(armed);
        *SEEN
            .lock()
            .unwrap()
            .entry("clEnqueueWriteBuffer")
            .or_default() += 1;
        match r {
            Err(e) => assert_eq!(e.cl_status(), Some(status), "{e}"),
            Ok(_) => return Err(fail("a staged write with a failed chunk reported success")),
        }
        let mut out = vec![0u8; n];
        let armed = fault::arm(
            Plan::next("clEnqueueReadBuffer", status)
                .nth(3)
                .any_thread(),
        );
        let r = a.read(&q, &mut out, Transfer::default().options(opts));
        assert_eq!(armed.fired(), 1);
        drop(armed);
        *SEEN
            .lock()
            .unwrap()
            .entry("clEnqueueReadBuffer")
            .or_default() += 1;
        match r {
            Err(e) => assert_eq!(e.cl_status(), Some(status), "{e}"),
            Ok(_) => return Err(fail("a staged read with a failed chunk reported success")),
        }
        assert_eq!(
            settled(&live_events, &events),
            events,
            "{status}: events leaked"
        );
        a.write(&q, &data, Transfer::default().options(opts))?;
        let mut out = vec![0u8; n];
        a.read(&q, &mut out, Transfer::default().options(opts))?;
        assert!(
            out == data,
            "{status}: the staged retry did not write every byte"
        );
        a.write(&q, &vec![0u8; n], &[])?;
        // The same for a staged rectangle: 64 rows of 256 bytes (host rows 300 bytes apart) in
        // pieces of 16 rows; the third piece's write fails, then the second piece's read.
        let rect = Rect::new([256, 64, 1]).src_pitches(300, 0);
        let back = Rect::new([256, 64, 1]).dst_pitches(300, 0);
        let host: Vec<u8> = (0..300 * 64)
            .map(|i| u8::try_from(i % 253).unwrap())
            .collect();
        let events = stable(&live_events);
        for (site, nth) in [
            ("clEnqueueWriteBufferRect", 3),
            ("clEnqueueReadBufferRect", 2),
        ] {
            let armed = fault::arm(Plan::next(site, status).nth(nth).any_thread());
            let r = if site == "clEnqueueWriteBufferRect" {
                a.write(&q, &host, Transfer::default().rect(rect).options(opts))
            } else {
                a.read(
                    &q,
                    &mut vec![0u8; 300 * 64],
                    Transfer::default().rect(back).options(opts),
                )
            };
            assert_eq!(armed.fired(), 1, "{site}");
            drop(armed);
            *SEEN.lock().unwrap().entry(site).or_default() += 1;
            match r {
                Err(e) => assert_eq!(e.cl_status(), Some(status), "{site}: {e}"),
                Ok(_) => {
                    return Err(fail(format!(
                        "a staged rectangle whose {site} failed reported success"
                    )))
                }
            }
        }
        assert_eq!(
            settled(&live_events, &events),
            events,
            "{status}: events leaked by a failed staged rectangle"
        );
        a.write(&q, &host, Transfer::default().rect(rect).options(opts))?;
        let mut out = vec![0u8; 300 * 64];
        a.read(&q, &mut out, Transfer::default().rect(back).options(opts))?;
        for r in 0..64 {
            assert!(
                out[r * 300..r * 300 + 256] == host[r * 300..r * 300 + 256],
                "{status}: the staged rectangle retry did not move row {r}"
            );
        }
        a.write(&q, &vec![0u8; n], &[])?;
    }
    Ok(())
}

/// A copy through pinned chunks (forced: on one device the source is read on the context's own
/// second queue) whose third chunk write or second chunk read fails: the typed error, no event
/// leaked once the chunks enqueued before it ran, later commands and maps ordered after them,
/// and the retry copies every byte.
fn staged_copy_between_devices_failing_mid_way_is_an_error_and_the_retry_is_whole(
    dev: &TestDevice,
) -> TestResult {
    let q = dev.queue();
    let n = 16 * 4096 + 3;
    let data: Vec<u8> = (0..n).map(|i| u8::try_from(i % 249).unwrap()).collect();
    let opts = TransferOptions {
        path: cl_mem::TransferPath::Staged,
        chunk_bytes: 4096,
        threads: 2,
        depth: 2,
    };
    let live_events = || vec![Event::live_count() as u64];
    for status in STATUSES {
        for (site, nth) in [("clEnqueueWriteBuffer", 3), ("clEnqueueReadBuffer", 2)] {
            // The records of two queues are pruned in phases, so events are counted with no
            // buffer alive: what is left over after both are dropped is a leak.
            let events = stable(&live_events);
            {
                let src = Buffer::new(q.context(), MemFlags::READ_WRITE, n)?;
                let dst = Buffer::new(q.context(), MemFlags::READ_WRITE, n)?;
                src.write(&q, &data, &[])?;
                dst.write(&q, &vec![0u8; n], &[])?;
                let armed = fault::arm(Plan::next(site, status).nth(nth));
                let r = enqueue_copy(&q, &dst, &src, Transfer::default().options(opts));
                assert_eq!(armed.fired(), 1, "{site}");
                drop(armed);
                *SEEN.lock().unwrap().entry(site).or_default() += 1;
                match r {
                    Err(e) => assert_eq!(e.cl_status(), Some(status), "{site}: {e}"),
                    Ok(_) => {
                        return Err(fail(format!(
                            "a staged copy whose {site} failed reported success"
                        )))
                    }
                }
                // A map after the failure waits for the chunks that were enqueued: it sees
                // whole chunks of the source and zeros, nothing else.
                let seen = dst.map::<u8, _>(&q, cl_mem::ReadOnly, .., &[])?.to_vec();
                for (i, (x, y)) in seen.iter().zip(&data).enumerate() {
                    assert!(*x == 0 || x == y, "{site}: byte {i} is neither old nor new");
                }
                enqueue_copy(&q, &dst, &src, Transfer::default().options(opts))?;
                assert!(
                    dst.read_vec_of::<u8>(&q, n)? == data,
                    "{status}: the staged copy's retry did not copy every byte ({site})"
                );
            }
            assert_eq!(
                settled(&live_events, &events),
                events,
                "{status}: events leaked by a failed staged copy ({site})"
            );
        }
    }
    Ok(())
}

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
    for s in SCENARIOS {
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
        if seen.contains_key(site) {
            assert!(
                fault::injected(site) >= 1,
                "{site} counted but never injected by cl-raw"
            );
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
    for s in SCENARIOS {
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

/// A pooled buffer used on queue A and bound to queue B: when the marker on A or the barrier on
/// B fails, the error is typed and the block still records A, so the next hand-out (or bind)
/// waits for A again; once the calls succeed it belongs to B alone. (Before 2026-11-26 the
/// block forgot A before the calls, so after a failure B's work could overlap A's.)
fn pooled_block_handed_to_another_queue_keeps_its_old_queue_when_the_sync_fails(
    dev: &TestDevice,
) -> TestResult {
    let d = &dev.device;
    if d.platform_version() < Version::V1_2 || d.version() < Version::V1_2 {
        return Err(skip(
            "the cross-queue hand-off uses markers and barriers of OpenCL 1.2",
        ));
    }
    let qa = dev.queue();
    let qb = Queue::new(qa.context(), d)?;
    let pool = MemoryPool::new(ImmediateAllocator::new(&qa, MemFlags::READ_WRITE)?);
    let mut b = pool.allocate(256)?;
    b.write(&qa, &[7u32; 64], &[])?;
    for site in [
        "clEnqueueMarkerWithWaitList",
        "clEnqueueBarrierWithWaitList",
    ] {
        for status in STATUSES {
            let armed = fault::arm(Plan::next(site, status));
            let r = b.bind_to_queue(&qb);
            let fired = armed.fired();
            drop(armed);
            assert_eq!(fired, 1, "{site}: the hand-off did not reach it");
            match r {
                Err(e) => assert_eq!(e.cl_status(), Some(status), "{site}: {e}"),
                Ok(()) => {
                    return Err(fail(format!(
                        "{site} {status}: the failure was not reported"
                    )))
                }
            }
            assert!(
                b.block().queues().iter().any(|q| q == &qa),
                "{site} {status}: the block forgot the queue it was used on"
            );
            *SEEN.lock().unwrap().entry(site).or_default() += 1;
        }
    }
    b.bind_to_queue(&qb)?;
    assert!(
        b.block().queues() == std::slice::from_ref(&qb),
        "after a successful hand-off the block belongs to the new queue alone"
    );
    let mut out = vec![0u32; 64];
    b.read(&qb, &mut out, &[])?;
    assert_eq!(out, vec![7u32; 64]);
    drop(b);
    qb.finish()?;
    Ok(())
}
