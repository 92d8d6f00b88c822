//! The runtime core (`cl-mem` issue 2): platform and device facts, contexts, queues, markers and
//! barriers, events (user events, callbacks, profiling), programs and kernels, buffers, version
//! gating and device selection, on every selected device.

use cl_mem::Transfer;
use std::sync::mpsc;
use std::time::Duration;

use cl_mem::select::{select_devices, Selector};
use cl_mem::RawHandle;
use cl_mem::{
    ClError, Context, DeviceType, Error, Event, EventStatus, Kernel, LocalMemType, LocalMemory,
    MemFlags, MemObject, MemObjectType, Program, Queue, QueueProperties, SvmCapabilities,
    UserEvent, Version,
};
use cl_tests::{skip, DeviceTest, TestDevice, TestResult};

/// The suite's tests, in the order they run.
pub(crate) fn tests() -> Vec<DeviceTest> {
    vec![
        DeviceTest {
            name: "platform_facts_are_consistent",
            run: platform_facts_are_consistent,
        },
        DeviceTest {
            name: "device_facts_are_within_spec_minimums",
            run: device_facts_are_within_spec_minimums,
        },
        DeviceTest {
            name: "version_gated_facts_follow_the_version",
            run: version_gated_facts_follow_the_version,
        },
        DeviceTest {
            name: "vendor_attributes_only_with_their_extension",
            run: vendor_attributes_only_with_their_extension,
        },
        DeviceTest {
            name: "context_lists_its_device_and_refcounts",
            run: context_lists_its_device_and_refcounts,
        },
        DeviceTest {
            name: "context_destructor_callback_runs_or_is_refused",
            run: context_destructor_callback_runs_or_is_refused,
        },
        DeviceTest {
            name: "context_rejects_bad_device_lists",
            run: context_rejects_bad_device_lists,
        },
        DeviceTest {
            name: "queue_properties_round_trip",
            run: queue_properties_round_trip,
        },
        DeviceTest {
            name: "queue_rejects_device_side_properties",
            run: queue_rejects_device_side_properties,
        },
        DeviceTest {
            name: "marker_waits_for_user_event",
            run: marker_waits_for_user_event,
        },
        DeviceTest {
            name: "barrier_orders_later_commands",
            run: barrier_orders_later_commands,
        },
        DeviceTest {
            name: "user_event_callback_gets_complete",
            run: user_event_callback_gets_complete,
        },
        DeviceTest {
            name: "user_event_error_reaches_callback",
            run: user_event_error_reaches_callback,
        },
        DeviceTest {
            name: "user_event_status_is_set_once",
            run: user_event_status_is_set_once,
        },
        DeviceTest {
            name: "profiling_times_are_ordered",
            run: profiling_times_are_ordered,
        },
        DeviceTest {
            name: "profiling_needs_a_profiling_queue",
            run: profiling_needs_a_profiling_queue,
        },
        DeviceTest {
            name: "build_error_carries_the_log",
            run: build_error_carries_the_log,
        },
        DeviceTest {
            name: "kernel_args_are_checked_before_enqueue",
            run: kernel_args_are_checked_before_enqueue,
        },
        DeviceTest {
            name: "kernel_call_sets_every_argument_and_runs_from_several_threads",
            run: kernel_call_sets_every_argument_and_runs_from_several_threads,
        },
        DeviceTest {
            name: "kernel_scales_buffer_roundtrip",
            run: kernel_scales_buffer_roundtrip,
        },
        DeviceTest {
            name: "kernel_local_memory_reverses_groups",
            run: kernel_local_memory_reverses_groups,
        },
        DeviceTest {
            name: "kernel_keeps_dropped_buffer_alive",
            run: kernel_keeps_dropped_buffer_alive,
        },
        DeviceTest {
            name: "queue_raw_round_trip_keeps_reference_counts",
            run: queue_raw_round_trip_keeps_reference_counts,
        },
        DeviceTest {
            name: "program_raw_round_trip_keeps_reference_counts",
            run: program_raw_round_trip_keeps_reference_counts,
        },
        DeviceTest {
            name: "kernel_raw_round_trip_keeps_reference_counts_and_checks",
            run: kernel_raw_round_trip_keeps_reference_counts_and_checks,
        },
        DeviceTest {
            name: "buffer_read_after_write_roundtrips",
            run: buffer_read_after_write_roundtrips,
        },
        DeviceTest {
            name: "buffer_info_matches_driver",
            run: buffer_info_matches_driver,
        },
        DeviceTest {
            name: "buffer_rejects_bad_sizes_and_ranges",
            run: buffer_rejects_bad_sizes_and_ranges,
        },
        DeviceTest {
            name: "newer_entry_points_refused_on_older_platforms",
            run: newer_entry_points_refused_on_older_platforms,
        },
        DeviceTest {
            name: "selection_finds_this_device",
            run: selection_finds_this_device,
        },
        DeviceTest {
            name: "default_device_ranks_gpus_first_and_simulators_last",
            run: default_device_ranks_gpus_first_and_simulators_last,
        },
    ]
}

fn platform_facts_are_consistent(dev: &TestDevice) -> TestResult {
    let p = dev.platform;
    assert!(!p.name()?.trim().is_empty());
    assert!(!p.vendor()?.trim().is_empty());
    let version = p.version()?;
    assert_eq!(version, Version::parse_platform(&p.version_string()?)?);
    assert_eq!(version, dev.device.platform_version());
    assert!(version >= Version::V1_2, "platform {version}");
    let profile = p.profile()?;
    assert!(
        profile == "FULL_PROFILE" || profile == "EMBEDDED_PROFILE",
        "{profile}"
    );
    let exts = p.extensions()?;
    for e in &exts {
        assert!(p.has_extension(e)?, "{e}");
    }
    assert!(!p.has_extension("cl_khr_no_such_extension")?);
    // Exact match, not substring: a prefix of a listed extension is not listed.
    if let Some(e) = exts.iter().find(|e| e.len() > 4) {
        let prefix = &e[..e.len() - 1];
        assert_eq!(p.has_extension(prefix)?, exts.iter().any(|x| x == prefix));
    }
    assert!(cl_mem::Platform::list()?.contains(&p));
    Ok(())
}

fn device_facts_are_within_spec_minimums(dev: &TestDevice) -> TestResult {
    let d = dev.device;
    assert_eq!(d.platform(), dev.platform);
    assert!(!d.name()?.trim().is_empty());
    assert!(!d.driver_version()?.trim().is_empty());
    assert!(!d.device_type()?.is_empty());
    assert!(d.available()?);
    assert!(d.compiler_available()?);
    assert!(d.version() <= d.platform_version() || d.version() >= Version::V1_2);
    let c = d.opencl_c_version()?;
    assert!(
        c >= Version::V1_0 && c <= Version::new(3, 9),
        "OpenCL C {c}"
    );
    assert!(d.opencl_c_all_versions()?.contains(&c) || d.version() >= Version::V3_0);
    let global = d.global_mem_size()?;
    let max_alloc = d.max_mem_alloc_size()?;
    assert!(
        max_alloc > 0 && max_alloc <= global,
        "max alloc {max_alloc}, global {global}"
    );
    let bits = d.mem_base_addr_align_bits()?;
    assert!(
        bits >= 8 && bits % 8 == 0,
        "CL_DEVICE_MEM_BASE_ADDR_ALIGN {bits}"
    );
    assert_eq!(d.mem_base_addr_align_bytes()?, (bits / 8) as usize);
    assert!(d.mem_base_addr_align_bytes()?.is_power_of_two());
    assert!(
        d.local_mem_size()? >= 1024,
        "local memory {}",
        d.local_mem_size()?
    );
    let lmt = d.local_mem_type()?;
    assert!(
        matches!(lmt, LocalMemType::Local | LocalMemType::Global),
        "{lmt:?}"
    );
    let wg = d.max_work_group_size()?;
    assert!(wg >= 1);
    let items = d.max_work_item_sizes()?;
    assert!(items.len() >= 3, "{items:?}");
    assert!(items[0] >= 1);
    assert!(matches!(d.address_bits()?, 32 | 64));
    assert!(d.max_compute_units()? >= 1);
    // The harness machines are x86-64.
    assert!(d.endian_little()?);
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
    let three = v >= Version::V3_0;
    assert_eq!(d.preferred_work_group_size_multiple()?.is_some(), three);
    assert_eq!(d.numeric_version()?.is_some(), three);
    assert_eq!(d.atomic_memory_capabilities()?.is_some(), three);
    assert_eq!(d.atomic_fence_capabilities()?.is_some(), three);
    if let Some(n) = d.numeric_version()? {
        assert_eq!(n.major, v.major, "numeric {n} vs string {v}");
    }
    if let Some(m) = d.preferred_work_group_size_multiple()? {
        assert!(m >= 1);
    }
    if three {
        assert!(!d.opencl_c_all_versions()?.is_empty());
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

fn vendor_attributes_only_with_their_extension(dev: &TestDevice) -> TestResult {
    let d = dev.device;
    let va = d.vendor_attributes()?;
    assert_eq!(
        va.nv_warp_size.is_some(),
        d.has_extension("cl_nv_device_attribute_query")?
    );
    assert_eq!(
        va.nv_compute_capability.is_some(),
        d.has_extension("cl_nv_device_attribute_query")?
    );
    assert_eq!(
        va.amd_wavefront_width.is_some(),
        d.has_extension("cl_amd_device_attribute_query")?
    );
    assert_eq!(
        va.intel_sub_group_sizes.is_some(),
        d.has_extension("cl_intel_required_subgroup_size")?
    );
    if let Some(sizes) = &va.intel_sub_group_sizes {
        assert!(
            !sizes.is_empty() && sizes.iter().all(|s| s.is_power_of_two()),
            "{sizes:?}"
        );
    }
    Ok(())
}

fn context_lists_its_device_and_refcounts(dev: &TestDevice) -> TestResult {
    let ctx = Context::from_device(&dev.device)?;
    assert_eq!(ctx.devices(), [dev.device]);
    assert_eq!(ctx.num_devices(), 1);
    assert_eq!(ctx.platform(), dev.platform);
    assert_eq!(ctx.platform_version(), dev.device.platform_version());
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

fn context_destructor_callback_runs_or_is_refused(dev: &TestDevice) -> TestResult {
    let ctx = Context::from_device(&dev.device)?;
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

fn context_rejects_bad_device_lists(_dev: &TestDevice) -> TestResult {
    assert!(matches!(Context::new(&[]), Err(Error::InvalidArgument(_))));
    let platforms = cl_mem::Platform::list()?;
    let firsts: Vec<_> = platforms
        .iter()
        .filter_map(|p| p.devices().ok()?.first().copied())
        .collect();
    if firsts.len() >= 2 {
        assert!(
            matches!(Context::new(&firsts[..2]), Err(Error::InvalidArgument(m)) if m.contains("one platform"))
        );
    }
    Ok(())
}

fn queue_properties_round_trip(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let q = Queue::new(&ctx, &dev.device)?;
    assert_eq!(q.properties(), QueueProperties::empty());
    assert!(q.is_in_order());
    assert_eq!(q.queried_properties()?, QueueProperties::empty());
    assert_eq!(q.context(), &ctx);
    assert_eq!(q.device(), &dev.device);
    let supported = dev.device.queue_properties()?;
    assert!(
        supported.contains(QueueProperties::PROFILING_ENABLE),
        "profiling is mandatory"
    );
    let p = Queue::builder(&ctx, &dev.device).profiling(true).build()?;
    assert_eq!(p.queried_properties()?, QueueProperties::PROFILING_ENABLE);
    let ooo = Queue::builder(&ctx, &dev.device).out_of_order(true).build();
    if supported.contains(QueueProperties::OUT_OF_ORDER_EXEC_MODE_ENABLE) {
        let ooo = ooo?;
        assert!(!ooo.is_in_order());
        assert!(ooo
            .queried_properties()?
            .contains(QueueProperties::OUT_OF_ORDER_EXEC_MODE_ENABLE));
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

fn queue_rejects_device_side_properties(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let r = Queue::with_properties(&ctx, &dev.device, QueueProperties::ON_DEVICE);
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    Ok(())
}

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
    Event::wait_for_all(&[&marker, &gate])?;
    Event::wait_for_all(&[])?;
    Ok(())
}

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

fn user_event_callback_gets_complete(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let ev = UserEvent::new(&ctx)?;
    let (tx, rx) = mpsc::channel();
    ev.on_complete(move |status| {
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

fn user_event_error_reaches_callback(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let ev = UserEvent::new(&ctx)?;
    let (tx, rx) = mpsc::channel();
    ev.on_complete(move |status| {
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

fn profiling_times_are_ordered(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let q = Queue::builder(&ctx, &dev.device).profiling(true).build()?;
    let buf = cl_mem::Buffer::new(&ctx, MemFlags::READ_WRITE, 1 << 16)?;
    let ev = buf.write(&q, &vec![3u8; 1 << 16], &[])?;
    ev.wait()?;
    let t = ev.profiling()?;
    assert!(t.queued <= t.submitted, "{t:?}");
    assert!(t.submitted <= t.started, "{t:?}");
    assert!(t.started <= t.ended, "{t:?}");
    assert_eq!(t.duration_ns(), t.ended - t.started);
    Ok(())
}

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
        Program::from_source(&ctx, "  "),
        Err(Error::InvalidArgument(_))
    ));
    let ok = Program::from_source(&ctx, "__kernel void k(int x) {}")?;
    assert!(matches!(
        ok.build("-D A=\0"),
        Err(Error::InvalidArgument(_))
    ));
    ok.build("")?;
    assert_eq!(ok.kernel_names()?, vec!["k".to_owned()]);
    Ok(())
}

const SCALE_SRC: &str = r#"
__kernel void scale(__global const float* in, __global float* out, float k, uint n) {
    size_t i = get_global_id(0);
    if (i < n) out[i] = in[i] * k + (float)i;
}
__kernel void reverse_groups(__global const int* in, __global int* out, __local int* tmp) {
    size_t lid = get_local_id(0);
    size_t lsz = get_local_size(0);
    tmp[lid] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = tmp[lsz - 1 - lid];
}
"#;

/// PyOpenCL's `kernel(queue, global, local, *args)` in one expression, on one kernel shared by
/// eight threads (no `&mut`): each thread's arguments reach its own command.
fn kernel_call_sets_every_argument_and_runs_from_several_threads(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let program = Program::build_from_source(ctx, SCALE_SRC, "")?;
    let k = program.kernel("scale")?;
    let n = 64usize;
    let input = cl_mem::Buffer::from_slice(ctx, MemFlags::READ_ONLY, &vec![1.0f32; n])?;
    // A wrong count, and a wrong kind at a position, name the kernel and the argument.
    let r = k.call(&q, &[n], None, (&input, &input, &2.0f32));
    assert!(
        matches!(&r, Err(Error::InvalidArgument(m)) if m.contains("'scale' takes 4 arguments, got 3")),
        "{r:?}"
    );
    let r = k.call(&q, &[n], None, (&input, &input, &2.0f64, &64u32));
    assert!(
        matches!(&r, Err(e @ Error::KernelArg { index: 2, .. }) if e.to_string().contains("float k")),
        "{r:?}"
    );
    // One thread on Oclgrind: it crashes under API calls from several host threads
    // (docs/DEVICES.md#oclgrind-threads-release).
    let threads = if dev.platform_name().contains("Oclgrind") {
        1
    } else {
        8u8
    };
    let k = std::sync::Arc::new(k);
    let results: Vec<Vec<f32>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (k, q, input) = (&k, &q, &input);
                s.spawn(move || -> cl_mem::Result<Vec<f32>> {
                    let out = cl_mem::Buffer::new(q.context(), MemFlags::READ_WRITE, n * 4)?;
                    for _ in 0..20 {
                        k.call(q, &[n], None, (input, &out, &f32::from(t), &64u32))?;
                    }
                    out.to_vec(q)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a thread panicked"))
            .collect::<cl_mem::Result<_>>()
    })?;
    for (t, got) in results.iter().enumerate() {
        let want: Vec<f32> = (0..n).map(|i| t as f32 + i as f32).collect();
        assert_eq!(got, &want, "thread {t}");
    }
    Ok(())
}

fn kernel_args_are_checked_before_enqueue(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let program = Program::build_from_source(q.context(), SCALE_SRC, "")?;
    let mut k = program.kernel("scale")?;
    assert_eq!(k.num_args()?, 4);
    assert_eq!(k.name(), "scale");
    let r = k.set_arg(4, &1u32);
    assert!(matches!(r, Err(Error::InvalidArgument(m)) if m.contains("out of range")));
    let buf = cl_mem::Buffer::new(q.context(), MemFlags::READ_WRITE, 64)?;
    k.set_arg(0, &buf)?.set_arg(1, &buf)?;
    // Argument 2 is a float: 8 bytes is the wrong size, refused before the driver.
    let r = k.set_arg(2, &1.0f64);
    assert!(
        matches!(&r, Err(Error::KernelArg { index: 2, expected, .. }) if expected.contains("4 bytes")),
        "{r:?}"
    );
    k.set_arg(2, &1.0f32)?;
    let r = k.enqueue_nd_range(&q, &[16], None, &[]);
    assert!(
        matches!(&r, Err(Error::InvalidArgument(m)) if m.contains("argument 3")),
        "{r:?}"
    );
    k.set_arg(3, &16u32)?;
    assert!(matches!(
        k.enqueue_nd_range(&q, &[], None, &[]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        k.enqueue_nd_range(&q, &[1, 1, 1, 1], None, &[]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        k.enqueue_nd_range(&q, &[16], Some(&[4, 4]), &[]),
        Err(Error::InvalidArgument(_))
    ));
    // Argument 0 is a global pointer: local memory is the wrong kind, whatever its size.
    assert!(matches!(
        k.set_arg(0, &LocalMemory::new(0)),
        Err(Error::KernelArg { index: 0, .. })
    ));
    k.enqueue_nd_range(&q, &[16], None, &[])?.wait()?;
    assert!(matches!(
        program.kernel("nope"),
        Err(Error::InvalidArgument(m)) if m.contains("'nope'") && m.contains("CL_INVALID_KERNEL_NAME")
    ));
    Ok(())
}

fn kernel_scales_buffer_roundtrip(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let n = 1000usize;
    let input: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let a = cl_mem::Buffer::from_slice(q.context(), MemFlags::READ_ONLY, &input)?;
    let b = cl_mem::Buffer::new(q.context(), MemFlags::WRITE_ONLY, n * 4)?;
    let program = Program::build_from_source(q.context(), SCALE_SRC, "")?;
    let mut k = Kernel::new(&program, "scale")?;
    k.set_arg(0, &a)?
        .set_arg(1, &b)?
        .set_arg(2, &3.0f32)?
        .set_arg(3, &u32::try_from(n)?)?;
    let done = k.enqueue_nd_range(&q, &[1024], None, &[])?;
    let mut out = vec![0f32; n];
    b.read(&q, &mut out, &[&done])?;
    for (i, (&x, &y)) in input.iter().zip(&out).enumerate() {
        assert_eq!(y, x * 3.0 + i as f32, "element {i}");
    }
    Ok(())
}

fn kernel_local_memory_reverses_groups(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let program = Program::build_from_source(q.context(), SCALE_SRC, "")?;
    let mut k = program.kernel("reverse_groups")?;
    let wg = k.work_group_size(&q)?.min(16);
    if wg < 2 {
        return Err(skip(format!(
            "kernel work-group size {wg} leaves nothing to reverse"
        )));
    }
    let n = wg * 8;
    let input: Vec<i32> = (0..i32::try_from(n)?).collect();
    let a = cl_mem::Buffer::from_slice(q.context(), MemFlags::READ_ONLY, &input)?;
    let b = cl_mem::Buffer::new(q.context(), MemFlags::WRITE_ONLY, n * 4)?;
    k.set_arg(0, &a)?
        .set_arg(1, &b)?
        .set_arg(2, &LocalMemory::of::<i32>(wg))?;
    k.enqueue_nd_range(&q, &[n], Some(&[wg]), &[])?;
    let mut out = vec![0i32; n];
    b.read(&q, &mut out, &[])?;
    for g in 0..n / wg {
        for l in 0..wg {
            assert_eq!(
                out[g * wg + l],
                input[g * wg + wg - 1 - l],
                "group {g} lane {l}"
            );
        }
    }
    Ok(())
}

fn kernel_keeps_dropped_buffer_alive(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let program = Program::build_from_source(q.context(), SCALE_SRC, "")?;
    let mut k = program.kernel("scale")?;
    let out = cl_mem::Buffer::new(q.context(), MemFlags::READ_WRITE, 64)?;
    {
        let input = cl_mem::Buffer::from_slice(q.context(), MemFlags::READ_ONLY, &[2.0f32; 16])?;
        k.set_arg(0, &input)?;
        assert_eq!(
            input.mem_reference_count()?,
            2,
            "the kernel holds a reference"
        );
    }
    k.set_arg(1, &out)?
        .set_arg(2, &2.0f32)?
        .set_arg(3, &16u32)?;
    k.enqueue_nd_range(&q, &[16], None, &[])?;
    let mut got = [0f32; 16];
    out.read(&q, &mut got, &[])?;
    for (i, v) in got.iter().enumerate() {
        assert_eq!(*v, 4.0 + i as f32);
    }
    // Replacing the argument drops the kernel's reference to the old one once no command
    // needs it: the completed command's record goes at the next enqueue (or with the kernel).
    k.set_arg(1, &out)?;
    assert!((2..=3).contains(&out.mem_reference_count()?));
    drop(k);
    assert_eq!(out.mem_reference_count()?, 1);
    Ok(())
}

fn buffer_read_after_write_roundtrips(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let buf = cl_mem::Buffer::new(q.context(), MemFlags::READ_WRITE, 256)?;
    let data: Vec<u8> = (0..=255).collect();
    buf.write(&q, &data, &[])?;
    let mut out = vec![0u8; 256];
    buf.read(&q, &mut out, &[])?;
    assert_eq!(out, data);
    // Offsets address bytes; Pod slices of u64.
    buf.write(
        &q,
        &[0x1122_3344_5566_7788u64],
        Transfer::default().dst_offset(8),
    )?;
    let mut word = [0u64; 1];
    buf.read(&q, &mut word, Transfer::default().src_offset(8))?;
    assert_eq!(word[0], 0x1122_3344_5566_7788);
    let mut head = [0u8; 8];
    buf.read(&q, &mut head, &[])?;
    assert_eq!(head, [0, 1, 2, 3, 4, 5, 6, 7]);
    // Empty transfers touch nothing and still give an event.
    buf.write(&q, &[0u8; 0], Transfer::default().dst_offset(256))?
        .wait()?;
    // Whole reads into new vectors; past the end (even absurdly) is a typed error before any
    // allocation, not an abort.
    assert_eq!(buf.to_vec::<u8>(&q)?, {
        let mut w = data.clone();
        w[8..16].copy_from_slice(&0x1122_3344_5566_7788u64.to_ne_bytes());
        w
    });
    assert_eq!(buf.to_vec::<u64>(&q)?.len(), 32);
    assert!(matches!(
        buf.read_vec_of::<u8>(&q, 257),
        Err(cl_mem::Error::OutOfBounds { .. })
    ));
    assert!(matches!(
        buf.read_vec_of::<u64>(&q, usize::MAX),
        Err(cl_mem::Error::InvalidArgument(_))
    ));
    assert!(matches!(
        buf.read_vec_of::<u8>(&q, usize::MAX),
        Err(cl_mem::Error::OutOfBounds { .. })
    ));
    Ok(())
}

fn buffer_info_matches_driver(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let buf = cl_mem::Buffer::from_slice(&ctx, MemFlags::READ_ONLY, &[1i32, 2, 3])?;
    assert_eq!(buf.size_bytes(), 12);
    assert_eq!(buf.mem_size_bytes()?, 12);
    assert_eq!(buf.flags(), MemFlags::READ_ONLY | MemFlags::COPY_HOST_PTR);
    assert_eq!(buf.mem_flags()?, buf.flags());
    assert_eq!(buf.mem_type()?, MemObjectType::Buffer);
    assert_eq!(buf.mem_context()?, ctx);
    assert_eq!(buf.mem_map_count()?, 0);
    assert_eq!(buf.mem_reference_count()?, 1);
    let copy = buf.clone();
    assert_eq!(buf.mem_reference_count()?, 2);
    assert_eq!(copy, buf);
    drop(copy);
    // SAFETY: a valid buffer handle.
    let adopted = unsafe { cl_mem::Buffer::from_raw_retained(buf.as_raw()) }?;
    assert_eq!(adopted.size_bytes(), 12);
    assert_eq!(adopted.flags(), buf.flags());
    adopted.release()?;
    assert_eq!(buf.mem_reference_count()?, 1);
    Ok(())
}

fn buffer_rejects_bad_sizes_and_ranges(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    assert!(matches!(
        cl_mem::Buffer::new(ctx, MemFlags::READ_WRITE, 0),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        cl_mem::Buffer::from_slice::<u8>(ctx, MemFlags::READ_WRITE, &[]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        cl_mem::Buffer::new(ctx, MemFlags::USE_HOST_PTR, 16),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        cl_mem::Buffer::from_slice(ctx, MemFlags::USE_HOST_PTR, &[1u8]),
        Err(Error::InvalidArgument(_))
    ));
    let too_big = usize::try_from(dev.device.max_mem_alloc_size()?)
        .unwrap_or(usize::MAX)
        .saturating_add(1);
    assert!(matches!(
        cl_mem::Buffer::new(ctx, MemFlags::READ_WRITE, too_big),
        Err(Error::InvalidArgument(_))
    ));
    let buf = cl_mem::Buffer::new(ctx, MemFlags::READ_WRITE, 16)?;
    let mut out = [0u8; 8];
    let r = buf.read(&q, &mut out, Transfer::default().src_offset(9));
    assert_eq!(
        r.unwrap_err(),
        Error::OutOfBounds {
            what: "buffer read",
            offset: 9,
            len: 8,
            size: 16
        }
    );
    let r = buf.write(&q, &[1u8], Transfer::default().dst_offset(usize::MAX));
    assert!(matches!(r, Err(Error::OutOfBounds { .. })));
    buf.read(&q, &mut out, Transfer::default().src_offset(8))?;
    Ok(())
}

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
        let p = Queue::builder(q.context(), &d).profiling(true).build()?;
        assert_eq!(p.queried_properties()?, QueueProperties::PROFILING_ENABLE);
    }
    Ok(())
}

fn selection_finds_this_device(dev: &TestDevice) -> TestResult {
    let by_index = format!("{}:{}", dev.platform_index(), dev.device_index());
    assert_eq!(select_devices(&by_index, "test")?, vec![dev.device]);
    let twice = format!(
        "{}:{},{}",
        dev.platform_index(),
        dev.device_index(),
        dev.device_index()
    );
    assert_eq!(
        select_devices(&twice, "test")?,
        vec![dev.device, dev.device]
    );
    let all = select_devices("", "test")?;
    assert!(all.contains(&dev.device));
    let whole_platform = select_devices(&dev.platform_index().to_string(), "test")?;
    assert_eq!(whole_platform, dev.platform.devices()?);
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
    assert!(!Selector::parse("0:0")?.is_empty());
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
        assert_eq!(cl_mem::default_device()?, dev.device);
    }
    Ok(())
}

fn queue_raw_round_trip_keeps_reference_counts(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context().clone();
    let (q0, c0) = (q.reference_count()?, ctx.reference_count()?);
    let raw = q.clone().into_raw();
    assert_eq!(
        q.reference_count()?,
        q0 + 1,
        "into_raw gave one reference away"
    );
    assert_eq!(
        ctx.reference_count()?,
        c0,
        "into_raw kept a context reference"
    );
    // SAFETY: `raw` carries the reference `into_raw` gave away; the test devices are root devices.
    let adopted = unsafe { Queue::from_raw(raw) }?;
    assert_eq!(q.reference_count()?, q0 + 1, "from_raw took a reference");
    assert_eq!(adopted, q);
    assert_eq!(adopted.context().as_raw(), ctx.as_raw());
    assert_eq!(adopted.device(), q.device());
    assert_eq!(adopted.properties(), q.properties());
    drop(adopted);
    assert_eq!(
        q.reference_count()?,
        q0,
        "the adopted queue released its reference"
    );
    // SAFETY: a valid queue (owned by `q`); a root device.
    let retained = unsafe { Queue::from_raw_retained(q.as_raw()) }?;
    assert_eq!(
        q.reference_count()?,
        q0 + 1,
        "from_raw_retained retained once"
    );
    drop(retained);
    assert_eq!(
        (q.reference_count()?, ctx.reference_count()?),
        (q0, c0),
        "queue and context reference counts after the round trips"
    );
    Ok(())
}

fn program_raw_round_trip_keeps_reference_counts(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let program = Program::build_from_source(&ctx, SCALE_SRC, "")?;
    let (p0, c0) = (program.reference_count()?, ctx.reference_count()?);
    let raw = program.clone().into_raw();
    assert_eq!(
        program.reference_count()?,
        p0 + 1,
        "into_raw gave one reference away"
    );
    assert_eq!(
        ctx.reference_count()?,
        c0,
        "into_raw kept a context reference"
    );
    // SAFETY: `raw` carries the reference `into_raw` gave away.
    let adopted = unsafe { Program::from_raw(raw) }?;
    assert_eq!(
        program.reference_count()?,
        p0 + 1,
        "from_raw took a reference"
    );
    assert_eq!(adopted.context().as_raw(), ctx.as_raw());
    // The adopted program is usable: a kernel of it.
    assert_eq!(adopted.kernel("scale")?.num_args()?, 4);
    drop(adopted);
    assert_eq!(
        program.reference_count()?,
        p0,
        "the adopted program released its reference"
    );
    // SAFETY: a valid program (owned by `program`).
    let retained = unsafe { Program::from_raw_retained(program.as_raw()) }?;
    assert_eq!(
        program.reference_count()?,
        p0 + 1,
        "from_raw_retained retained once"
    );
    drop(retained);
    assert_eq!(
        (program.reference_count()?, ctx.reference_count()?),
        (p0, c0),
        "program and context reference counts after the round trips"
    );
    Ok(())
}

fn kernel_raw_round_trip_keeps_reference_counts_and_checks(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let program = Program::build_from_source(&ctx, SCALE_SRC, "")?;
    let p0 = program.reference_count()?;
    let k = program.kernel("scale")?;
    let k0 = k.reference_count()?;
    let had_params = k.params().is_some();
    let raw = k.into_raw();
    // SAFETY: `raw` carries the reference `into_raw` gave away; nothing else sets its arguments
    // and none is set.
    let mut adopted = unsafe { Kernel::from_raw(raw) }?;
    assert_eq!(
        adopted.reference_count()?,
        k0,
        "the round trip changed the count"
    );
    assert_eq!(adopted.name(), "scale");
    assert_eq!(adopted.num_args()?, 4);
    assert_eq!(adopted.program().as_raw(), program.as_raw());
    // The adopted kernel got its argument descriptions, so it checks arguments as before.
    assert_eq!(
        adopted.params().is_some(),
        had_params,
        "argument descriptions lost"
    );
    if had_params {
        let r = adopted.set_arg(0, &1u32);
        assert!(matches!(r, Err(Error::KernelArg { .. })), "{r:?}");
    }
    // SAFETY: a valid kernel (owned by `adopted`), whose arguments nothing sets meanwhile.
    let retained = unsafe { Kernel::from_raw_retained(adopted.as_raw()) }?;
    assert_eq!(
        adopted.reference_count()?,
        k0 + 1,
        "from_raw_retained retained once"
    );
    drop(retained);
    assert_eq!(adopted.reference_count()?, k0);
    drop(adopted);
    assert_eq!(
        program.reference_count()?,
        p0,
        "the program's reference count after the kernel round trips"
    );
    Ok(())
}
