//! Kernel arguments are checked against the declared parameters before the driver: kinds,
//! sizes, address spaces, image access, contexts, local sizes; errors name the kernel and argument.

use crate::common::{invalid, ARGUMENT_KERNELS, IMAGE_ARGS_SRC, SCALE_KERNELS, SCALE_SRC};
use cl_mem::{
    AddressingMode, Buffer, ChannelOrder, ChannelType, Context, Error, FilterMode, Image,
    ImageDesc, ImageFormat, Kernel, LocalMemory, MemFlags, NullMem, ParamKind, Pipe, Program,
    RawHandle, Sampler, UserEvent, Version,
};
use cl_tests::{device_test, fail, skip, TestDevice, TestResult};

fn kernel_arg_err<T: std::fmt::Debug>(r: cl_mem::Result<T>, index: u32) {
    match r {
        Err(Error::KernelArg { index: i, .. }) if i == index => {}
        other => panic!("expected Error::KernelArg for argument {index}, got {other:?}"),
    }
}

/// A hostile `AsKernelArg` (safe to implement) that answers with this context's buffer the first
/// time and another context's the next: `Kernel::call` must set what it checked.
struct Flip {
    ours: Buffer,
    theirs: Buffer,
    asked: std::cell::Cell<u32>,
}

impl cl_mem::AsKernelArg for Flip {
    type Arg = Buffer;

    fn as_kernel_arg(&self) -> &Buffer {
        self.asked.set(self.asked.get() + 1);
        if self.asked.get() == 1 {
            &self.ours
        } else {
            &self.theirs
        }
    }
}

fn kernel_arg<T: std::fmt::Debug>(r: cl_mem::Result<T>, index: u32) -> String {
    match r {
        Err(e @ Error::KernelArg { index: i, .. }) if i == index => e.to_string(),
        other => panic!("expected Error::KernelArg for argument {index}, got {other:?}"),
    }
}

const PIPE_SRC: &str = r#"
__kernel void produce(__write_only pipe ulong16 p) {
    ulong16 v = (ulong16)(get_global_id(0));
    write_pipe(p, &v);
}
"#;

const IMAGE_ACCESS_SRC: &str = r#"
__kernel void put(__write_only image2d_t img) {
    write_imageui(img, (int2)(get_global_id(0), 0), (uint4)(9, 0, 0, 0));
}
__kernel void get(__read_only image2d_t img, __global uint* out) {
    out[get_global_id(0)] = read_imageui(img, (int2)(get_global_id(0), 0)).x;
}
"#;

device_test!(kernel_args_are_checked_before_enqueue);
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

device_test!(kernel_params_are_described);
fn kernel_params_are_described(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let program = Program::build_from_source(&ctx, SCALE_KERNELS, "")?;
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

device_test!(scalar_for_a_pointer_is_refused);
fn scalar_for_a_pointer_is_refused(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let program = Program::build_from_source(ctx, SCALE_KERNELS, "")?;
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

device_test!(image_sampler_and_buffer_parameters_take_only_their_kind);
fn image_sampler_and_buffer_parameters_take_only_their_kind(dev: &TestDevice) -> TestResult {
    if !dev.device.image_support()? {
        return Err(skip("the device has no image support"));
    }
    let q = dev.queue();
    let ctx = q.context();
    let program = Program::build_from_source(ctx, IMAGE_ARGS_SRC, "")?;
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
        crate::common::RGBA_F,
        &ImageDesc::d2(4, 1),
        &data,
    )?;
    let img1 = Image::from_host(
        ctx,
        MemFlags::READ_ONLY,
        crate::common::RGBA_F,
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

device_test!(objects_of_another_context_are_refused);
fn objects_of_another_context_are_refused(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let other = Context::new(&[dev.device])?;
    let other_q = cl_mem::Queue::new(&other, &dev.device)?;
    let program = Program::build_from_source(ctx, SCALE_KERNELS, "")?;
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
        let program = Program::build_from_source(ctx, IMAGE_ARGS_SRC, "")?;
        let mut k = program.kernel("sample")?;
        let s = Sampler::new(&other, false, AddressingMode::None, FilterMode::Nearest)?;
        let r = k.set_arg(1, &s);
        assert!(
            matches!(&r, Err(Error::InvalidArgument(m)) if m.contains("another context")),
            "{r:?}"
        );
    }
    // Nothing leaked: only our own references remain.
    assert_eq!(foreign.reference_count()?, 1);
    Ok(())
}

device_test!(zero_local_size_is_refused);
fn zero_local_size_is_refused(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let program = Program::build_from_source(ctx, SCALE_KERNELS, "")?;
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

device_test!(a_const_pointer_kernel_is_a_write);
/// `const __global` constrains the pointer, not the memory: the kernel may cast it away and
/// write, so it may not run under a read map (the mapped `&[u32]` read `before=1 after=7`).
fn a_const_pointer_kernel_is_a_write(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let buf = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &[1u32; 16])?;
    let out = Buffer::new(ctx, MemFlags::READ_WRITE, 64)?;
    let program = Program::build_from_source(ctx, ARGUMENT_KERNELS, "")?;
    let mut sneaky = program.kernel("sneaky")?;
    sneaky.set_arg(0, &buf)?;
    assert!(!sneaky.params().is_some_and(|p| p[0].read_only));
    let mut reads = program.kernel("reads")?;
    reads.set_arg(0, &buf)?.set_arg(1, &out)?;
    assert!(reads.params().is_some_and(|p| p[0].read_only));
    {
        let view = buf.map::<u32, _>(&q, cl_mem::ReadOnly, .., &[])?;
        let r = sneaky.enqueue_nd_range(&q, &[16], None, &[]);
        assert!(matches!(r, Err(Error::Mapped(_))), "{r:?}");
        // A `__constant` parameter cannot be written through: it may run under the read map.
        reads.enqueue_nd_range(&q, &[16], None, &[])?;
        q.finish()?;
        assert_eq!(view[0], 1, "the mapped bytes did not change");
    }
    sneaky.enqueue_nd_range(&q, &[16], None, &[])?;
    let mut got = [0u32; 16];
    buf.read(&q, &mut got, &[])?;
    assert_eq!(got, [7; 16]);
    Ok(())
}

device_test!(by_value_sizes_are_checked_against_the_declared_type);
/// A scalar of the wrong size was the driver's `CL_INVALID_ARG_SIZE` (or, for `[f32; 3]` as a
/// `float4`, accepted by PoCL).
fn by_value_sizes_are_checked_against_the_declared_type(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let program = Program::build_from_source(&ctx, ARGUMENT_KERNELS, "")?;
    let mut k = program.kernel("values")?;
    let msg = kernel_arg(k.set_arg(0, &1u8), 0);
    assert!(msg.contains("int a") && msg.contains("4 bytes"), "{msg}");
    kernel_arg(k.set_arg(0, &1u64), 0);
    let msg = kernel_arg(k.set_arg(1, &[1f32; 3]), 1);
    assert!(
        msg.contains("float4 b") && msg.contains("16 bytes"),
        "{msg}"
    );
    kernel_arg(k.set_arg(2, &1u32), 2);
    kernel_arg(k.set_arg(3, &1u32), 3);
    k.set_arg(0, &1i32)?
        .set_arg(1, &[1f32; 4])?
        .set_arg(2, &1u8)?
        .set_arg(3, &1u64)?;
    let out = Buffer::new(&ctx, MemFlags::READ_WRITE, 4)?;
    k.set_arg(4, &out)?;
    let q = cl_mem::Queue::new(&ctx, &dev.device)?;
    k.enqueue_nd_range(&q, &[1], None, &[])?;
    let mut got = [0i32];
    out.read(&q, &mut got, &[])?;
    assert_eq!(got, [4]);
    Ok(())
}

device_test!(local_memory_above_the_device_is_refused);
/// PoCL aborted on a 1 MiB `__local` argument and Oclgrind threw a C++ exception through FFI.
fn local_memory_above_the_device_is_refused(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let limit = usize::try_from(dev.device.local_mem_size()?)?;
    let program = Program::build_from_source(ctx, ARGUMENT_KERNELS, "")?;
    let out = Buffer::new(ctx, MemFlags::READ_WRITE, 16 * 4)?;
    let mut k = program.kernel("locals")?;
    // One argument alone above the limit, then two that fit alone but not together.
    k.set_arg(0, &LocalMemory::new(limit + 4))?
        .set_arg(1, &LocalMemory::new(64))?
        .set_arg(2, &out)?;
    let msg = kernel_arg(k.enqueue_nd_range(&q, &[16], Some(&[16]), &[]), 0);
    assert!(msg.contains("locals") && msg.contains("__local"), "{msg}");
    k.set_arg(0, &LocalMemory::new(limit / 2 + 64))?
        .set_arg(1, &LocalMemory::new(limit / 2 + 64))?;
    kernel_arg(k.enqueue_nd_range(&q, &[16], Some(&[16]), &[]), 1);
    k.set_arg(0, &LocalMemory::of::<i32>(16))?
        .set_arg(1, &LocalMemory::of::<i32>(16))?;
    k.enqueue_nd_range(&q, &[16], Some(&[16]), &[])?;
    let mut got = [0i32; 16];
    out.read(&q, &mut got, &[])?;
    assert_eq!(got, [3; 16]);
    Ok(())
}

device_test!(constant_buffer_above_the_device_is_refused);
fn constant_buffer_above_the_device_is_refused(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let limit = dev
        .device
        .info::<u64>(cl_raw::sys::CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE)?;
    if limit + 4 > dev.device.max_mem_alloc_size()? || limit > 1 << 30 {
        return Err(skip(
            "the constant buffer limit is too large for a buffer above it",
        ));
    }
    let big = Buffer::new(ctx, MemFlags::READ_ONLY, usize::try_from(limit)? + 4)?;
    let out = Buffer::new(ctx, MemFlags::READ_WRITE, 64)?;
    let program = Program::build_from_source(ctx, ARGUMENT_KERNELS, "")?;
    let mut k = program.kernel("reads")?;
    k.set_arg(0, &big)?.set_arg(1, &out)?;
    let msg = kernel_arg(k.enqueue_nd_range(&q, &[16], None, &[]), 0);
    assert!(msg.contains("__constant"), "{msg}");
    let small = Buffer::from_slice(ctx, MemFlags::READ_ONLY, &[5u32; 16])?;
    k.set_arg(0, &small)?;
    k.enqueue_nd_range(&q, &[16], None, &[])?;
    let mut got = [0u32; 16];
    out.read(&q, &mut got, &[])?;
    assert_eq!(got, [5; 16]);
    Ok(())
}

device_test!(local_sizes_are_checked_before_the_driver);
fn local_sizes_are_checked_before_the_driver(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let program = Program::build_from_source(ctx, ARGUMENT_KERNELS, "")?;
    let out = Buffer::new(ctx, MemFlags::READ_WRITE, 64 * 4)?;
    let mut k = program.kernel("sneaky")?;
    k.set_arg(0, &out)?;
    // Built without -cl-std=CL2.0: groups are uniform on every version.
    let msg = invalid(k.enqueue_nd_range(&q, &[10], Some(&[4]), &[]), "4 into 10");
    assert!(msg.contains("sneaky") && msg.contains("divide"), "{msg}");
    let max: usize = k.work_group_info(q.device(), cl_raw::sys::CL_KERNEL_WORK_GROUP_SIZE)?;
    let msg = invalid(
        k.enqueue_nd_range(&q, &[2 * (max + 1)], Some(&[max + 1]), &[]),
        "above the kernel's work-group size",
    );
    assert!(msg.contains("work-group size"), "{msg}");
    k.enqueue_nd_range(&q, &[8], Some(&[4]), &[])?;
    q.finish()?;
    // A 2.0 program on a device with non-uniform groups may leave a partial group.
    let non_uniform = dev.device.version() >= Version::V2_0
        && (dev.device.version() < Version::V3_0 || {
            let b: u32 = dev.device.info(0x1065)?;
            b != 0
        });
    if non_uniform {
        let p2 = Program::build_from_source(ctx, ARGUMENT_KERNELS, "-cl-std=CL2.0")?;
        let mut k2 = p2.kernel("sneaky")?;
        k2.set_arg(0, &out)?;
        k2.enqueue_nd_range(&q, &[10], Some(&[4]), &[])?;
        q.finish()?;
    }
    Ok(())
}

device_test!(image_access_qualifiers_match_the_image_flags);
/// A read-only image for a `write_only` parameter and the reverse: Oclgrind accepted both and
/// reported invalid accesses.
fn image_access_qualifiers_match_the_image_flags(dev: &TestDevice) -> TestResult {
    if !dev.device.image_support()? {
        return Err(skip("the device has no image support"));
    }
    let q = dev.queue();
    let ctx = q.context();
    let fmt = ImageFormat::new(ChannelOrder::R, ChannelType::UnsignedInt32);
    let ro = Image::new(ctx, MemFlags::READ_ONLY, fmt, &ImageDesc::d2(8, 1))?;
    let wo = Image::new(ctx, MemFlags::WRITE_ONLY, fmt, &ImageDesc::d2(8, 1))?;
    let rw = Image::new(ctx, MemFlags::READ_WRITE, fmt, &ImageDesc::d2(8, 1))?;
    let program = Program::build_from_source(ctx, IMAGE_ACCESS_SRC, "")?;
    let mut put = program.kernel("put")?;
    let msg = kernel_arg(put.set_arg(0, &ro), 0);
    assert!(msg.contains("READ_ONLY"), "{msg}");
    let mut get = program.kernel("get")?;
    let msg = kernel_arg(get.set_arg(0, &wo), 0);
    assert!(msg.contains("WRITE_ONLY"), "{msg}");
    put.set_arg(0, &rw)?.enqueue_nd_range(&q, &[8], None, &[])?;
    let out = Buffer::new(ctx, MemFlags::READ_WRITE, 32)?;
    get.set_arg(0, &rw)?
        .set_arg(1, &out)?
        .enqueue_nd_range(&q, &[8], None, &[])?;
    let mut got = [0u32; 8];
    out.read(&q, &mut got, &[])?;
    assert_eq!(got, [9; 8]);
    Ok(())
}

device_test!(pipe_packets_match_the_declared_element);
/// A pipe of 4-byte packets for a `pipe ulong16` parameter: a heap overflow on the Intel runtime.
fn pipe_packets_match_the_declared_element(dev: &TestDevice) -> TestResult {
    if !(dev.device.pipe_support()? && dev.device.platform_version() >= Version::V2_0) {
        return Err(skip("no pipe support"));
    }
    let q = dev.queue();
    let ctx = q.context();
    let program = Program::build_from_source(ctx, PIPE_SRC, "-cl-std=CL2.0")?;
    let mut k = program.kernel("produce")?;
    let small = Pipe::new(ctx, MemFlags::empty(), 4, 64)?;
    let msg = kernel_arg(k.set_arg(0, &small), 0);
    assert!(
        msg.contains("4-byte packets") && msg.contains("128"),
        "{msg}"
    );
    let right = Pipe::new(ctx, MemFlags::empty(), 128, 64)?;
    k.set_arg(0, &right)?;
    k.enqueue_nd_range(&q, &[16], None, &[])?;
    q.finish()?;
    Ok(())
}

device_test!(a_call_reads_each_argument_once);
fn a_call_reads_each_argument_once(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let other = dev.context();
    let program = Program::build_from_source(ctx, ARGUMENT_KERNELS, "")?;
    let k = program.kernel("sneaky")?;
    let flip = Flip {
        ours: Buffer::from_slice(ctx, MemFlags::READ_WRITE, &[1u32; 16])?,
        theirs: Buffer::from_slice(&other, MemFlags::READ_WRITE, &[1u32; 16])?,
        asked: std::cell::Cell::new(0),
    };
    k.call(&q, &[16], None, (&flip,))?;
    assert_eq!(flip.asked.get(), 1, "the argument was read more than once");
    assert_eq!(flip.ours.to_vec::<u32>(&q)?, vec![7u32; 16]);
    Ok(())
}

device_test!(errors_name_the_kernel_and_argument);
fn errors_name_the_kernel_and_argument(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let program = Program::build_from_source(&ctx, ARGUMENT_KERNELS, "")?;
    let msg = invalid(program.kernel("valuse"), "a kernel name typo");
    assert!(msg.contains("'valuse'"), "{msg}");
    let mut k = program.kernel("values")?;
    let buf = Buffer::new(&ctx, MemFlags::READ_WRITE, 64)?;
    let msg = kernel_arg(k.set_arg(1, &buf), 1);
    assert!(
        msg.contains("'values'") && msg.contains("argument 1") && msg.contains("float4 b"),
        "{msg}"
    );
    Ok(())
}
