//! Out-of-memory injected at the creation and enqueue sites of runtime objects, buffers, maps,
//! images, samplers, pipes and SVM.

use super::{settled, stable, Counts, IMAGE_SITES, SEEN, STATUSES, SVM_SITES};
use cl_mem::svm::{csvm_empty, enqueue_svm_migrate};
use cl_mem::{
    enqueue_copy, enqueue_migrate_mem_objects, AddressingMode, Buffer, ChannelOrder, ChannelType,
    ClError, Context, Error, Event, FillColor, FilterMode, Image, ImageDesc, ImageFormat, MapFlags,
    MemFlags, MemObject, MigrationFlags, Pipe, Program, Queue, RawHandle, Rect, Sampler,
    SvmCapabilities, Transfer, UserEvent, Version,
};
use cl_raw::fault;
use cl_raw::fault::Threads;
use cl_tests::{eventually, fail, skip, TestDevice, TestResult};
use std::sync::Mutex;

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
        let armed = fault::arm(site, status, 1..=times, Threads::Current);
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

const RGBA_U8: ImageFormat = ImageFormat::new(ChannelOrder::Rgba, ChannelType::UnsignedInt8);

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

/// The context's and queue's reference counts and the live `Event` wrappers, plus `more`.
fn base_counts(q: &Queue, more: &[&dyn MemObject]) -> Vec<u64> {
    let mut v = vec![
        u64::from(q.context().reference_count().unwrap()),
        u64::from(q.reference_count().unwrap()),
        cl_mem::live_objects().events as u64,
    ];
    for m in more {
        let info = m.mem_info().unwrap();
        v.push(u64::from(info.reference_count));
        v.push(u64::from(info.map_count));
    }
    v
}

const SOURCE: &str =
    "__kernel void twice(__global uint *a) { size_t i = get_global_id(0); a[i] = 2 * a[i]; }";

scenario!(
    context_and_queue_creation_fail_typed,
    sites = &[
        "clCreateContext",
        "clCreateCommandQueue",
        "clCreateCommandQueueWithProperties",
    ]
);
fn context_and_queue_creation_fail_typed(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let devices = [dev.device];
    let counts = || vec![cl_mem::live_objects().events as u64];
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

scenario!(
    buffer_and_sub_buffer_creation_fail_typed,
    sites = &["clCreateBuffer", "clCreateSubBuffer"]
);
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

scenario!(
    buffer_transfers_fail_typed_and_leave_data_unchanged,
    sites = &[
        "clEnqueueWriteBuffer",
        "clEnqueueReadBuffer",
        "clEnqueueWriteBufferRect",
        "clEnqueueReadBufferRect",
        "clEnqueueCopyBuffer",
        "clEnqueueCopyBufferRect",
        "clEnqueueFillBuffer",
        "clEnqueueMigrateMemObjects",
    ]
);
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

scenario!(
    buffer_maps_and_unmaps_fail_typed_and_leave_nothing_mapped,
    sites = &["clEnqueueMapBuffer", "clEnqueueUnmapMemObject"]
);
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

scenario!(
    programs_kernels_and_launches_fail_typed,
    sites = &[
        "clCreateProgramWithSource",
        "clBuildProgram",
        "clCreateKernel",
        "clEnqueueNDRangeKernel",
    ]
);
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
        &|| kernel.enqueue_nd_range(&q, &[16], None, &[]),
        &|| {
            assert_eq!(a.read_vec_of::<u32>(&q, 16)?, vec![3; 16]);
            Ok(())
        },
    )?
    .wait()?;
    assert_eq!(a.to_vec::<u32>(&q)?, vec![6; 16]);
    Ok(())
}

scenario!(
    markers_barriers_and_user_events_fail_typed,
    sites = &[
        "clEnqueueMarkerWithWaitList",
        "clEnqueueBarrierWithWaitList",
        "clEnqueueMarker",
        "clCreateUserEvent",
    ]
);
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

scenario!(
    event_callbacks_fail_typed_and_a_migration_keeps_its_list_without_one,
    sites = &["clSetEventCallback"]
);
/// `Event::on_complete` fails typed (the closure dropped, not run). A migration whose list's
/// completion callback cannot be registered still succeeds and does not wait for its command:
/// held back by a user event set only afterwards, it would never return if it waited (so the
/// list is leaked instead, a few bytes).
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
        user.on(cl_mem::CallbackOn::Complete, move |_| {
            r.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        })
    })?;
    if dev.device.platform_version() >= Version::V1_2 {
        let b = Buffer::new(q.context(), MemFlags::READ_WRITE, 4096)?;
        let gate = UserEvent::new(q.context())?;
        let kept_before = cl_mem::live_objects().kept_lists;
        let armed = fault::arm(
            "clSetEventCallback",
            ClError::OutOfHostMemory,
            1..=1,
            Threads::Current,
        );
        let migrated =
            enqueue_migrate_mem_objects(&q, &[&b], MigrationFlags::CONTENT_UNDEFINED, &[&*gate]);
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

scenario!(images_fail_typed_at_every_site, sites = IMAGE_SITES);
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
        img.map(&q, MapFlags::READ, &[], &[], &[], |m| m.bytes()[0])
    })?;
    assert_eq!(first, 9);
    Ok(())
}

scenario!(
    samplers_and_pipes_fail_typed,
    sites = &[
        "clCreateSampler",
        "clCreateSamplerWithProperties",
        "clCreatePipe",
    ]
);
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
        assert!(!s.info()?.normalized_coords);
    }
    let pipes = v2 && dev.device.pipe_support()?;
    if pipes {
        let p = inject("clCreatePipe", &counts, &|| {
            Pipe::new(ctx, MemFlags::READ_WRITE, 4, 16)
        })?;
        assert_eq!(p.reference_count()?, 1);
    }
    if !dev.device.image_support()? && !pipes {
        return Err(cl_tests::skip(
            "neither images (samplers) nor pipes on this device",
        ));
    }
    Ok(())
}

scenario!(svm_fails_typed_at_every_site, sites = SVM_SITES);
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
        let armed = fault::arm(
            "clSVMAlloc",
            ClError::OutOfResources,
            1..=1,
            Threads::Current,
        );
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
            enqueue_svm_migrate(&q, &[&*b.lock().unwrap()], MigrationFlags::empty(), &[])
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
        let armed = fault::arm("clEnqueueSVMUnmap", status, 1..=1, Threads::Current);
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
    let armed = fault::arm(
        "clEnqueueSVMFree",
        ClError::OutOfResources,
        1..=1,
        Threads::Current,
    );
    drop(b);
    let fired = armed.fired();
    drop(armed);
    assert_eq!(fired, 1, "the SVM free did not reach clEnqueueSVMFree");
    *SEEN.lock().unwrap().entry("clEnqueueSVMFree").or_default() += 1;
    let c = csvm_empty::<u32>(&q, 64)?;
    c.fill(&q, &[2], &[])?.wait()?;
    Ok(())
}
