//! Safe means safe, second round (issue 29): the edges of the command record and of argument
//! checking, each tried as a hostile caller would. Every case is a typed error before the driver
//! (or a correct result where the driver needed a detour), on every device.

use cl_mem::RawHandle;
use cl_mem::{enqueue_copy, Transfer};
use cl_mem::{
    AddressingMode, Buffer, ChannelOrder, ChannelType, Error, FilterMode, Image, ImageDesc,
    ImageFormat, LocalMemory, MemFlags, Pipe, Program, Rect, Sampler, Version,
};
use cl_tests::{eventually, skip, DeviceTest, TestDevice, TestResult};

/// The suite's tests, in the order they run.
pub(crate) fn tests() -> Vec<DeviceTest> {
    vec![
        DeviceTest {
            name: "a_const_pointer_kernel_is_a_write",
            run: a_const_pointer_kernel_is_a_write,
        },
        DeviceTest {
            name: "by_value_sizes_are_checked_against_the_declared_type",
            run: by_value_sizes_are_checked_against_the_declared_type,
        },
        DeviceTest {
            name: "local_memory_above_the_device_is_refused",
            run: local_memory_above_the_device_is_refused,
        },
        DeviceTest {
            name: "constant_buffer_above_the_device_is_refused",
            run: constant_buffer_above_the_device_is_refused,
        },
        DeviceTest {
            name: "local_sizes_are_checked_before_the_driver",
            run: local_sizes_are_checked_before_the_driver,
        },
        DeviceTest {
            name: "image_access_qualifiers_match_the_image_flags",
            run: image_access_qualifiers_match_the_image_flags,
        },
        DeviceTest {
            name: "pipe_packets_match_the_declared_element",
            run: pipe_packets_match_the_declared_element,
        },
        DeviceTest {
            name: "an_image_over_a_buffer_of_another_context_is_refused",
            run: an_image_over_a_buffer_of_another_context_is_refused,
        },
        DeviceTest {
            name: "rect_copies_with_sub_buffers_give_the_right_bytes",
            run: rect_copies_with_sub_buffers_give_the_right_bytes,
        },
        DeviceTest {
            name: "overlapping_rect_copies_are_refused",
            run: overlapping_rect_copies_are_refused,
        },
        DeviceTest {
            name: "conflicting_flags_and_empty_shapes_are_refused",
            run: conflicting_flags_and_empty_shapes_are_refused,
        },
        DeviceTest {
            name: "memory_adopted_from_a_raw_handle_keeps_the_record",
            run: memory_adopted_from_a_raw_handle_keeps_the_record,
        },
        DeviceTest {
            name: "a_replaced_sampler_outlives_its_pending_command",
            run: a_replaced_sampler_outlives_its_pending_command,
        },
        DeviceTest {
            name: "a_call_reads_each_argument_once",
            run: a_call_reads_each_argument_once,
        },
        DeviceTest {
            name: "errors_name_the_kernel_and_argument",
            run: errors_name_the_kernel_and_argument,
        },
    ]
}

const SRC: &str = r#"
__kernel void sneaky(__global const uint* p) {
    ((__global uint*)p)[get_global_id(0)] = 7;
}
__kernel void reads(__constant uint* p, __global uint* out) {
    out[get_global_id(0)] = p[get_global_id(0)];
}
__kernel void values(int a, float4 b, uchar c, ulong d, __global int* out) {
    out[0] = a + (int)b.w + c + (int)d;
}
__kernel void locals(__local int* a, __local int* b, __global int* out) {
    a[get_local_id(0)] = 1;
    b[get_local_id(0)] = 2;
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = a[get_local_id(0)] + b[get_local_id(0)];
}
"#;

fn kernel_arg<T: std::fmt::Debug>(r: cl_mem::Result<T>, index: u32) -> String {
    match r {
        Err(e @ Error::KernelArg { index: i, .. }) if i == index => e.to_string(),
        other => panic!("expected Error::KernelArg for argument {index}, got {other:?}"),
    }
}

fn invalid<T: std::fmt::Debug>(r: cl_mem::Result<T>, what: &str) -> String {
    match r {
        Err(e @ Error::InvalidArgument(_)) => e.to_string(),
        other => panic!("{what}: expected Error::InvalidArgument, got {other:?}"),
    }
}

/// `const __global` constrains the pointer, not the memory: the kernel may cast it away and
/// write, so it may not run under a read map (the mapped `&[u32]` read `before=1 after=7`).
fn a_const_pointer_kernel_is_a_write(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let buf = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &[1u32; 16])?;
    let out = Buffer::new(ctx, MemFlags::READ_WRITE, 64)?;
    let program = Program::build_from_source(ctx, SRC, "")?;
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

/// A scalar of the wrong size was the driver's `CL_INVALID_ARG_SIZE` (or, for `[f32; 3]` as a
/// `float4`, accepted by PoCL).
fn by_value_sizes_are_checked_against_the_declared_type(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let program = Program::build_from_source(&ctx, SRC, "")?;
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

/// PoCL aborted on a 1 MiB `__local` argument and Oclgrind threw a C++ exception through FFI.
fn local_memory_above_the_device_is_refused(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let limit = usize::try_from(dev.device.local_mem_size()?)?;
    let program = Program::build_from_source(ctx, SRC, "")?;
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

fn constant_buffer_above_the_device_is_refused(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let limit = dev.device.max_constant_buffer_size()?;
    if limit + 4 > dev.device.max_mem_alloc_size()? || limit > 1 << 30 {
        return Err(skip(
            "the constant buffer limit is too large for a buffer above it",
        ));
    }
    let big = Buffer::new(ctx, MemFlags::READ_ONLY, usize::try_from(limit)? + 4)?;
    let out = Buffer::new(ctx, MemFlags::READ_WRITE, 64)?;
    let program = Program::build_from_source(ctx, SRC, "")?;
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

fn local_sizes_are_checked_before_the_driver(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let program = Program::build_from_source(ctx, SRC, "")?;
    let out = Buffer::new(ctx, MemFlags::READ_WRITE, 64 * 4)?;
    let mut k = program.kernel("sneaky")?;
    k.set_arg(0, &out)?;
    // Built without -cl-std=CL2.0: groups are uniform on every version.
    let msg = invalid(k.enqueue_nd_range(&q, &[10], Some(&[4]), &[]), "4 into 10");
    assert!(msg.contains("sneaky") && msg.contains("divide"), "{msg}");
    let max = k.work_group_size(&q)?;
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
            // SAFETY: a 3.0 query asked of a 3.0 device; `cl_bool`.
            let b: u32 = unsafe { dev.device.info(0x1065) }?;
            b != 0
        });
    if non_uniform {
        let p2 = Program::build_from_source(ctx, SRC, "-cl-std=CL2.0")?;
        let mut k2 = p2.kernel("sneaky")?;
        k2.set_arg(0, &out)?;
        k2.enqueue_nd_range(&q, &[10], Some(&[4]), &[])?;
        q.finish()?;
    }
    Ok(())
}

const IMAGE_SRC: &str = r#"
__kernel void put(__write_only image2d_t img) {
    write_imageui(img, (int2)(get_global_id(0), 0), (uint4)(9, 0, 0, 0));
}
__kernel void get(__read_only image2d_t img, __global uint* out) {
    out[get_global_id(0)] = read_imageui(img, (int2)(get_global_id(0), 0)).x;
}
"#;

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
    let program = Program::build_from_source(ctx, IMAGE_SRC, "")?;
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

const PIPE_SRC: &str = r#"
__kernel void produce(__write_only pipe ulong16 p) {
    ulong16 v = (ulong16)(get_global_id(0));
    write_pipe(p, &v);
}
"#;

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

fn an_image_over_a_buffer_of_another_context_is_refused(dev: &TestDevice) -> TestResult {
    if !dev.device.image_support()? {
        return Err(skip("the device has no image support"));
    }
    let (a, b) = (dev.context(), dev.context());
    let fmt = ImageFormat::new(ChannelOrder::R, ChannelType::UnsignedInt32);
    let buf = Buffer::new(&a, MemFlags::READ_WRITE, 4096)?;
    let msg = invalid(
        Image::from_buffer(&b, MemFlags::empty(), fmt, &buf, 16),
        "1-D image over another context's buffer",
    );
    assert!(msg.contains("another context"), "{msg}");
    invalid(
        Image::from_buffer_2d(&b, MemFlags::empty(), fmt, &buf, (16, 4), None),
        "2-D image over another context's buffer",
    );
    Ok(())
}

/// PoCL 3.1 crashed (SIGSEGV) in `clEnqueueCopyBufferRect` with a sub-buffer on either side.
fn rect_copies_with_sub_buffers_give_the_right_bytes(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let align = dev.device.base_addr_align();
    let data: Vec<u8> = (0..4096u32).map(|i| (i % 251) as u8).collect();
    let root = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &data)?;
    let src = root.sub_buffer(align, 1024, MemFlags::empty())?;
    let other = Buffer::new(ctx, MemFlags::READ_WRITE, 4096)?;
    let dst = other.sub_buffer(align, 1024, MemFlags::empty())?;
    // 16 bytes of 4 rows, source pitch 32 at (2, 1), destination pitch 16 at (0, 0).
    let rect = Rect::new([16, 4, 1])
        .src_origin([2, 1, 0])
        .src_pitches(32, 0)
        .dst_pitches(16, 0);
    enqueue_copy(&q, &dst, &src, Transfer::default().rect(rect))?;
    let mut got = vec![0u8; 64];
    dst.read(&q, &mut got, &[])?;
    let want: Vec<u8> = (0..4)
        .flat_map(|row| {
            let start = align + (row + 1) * 32 + 2;
            data[start..start + 16].to_vec()
        })
        .collect();
    assert_eq!(got, want);
    // A root on one side, a sub-buffer on the other.
    enqueue_copy(&q, &other, &src, Transfer::default().rect(rect))?;
    let mut got = vec![0u8; 64];
    other.read(&q, &mut got, &[])?;
    assert_eq!(got, want);
    Ok(())
}

/// No overlap check existed (unlike `copy_from_range`): the spec's `CL_MEM_COPY_OVERLAP`.
fn overlapping_rect_copies_are_refused(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let align = dev.device.base_addr_align();
    let buf = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &vec![1u8; 8192])?;
    // One row down in one buffer: rows 1..4 of the source are rows 0..3 of the destination.
    let down = Rect::new([8, 4, 1])
        .dst_origin([0, 1, 0])
        .src_pitches(16, 0)
        .dst_pitches(16, 0);
    let msg = invalid(
        enqueue_copy(&q, &buf, &buf, Transfer::default().rect(down)),
        "one row down",
    );
    assert!(msg.contains("overlap"), "{msg}");
    // Side by side in one buffer: no byte shared, allowed.
    let beside = down.dst_origin([8, 0, 0]);
    enqueue_copy(&q, &buf, &buf, Transfer::default().rect(beside))?;
    // Two sub-buffers of one root whose rectangles meet.
    let a = buf.sub_buffer(0, 2 * align, MemFlags::empty())?;
    let b = buf.sub_buffer(align, 2 * align, MemFlags::empty())?;
    let whole = Rect::new([align, 1, 1]);
    invalid(
        enqueue_copy(
            &q,
            &b,
            &a,
            Transfer::default().rect(whole.src_origin([align, 0, 0])),
        ),
        "sub-buffers",
    );
    enqueue_copy(&q, &b, &a, Transfer::default().rect(whole))?;
    q.finish()?;
    Ok(())
}

/// Oclgrind created buffers with `READ_ONLY | WRITE_ONLY` and `HOST_READ_ONLY | HOST_NO_ACCESS`.
fn conflicting_flags_and_empty_shapes_are_refused(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    invalid(
        Buffer::new(&ctx, MemFlags::READ_ONLY | MemFlags::WRITE_ONLY, 64),
        "READ_ONLY | WRITE_ONLY",
    );
    invalid(
        Buffer::new(
            &ctx,
            MemFlags::HOST_READ_ONLY | MemFlags::HOST_NO_ACCESS,
            64,
        ),
        "HOST_READ_ONLY | HOST_NO_ACCESS",
    );
    invalid(
        Buffer::from_slice(
            &ctx,
            MemFlags::READ_WRITE | MemFlags::WRITE_ONLY,
            &[1u32; 4],
        ),
        "from_slice READ_WRITE | WRITE_ONLY",
    );
    invalid(ImageDesc::from_shape(&[0, 4], false, false), "width 0");
    invalid(ImageDesc::from_shape(&[4, 0, 2], false, false), "height 0");
    Ok(())
}

/// A `Memory` adopted from a live buffer's raw handle bypassed the record: a kernel wrote
/// through it under a live map of the buffer.
fn memory_adopted_from_a_raw_handle_keeps_the_record(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let align = dev.device.base_addr_align();
    let buf = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &vec![1u32; align])?;
    let sub = buf.sub_buffer(align, align, MemFlags::empty())?;
    // SAFETY: live memory objects of this crate; nothing outside it touches them.
    let (whole, part) = unsafe {
        (
            cl_mem::Memory::from_raw_retained(buf.as_raw())?,
            cl_mem::Memory::from_raw_retained(sub.as_raw())?,
        )
    };
    let program = Program::build_from_source(ctx, SRC, "")?;
    let mut k = program.kernel("sneaky")?;
    {
        let view = buf.map::<u32, _>(&q, cl_mem::ReadOnly, .., &[])?;
        for (what, m) in [("the root", &whole), ("a sub-buffer", &part)] {
            k.set_arg(0, m)?;
            let r = k.enqueue_nd_range(&q, &[4], None, &[]);
            assert!(matches!(r, Err(Error::Mapped(_))), "{what}: {r:?}");
        }
        q.finish()?;
        assert!(
            view.iter().all(|&v| v == 1),
            "the mapped bytes did not change"
        );
    }
    k.enqueue_nd_range(&q, &[4], None, &[])?;
    q.finish()?;
    drop(k);
    Ok(())
}

const SAMPLE_SRC: &str = r#"
__kernel void sample(__read_only image2d_t img, sampler_t s, __global float4* out) {
    int i = get_global_id(0);
    out[i] = read_imagef(img, s, (int2)(i, 0));
}
"#;

/// An argument replaced while a command that used it is still pending stays alive until that
/// command ran, also when the kernel enqueues again with the new argument. Observed with a sampler:
/// PoCL and the Intel runtime hold their own references to pending commands' memory objects, which
/// hides an early release of a buffer, but not of a sampler.
fn a_replaced_sampler_outlives_its_pending_command(dev: &TestDevice) -> TestResult {
    if !dev.device.image_support()? {
        return Err(skip("the device has no image support"));
    }
    if dev.platform_name().contains("Oclgrind") {
        return Err(skip(
            "Oclgrind 21.10: clFlush blocks on a command waiting for a user event",
        ));
    }
    let q = dev.queue();
    let ctx = q.context();
    let program = Program::build_from_source(ctx, SAMPLE_SRC, "")?;
    let img = Image::from_host(
        ctx,
        MemFlags::READ_ONLY,
        ImageFormat::RGBA_FLOAT,
        &ImageDesc::d2(4, 1),
        &[0.25f32; 16],
    )?;
    let out = Buffer::new(ctx, MemFlags::READ_WRITE, 4 * 16)?;
    let gate = cl_mem::UserEvent::new(ctx)?;
    let first = Sampler::new(ctx, false, AddressingMode::ClampToEdge, FilterMode::Nearest)?;
    let mut k = program.kernel("sample")?;
    k.set_arg(0, &img)?.set_arg(1, &first)?.set_arg(2, &out)?;
    let gated = k.enqueue_nd_range(&q, &[4], None, &[&gate])?;
    let probe = first.clone();
    drop(first);
    let second = Sampler::new(ctx, true, AddressingMode::Clamp, FilterMode::Nearest)?;
    k.set_arg(1, &second)?;
    let after = k.enqueue_nd_range(&q, &[4], None, &[])?;
    let held = probe.reference_count()?;
    // Open the gate before asserting: a broken rule fails here instead of hanging the queue.
    gate.set_complete()?;
    gated.wait()?;
    after.wait()?;
    assert!(
        held >= 2,
        "the pending command lost its replaced sampler ({held} references)"
    );
    drop(k);
    eventually("the completed commands released the sampler", || {
        Ok(probe.reference_count()? == 1)
    })?;
    Ok(())
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

fn a_call_reads_each_argument_once(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let other = dev.context();
    let program = Program::build_from_source(ctx, SRC, "")?;
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

fn errors_name_the_kernel_and_argument(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let program = Program::build_from_source(&ctx, SRC, "")?;
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
