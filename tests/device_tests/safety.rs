//! Safe means safe (issue 11): what a hostile or careless caller of the safe API can do, each
//! case a typed error or a correct result on every device: kernel arguments checked against
//! their declarations and contexts, arguments that outlive the kernel until their commands ran,
//! wait lists and queues of other contexts, sub-buffer flags, exclusive maps.

use std::time::{Duration, Instant};

use cl_mem::{
    AddressingMode, Buffer, Context, Error, FilterMode, Image, ImageDesc, ImageFormat, Kernel,
    LocalMemory, MemFlags, MemObject, NullMem, ParamKind, Program, Sampler, UserEvent,
};
use cl_tests::{fail, skip, DeviceTest, TestDevice, TestResult};

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
    ]
}

const SRC: &str = r#"
__kernel void scale(__global const float* in, __global float* out, float a, uint n) {
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
    assert!(params[0].read_only, "{:?}", params[0]);
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
    buf.read(&q, 0, &mut out, &[])?;
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
    out.read(&q, 0, &mut got, &[])?;
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
    buf.read(&q, 0, &mut out, &[])?;
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
    let r = mine.read(&q, 0, &mut data, &[&foreign_event]);
    assert!(matches!(&r, Err(Error::InvalidArgument(_))), "{r:?}");
    let r = mine.write(&q, 0, &data, &[&foreign_event]);
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

/// Polls `f` for up to ten seconds (event callbacks run on the driver's thread, after the wait).
fn eventually(what: &str, mut f: impl FnMut() -> cl_mem::Result<bool>) -> TestResult {
    let start = Instant::now();
    while !f()? {
        if start.elapsed() > Duration::from_secs(10) {
            return Err(fail(format!("timed out waiting until {what}")));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
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
    out.read(&q, 0, &mut got, &[])?;
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
    out.read(&q, 0, &mut got, &[])?;
    assert_eq!(got, [0.25f32; 16]);
    eventually("the completed command released the sampler", || {
        Ok(probe.reference_count()? == 1)
    })?;
    Ok(())
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
    for _ in 0..500 {
        k.enqueue_nd_range(&q, &[16], None, &[])?;
        // Unflushed commands are in flight for real; the record holds no more than them.
        assert!(k.commands_in_flight() <= 500, "{}", k.commands_in_flight());
    }
    q.finish()?;
    k.enqueue_nd_range(&q, &[16], None, &[])?;
    assert!(k.commands_in_flight() <= 1, "{}", k.commands_in_flight());
    q.finish()?;
    drop(k);
    assert_eq!(buf.mem_reference_count()?, 1);
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
    let r = inner.write(&q, 0, &[1u8; 4], &[]);
    assert!(matches!(&r, Err(Error::InvalidArgument(_))), "{r:?}");
    let mut back = [0u8; 4];
    inner.read(&q, 0, &mut back, &[])?;
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
