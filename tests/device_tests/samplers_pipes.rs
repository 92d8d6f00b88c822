//! Samplers and pipes: sampler properties, samplers kept alive by pending commands, packets passed
//! between kernels.

#![allow(
    clippy::cast_possible_truncation,
    reason = "test patterns are small indices cast to pixel values"
)]

use crate::common::{image_queue, IMAGE_ARGS_SRC};
use cl_mem::{
    AddressingMode, Buffer, Context, Error, FilterMode, Image, ImageDesc, MemFlags, MemObject,
    MemObjectType, Pipe, Program, RawHandle, Sampler, SamplerProperty, UserEvent, Version,
};
use cl_tests::{device_test, eventually, skip, TestDevice, TestResult};

const SAMPLE_SRC: &str = r#"
__kernel void sample(__read_only image2d_t img, sampler_t s, __global float4* out) {
    int i = get_global_id(0);
    out[i] = read_imagef(img, s, (int2)(i, 0));
}
"#;

const PIPE_SRC: &str = r#"
__kernel void produce(__write_only pipe int p, __global const int* src) {
    int v = src[get_global_id(0)];
    write_pipe(p, &v);
}
__kernel void consume(__read_only pipe int p, __global int* dst) {
    int v;
    dst[get_global_id(0)] = read_pipe(p, &v) == 0 ? v : -1;
}
"#;

device_test!(sampler_reports_its_properties);
fn sampler_reports_its_properties(dev: &TestDevice) -> TestResult {
    let q = image_queue(dev)?;
    let ctx: &Context = q.context();
    let s = Sampler::new(ctx, true, AddressingMode::Repeat, FilterMode::Linear)?;
    let info = s.info()?;
    assert!(info.normalized_coords);
    assert_eq!(info.addressing_mode, AddressingMode::Repeat);
    assert_eq!(info.filter_mode, FilterMode::Linear);
    assert_eq!(s.reference_count()?, 1);
    assert_eq!(info.context.as_raw(), ctx.as_raw());
    let c = s.clone();
    assert_eq!(s.reference_count()?, 2);
    drop(c);
    let p = Sampler::with_properties(ctx, &[SamplerProperty::NormalizedCoords(false)])?;
    let info = p.info()?;
    assert!(!info.normalized_coords);
    assert_eq!(info.addressing_mode, AddressingMode::Clamp);
    assert_eq!(info.filter_mode, FilterMode::Nearest);
    // The 3.0 query is not asked of older platforms.
    if let Some(props) = s.info()?.properties {
        assert_eq!(props.last(), Some(&0));
        assert!(
            props.chunks(2).any(|kv| kv == [0x1153, 0x1133]),
            "{props:?}"
        );
    } else {
        assert!(ctx.devices()[0].platform_version() < Version::V3_0);
    }
    let twice = Sampler::with_properties(
        ctx,
        &[
            SamplerProperty::NormalizedCoords(false),
            SamplerProperty::NormalizedCoords(true),
        ],
    );
    assert!(matches!(twice, Err(Error::InvalidArgument(_))));
    let unnormalized_repeat = Sampler::new(
        ctx,
        false,
        AddressingMode::MirroredRepeat,
        FilterMode::Nearest,
    );
    assert!(matches!(
        unnormalized_repeat,
        Err(Error::InvalidArgument(_))
    ));
    Ok(())
}

device_test!(sampler_outlives_a_dropped_kernel_until_the_command_ran);
fn sampler_outlives_a_dropped_kernel_until_the_command_ran(dev: &TestDevice) -> TestResult {
    if !dev.device.image_support()? {
        return Err(skip("the device has no image support"));
    }
    let q = dev.queue();
    let ctx = q.context();
    let program = Program::build_from_source(ctx, IMAGE_ARGS_SRC, "")?;
    let data = [0.25f32; 4 * 4];
    let img = Image::from_host(
        ctx,
        MemFlags::READ_ONLY,
        crate::common::RGBA_F,
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

device_test!(a_replaced_sampler_outlives_its_pending_command);
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
        crate::common::RGBA_F,
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

device_test!(pipe_passes_packets_between_kernels);
fn pipe_passes_packets_between_kernels(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let has_pipes = dev.device.pipe_support()? && dev.device.platform_version() >= Version::V2_0;
    let pipe = Pipe::new(ctx, MemFlags::empty(), 4, 64);
    if !has_pipes {
        assert!(matches!(pipe, Err(Error::Unsupported { .. })), "{pipe:?}");
        return Err(skip(
            "no pipe support: creation refused with Error::Unsupported before the driver",
        ));
    }
    let pipe = pipe?;
    assert_eq!(pipe.mem_info()?.mem_type, MemObjectType::Pipe);
    // The driver's answers, read by adopting the handle. SAFETY: a valid pipe handle;
    // `from_raw_retained` takes its own reference.
    let again = unsafe { Pipe::from_raw_retained(pipe.as_raw()) }?;
    assert_eq!((again.packet_size(), again.max_packets()), (4, 64));
    assert_eq!(again, pipe);
    drop(again);
    if ctx.devices()[0].platform_version() >= Version::V3_0 {
        assert!(pipe.properties()?.iter().all(|&p| p == 0));
    }
    assert!(matches!(
        Pipe::new(ctx, MemFlags::READ_ONLY, 4, 4),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        Pipe::new(ctx, MemFlags::empty(), 0, 4),
        Err(Error::InvalidArgument(_))
    ));
    let program = Program::build_from_source(ctx, PIPE_SRC, "-cl-std=CL2.0")?;
    let n = 48usize;
    let input: Vec<i32> = (0..n as i32).map(|v| v * 7 + 3).collect();
    let src = Buffer::from_slice(ctx, MemFlags::READ_ONLY, &input)?;
    let dst = Buffer::new(ctx, MemFlags::WRITE_ONLY, n * 4)?;
    let mut produce = program.kernel("produce")?;
    produce.set_arg(0, &pipe)?.set_arg(1, &src)?;
    let mut consume = program.kernel("consume")?;
    consume.set_arg(0, &pipe)?.set_arg(1, &dst)?;
    let written = produce.enqueue_nd_range(&q, &[n], None, &[])?;
    consume
        .enqueue_nd_range(&q, &[n], None, &[&written])?
        .wait()?;
    let mut got = vec![0i32; n];
    dst.read(&q, &mut got, &[])?;
    got.sort_unstable();
    let mut expect = input;
    expect.sort_unstable();
    assert_eq!(got, expect);
    Ok(())
}
