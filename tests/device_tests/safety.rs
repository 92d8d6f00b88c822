//! Safe means safe (issue 11): what a hostile or careless caller of the safe API can do, each
//! case a typed error or a correct result on every device: kernel arguments checked against
//! their declarations and contexts, arguments that outlive the kernel until their commands ran,
//! wait lists and queues of other contexts, sub-buffer flags, exclusive maps.

use cl_mem::{enqueue_copy, Rect, Transfer};
use std::time::{Duration, Instant};

use cl_mem::svm::{Coarse, SvmArray};
use cl_mem::RawHandle;
use cl_mem::{
    AddressingMode, Buffer, Context, Error, FilterMode, Image, ImageDesc, ImageFormat, Kernel,
    LocalMemory, MapFlags, MemFlags, MemObject, NullMem, ParamKind, PinnedMemory, Program, Queue,
    Sampler, UserEvent,
};
use cl_pool::{ImmediateAllocator, MemoryPool, PoolBlock};
use cl_tests::{eventually, fail, skip, DeviceTest, TestDevice, TestResult};

/// The suite's tests, in the order they run.
pub(crate) fn tests() -> Vec<DeviceTest> {
    vec![
        DeviceTest {
            name: "kernel_params_are_described",
            run: kernel_params_are_described,
        },
        DeviceTest {
            name: "scalar_for_a_pointer_is_refused",
            run: scalar_for_a_pointer_is_refused,
        },
        DeviceTest {
            name: "image_sampler_and_buffer_parameters_take_only_their_kind",
            run: image_sampler_and_buffer_parameters_take_only_their_kind,
        },
        DeviceTest {
            name: "objects_of_another_context_are_refused",
            run: objects_of_another_context_are_refused,
        },
        DeviceTest {
            name: "arguments_outlive_a_dropped_kernel_until_the_command_ran",
            run: arguments_outlive_a_dropped_kernel_until_the_command_ran,
        },
        DeviceTest {
            name: "sampler_outlives_a_dropped_kernel_until_the_command_ran",
            run: sampler_outlives_a_dropped_kernel_until_the_command_ran,
        },
        DeviceTest {
            name: "a_dropped_kernels_arguments_are_released_off_the_callback_thread",
            run: a_dropped_kernels_arguments_are_released_off_the_callback_thread,
        },
        DeviceTest {
            name: "an_event_callback_may_drop_objects_that_talk_to_the_driver",
            run: an_event_callback_may_drop_objects_that_talk_to_the_driver,
        },
        DeviceTest {
            name: "a_user_event_set_here_may_drop_objects_in_its_callback",
            run: a_user_event_set_here_may_drop_objects_in_its_callback,
        },
        DeviceTest {
            name: "commands_in_flight_are_pruned",
            run: commands_in_flight_are_pruned,
        },
        DeviceTest {
            name: "zero_local_size_is_refused",
            run: zero_local_size_is_refused,
        },
        DeviceTest {
            name: "sub_buffer_of_a_sub_buffer_keeps_its_host_access",
            run: sub_buffer_of_a_sub_buffer_keeps_its_host_access,
        },
        DeviceTest {
            name: "maps_are_exclusive_across_an_allocation",
            run: maps_are_exclusive_across_an_allocation,
        },
        DeviceTest {
            name: "an_unmap_does_not_wait_for_a_gated_map_on_another_queue",
            run: an_unmap_does_not_wait_for_a_gated_map_on_another_queue,
        },
        DeviceTest {
            name: "commands_under_a_live_map_are_refused",
            run: commands_under_a_live_map_are_refused,
        },
        DeviceTest {
            name: "a_second_queue_waits_for_the_first_queues_writes",
            run: a_second_queue_waits_for_the_first_queues_writes,
        },
        DeviceTest {
            name: "command_records_stay_bounded",
            run: command_records_stay_bounded,
        },
        DeviceTest {
            name: "a_handle_given_away_keeps_its_pending_commands",
            run: a_handle_given_away_keeps_its_pending_commands,
        },
        DeviceTest {
            name: "an_image_rebuilt_from_memory_keeps_its_record",
            run: an_image_rebuilt_from_memory_keeps_its_record,
        },
        DeviceTest {
            name: "an_image_from_a_buffer_shares_its_map_lock_and_record",
            run: an_image_from_a_buffer_shares_its_map_lock_and_record,
        },
        DeviceTest {
            name: "forgotten_svm_map_guards_leak_no_queue",
            run: forgotten_svm_map_guards_leak_no_queue,
        },
        DeviceTest {
            name: "a_cached_kernel_and_an_svm_map_take_turns",
            run: a_cached_kernel_and_an_svm_map_take_turns,
        },
        DeviceTest {
            name: "typed_image_arrays_match_the_channel_type",
            run: typed_image_arrays_match_the_channel_type,
        },
        DeviceTest {
            name: "pinned_pool_blocks_are_written_as_slices",
            run: pinned_pool_blocks_are_written_as_slices,
        },
        DeviceTest {
            name: "bad_input_matrix_is_refused_before_the_driver",
            run: bad_input_matrix_is_refused_before_the_driver,
        },
    ]
}

const SRC: &str = r#"
__kernel void scale(__global const float* in, __global float* out, float a, uint n) {
    size_t i = get_global_id(0);
    if (i < n) out[i] = in[i] * a;
}
__kernel void scale_c(__constant float* in, __global float* out, float a, uint n) {
    size_t i = get_global_id(0);
    if (i < n) out[i] = in[i] * a;
}
__kernel void fill_local(__local int* tmp, __constant int* c, __global int* out) {
    tmp[get_local_id(0)] = c[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = tmp[get_local_id(0)];
}
"#;

const IMAGE_SRC: &str = r#"
__kernel void sample(__read_only image2d_t img, sampler_t s, __global float4* out) {
    int i = get_global_id(0);
    out[i] = read_imagef(img, s, (int2)(i, 0));
}
"#;

fn kernel_arg_err<T: std::fmt::Debug>(r: cl_mem::Result<T>, index: u32) {
    match r {
        Err(Error::KernelArg { index: i, .. }) if i == index => {}
        other => panic!("expected Error::KernelArg for argument {index}, got {other:?}"),
    }
}

fn kernel_params_are_described(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let program = Program::build_from_source(&ctx, SRC, "")?;
    let k = program.kernel("scale")?;
    let params = k
        .params()
        .ok_or_else(|| fail("the driver gave no argument information"))?;
    let kinds: Vec<ParamKind> = params.iter().map(|p| p.kind).collect();
    assert_eq!(
        kinds,
        [
            ParamKind::Global,
            ParamKind::Global,
            ParamKind::Value,
            ParamKind::Value
        ]
    );
    // `const __global float*`: the kernel can cast `const` away, so it is not a read-only use.
    assert!(!params[0].read_only, "{:?}", params[0]);
    assert!(!params[1].read_only, "{:?}", params[1]);
    assert_eq!(params[2].name, "a");
    assert!(params[0].type_name.contains("float"), "{:?}", params[0]);
    let k = program.kernel("fill_local")?;
    let kinds: Vec<ParamKind> = k
        .params()
        .ok_or_else(|| fail("no arg info"))?
        .iter()
        .map(|p| p.kind)
        .collect();
    assert_eq!(
        kinds,
        [ParamKind::Local, ParamKind::Constant, ParamKind::Global]
    );
    Ok(())
}

fn scalar_for_a_pointer_is_refused(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let program = Program::build_from_source(ctx, SRC, "")?;
    let mut k = program.kernel("scale")?;
    let buf = Buffer::new(ctx, MemFlags::READ_WRITE, 64)?;
    // The issue's reproductions: an address, and a live buffer's handle as an integer.
    kernel_arg_err(k.set_arg(0, &0x1234_5678u64), 0);
    kernel_arg_err(k.set_arg(0, &(buf.as_raw() as u64)), 0);
    kernel_arg_err(k.set_arg(1, &0u32), 1);
    // A memory object, local memory or NullMem for a scalar.
    kernel_arg_err(k.set_arg(2, &buf), 2);
    kernel_arg_err(k.set_arg(3, &LocalMemory::new(4)), 3);
    kernel_arg_err(k.set_arg(2, &NullMem), 2);
    // Local memory for a global pointer.
    kernel_arg_err(k.set_arg(1, &LocalMemory::new(64)), 1);
    // Nothing was set by the refused calls: the kernel still refuses to run.
    let r = k.enqueue_nd_range(&q, &[16], None, &[]);
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    // The right kinds still work, and the result is right.
    let input = Buffer::from_slice(ctx, MemFlags::READ_ONLY, &[2.0f32; 16])?;
    k.set_arg(0, &input)?
        .set_arg(1, &buf)?
        .set_arg(2, &1.5f32)?
        .set_arg(3, &16u32)?;
    k.enqueue_nd_range(&q, &[16], None, &[])?;
    let mut out = [0f32; 16];
    buf.read(&q, &mut out, &[])?;
    assert_eq!(out, [3.0f32; 16]);
    // The local/constant kernel: a buffer for __local, bytes for __constant.
    let mut k = program.kernel("fill_local")?;
    kernel_arg_err(k.set_arg(0, &buf), 0);
    kernel_arg_err(k.set_arg(1, &7i32), 1);
    let c = Buffer::from_slice(ctx, MemFlags::READ_ONLY, &[7i32])?;
    let out = Buffer::new(ctx, MemFlags::WRITE_ONLY, 16)?;
    k.set_arg(0, &LocalMemory::of::<i32>(4))?
        .set_arg(1, &c)?
        .set_arg(2, &out)?;
    k.enqueue_nd_range(&q, &[4], Some(&[4]), &[])?;
    let mut got = [0i32; 4];
    out.read(&q, &mut got, &[])?;
    assert_eq!(got, [7; 4]);
    Ok(())
}

fn image_sampler_and_buffer_parameters_take_only_their_kind(dev: &TestDevice) -> TestResult {
    if !dev.device.image_support()? {
        return Err(skip("the device has no image support"));
    }
    let q = dev.queue();
    let ctx = q.context();
    let program = Program::build_from_source(ctx, IMAGE_SRC, "")?;
    let mut k = program.kernel("sample")?;
    let params = k.params().ok_or_else(|| fail("no arg info"))?;
    assert_eq!(
        params[0].kind,
        ParamKind::Image(cl_mem::MemObjectType::Image2d),
        "{params:?}"
    );
    assert_eq!(params[1].kind, ParamKind::Sampler, "{params:?}");
    let buf = Buffer::new(ctx, MemFlags::READ_WRITE, 4 * 16 * 4)?;
    let data = [0.5f32; 4 * 4];
    let img2 = Image::from_host(
        ctx,
        MemFlags::READ_ONLY,
        ImageFormat::RGBA_FLOAT,
        &ImageDesc::d2(4, 1),
        &data,
    )?;
    let img1 = Image::from_host(
        ctx,
        MemFlags::READ_ONLY,
        ImageFormat::RGBA_FLOAT,
        &ImageDesc::d1(4),
        &data,
    )?;
    let sampler = Sampler::new(ctx, false, AddressingMode::ClampToEdge, FilterMode::Nearest)?;
    // A buffer, a 1-D image, bytes or a sampler for the image2d_t parameter.
    kernel_arg_err(k.set_arg(0, &buf), 0);
    kernel_arg_err(k.set_arg(0, &img1), 0);
    kernel_arg_err(k.set_arg(0, &0u64), 0);
    kernel_arg_err(k.set_arg(0, &sampler), 0);
    // Bytes (the sampler_t bit-field encoding some runtimes accept) or an image for sampler_t.
    kernel_arg_err(k.set_arg(1, &0x14u32), 1);
    kernel_arg_err(k.set_arg(1, &img2), 1);
    // An image or a sampler for the global pointer.
    kernel_arg_err(k.set_arg(2, &img2), 2);
    kernel_arg_err(k.set_arg(2, &sampler), 2);
    k.set_arg(0, &img2)?
        .set_arg(1, &sampler)?
        .set_arg(2, &buf)?;
    k.enqueue_nd_range(&q, &[4], None, &[])?;
    let mut out = [0f32; 16];
    buf.read(&q, &mut out, &[])?;
    assert_eq!(out, [0.5f32; 16]);
    Ok(())
}

fn objects_of_another_context_are_refused(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let other = Context::from_device(&dev.device)?;
    let other_q = cl_mem::Queue::new(&other, &dev.device)?;
    let program = Program::build_from_source(ctx, SRC, "")?;
    let mut k = program.kernel("scale")?;
    let foreign = Buffer::new(&other, MemFlags::READ_WRITE, 64)?;
    let r = k.set_arg(1, &foreign);
    assert!(
        matches!(&r, Err(Error::InvalidArgument(m)) if m.contains("another context")),
        "{r:?}"
    );
    let mine = Buffer::new(ctx, MemFlags::READ_WRITE, 64)?;
    k.set_arg(0, &mine)?
        .set_arg(1, &mine)?
        .set_arg(2, &1.0f32)?
        .set_arg(3, &16u32)?;
    // The kernel's queue.
    let r = k.enqueue_nd_range(&other_q, &[16], None, &[]);
    assert!(
        matches!(&r, Err(Error::InvalidArgument(m)) if m.contains("queue")),
        "{r:?}"
    );
    // A user event of another context in the wait list: Oclgrind 21.10 accepts it and waits
    // forever; here it is refused before the driver sees it.
    let foreign_event = UserEvent::new(&other)?;
    let r = k.enqueue_nd_range(&q, &[16], None, &[&foreign_event]);
    assert!(
        matches!(&r, Err(Error::InvalidArgument(m)) if m.contains("wait-list event 0")),
        "{r:?}"
    );
    let mut data = [0f32; 16];
    let r = mine.read(&q, &mut data, &[&*foreign_event]);
    assert!(matches!(&r, Err(Error::InvalidArgument(_))), "{r:?}");
    let r = mine.write(&q, &data, &[&*foreign_event]);
    assert!(matches!(&r, Err(Error::InvalidArgument(_))), "{r:?}");
    let r = q.enqueue_marker(&[&foreign_event]);
    assert!(matches!(&r, Err(Error::InvalidArgument(_))), "{r:?}");
    foreign_event.set_complete()?;
    // A sampler of another context.
    if dev.device.image_support()? {
        let program = Program::build_from_source(ctx, IMAGE_SRC, "")?;
        let mut k = program.kernel("sample")?;
        let s = Sampler::new(&other, false, AddressingMode::None, FilterMode::Nearest)?;
        let r = k.set_arg(1, &s);
        assert!(
            matches!(&r, Err(Error::InvalidArgument(m)) if m.contains("another context")),
            "{r:?}"
        );
    }
    // Nothing leaked: only our own references remain.
    assert_eq!(foreign.mem_reference_count()?, 1);
    Ok(())
}

fn arguments_outlive_a_dropped_kernel_until_the_command_ran(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let program = Program::build_from_source(ctx, SRC, "")?;
    let out = Buffer::new(ctx, MemFlags::READ_WRITE, 64)?;
    let gate = UserEvent::new(ctx)?;
    let input = Buffer::from_slice(ctx, MemFlags::READ_ONLY, &[4.0f32; 16])?;
    let mut k = program.kernel("scale")?;
    k.set_arg(0, &input)?
        .set_arg(1, &out)?
        .set_arg(2, &0.5f32)?
        .set_arg(3, &16u32)?;
    assert_eq!(input.mem_reference_count()?, 2, "ours and the kernel's");
    let done = k.enqueue_nd_range(&q, &[16], None, &[&gate])?;
    assert_eq!(k.commands_in_flight(), 1);
    drop(k);
    // The gated command still holds its argument (the driver may hold more references).
    assert!(input.mem_reference_count()? >= 2);
    let probe = input.clone();
    drop(input);
    gate.set_complete()?;
    done.wait()?;
    let mut got = [0f32; 16];
    out.read(&q, &mut got, &[])?;
    assert_eq!(got, [2.0f32; 16]);
    eventually("the completed command released its argument", || {
        Ok(probe.mem_reference_count()? == 1)
    })?;
    Ok(())
}

fn sampler_outlives_a_dropped_kernel_until_the_command_ran(dev: &TestDevice) -> TestResult {
    if !dev.device.image_support()? {
        return Err(skip("the device has no image support"));
    }
    let q = dev.queue();
    let ctx = q.context();
    let program = Program::build_from_source(ctx, IMAGE_SRC, "")?;
    let data = [0.25f32; 4 * 4];
    let img = Image::from_host(
        ctx,
        MemFlags::READ_ONLY,
        ImageFormat::RGBA_FLOAT,
        &ImageDesc::d2(4, 1),
        &data,
    )?;
    let out = Buffer::new(ctx, MemFlags::READ_WRITE, 4 * 16)?;
    let gate = UserEvent::new(ctx)?;
    let sampler = Sampler::new(ctx, false, AddressingMode::ClampToEdge, FilterMode::Nearest)?;
    let mut k = program.kernel("sample")?;
    k.set_arg(0, &img)?.set_arg(1, &sampler)?.set_arg(2, &out)?;
    let done = k.enqueue_nd_range(&q, &[4], None, &[&gate])?;
    // The issue's reproduction: kernel and sampler dropped before the gated command runs; PoCL
    // read the freed sampler. Our probe is a second handle to count references with.
    let probe = sampler.clone();
    drop(k);
    drop(sampler);
    assert!(
        probe.reference_count()? >= 2,
        "the gated command holds the sampler"
    );
    gate.set_complete()?;
    done.wait()?;
    let mut got = [0f32; 16];
    out.read(&q, &mut got, &[])?;
    assert_eq!(got, [0.25f32; 16]);
    eventually("the completed command released the sampler", || {
        Ok(probe.reference_count()? == 1)
    })?;
    Ok(())
}

/// Objects whose `Drop` talks to the driver, each to be dropped by a driver callback (issue 29):
/// on the Intel CPU runtime a blocking call on the callback thread never returns. Without the
/// callback worker, the pinned storage and the image hung each of the three tests below there
/// (and bare pinned memory the event callback's).
enum Doomed {
    /// Pinned memory itself: its drop enqueues an unmap and waits for it.
    #[expect(dead_code, reason = "held only to be dropped")]
    Pinned(PinnedMemory<u32>),
    /// A `USE_HOST_PTR` buffer whose storage is pinned memory: its destruction drops that.
    PinnedStorage(Buffer),
    /// A coarse-grain SVM allocation: its drop enqueues the free behind markers.
    Svm(SvmArray<u32, Coarse>),
    /// A pooled block, the last handle of its pool: it goes back, and the pool (freeing its
    /// blocks) goes with it.
    Pooled(PoolBlock<ImmediateAllocator>),
    /// An image over a buffer with pinned storage: its destruction destroys the buffer too. A
    /// 1-D buffer image, the one kind every 1.2 device makes from a buffer (PoCL 3.1 keeps its
    /// context for good: docs/DEVICES.md#pocl-image1d-buffer-keeps-context).
    Image(Image),
}

const DOOMED_LEN: usize = 64;

const DOOMED_SRC: &str = r#"
__kernel void put(__global uint* p) { p[get_global_id(0)] = 7u; }
__kernel void get(__read_only image1d_buffer_t img, __global uint* out) {
    out[get_global_id(0)] = read_imageui(img, (int)get_global_id(0)).x;
}
"#;

impl Doomed {
    fn what(&self) -> &'static str {
        match self {
            Doomed::Pinned(_) => "pinned memory",
            Doomed::PinnedStorage(_) => "a buffer over pinned memory",
            Doomed::Svm(_) => "an SVM allocation",
            Doomed::Pooled(_) => "a pooled block",
            Doomed::Image(_) => "an image over pinned memory",
        }
    }

    /// One of each kind the device has; the kinds it lacks are printed with the reason.
    fn every_kind(dev: &TestDevice, q: &Queue) -> Result<Vec<Doomed>, cl_tests::TestError> {
        let ctx = q.context();
        let pinned_storage = || -> Result<Buffer, Error> {
            let storage = PinnedMemory::<u32>::from_slice(q, &[1; DOOMED_LEN])?;
            Buffer::use_host_memory(ctx, MemFlags::READ_WRITE, storage)
        };
        let mut all = vec![
            Doomed::Pinned(PinnedMemory::from_slice(q, &[1; DOOMED_LEN])?),
            Doomed::PinnedStorage(pinned_storage()?),
        ];
        match coarse_svm(dev) {
            Ok(()) => all.push(Doomed::Svm(SvmArray::new(q, DOOMED_LEN)?)),
            Err(_) => eprintln!("    not covered: SVM (no coarse-grain buffer SVM, OpenCL 2.0)"),
        }
        let pool = MemoryPool::new(ImmediateAllocator::new(q, MemFlags::READ_WRITE)?);
        all.push(Doomed::Pooled(pool.allocate(DOOMED_LEN * 4)?));
        if !dev.device.image_support()? {
            eprintln!("    not covered: images (the device has no image support)");
        } else if dev.device.platform_version() < cl_mem::Version::V1_2 {
            eprintln!("    not covered: images over buffers (OpenCL 1.2)");
        } else {
            let format =
                ImageFormat::new(cl_mem::ChannelOrder::R, cl_mem::ChannelType::UnsignedInt32);
            let img = Image::from_buffer(
                ctx,
                MemFlags::READ_ONLY,
                format,
                &pinned_storage()?,
                DOOMED_LEN,
            )?;
            all.push(Doomed::Image(img));
        }
        Ok(all)
    }

    /// A kernel holding `self` as an argument, and its command, gated by `gate`; `None` for
    /// pinned memory, which is no kernel argument.
    fn enqueue_gated(
        &self,
        program: &Program,
        q: &Queue,
        gate: &UserEvent,
    ) -> Result<Option<(Kernel, cl_mem::Event)>, Error> {
        let mut k = program.kernel(if matches!(self, Doomed::Image(_)) {
            "get"
        } else {
            "put"
        })?;
        match self {
            Doomed::Pinned(_) => return Ok(None),
            Doomed::PinnedStorage(b) => k.set_arg(0, b)?,
            Doomed::Svm(a) => k.set_arg(0, a)?,
            Doomed::Pooled(b) => k.set_arg(0, b)?,
            Doomed::Image(img) => {
                let out = Buffer::new(q.context(), MemFlags::READ_WRITE, DOOMED_LEN * 4)?;
                k.set_arg(0, img)?.set_arg(1, &out)?
            }
        };
        let done = k.enqueue_nd_range(q, &[DOOMED_LEN], None, &[gate])?;
        Ok(Some((k, done)))
    }
}

/// Waits until every wrapper made since `before` is gone: a drop handed off a callback thread
/// still happens, without another call.
fn all_released(before: &cl_mem::LiveObjects) -> TestResult {
    eventually("every dropped object is released", || {
        Ok(cl_mem::live_objects().more_than(before).is_empty())
    })
}

/// A kernel dropped while its command waits: the command's completion callback releases the
/// arguments, whose destruction (pinned storage unmapped, SVM freed, an image's buffer) must not
/// block the driver's callback thread (issue 29: the Intel runtime never finished the queue).
fn a_dropped_kernels_arguments_are_released_off_the_callback_thread(
    dev: &TestDevice,
) -> TestResult {
    let q = dev.queue();
    let program = Program::build_from_source(q.context(), DOOMED_SRC, "")?;
    let before = cl_mem::live_objects();
    for d in Doomed::every_kind(dev, &q)? {
        let gate = UserEvent::new(q.context())?;
        let Some((k, done)) = d.enqueue_gated(&program, &q, &gate)? else {
            continue;
        };
        let what = d.what();
        drop(k);
        drop(d);
        // The command's snapshot holds the last handle; its completion callback releases it.
        gate.set_complete()?;
        done.wait().map_err(|e| fail(format!("{what}: {e}")))?;
    }
    let released = all_released(&before);
    drop(program);
    if dev.platform_name().contains("NVIDIA") && dev.driver_version().starts_with("580.") {
        // NVIDIA 580.159.04: after every object above was released (checked just above), the
        // release of this queue and its context (clReleaseCommandQueue / clReleaseContext in
        // `drop(q)`) does not return (seen in three leases; the sibling tests with the same
        // objects and no kernel dropped with a pending command finish). Not yet reduced to a C
        // reproduction: docs/DEVICES.md#nvidia-release-after-dropped-kernel.
        cl_tests::leaks_deliberately("NVIDIA 580: the queue's release hangs after this sequence");
        std::mem::forget(q);
    }
    released
}

/// An `Event::on_complete` closure that drops such objects (issue 29).
fn an_event_callback_may_drop_objects_that_talk_to_the_driver(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let before = cl_mem::live_objects();
    for d in Doomed::every_kind(dev, &q)? {
        let gate = UserEvent::new(q.context())?;
        let marker = q.enqueue_marker(&[&gate])?;
        marker.on_complete(move |_| drop(d))?;
        gate.set_complete()?;
        marker.wait()?;
    }
    all_released(&before)
}

/// A user event completed on this thread, with a callback that drops such objects: the Intel
/// runtime runs the callback inside `set_complete` (issue 29).
fn a_user_event_set_here_may_drop_objects_in_its_callback(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let program = Program::build_from_source(q.context(), DOOMED_SRC, "")?;
    let before = cl_mem::live_objects();
    for d in Doomed::every_kind(dev, &q)? {
        let user = UserEvent::new(q.context())?;
        // A command using the object (or, for pinned memory, its queue) waits for the event.
        let (k, gated) = match d.enqueue_gated(&program, &q, &user)? {
            Some((k, done)) => (Some(k), done),
            None => (None, q.enqueue_marker(&[&user])?),
        };
        user.on_complete(move |_| drop((k, d)))?;
        user.set_complete()?;
        gated.wait()?;
    }
    all_released(&before)
}

fn commands_in_flight_are_pruned(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let program = Program::build_from_source(ctx, SRC, "")?;
    let buf = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &[1.0f32; 16])?;
    let mut k = program.kernel("scale")?;
    k.set_arg(0, &buf)?
        .set_arg(1, &buf)?
        .set_arg(2, &1.0f32)?
        .set_arg(3, &16u32)?;
    // One in-order queue: one record, however many commands (no status read per enqueue).
    for _ in 0..500 {
        k.enqueue_nd_range(&q, &[16], None, &[])?;
        assert_eq!(k.commands_in_flight(), 1);
    }
    q.finish()?;
    // A replaced argument is let go once its commands ran and a new object comes.
    let x0 = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &[1.0f32; 16])?;
    let x1 = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &[1.0f32; 16])?;
    k.set_arg(0, &x0)?;
    k.enqueue_nd_range(&q, &[16], None, &[])?;
    q.finish()?;
    k.set_arg(0, &x1)?;
    assert!(
        x0.mem_reference_count()? >= 2,
        "the finished command's record"
    );
    k.enqueue_nd_range(&q, &[16], None, &[])?;
    assert_eq!(x0.mem_reference_count()?, 1, "x0 let go");
    q.finish()?;
    drop(k);
    assert_eq!(buf.mem_reference_count()?, 1);
    assert_eq!(x1.mem_reference_count()?, 1);
    // An out-of-order queue keeps one record per command, swept as they complete.
    if let Ok(ooo) = Queue::builder(ctx, &dev.device).out_of_order(true).build() {
        let mut k = program.kernel("scale")?;
        k.set_arg(0, &buf)?
            .set_arg(1, &buf)?
            .set_arg(2, &1.0f32)?
            .set_arg(3, &16u32)?;
        for _ in 0..200 {
            k.enqueue_nd_range(&ooo, &[16], None, &[])?;
            assert!(k.commands_in_flight() <= 200);
        }
        ooo.finish()?;
        // The next sweep comes at twice what the last one left (at most 2 x 200 records: the
        // loop above may have swept while its commands still ran, slower on a loaded machine);
        // once past it, every record is of a finished command and the count falls back under
        // the first threshold for good.
        for _ in 0..500 {
            k.enqueue_nd_range(&ooo, &[16], None, &[])?;
            ooo.finish()?;
        }
        assert!(k.commands_in_flight() <= 70, "{}", k.commands_in_flight());
    }
    // A kernel of scalars only keeps no record.
    let mut k = program.kernel("scale")?;
    k.set_arg(0, &NullMem)?
        .set_arg(1, &NullMem)?
        .set_arg(2, &1.0f32)?
        .set_arg(3, &0u32)?;
    k.enqueue_nd_range(&q, &[16], None, &[])?.wait()?;
    assert_eq!(k.commands_in_flight(), 0);
    Ok(())
}

fn zero_local_size_is_refused(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let program = Program::build_from_source(ctx, SRC, "")?;
    let buf = Buffer::new(ctx, MemFlags::READ_WRITE, 64)?;
    let mut k: Kernel = program.kernel("scale")?;
    k.set_arg(0, &buf)?
        .set_arg(1, &buf)?
        .set_arg(2, &1.0f32)?
        .set_arg(3, &16u32)?;
    for local in [[0usize].as_slice(), &[16, 0]] {
        let global = vec![16usize; local.len()];
        let r = k.enqueue_nd_range(&q, &global, Some(local), &[]);
        assert!(
            matches!(&r, Err(Error::InvalidArgument(m)) if m.contains("zero")),
            "{r:?}"
        );
    }
    Ok(())
}

fn sub_buffer_of_a_sub_buffer_keeps_its_host_access(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let align = dev.device.mem_base_addr_align_bytes()?.max(4);
    let root = Buffer::new(ctx, MemFlags::READ_WRITE, align * 4)?;
    let ro = root.sub_buffer(0, align * 2, MemFlags::HOST_READ_ONLY)?;
    assert!(ro.flags().contains(MemFlags::HOST_READ_ONLY));
    let inner = ro.sub_buffer_range(..align)?;
    assert!(
        inner.flags().contains(MemFlags::HOST_READ_ONLY),
        "{:?}",
        inner.flags()
    );
    assert!(inner.mem_flags()?.contains(MemFlags::HOST_READ_ONLY));
    let r = inner.write(&q, &[1u8; 4], &[]);
    assert!(matches!(&r, Err(Error::InvalidArgument(_))), "{r:?}");
    let mut back = [0u8; 4];
    inner.read(&q, &mut back, &[])?;
    // Kernel access is inherited too.
    let wo = root.sub_buffer(align * 2, align * 2, MemFlags::WRITE_ONLY)?;
    let inner = wo.sub_buffer_range(..align)?;
    assert!(
        inner.flags().contains(MemFlags::WRITE_ONLY),
        "{:?}",
        inner.flags()
    );
    Ok(())
}

fn mapped<T: std::fmt::Debug>(r: cl_mem::Result<T>, what: &str) {
    match r {
        Err(Error::Mapped(_)) => {}
        other => panic!("{what}: expected Error::Mapped, got {other:?}"),
    }
}

fn maps_are_exclusive_across_an_allocation(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let align = dev.device.mem_base_addr_align_bytes()?.max(16);
    let n = align * 4 / 4;
    let root = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &vec![1u32; n])?;
    let rw = MapFlags::READ | MapFlags::WRITE;
    {
        // Two writable maps of one range: two live `&mut` to the same bytes.
        let a = root.map::<u32, _>(&q, rw, 0..4, &[])?;
        mapped(root.map::<u32, _>(&q, rw, 2..6, &[]), "second map_mut");
        mapped(
            root.map::<u32, _>(&q, cl_mem::ReadOnly, 0..1, &[]),
            "map_read under map_mut",
        );
        // A clone is the same memory.
        mapped(
            root.clone()
                .map::<u32, _>(&q, cl_mem::ReadOnly, .., &[])
                .map(|_| ()),
            "clone",
        );
        // Disjoint bytes may be mapped.
        let b = root.map::<u32, _>(&q, rw, 4..8, &[])?;
        assert_eq!(root.live_maps(), 2);
        drop((a, b));
    }
    assert_eq!(root.live_maps(), 0);
    {
        // Any number of read maps.
        let a = root.map::<u32, _>(&q, cl_mem::ReadOnly, .., &[])?;
        let b = root.map::<u32, _>(&q, cl_mem::ReadOnly, 0..4, &[])?;
        assert_eq!(a[0], 1);
        assert_eq!(b[3], 1);
        mapped(
            root.map::<u32, _>(&q, rw, 3..4, &[]),
            "map_mut under map_read",
        );
    }
    // Nested scopes.
    let r = root.with_map::<u32, _, _>(
        &q,
        cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE,
        ..,
        |outer| {
            outer[0] = 5;
            root.with_map::<u32, _, _>(
                &q,
                cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE,
                ..,
                |inner| inner[0] = 6,
            )
        },
    )?;
    mapped(r, "nested with_map_mut");
    // A sub-buffer and its root share the lock.
    let sub = root.sub_buffer_range(align..align * 2)?;
    {
        let s = sub.map::<u32, _>(&q, rw, .., &[])?;
        let first = align / 4;
        mapped(
            root.map::<u32, _>(&q, cl_mem::ReadOnly, first..first + 1, &[]),
            "root under a sub-buffer's map",
        );
        let _outside = root.map::<u32, _>(&q, rw, 0..first, &[])?;
        drop(s);
    }
    let v: Vec<u32> = root.to_vec(&q)?;
    assert_eq!(v[0], 5);
    Ok(())
}

fn commands_under_a_live_map_are_refused(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let buf = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &[1u32; 16])?;
    let other = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &[2u32; 16])?;
    let program = Program::build_from_source(ctx, SRC, "")?;
    let mut writes_buf = program.kernel("scale")?;
    writes_buf
        .set_arg(0, &other)?
        .set_arg(1, &buf)?
        .set_arg(2, &1.0f32)?
        .set_arg(3, &16u32)?;
    // A `__constant` parameter is a read (a `const __global` one is not: edges.rs).
    let mut reads_buf = program.kernel("scale_c")?;
    reads_buf
        .set_arg(0, &buf)?
        .set_arg(1, &other)?
        .set_arg(2, &1.0f32)?
        .set_arg(3, &16u32)?;
    {
        let view = buf.map::<u32, _>(&q, cl_mem::ReadOnly, .., &[])?;
        assert_eq!(view[0], 1);
        // The issue's case: a write under a live read map changed the bytes of a `&[u32]`.
        mapped(buf.write(&q, &[0xdead_beefu32], &[]), "write");
        mapped(buf.fill(&q, &[7u32], &[]), "fill");
        mapped(enqueue_copy(&q, &buf, &other, &[]), "copy into");
        mapped(
            writes_buf.enqueue_nd_range(&q, &[16], None, &[]),
            "kernel writing it",
        );
        // Reading under a read map is fine.
        let mut back = [0u32; 16];
        buf.read(&q, &mut back, &[])?;
        enqueue_copy(&q, &other, &buf, &[])?;
        reads_buf.enqueue_nd_range(&q, &[16], None, &[])?;
        q.finish()?;
        assert_eq!(view[0], 1, "the mapped bytes did not change");
    }
    {
        let _w = buf.map::<u32, _>(&q, MapFlags::WRITE, .., &[])?;
        let mut back = [0u32; 16];
        mapped(buf.read(&q, &mut back, &[]), "read under a write map");
        mapped(
            reads_buf.enqueue_nd_range(&q, &[16], None, &[]),
            "kernel reading it",
        );
    }
    // A `Memory` made from the buffer keeps to the same record as a kernel argument.
    {
        let as_memory = cl_mem::Memory::from(buf.clone());
        let mut k = program.kernel("scale")?;
        k.set_arg(0, &other)?
            .set_arg(1, &as_memory)?
            .set_arg(2, &1.0f32)?
            .set_arg(3, &16u32)?;
        let _view = buf.map::<u32, _>(&q, cl_mem::ReadOnly, .., &[])?;
        mapped(
            k.enqueue_nd_range(&q, &[16], None, &[]),
            "kernel writing through a Memory handle",
        );
    }
    // A sub-buffer's parent reached through `mem_associated_object` (safe) keeps to the record
    // too (it was an untracked handle: a kernel wrote under a live `&mut` map; review 2026-11-26).
    {
        let sub = buf.sub_buffer(0, 32, MemFlags::empty())?;
        let parent = sub
            .mem_associated_object()?
            .ok_or_else(|| fail("a sub-buffer without a parent"))?;
        let mut k = program.kernel("scale")?;
        k.set_arg(0, &other)?
            .set_arg(1, &parent)?
            .set_arg(2, &1.0f32)?
            .set_arg(3, &16u32)?;
        let _w = buf.map::<u32, _>(&q, MapFlags::WRITE, .., &[])?;
        mapped(
            k.enqueue_nd_range(&q, &[16], None, &[]),
            "kernel writing the parent of a sub-buffer under a write map",
        );
    }
    buf.write(&q, &[3u32], &[])?;
    writes_buf.enqueue_nd_range(&q, &[16], None, &[])?;
    q.finish()?;
    Ok(())
}

fn a_second_queue_waits_for_the_first_queues_writes(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let a = Queue::new(&ctx, &dev.device)?;
    let b = Queue::new(&ctx, &dev.device)?;
    let buf = Buffer::from_slice(&ctx, MemFlags::READ_WRITE, &[0u32; 256])?;
    // Oclgrind 21.10's clFlush does not return while the queue holds a command waiting for an
    // open user event (repro/oclgrind_flush_waits_for_user_event.c; docs/DEVICES.md#oclgrind),
    // and the cross-queue wait below flushes queue A as the spec asks: there the writes are not
    // held back, and only the ordering's result is checked.
    let gated = !dev.platform_name().contains("Oclgrind");
    let gate = UserEvent::new(&ctx)?;
    let first: Vec<&cl_mem::Event> = if gated { vec![&gate] } else { vec![] };
    // A write on queue A, held back by the gate.
    let write = buf.enqueue_write(&a, vec![7u32; 256], &first)?;
    // A read on queue B, with no wait list from the caller: it must follow A's write.
    let read = buf.enqueue_read(&b, vec![0u32; 256], &[])?;
    let read_ran_early = gated && {
        std::thread::sleep(Duration::from_millis(50));
        read.is_complete()?
    };
    // Open the gate before asserting: a broken rule fails the test instead of leaving a gated
    // command that hangs the queue's release until the watchdog.
    gate.set_complete()?;
    write.wait()?;
    let got = read.wait()?;
    assert!(
        !read_ran_early,
        "the read on queue B ran before the write on queue A it must follow"
    );
    assert_eq!(got, vec![7u32; 256]);
    // A kernel on B after a fill on A, the same way.
    let gate = UserEvent::new(&ctx)?;
    let first: Vec<&cl_mem::Event> = if gated { vec![&gate] } else { vec![] };
    let marker = a.enqueue_marker(&first)?;
    let fill = buf.fill(&a, &[9u32], &[&marker])?;
    let out = Buffer::new(&ctx, MemFlags::READ_WRITE, 256 * 4)?;
    let program = Program::build_from_source(&ctx, SRC, "")?;
    let mut k = program.kernel("scale")?;
    k.set_arg(0, &buf)?
        .set_arg(1, &out)?
        .set_arg(2, &2.0f32)?
        .set_arg(3, &256u32)?;
    let run = k.enqueue_nd_range(&b, &[256], None, &[])?;
    gate.set_complete()?;
    fill.wait()?;
    run.wait()?;
    let v: Vec<f32> = out.to_vec(&b)?;
    assert!(
        v.iter().all(|&x| x == f32::from_bits(9) * 2.0),
        "{:?}",
        &v[..4]
    );
    Ok(())
}

fn command_records_stay_bounded(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let buf = Buffer::new(ctx, MemFlags::READ_WRITE, 64)?;
    let other = Queue::new(ctx, &dev.device)?;
    for i in 0..300u32 {
        buf.fill(&q, &[i], &[])?;
        let mut x = [0u32; 1];
        if i % 3 == 0 {
            buf.read(&other, &mut x, &[])?;
            assert_eq!(x[0], i);
        }
        assert!(buf.recorded_commands() <= 4, "{}", buf.recorded_commands());
    }
    q.finish()?;
    other.finish()?;
    Ok(())
}

/// Every call of the matrix must fail with a typed error decided before the driver (never
/// `Error::Cl`), without panicking; afterwards no reference, event or map may be left over.
fn bad_input_matrix_is_refused_before_the_driver(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context().clone();
    let other_ctx = Context::from_device(&dev.device)?;
    let other_q = Queue::new(&other_ctx, &dev.device)?;
    let ctx_refs = ctx.reference_count()?;
    let events_before = cl_mem::Event::live_count();
    let buf = Buffer::new(&ctx, MemFlags::READ_WRITE, 256)?;
    let src = Buffer::new(&ctx, MemFlags::READ_WRITE, 64)?;
    let foreign = Buffer::new(&other_ctx, MemFlags::READ_WRITE, 64)?;
    let foreign_event = UserEvent::new(&other_ctx)?;
    let program = Program::build_from_source(&ctx, SRC, "")?;
    let mut k = program.kernel("scale")?;
    let local = program.kernel("fill_local")?;
    let mut host = vec![0u8; 512];
    let mut results: Vec<(String, cl_mem::Result<()>)> = Vec::new();
    let mut push = |what: String, r: cl_mem::Result<()>| results.push((what, r));
    let big = [
        usize::MAX,
        usize::MAX - 3,
        usize::MAX / 2,
        1 << 40,
        257,
        256,
        253,
    ];
    // Host transfers past the end or overflowing: 7 offsets x 4 operations.
    for &off in &big {
        push(
            format!("read at {off}"),
            buf.read(&q, &mut host[..4], Transfer::default().src_offset(off))
                .map(drop),
        );
        push(
            format!("write at {off}"),
            buf.write(&q, &host[..4], Transfer::default().dst_offset(off))
                .map(drop),
        );
        push(
            format!("enqueue_read at {off}"),
            buf.enqueue_read(&q, vec![0u8; 4], Transfer::default().src_offset(off))
                .map(drop),
        );
        push(
            format!("enqueue_write at {off}"),
            buf.enqueue_write(&q, vec![0u8; 4], Transfer::default().dst_offset(off))
                .map(drop),
        );
    }
    // Device-side ranges: (offset, length) pairs past the end or overflowing, 8 x 4 operations.
    let pairs = [
        (0usize, 260usize),
        (4, 256),
        (256, 4),
        (usize::MAX - 3, 4),
        (4, usize::MAX - 3),
        (usize::MAX - 3, usize::MAX - 3),
        (200, 100),
        (1 << 40, 4),
    ];
    for &(off, len) in &pairs {
        push(
            format!("fill {off}+{len}"),
            buf.fill(
                &q,
                &[0u32],
                Transfer::default().dst_offset(off).byte_count(len),
            )
            .map(drop),
        );
        push(
            format!("copy into {off}+{len}"),
            enqueue_copy(
                &q,
                &buf,
                &src,
                Transfer::default().dst_offset(off).byte_count(len),
            )
            .map(drop),
        );
        push(
            format!("copy from {off}+{len}"),
            enqueue_copy(
                &q,
                &src,
                &buf,
                Transfer::default().src_offset(off).byte_count(len),
            )
            .map(drop),
        );
        push(
            format!("sub-buffer {off}+{len}"),
            buf.sub_buffer(off, len, MemFlags::empty()).map(drop),
        );
    }
    // Map ranges (elements): 5 ranges x 2 maps.
    let ranges = [
        (0usize, 65usize),
        (63, 65),
        (usize::MAX - 1, usize::MAX),
        (5, 3),
        (64, 64),
    ];
    for &(a, b) in &ranges {
        push(
            format!("map_read {a}..{b}"),
            buf.map::<u32, _>(&q, cl_mem::ReadOnly, a..b, &[]).map(drop),
        );
        push(
            format!("map_mut {a}..{b}"),
            buf.map::<u32, _>(&q, MapFlags::WRITE, a..b, &[]).map(drop),
        );
    }
    // Fill patterns and misaligned fills: 9.
    for n in [0usize, 3, 5, 6, 7, 129, 256] {
        push(
            format!("fill pattern of {n} bytes"),
            buf.fill(&q, &vec![0u8; n], Transfer::default().byte_count(0))
                .map(drop),
        );
    }
    push(
        "fill misaligned offset".into(),
        buf.fill(&q, &[0u32], Transfer::default().dst_offset(2).byte_count(4))
            .map(drop),
    );
    push(
        "fill misaligned size".into(),
        buf.fill(&q, &[0u32], Transfer::default().byte_count(6))
            .map(drop),
    );
    // Sub-buffer flags: 6.
    for flags in [
        MemFlags::USE_HOST_PTR,
        MemFlags::COPY_HOST_PTR,
        MemFlags::ALLOC_HOST_PTR,
        MemFlags::READ_ONLY | MemFlags::WRITE_ONLY,
        MemFlags::HOST_READ_ONLY | MemFlags::HOST_NO_ACCESS,
        MemFlags::KERNEL_READ_AND_WRITE,
    ] {
        push(
            format!("sub-buffer flags {flags:?}"),
            buf.sub_buffer(0, 16, flags).map(drop),
        );
    }
    // Rectangles with a zero or oversized region: 6 x 2.
    for region in [
        [0usize, 1, 1],
        [1, 0, 1],
        [1, 1, 0],
        [257, 1, 1],
        [16, 17, 1],
        [usize::MAX, 1, 1],
    ] {
        push(
            format!("write_rect {region:?}"),
            buf.write(
                &q,
                &host,
                Transfer::default().rect(cl_mem::Rect::new(region)),
            )
            .map(drop),
        );
        push(
            format!("read_rect {region:?}"),
            buf.read(
                &q,
                &mut host,
                Transfer::default().rect(cl_mem::Rect::new(region)),
            )
            .map(drop),
        );
    }
    // Overlapping copies within one buffer: 2.
    push(
        "overlapping copy".into(),
        enqueue_copy(
            &q,
            &buf,
            &buf,
            Transfer::default().dst_offset(4).byte_count(8),
        )
        .map(drop),
    );
    push(
        "overlapping copy backwards".into(),
        enqueue_copy(
            &q,
            &buf,
            &buf,
            Transfer::default().src_offset(8).byte_count(16),
        )
        .map(drop),
    );
    // Buffer sizes: 3.
    for size in [0usize, usize::MAX, 1 << 60] {
        push(
            format!("buffer of {size} bytes"),
            Buffer::new(&ctx, MemFlags::READ_WRITE, size).map(drop),
        );
    }
    // Kernel arguments of the wrong kind, for each of the four parameters: 4 x 6.
    let image_ok = dev.device.image_support()?;
    let sampler = if image_ok {
        Some(Sampler::new(
            &ctx,
            false,
            AddressingMode::None,
            FilterMode::Nearest,
        )?)
    } else {
        None
    };
    for index in 0..4u32 {
        let pointer = index < 2;
        if pointer {
            push(
                format!("u64 for arg {index}"),
                k.set_arg(index, &0x1234_5678u64).map(drop),
            );
            push(
                format!("u32 for arg {index}"),
                k.set_arg(index, &7u32).map(drop),
            );
            push(
                format!("[u8; 8] for arg {index}"),
                k.set_arg(index, &[1u8; 8]).map(drop),
            );
            push(
                format!("f32 for arg {index}"),
                k.set_arg(index, &1.0f32).map(drop),
            );
        } else {
            push(
                format!("buffer for arg {index}"),
                k.set_arg(index, &buf).map(drop),
            );
            push(
                format!("NullMem for arg {index}"),
                k.set_arg(index, &NullMem).map(drop),
            );
            push(
                format!("sub-buffer for arg {index}"),
                k.set_arg(index, &src).map(drop),
            );
            push(
                format!("foreign buffer for arg {index}"),
                k.set_arg(index, &foreign).map(drop),
            );
        }
        push(
            format!("local memory for arg {index}"),
            k.set_arg(index, &LocalMemory::new(64)).map(drop),
        );
        match &sampler {
            Some(s) => push(
                format!("sampler for arg {index}"),
                k.set_arg(index, s).map(drop),
            ),
            None => push(
                format!("empty local memory for arg {index}"),
                k.set_arg(index, &LocalMemory::new(0)).map(drop),
            ),
        }
    }
    // Indices past the end: 3. Foreign objects: 2.
    for index in [4u32, 5, u32::MAX] {
        push(
            format!("arg index {index}"),
            k.set_arg(index, &1u32).map(drop),
        );
    }
    push(
        "foreign buffer for a pointer".into(),
        k.set_arg(0, &foreign).map(drop),
    );
    push(
        "a buffer for a __local parameter".into(),
        local.duplicate()?.set_arg(0, &buf).map(drop),
    );
    // Enqueue shapes, queues and wait lists: 8 (all arguments set first).
    k.set_arg(0, &buf)?
        .set_arg(1, &buf)?
        .set_arg(2, &1.0f32)?
        .set_arg(3, &0u32)?;
    let shapes: [(&[usize], Option<&[usize]>); 5] = [
        (&[], None),
        (&[1, 1, 1, 1], None),
        (&[16], Some(&[0])),
        (&[16, 16], Some(&[16])),
        (&[16, 16], Some(&[4, 0])),
    ];
    for (g, l) in shapes {
        push(
            format!("nd-range {g:?} / {l:?}"),
            k.enqueue_nd_range(&q, g, l, &[]).map(drop),
        );
    }
    push(
        "kernel on a foreign queue".into(),
        k.enqueue_nd_range(&other_q, &[16], None, &[]).map(drop),
    );
    push(
        "kernel after a foreign event".into(),
        k.enqueue_nd_range(&q, &[16], None, &[&foreign_event])
            .map(drop),
    );
    push(
        "marker after a foreign event".into(),
        q.enqueue_marker(&[&foreign_event]).map(drop),
    );
    // Transfers on a foreign queue or after a foreign event: 6.
    push(
        "read on a foreign queue".into(),
        buf.read(&other_q, &mut host[..4], &[]).map(drop),
    );
    push(
        "write on a foreign queue".into(),
        buf.write(&other_q, &host[..4], &[]).map(drop),
    );
    push(
        "fill on a foreign queue".into(),
        buf.fill(&other_q, &[0u32], Transfer::default().byte_count(4))
            .map(drop),
    );
    push(
        "read after a foreign event".into(),
        buf.read(&q, &mut host[..4], &[&*foreign_event]).map(drop),
    );
    push(
        "fill after a foreign event".into(),
        buf.fill(
            &q,
            &[0u32],
            Transfer::default().byte_count(4).wait(&[&foreign_event]),
        )
        .map(drop),
    );
    push(
        "copy after a foreign event".into(),
        enqueue_copy(&q, &buf, &src, &[&*foreign_event]).map(drop),
    );
    // Aliasing maps and commands under maps: 8.
    {
        let guard = buf.map::<u32, _>(&q, cl_mem::ReadOnly, 0..16, &[])?;
        push(
            "map_mut under map_read".into(),
            buf.map::<u32, _>(&q, MapFlags::WRITE, 8..9, &[]).map(drop),
        );
        push(
            "write under map_read".into(),
            buf.write(&q, &host[..4], &[]).map(drop),
        );
        push(
            "fill under map_read".into(),
            buf.fill(&q, &[0u32], Transfer::default().byte_count(4))
                .map(drop),
        );
        push(
            "copy into map_read".into(),
            enqueue_copy(&q, &buf, &src, &[]).map(drop),
        );
        push(
            "kernel writing under map_read".into(),
            k.enqueue_nd_range(&q, &[16], None, &[]).map(drop),
        );
        drop(guard);
        let guard = buf.map::<u32, _>(&q, MapFlags::WRITE, 0..16, &[])?;
        push(
            "map_read under map_mut".into(),
            buf.map::<u32, _>(&q, cl_mem::ReadOnly, 0..1, &[]).map(drop),
        );
        push(
            "read under map_mut".into(),
            buf.read(&q, &mut host[..4], &[]).map(drop),
        );
        push(
            "copy from map_mut".into(),
            enqueue_copy(&q, &src, &buf, &[]).map(drop),
        );
        drop(guard);
    }

    assert!(results.len() >= 150, "only {} inputs", results.len());
    let mut wrong = Vec::new();
    for (what, r) in &results {
        match r {
            Err(Error::Cl { .. }) | Err(Error::Build { .. }) | Ok(()) => {
                wrong.push(format!("{what}: {r:?}"))
            }
            Err(_) => {}
        }
    }
    assert!(
        wrong.is_empty(),
        "not refused before the driver:\n{}",
        wrong.join("\n")
    );
    // Nothing was left behind.
    foreign_event.set_complete()?;
    q.finish()?;
    drop((k, local, sampler));
    assert_eq!(buf.mem_reference_count()?, 1);
    assert_eq!(src.mem_reference_count()?, 1);
    assert_eq!(foreign.mem_reference_count()?, 1);
    assert_eq!(buf.live_maps(), 0);
    drop((buf, src, foreign, foreign_event, other_q, program));
    assert_eq!(ctx.reference_count()?, ctx_refs);
    assert_eq!(cl_mem::Event::live_count(), events_before);
    eprintln!("{} bad inputs refused", results.len());
    Ok(())
}

fn an_image_from_a_buffer_shares_its_map_lock_and_record(dev: &TestDevice) -> TestResult {
    if !dev.device.image_support()? {
        return Err(skip("the device has no image support"));
    }
    let q = dev.queue();
    let ctx = q.context();
    if ctx.platform_version() < cl_mem::Version::V1_2 {
        return Err(skip("1-D buffer images need OpenCL 1.2"));
    }
    let buf = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &[1.0f32; 16])?;
    let img = match Image::from_buffer(ctx, MemFlags::READ_WRITE, ImageFormat::RGBA_FLOAT, &buf, 4)
    {
        Ok(i) => i,
        Err(Error::Unsupported { .. }) => return Err(skip("no 1-D buffer images")),
        Err(e) => return Err(e.into()),
    };
    // The issue's case: a buffer map and a map of the image made from it aliased the same bytes.
    {
        let _w = buf.map::<f32, _>(&q, MapFlags::WRITE, .., &[])?;
        let r = img.map(&q, cl_mem::MapAccess::Read, &[], &[4], &[], |_| ());
        mapped(r, "image map under a buffer map");
        let mut px = [0f32; 16];
        mapped(
            img.read(&q, &mut px, &[]),
            "image read under a writable buffer map",
        );
    }
    let r = img.map(&q, cl_mem::MapAccess::Write, &[], &[4], &[], |_| {
        buf.map::<f32, _>(&q, cl_mem::ReadOnly, .., &[]).map(drop)
    })?;
    mapped(r, "buffer map under an image map");
    // Commands on the image and the buffer are ordered across queues like the buffer's own.
    let other = Queue::new(ctx, &dev.device)?;
    img.write(&other, &[2.0f32; 16], &[])?;
    let v: Vec<f32> = buf.to_vec(&q)?;
    assert_eq!(v, vec![2.0f32; 16]);
    // PoCL 3.1 crashes inside clEnqueueFillImage for 1-D buffer images
    // (repro/pocl_fill_image1d_buffer_crash.c): refused there, a real fill elsewhere.
    let fill = img.fill(
        &other,
        cl_mem::FillColor::Float([3.0; 4]),
        Transfer::default().rect(Rect::new([4, 1, 1])),
    );
    if dev.platform_name().contains("Portable Computing Language") {
        assert!(matches!(fill, Err(Error::Unsupported { .. })), "{fill:?}");
    } else {
        fill?;
        let v: Vec<f32> = buf.to_vec(&q)?;
        assert_eq!(v, vec![3.0f32; 16]);
    }
    Ok(())
}

/// A buffer handle given away with `into_raw` and adopted again while a command on it is still
/// pending keeps that command in its record (it came back with an empty one, so a map on another
/// queue did not wait for the copy; review 2026-11-26).
fn a_handle_given_away_keeps_its_pending_commands(dev: &TestDevice) -> TestResult {
    if dev.platform_name().contains("Oclgrind") {
        // `into_raw` flushes the queue of a pending command, and Oclgrind's clFlush waits there
        // for the user event this test sets afterwards (docs/DEVICES.md#oclgrind).
        return Err(skip(
            "Oclgrind 21.10: clFlush blocks on a command waiting for a user event",
        ));
    }
    let q = dev.queue();
    let ctx = q.context();
    let src = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &[9u32; 64])?;
    let dst = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &[0u32; 64])?;
    let gate = UserEvent::new(ctx)?;
    let copy = enqueue_copy(&q, &dst, &src, &[gate.event()])?;
    let before = dst.recorded_commands();
    assert!(before >= 1, "the gated copy is not recorded");
    let raw = dst.into_raw();
    // SAFETY: the reference `into_raw` gave away, adopted once.
    let dst = unsafe { Buffer::from_raw(raw) }?;
    let after = dst.recorded_commands();
    gate.set_complete()?;
    copy.wait()?;
    if after != before {
        return Err(fail(format!(
            "the record of pending commands went from {before} to {after} through into_raw/from_raw"
        )));
    }
    let v: Vec<u32> = dst.to_vec(&q)?;
    assert_eq!(v, vec![9u32; 64]);
    Ok(())
}

/// An image turned into a `Memory` and back (safe code) is the same allocation with the same
/// record: a second writable map through the rebuilt image is refused (it was granted: two
/// `&mut [u8]` over one host pointer; review 2026-11-26).
fn an_image_rebuilt_from_memory_keeps_its_record(dev: &TestDevice) -> TestResult {
    if !dev.device.image_support()? {
        return Err(skip("the device has no image support"));
    }
    let q = dev.queue();
    let ctx = q.context();
    let q2 = Queue::new(ctx, &dev.device)?;
    let img = Image::new(
        ctx,
        MemFlags::READ_WRITE,
        ImageFormat::RGBA_FLOAT,
        &cl_mem::ImageDesc::d2(4, 4),
    )?;
    let twin = Image::try_from(cl_mem::Memory::from(img.clone()))
        .map_err(|_| fail("an image's Memory did not narrow back to an image"))?;
    let r = img.map(
        &q,
        cl_mem::MapAccess::ReadWrite,
        &[0, 0],
        &[4, 4],
        &[],
        |_| {
            twin.map(
                &q2,
                cl_mem::MapAccess::ReadWrite,
                &[0, 0],
                &[4, 4],
                &[],
                |_| (),
            )
        },
    )?;
    mapped(r, "a second writable map through the rebuilt image");
    Ok(())
}

fn coarse_svm(dev: &TestDevice) -> Result<(), cl_tests::TestError> {
    let caps = dev.device.svm_capabilities()?;
    if dev.device.version() < cl_mem::Version::V2_0
        || !caps.contains(cl_mem::SvmCapabilities::COARSE_GRAIN_BUFFER)
    {
        return Err(skip("no coarse-grain buffer SVM (OpenCL 2.0)"));
    }
    Ok(())
}

const SVM_SRC: &str = r#"
__kernel void twice(__global float* a) { a[get_global_id(0)] *= 2.0f; }
"#;

fn forgotten_svm_map_guards_leak_no_queue(dev: &TestDevice) -> TestResult {
    coarse_svm(dev)?;
    let q = dev.queue();
    let ctx = q.context().clone();
    let before = ctx.reference_count()?;
    {
        let mut a = cl_mem::svm::SvmArray::<f32, cl_mem::svm::Coarse>::new(&q, 64)?;
        a.with_map(
            &q,
            cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE,
            ..,
            |s| s.fill(0.0),
        )?;
        for _ in 0..5 {
            std::mem::forget(a.map(&q, cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE, ..)?);
        }
        // The next map unmaps the leftovers; their queue references go with them.
        a.with_map(&q, cl_mem::ReadOnly, .., |s| assert_eq!(s[0], 0.0))?;
        for _ in 0..3 {
            std::mem::forget(a.map(&q, cl_mem::ReadOnly, ..)?);
        }
    }
    // Dropping the array unmaps what is left and frees it, on the queue.
    q.finish()?;
    let after = ctx.reference_count()?;
    assert_eq!(
        after, before,
        "forgotten SVM map guards changed the context's reference count"
    );
    Ok(())
}

fn a_cached_kernel_and_an_svm_map_take_turns(dev: &TestDevice) -> TestResult {
    coarse_svm(dev)?;
    let q = dev.queue();
    let ctx = q.context();
    let mut a = cl_mem::svm::SvmArray::<f32, cl_mem::svm::Coarse>::new(&q, 64)?;
    a.with_map(
        &q,
        cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE,
        ..,
        |s| s.iter_mut().for_each(|v| *v = 1.0),
    )?;
    let program = Program::build_from_source(ctx, SVM_SRC, "")?;
    let mut k = program.kernel("twice")?;
    k.set_arg(0, &a)?;
    for round in 1..=3u32 {
        k.enqueue_nd_range(&q, &[64], None, &[])?;
        q.finish()?;
        // No extra step: the kernel stays cached with its argument, the map works.
        let want = 2f32.powi(i32::try_from(round)?);
        a.with_map(&q, cl_mem::ReadOnly, .., |s| {
            assert!(s.iter().all(|&v| v == want), "round {round}")
        })?;
        let guard = a.map(&q, cl_mem::ReadOnly, ..)?;
        mapped(
            k.enqueue_nd_range(&q, &[64], None, &[]),
            "kernel under an SVM map",
        );
        drop(guard);
    }
    Ok(())
}

fn typed_image_arrays_match_the_channel_type(dev: &TestDevice) -> TestResult {
    if !dev.device.image_support()? {
        return Err(skip("the device has no image support"));
    }
    let q = dev.queue();
    let ctx = q.context();
    let data: Vec<f32> = (0..16).map(|i| i as f32 + 0.5).collect();
    let img = Image::from_host(
        ctx,
        MemFlags::READ_WRITE,
        ImageFormat::RGBA_FLOAT,
        &ImageDesc::d1(4),
        &data,
    )?;
    // The issue's case was `read_array::<f64>`: now a compile error (tests/ui). An element type
    // of another channel type is a typed error, not a reinterpretation.
    let r = img.read_array::<u32>(&q, &[], &[4], &[]);
    assert!(
        matches!(&r, Err(Error::InvalidArgument(m)) if m.contains("Float")),
        "{r:?}"
    );
    let r = img.write_array(&q, &[], &ndarray::Array2::<i32>::zeros((4, 4)), &[]);
    assert!(matches!(&r, Err(Error::InvalidArgument(_))), "{r:?}");
    let back = img.read_array::<f32>(&q, &[], &[4], &[])?;
    assert_eq!(back.as_slice(), Some(&data[..]));
    let px = img.read_array::<[f32; 4]>(&q, &[], &[4], &[])?;
    assert_eq!(px[[1]], [4.5, 5.5, 6.5, 7.5]);
    // Normalized formats take their integer type.
    let unorm = Image::new(
        ctx,
        MemFlags::READ_WRITE,
        ImageFormat::new(cl_mem::ChannelOrder::Rgba, cl_mem::ChannelType::UnormInt8),
        &ImageDesc::d1(4),
    )?;
    unorm.write_array(&q, &[], &ndarray::Array2::<u8>::from_elem((4, 4), 7), &[])?;
    let v = unorm.read_array::<u8>(&q, &[], &[4], &[])?;
    assert!(v.iter().all(|&x| x == 7));
    let r = unorm.read_array::<i8>(&q, &[], &[4], &[]);
    assert!(matches!(&r, Err(Error::InvalidArgument(_))), "{r:?}");
    Ok(())
}

/// Pool blocks are no longer handed out mutably (two swapped blocks went back to each other's
/// bins, tests/ui in cl-pool); slice blocks are still written in place.
fn pinned_pool_blocks_are_written_as_slices(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let pool = cl_pool::MemoryPool::new(cl_pool::PinnedAllocator::new(&q));
    let mut a = pool.allocate(1 << 12)?;
    a.as_mut_slice::<u8>().fill(9);
    assert!(a.block().iter().all(|&x| x == 9));
    let len = a.requested_bytes();
    drop(a);
    let b = pool.allocate(len)?;
    assert!(b.allocated_bytes() >= len);
    Ok(())
}

/// A map of other bytes on another queue, still waiting on a user event, does not hold up the
/// unmap of a guard dropped meanwhile (it blocked for good while every driver ordered the map
/// commands of an allocation; now only PoCL does, for its concurrent-map crash).
fn an_unmap_does_not_wait_for_a_gated_map_on_another_queue(dev: &TestDevice) -> TestResult {
    if dev.platform_name().contains("Portable Computing Language") {
        return Err(skip(
            "PoCL orders the map commands of one allocation (its concurrent read-map crash, \
             docs/DEVICES.md#pocl-concurrent-maps): there the unmap waits for the gated map",
        ));
    }
    let qa = dev.queue();
    let ctx = qa.context();
    let qb = Queue::new(ctx, &dev.device)?;
    let buf = Buffer::new(ctx, MemFlags::READ_WRITE, 64)?;
    let gate = UserEvent::new(ctx)?;
    let m1 = buf.map::<u8, _>(&qa, cl_mem::ReadOnly, 0..4, &[])?;
    let pending = buf.enqueue_map::<u8, _>(&qb, cl_mem::ReadOnly, 4..8, &[&gate])?;
    let t0 = Instant::now();
    drop(m1);
    qa.finish()?;
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "the unmap waited {:?}",
        t0.elapsed()
    );
    gate.set_complete()?;
    let g = pending.wait()?;
    assert_eq!(g.len(), 4);
    drop(g);
    qb.finish()?;
    assert_eq!(buf.live_maps(), 0);
    Ok(())
}
