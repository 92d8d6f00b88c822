//! The runtime core: platform and device facts, contexts, queues, markers and barriers, events
//! (user events, callbacks, profiling), program builds, version gating and device selection.

use crate::common::SCALE_SRC;
use cl_mem::{select_devices, Selector};
use cl_mem::{
    ClError, Context, DeviceType, Error, EventStatus, MemFlags, Program, Queue, QueueProperties,
    RawHandle, SvmCapabilities, UserEvent, Version,
};
use cl_raw::{extra, sys};
use cl_tests::{device_test, Expectation, TestDevice, TestResult};
use std::sync::mpsc;
use std::time::Duration;

device_test!(platform_facts_are_consistent);
fn platform_facts_are_consistent(dev: &TestDevice) -> TestResult {
    let p = dev.platform;
    assert!(!p.name()?.trim().is_empty());
    assert!(!p.vendor()?.trim().is_empty());
    let version = p.version()?;
    assert_eq!(
        version,
        Version::parse_platform(&p.info::<String>(sys::CL_PLATFORM_VERSION)?)?
    );
    assert_eq!(version, dev.device.platform_version());
    assert!(version >= Version::V1_2, "platform {version}");
    let profile: String = p.info(sys::CL_PLATFORM_PROFILE)?;
    assert!(
        profile == "FULL_PROFILE" || profile == "EMBEDDED_PROFILE",
        "{profile}"
    );
    let exts: String = p.info(sys::CL_PLATFORM_EXTENSIONS)?;
    let exts: Vec<&str> = exts.split_whitespace().collect();
    for e in &exts {
        assert!(p.has_extension(e)?, "{e}");
    }
    assert!(!p.has_extension("cl_khr_no_such_extension")?);
    // Exact match, not substring: a prefix of a listed extension is not listed.
    if let Some(e) = exts.iter().find(|e| e.len() > 4) {
        let prefix = &e[..e.len() - 1];
        assert_eq!(p.has_extension(prefix)?, exts.contains(&prefix));
    }
    // The generic query checks the parameter first: a 3.0 one on an older platform and one it
    // does not know never reach the driver.
    let numeric = p.info::<u32>(0x0906);
    if version < Version::V3_0 {
        assert!(
            matches!(numeric, Err(Error::Unsupported { .. })),
            "{numeric:?}"
        );
    } else {
        assert_eq!(
            cl_raw::Version::from_cl_version(numeric?).major,
            version.major
        );
    }
    // A 2.1 one likewise (Oclgrind's platform is 1.2).
    let timer = p.info::<u64>(sys::CL_PLATFORM_HOST_TIMER_RESOLUTION);
    if version < Version::V2_1 {
        assert!(matches!(timer, Err(Error::Unsupported { .. })), "{timer:?}");
    } else {
        timer?;
    }
    assert!(matches!(
        p.info::<u32>(0x0999),
        Err(Error::InvalidArgument(_))
    ));
    assert!(cl_mem::Platform::list()?.contains(&p));
    Ok(())
}

device_test!(device_facts_are_within_spec_minimums);
fn device_facts_are_within_spec_minimums(dev: &TestDevice) -> TestResult {
    let d = dev.device;
    assert_eq!(d.platform(), dev.platform);
    assert!(!d.name()?.trim().is_empty());
    assert!(!d.info::<String>(sys::CL_DRIVER_VERSION)?.trim().is_empty());
    assert!(!d.device_type()?.is_empty());
    assert!(d.info::<bool>(sys::CL_DEVICE_AVAILABLE)?);
    assert!(d.info::<bool>(sys::CL_DEVICE_COMPILER_AVAILABLE)?);
    assert!(d.version() <= d.platform_version() || d.version() >= Version::V1_2);
    let c = Version::parse_opencl_c(&d.info::<String>(sys::CL_DEVICE_OPENCL_C_VERSION)?)?;
    assert!(
        c >= Version::V1_0 && c <= Version::new(3, 9),
        "OpenCL C {c}"
    );
    let global = d.global_mem_size()?;
    let max_alloc = d.max_mem_alloc_size()?;
    assert!(
        max_alloc > 0 && max_alloc <= global,
        "max alloc {max_alloc}, global {global}"
    );
    let bits: u32 = d.info(sys::CL_DEVICE_MEM_BASE_ADDR_ALIGN)?;
    assert!(
        bits >= 8 && bits.is_multiple_of(8),
        "CL_DEVICE_MEM_BASE_ADDR_ALIGN {bits}"
    );
    assert_eq!(d.base_addr_align(), (bits / 8) as usize);
    assert!(d.base_addr_align().is_power_of_two());
    assert!(
        d.local_mem_size()? >= 1024,
        "local memory {}",
        d.local_mem_size()?
    );
    let lmt: u32 = d.info(sys::CL_DEVICE_LOCAL_MEM_TYPE)?;
    assert!(lmt == sys::CL_LOCAL || lmt == sys::CL_GLOBAL, "{lmt:#x}");
    let wg = d.max_work_group_size()?;
    assert!(wg >= 1);
    let items: Vec<usize> = d.info(sys::CL_DEVICE_MAX_WORK_ITEM_SIZES)?;
    assert!(items.len() >= 3, "{items:?}");
    assert!(items[0] >= 1);
    assert!(matches!(
        d.info::<u32>(sys::CL_DEVICE_ADDRESS_BITS)?,
        32 | 64
    ));
    assert!(d.max_compute_units()? >= 1);
    // The harness machines are x86-64.
    assert!(d.info::<bool>(sys::CL_DEVICE_ENDIAN_LITTLE)?);
    let img = d.image_support()?;
    let limits = d.image_limits()?;
    if img {
        assert!(
            limits.max_2d[0] >= 2048 && limits.max_2d[1] >= 2048,
            "{limits:?}"
        );
        assert!(limits.max_read_image_args >= 8, "{limits:?}");
    }
    Ok(())
}

device_test!(version_gated_facts_follow_the_version);
fn version_gated_facts_follow_the_version(dev: &TestDevice) -> TestResult {
    let d = dev.device;
    let v = d.version();
    let svm = d.svm_capabilities()?;
    if v < Version::V2_0 {
        assert_eq!(svm, SvmCapabilities::empty());
        assert!(!d.pipe_support()?);
        assert_eq!(d.image_limits()?.pitch_alignment, 0);
    }
    if (Version::V2_0..Version::V3_0).contains(&v) {
        assert!(
            svm.contains(SvmCapabilities::COARSE_GRAIN_BUFFER),
            "2.x requires coarse-grain SVM"
        );
        assert!(d.pipe_support()?);
    }
    // The generic query refuses a parameter newer than the device before the driver sees it.
    let three = v >= Version::V3_0 && d.platform_version() >= Version::V3_0;
    let multiple = d.info::<usize>(extra::CL_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE);
    let numeric = d.info::<u32>(extra::CL_DEVICE_NUMERIC_VERSION);
    let atomics = d.info::<u64>(extra::CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES);
    let fences = d.info::<u64>(extra::CL_DEVICE_ATOMIC_FENCE_CAPABILITIES);
    let c_versions = d.info::<Vec<extra::cl_name_version>>(extra::CL_DEVICE_OPENCL_C_ALL_VERSIONS);
    if three {
        assert!(multiple? >= 1);
        let n = Version::from_cl_version(numeric?);
        assert_eq!(n.major, v.major, "numeric {n} vs string {v}");
        assert!(atomics? & extra::CL_DEVICE_ATOMIC_ORDER_RELAXED != 0);
        fences?;
        assert!(!c_versions?.is_empty());
    } else {
        for r in [
            multiple.map(|_| ()),
            numeric.map(|_| ()),
            atomics.map(|_| ()),
            fences.map(|_| ()),
            c_versions.map(|_| ()),
        ] {
            assert!(matches!(r, Err(Error::Unsupported { .. })), "{r:?}");
        }
    }
    assert!(matches!(
        d.info::<u32>(0x7777),
        Err(Error::InvalidArgument(_))
    ));
    // A `T` of another size than the value is refused whole, never truncated or read past: a
    // `cl_ulong` parameter into `u8` or `u32`, a `cl_uint` one into `u64` or `Vec<u64>`.
    for r in [
        d.info::<u8>(sys::CL_DEVICE_GLOBAL_MEM_SIZE).map(|_| ()),
        d.info::<u32>(sys::CL_DEVICE_GLOBAL_MEM_SIZE).map(|_| ()),
        d.info::<u64>(sys::CL_DEVICE_ADDRESS_BITS).map(|_| ()),
        d.info::<Vec<u64>>(sys::CL_DEVICE_ADDRESS_BITS).map(|_| ()),
    ] {
        assert!(
            matches!(
                r,
                Err(Error::Cl {
                    status: ClError::InvalidValue,
                    ..
                })
            ),
            "{r:?}"
        );
    }
    // Every gate against the rule (both the device and the platform at least the version), at
    // every version, so the check can fail on any device.
    for needed in [Version::V1_2, Version::V2_0, Version::V2_1, Version::V3_0] {
        assert_eq!(
            d.require_version(needed, "test").is_ok(),
            needed <= v && needed <= d.platform_version(),
            "require_version({needed}) on device {v}, platform {}",
            d.platform_version()
        );
    }
    Ok(())
}

device_test!(vendor_attributes_only_with_their_extension);
fn vendor_attributes_only_with_their_extension(dev: &TestDevice) -> TestResult {
    let d = dev.device;
    let nv = d.has_extension("cl_nv_device_attribute_query")?;
    assert_eq!(d.info::<u32>(extra::CL_DEVICE_WARP_SIZE_NV).is_ok(), nv);
    assert_eq!(
        d.info::<u32>(extra::CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV)
            .is_ok(),
        nv
    );
    let amd = d.info::<u32>(extra::CL_DEVICE_WAVEFRONT_WIDTH_AMD);
    assert_eq!(
        amd.is_ok(),
        d.has_extension("cl_amd_device_attribute_query")?
    );
    if let Err(e) = amd {
        assert!(matches!(e, Error::Unsupported { .. }), "{e:?}");
    }
    // CL_DEVICE_HALF_FP_CONFIG: inside the 1.x range, yet cl_khr_fp16's.
    let half = d.info::<u64>(0x1033);
    assert_eq!(half.is_ok(), d.has_extension("cl_khr_fp16")?, "{half:?}");
    if let Err(e) = half {
        assert!(matches!(e, Error::Unsupported { .. }), "{e:?}");
    }
    let intel = d.info::<Vec<usize>>(extra::CL_DEVICE_SUB_GROUP_SIZES_INTEL);
    assert_eq!(
        intel.is_ok(),
        d.has_extension("cl_intel_required_subgroup_size")?
    );
    if let Ok(sizes) = &intel {
        assert!(
            !sizes.is_empty() && sizes.iter().all(|s| s.is_power_of_two()),
            "{sizes:?}"
        );
    }
    Ok(())
}

device_test!(work_group_info_refuses_a_device_outside_the_kernels_context);
fn work_group_info_refuses_a_device_outside_the_kernels_context(dev: &TestDevice) -> TestResult {
    let program = Program::build_from_source(&dev.context(), SCALE_SRC, "")?;
    let k = program.kernel("scale")?;
    let ours: usize = k.work_group_info(&dev.device, sys::CL_KERNEL_WORK_GROUP_SIZE)?;
    assert!(ours >= 1);
    // Any other device of the machine (every runtime the harness installs lists its own).
    let other = cl_mem::Platform::list()?
        .iter()
        .flat_map(|p| p.devices(DeviceType::ALL).unwrap_or_default())
        .find(|d| *d != dev.device);
    let Some(other) = other else {
        return Err(cl_tests::skip("no second device on this machine to try"));
    };
    let r = k.work_group_info::<usize>(&other, sys::CL_KERNEL_WORK_GROUP_SIZE);
    assert!(
        matches!(&r, Err(Error::InvalidArgument(m)) if m.contains("context")),
        "{r:?}"
    );
    Ok(())
}

device_test!(context_lists_its_device_and_refcounts);
fn context_lists_its_device_and_refcounts(dev: &TestDevice) -> TestResult {
    let ctx = Context::new(&[dev.device])?;
    assert_eq!(ctx.devices(), [dev.device]);
    assert_eq!(ctx.reference_count()?, 1);
    let copy = ctx.clone();
    assert_eq!(ctx.reference_count()?, 2);
    assert_eq!(copy, ctx);
    drop(copy);
    assert_eq!(ctx.reference_count()?, 1);
    // A context adopted from a raw retained handle sees the same devices.
    // SAFETY: a valid context handle.
    let again = unsafe { Context::from_raw_retained(ctx.as_raw()) }?;
    assert_eq!(again.devices(), ctx.devices());
    assert_eq!(ctx.reference_count()?, 2);
    again.release()?;
    assert_eq!(ctx.reference_count()?, 1);
    Ok(())
}

device_test!(context_destructor_callback_runs_or_is_refused);
fn context_destructor_callback_runs_or_is_refused(dev: &TestDevice) -> TestResult {
    let ctx = Context::new(&[dev.device])?;
    let (tx, rx) = mpsc::channel();
    let r = ctx.on_destroy(move || {
        let _ = tx.send(());
    });
    if dev.device.platform_version() < Version::V3_0 {
        // Refused before the driver is called: Oclgrind hangs on 3.0 entry points.
        assert!(
            matches!(
                r,
                Err(Error::Unsupported {
                    feature: "clSetContextDestructorCallback",
                    ..
                })
            ),
            "{r:?}"
        );
        return Ok(());
    }
    r?;
    let queue = Queue::new(&ctx, &dev.device)?;
    drop(ctx);
    assert!(rx.try_recv().is_err(), "the queue still holds the context");
    drop(queue);
    rx.recv_timeout(Duration::from_secs(10))
        .map_err(|e| cl_tests::fail(format!("destructor callback did not run: {e}")))?;
    Ok(())
}

device_test!(context_rejects_bad_device_lists);
fn context_rejects_bad_device_lists(dev: &TestDevice) -> TestResult {
    assert!(matches!(Context::new(&[]), Err(Error::InvalidArgument(_))));
    // A device listed twice is one device (the driver ignores duplicates): the context lists
    // it once, as the driver's CL_CONTEXT_DEVICES does.
    let twice = Context::new(&[dev.device, dev.device])?;
    assert_eq!(twice.devices(), [dev.device]);
    // SAFETY: a valid context handle.
    let again = unsafe { Context::from_raw_retained(twice.as_raw()) }?;
    assert_eq!(again.devices(), twice.devices());
    let platforms = cl_mem::Platform::list()?;
    let firsts: Vec<_> = platforms
        .iter()
        .filter_map(|p| p.devices(DeviceType::ALL).ok()?.first().copied())
        .collect();
    if firsts.len() >= 2 {
        assert!(
            matches!(Context::new(&firsts[..2]), Err(Error::InvalidArgument(m)) if m.contains("one platform"))
        );
    }
    Ok(())
}

/// `CL_QUEUE_PROPERTIES` as the driver reports it.
fn driver_properties(q: &Queue) -> Result<QueueProperties, Error> {
    // SAFETY: a valid queue; a 1.0 parameter.
    let bits = unsafe {
        cl_raw::object::get_info(
            cl_raw::object::Object::Queue,
            q.as_raw(),
            sys::CL_QUEUE_PROPERTIES,
        )
    }
    .map_err(|status| Error::Cl {
        call: "clGetCommandQueueInfo",
        status,
    })?;
    Ok(QueueProperties::from_bits_retain(bits))
}

device_test!(queue_properties_round_trip);
fn queue_properties_round_trip(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let q = Queue::new(&ctx, &dev.device)?;
    assert_eq!(q.properties(), QueueProperties::empty());
    assert_eq!(driver_properties(&q)?, QueueProperties::empty());
    assert_eq!(q.context(), &ctx);
    assert_eq!(q.device(), &dev.device);
    let supported =
        QueueProperties::from_bits_retain(dev.device.info(sys::CL_DEVICE_QUEUE_PROPERTIES)?);
    assert!(
        supported.contains(QueueProperties::PROFILING_ENABLE),
        "profiling is mandatory"
    );
    let p = Queue::with_properties(&ctx, &dev.device, QueueProperties::PROFILING_ENABLE)?;
    assert_eq!(driver_properties(&p)?, QueueProperties::PROFILING_ENABLE);
    let ooo = Queue::with_properties(
        &ctx,
        &dev.device,
        QueueProperties::OUT_OF_ORDER_EXEC_MODE_ENABLE,
    );
    if supported.contains(QueueProperties::OUT_OF_ORDER_EXEC_MODE_ENABLE) {
        let ooo = ooo?;
        assert!(driver_properties(&ooo)?.contains(QueueProperties::OUT_OF_ORDER_EXEC_MODE_ENABLE));
        ooo.finish()?;
    } else {
        assert!(matches!(ooo, Err(Error::Unsupported { .. })), "{ooo:?}");
    }
    let copy = q.clone();
    assert_eq!(copy, q);
    copy.flush()?;
    q.finish()?;
    copy.release()?;
    Ok(())
}

device_test!(queue_rejects_device_side_properties);
fn queue_rejects_device_side_properties(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let r = Queue::with_properties(
        &ctx,
        &dev.device,
        QueueProperties::from_bits_retain(sys::CL_QUEUE_ON_DEVICE),
    );
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    Ok(())
}

device_test!(
    marker_waits_for_user_event,
    expected = &[
        Expectation {
            platform: "nvidia",
            device: "",
            version: "580.",
            reason: "markers and barriers with a non-empty wait list report CL_EVENT_COMMAND_TYPE 0x4003, not CL_COMMAND_MARKER",
            link: "docs/DEVICES.md#nvidia-gpu-machine",
            failure: "CL_EVENT_COMMAND_TYPE of a marker with a wait list: 0x4003",
            flaky: false,
        }
    ]
);
fn marker_waits_for_user_event(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let gate = UserEvent::new(q.context())?;
    assert_eq!(gate.status()?, EventStatus::Submitted);
    let marker = q.enqueue_marker(&[&gate])?;
    // No clFlush here: Oclgrind 21.10 runs the queue inside clFlush on the calling thread, so a
    // flush while a command waits on an unset user event never returns (docs/DEVICES.md#oclgrind).
    assert_ne!(
        marker.status()?,
        EventStatus::Complete,
        "the marker must wait for the user event"
    );
    gate.set_complete()?;
    marker.wait()?;
    assert_eq!(marker.status()?, EventStatus::Complete);
    let ty = marker.command_type()?;
    assert_eq!(
        ty,
        cl_raw::sys::CL_COMMAND_MARKER,
        "CL_EVENT_COMMAND_TYPE of a marker with a wait list: {ty:#x}"
    );
    marker.wait()?;
    gate.wait()?;
    Ok(())
}

device_test!(barrier_orders_later_commands);
fn barrier_orders_later_commands(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let buf = cl_mem::Buffer::from_slice(q.context(), MemFlags::READ_WRITE, &[1u32; 16])?;
    let gate = UserEvent::new(q.context())?;
    let barrier = q.enqueue_barrier(&[&gate])?;
    assert_ne!(barrier.status()?, EventStatus::Complete);
    gate.set_complete()?;
    // The blocking write is after the barrier, so it can only finish once the gate opened.
    buf.write(&q, &[7u32; 16], &[])?;
    assert_eq!(barrier.status()?, EventStatus::Complete);
    let mut out = [0u32; 16];
    buf.read(&q, &mut out, &[])?;
    assert_eq!(out, [7u32; 16]);
    Ok(())
}

device_test!(user_event_callback_gets_complete);
fn user_event_callback_gets_complete(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let ev = UserEvent::new(&ctx)?;
    let (tx, rx) = mpsc::channel();
    ev.on(cl_mem::CallbackOn::Complete, move |status| {
        let _ = tx.send(status);
    })?;
    assert!(rx.try_recv().is_err(), "callback ran before completion");
    ev.set_complete()?;
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(10))
            .map_err(|e| cl_tests::fail(e.to_string()))?,
        EventStatus::Complete
    );
    Ok(())
}

device_test!(
    user_event_error_reaches_callback,
    expected = &[
        Expectation {
            platform: "nvidia",
            device: "",
            version: "580.",
            reason: "a CL_COMPLETE callback gets CL_COMPLETE, not the error, when a user event is set to an error status",
            link: "docs/DEVICES.md#nvidia-gpu-machine",
            failure: "the CL_COMPLETE callback of a user event set to an error got Complete",
            flaky: false,
        },
        Expectation {
            platform: "portable",
            device: "",
            version: "PoCL",
            reason: "a CL_COMPLETE callback never runs when a user event is set to an error status",
            link: "docs/DEVICES.md#pocl",
            failure: "the CL_COMPLETE callback did not run",
            flaky: false,
        }
    ]
);
fn user_event_error_reaches_callback(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let ev = UserEvent::new(&ctx)?;
    let (tx, rx) = mpsc::channel();
    ev.on(cl_mem::CallbackOn::Complete, move |status| {
        let _ = tx.send(status);
    })?;
    assert!(matches!(
        ev.set_error(ClError::Unknown(5)),
        Err(Error::InvalidArgument(_))
    ));
    ev.set_error(ClError::OutOfResources)?;
    let got = rx
        .recv_timeout(Duration::from_secs(10))
        .map_err(|e| cl_tests::fail(format!("the CL_COMPLETE callback did not run: {e}")))?;
    assert!(
        matches!(got, EventStatus::Error(_)),
        "the CL_COMPLETE callback of a user event set to an error got {got:?}"
    );
    assert!(matches!(ev.status()?, EventStatus::Error(_)));
    Ok(())
}

device_test!(
    user_event_status_is_set_once,
    expected = &[
        Expectation {
            platform: "nvidia",
            device: "",
            version: "580.",
            reason: "a second clSetUserEventStatus(CL_COMPLETE) returns CL_SUCCESS, not CL_INVALID_OPERATION",
            link: "docs/DEVICES.md#nvidia-gpu-machine",
            failure: "a second clSetUserEventStatus returned Ok(())",
            flaky: false,
        }
    ]
);
fn user_event_status_is_set_once(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let ev = UserEvent::new(&ctx)?;
    ev.set_complete()?;
    let again = ev.set_complete();
    assert!(
        matches!(
            again,
            Err(Error::Cl {
                call: "clSetUserEventStatus",
                status: ClError::InvalidOperation
            })
        ),
        "a second clSetUserEventStatus returned {again:?}"
    );
    assert_eq!(ev.command_type()?, cl_raw::sys::CL_COMMAND_USER);
    Ok(())
}

device_test!(profiling_times_are_ordered);
fn profiling_times_are_ordered(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let q = Queue::with_properties(&ctx, &dev.device, QueueProperties::PROFILING_ENABLE)?;
    let buf = cl_mem::Buffer::new(&ctx, MemFlags::READ_WRITE, 1 << 16)?;
    let ev = buf.write(&q, &vec![3u8; 1 << 16], &[])?;
    ev.wait()?;
    let t = ev.profiling()?;
    assert!(t.queued <= t.submitted, "{t:?}");
    assert!(t.submitted <= t.started, "{t:?}");
    assert!(t.started <= t.ended, "{t:?}");
    Ok(())
}

device_test!(
    profiling_needs_a_profiling_queue,
    expected = &[Expectation {
        platform: "oclgrind",
        device: "",
        version: "Oclgrind 21.10",
        reason:
            "clGetEventProfilingInfo answers for queues created without CL_QUEUE_PROFILING_ENABLE",
        link: "docs/DEVICES.md#oclgrind",
        failure: "clGetEventProfilingInfo on a queue without profiling returned Ok(",
        flaky: false,
    }]
);
fn profiling_needs_a_profiling_queue(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let buf = cl_mem::Buffer::new(q.context(), MemFlags::READ_WRITE, 64)?;
    let ev = buf.write(&q, &[1u8; 64], &[])?;
    let r = ev.profiling();
    assert!(
        matches!(
            r,
            Err(Error::Cl {
                call: "clGetEventProfilingInfo",
                status: ClError::ProfilingInfoNotAvailable
            })
        ),
        "clGetEventProfilingInfo on a queue without profiling returned {r:?}"
    );
    let user = UserEvent::new(q.context())?;
    user.set_complete()?;
    assert!(user.profiling().is_err());
    Ok(())
}

device_test!(build_error_carries_the_log);
fn build_error_carries_the_log(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let r = Program::build_from_source(
        &ctx,
        "__kernel void broken(__global int* p) { p[0] = undeclared_name; }",
        "",
    );
    match r {
        Err(Error::Build { status, log }) => {
            assert_eq!(status, ClError::BuildProgramFailure);
            assert!(
                log.contains(&format!("--- build log for {}", dev.device.name()?)),
                "{log}"
            );
            let e = Error::Build { status, log };
            assert!(e
                .to_string()
                .starts_with("clBuildProgram failed: CL_BUILD_PROGRAM_FAILURE"));
        }
        other => {
            return Err(cl_tests::fail(format!(
                "expected a build error, got {other:?}"
            )))
        }
    }
    assert!(matches!(
        Program::build_from_source(&ctx, "  ", ""),
        Err(Error::InvalidArgument(_))
    ));
    let src = "__kernel void k(int x) {}";
    assert!(matches!(
        Program::build_from_source(&ctx, src, "-D A=\0"),
        Err(Error::InvalidArgument(_))
    ));
    let ok = Program::build_from_source(&ctx, src, "")?;
    assert_eq!(ok.kernel_names()?, vec!["k".to_owned()]);
    Ok(())
}

device_test!(newer_entry_points_refused_on_older_platforms);
fn newer_entry_points_refused_on_older_platforms(dev: &TestDevice) -> TestResult {
    let d = dev.device;
    let pv = d.platform_version();
    for needed in [Version::V2_0, Version::V2_1, Version::V3_0] {
        let r = d.require_version(needed, "feature");
        if pv < needed {
            let e = r.unwrap_err();
            assert!(matches!(
                e,
                Error::Unsupported {
                    feature: "feature",
                    ..
                }
            ));
            assert!(
                e.to_string().contains(&format!(
                    "needs OpenCL {needed}, the platform is OpenCL {pv}"
                )),
                "{e}"
            );
        } else if d.version() >= needed {
            r.unwrap_or_else(|e| panic!("require_version({needed}) on a {pv} platform: {e}"));
        }
    }
    let q = dev.queue();
    if pv < Version::V2_0 {
        // Refused before the driver is called: a 1.2 platform must never see a 2.0 entry point.
        let program = Program::build_from_source(q.context(), SCALE_SRC, "")?;
        let mut k = program.kernel("scale")?;
        // SAFETY: the call is refused before the pointer is used.
        let r = unsafe { k.set_arg_svm_pointer(0, std::ptr::null()) };
        assert!(
            matches!(
                r,
                Err(Error::Unsupported {
                    feature: "clSetKernelArgSVMPointer",
                    ..
                })
            ),
            "{r:?}"
        );
        assert_eq!(d.svm_capabilities()?, SvmCapabilities::empty());
    } else {
        // 2.0+: queues go through clCreateCommandQueueWithProperties and still report properties.
        let p = Queue::with_properties(q.context(), &d, QueueProperties::PROFILING_ENABLE)?;
        assert_eq!(driver_properties(&p)?, QueueProperties::PROFILING_ENABLE);
    }
    Ok(())
}

device_test!(selection_finds_this_device);
fn selection_finds_this_device(dev: &TestDevice) -> TestResult {
    let by_index = format!("{}:{}", dev.platform_index(), dev.device_index());
    let devices = |spec: &str| -> Result<Vec<cl_mem::Device>, Error> {
        Ok(select_devices(spec, "test")?
            .into_iter()
            .map(|s| s.device)
            .collect())
    };
    let picked = select_devices(&by_index, "test")?;
    assert_eq!(picked.len(), 1);
    assert_eq!(picked[0].device, dev.device);
    assert_eq!(
        (picked[0].platform_index, picked[0].device_index),
        (dev.platform_index(), dev.device_index())
    );
    let twice = format!(
        "{}:{},{}",
        dev.platform_index(),
        dev.device_index(),
        dev.device_index()
    );
    assert_eq!(devices(&twice)?, vec![dev.device, dev.device]);
    let all = devices("")?;
    assert!(all.contains(&dev.device));
    let whole_platform = devices(&dev.platform_index().to_string())?;
    assert_eq!(whole_platform, dev.platform.devices(DeviceType::ALL)?);
    let e = select_devices("no-such-platform-xyz", "CL_TEST").unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.starts_with("CL_TEST: no platform matches 'no-such-platform-xyz'"),
        "{msg}"
    );
    assert!(msg.contains(dev.platform.name()?.trim()), "{msg}");
    let e = select_devices(&format!("{}:999", dev.platform_index()), "CL_CTX").unwrap_err();
    assert!(e.to_string().contains(dev.device.name()?.trim()), "{e}");
    assert!(matches!(
        select_devices("a:b:c", "x"),
        Err(Error::Select { .. })
    ));
    assert!(!Selector::parse("0:0")?.entries.is_empty());
    // The selected device is of one of the concrete types (ALL is a query mask, not a type).
    let t = dev.device.device_type()?;
    assert!(
        t.intersects(
            DeviceType::CPU | DeviceType::GPU | DeviceType::ACCELERATOR | DeviceType::CUSTOM
        ),
        "{t:?}"
    );
    Ok(())
}

device_test!(default_device_ranks_gpus_first_and_simulators_last);
/// `create_some_context`'s preference, checked on the device itself: NVIDIA is a GPU, PoCL and
/// the Intel runtime are CPU runtimes, Oclgrind is a simulator (chosen last). With only this
/// device selected through the test variable, `default_device` is this device.
fn default_device_ranks_gpus_first_and_simulators_last(dev: &TestDevice) -> TestResult {
    let rank = cl_mem::DeviceRank::of(&dev.device);
    let platform = dev.platform.name()?;
    let expected = if platform.contains("Oclgrind") {
        cl_mem::DeviceRank::Simulator
    } else if dev.device.device_type()?.contains(cl_mem::DeviceType::GPU) {
        cl_mem::DeviceRank::Gpu
    } else if dev.device.device_type()?.contains(cl_mem::DeviceType::CPU) {
        cl_mem::DeviceRank::Cpu
    } else {
        cl_mem::DeviceRank::Other
    };
    assert_eq!(rank, expected, "{platform}");
    if platform.contains("NVIDIA") {
        assert_eq!(rank, cl_mem::DeviceRank::Gpu);
    }
    if platform.contains("Portable") || platform.contains("Intel") {
        assert_eq!(rank, cl_mem::DeviceRank::Cpu);
    }
    assert!(cl_mem::DeviceRank::Gpu < cl_mem::DeviceRank::Cpu);
    assert!(cl_mem::DeviceRank::Cpu < cl_mem::DeviceRank::Simulator);
    // The matrix runs each device in its own process with CL_TEST naming it.
    let by_test = std::env::var("CL_TEST").unwrap_or_default();
    if !by_test.trim().is_empty() && select_devices(&by_test, "CL_TEST")?.len() == 1 {
        assert_eq!(cl_mem::create_some_context()?.devices(), [dev.device]);
    }
    Ok(())
}
