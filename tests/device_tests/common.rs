//! Helpers shared by several suites: kernel sources and the small functions that build and check with them.

#![allow(
    clippy::cast_possible_truncation,
    reason = "test sizes and indices are small, known values"
)]

use cl_mem::{Buffer, ChannelOrder, ChannelType, Error, ImageFormat, Program, Queue};
use cl_tests::{skip, TestDevice, TestResult};

pub(crate) const SCALE_SRC: &str = r#"
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

pub(crate) const ARGUMENT_KERNELS: &str = r#"
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

pub(crate) fn invalid<T: std::fmt::Debug>(r: cl_mem::Result<T>, what: &str) -> String {
    match r {
        Err(e @ Error::InvalidArgument(_)) => e.to_string(),
        other => panic!("{what}: expected Error::InvalidArgument, got {other:?}"),
    }
}

pub(crate) const IMAGE_ARGS_SRC: &str = r#"
__kernel void sample(__read_only image2d_t img, sampler_t s, __global float4* out) {
    int i = get_global_id(0);
    out[i] = read_imagef(img, s, (int2)(i, 0));
}
"#;

pub(crate) const SCALE_KERNELS: &str = r#"
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

pub(crate) fn program(q: &Queue) -> Result<Program, Error> {
    Program::build_from_source(q.context(), BUFFER_KERNELS, "")
}

pub(crate) const BUFFER_KERNELS: &str = r#"
__kernel void add(__global int* a, int v) {
    size_t i = get_global_id(0);
    a[i] += v;
}
__kernel void scale_into(__global const int* src, __global int* dst, int k) {
    size_t i = get_global_id(0);
    dst[i] = src[i] * k;
}
__kernel void iota(__global int* a, int base) {
    size_t i = get_global_id(0);
    a[i] = base + (int)i;
}
"#;

pub(crate) fn base_align(dev: &TestDevice) -> Result<usize, Error> {
    Ok(dev.device.base_addr_align().max(1))
}

/// Runs `add(buf, v)` over `n` items and waits.
pub(crate) fn add(q: &Queue, p: &Program, buf: &Buffer, v: i32, n: usize) -> TestResult {
    let mut k = p.kernel("add")?;
    k.set_arg(0, buf)?.set_arg(1, &v)?;
    k.enqueue_nd_range(q, &[n], None, &[])?.wait()?;
    Ok(())
}

pub(crate) fn iota(n: usize) -> Vec<i32> {
    (0..n as i32).collect()
}

pub(crate) fn mapped<T: std::fmt::Debug>(r: cl_mem::Result<T>, what: &str) {
    match r {
        Err(Error::Mapped(_)) => {}
        other => panic!("{what}: expected Error::Mapped, got {other:?}"),
    }
}

pub(crate) fn coarse_svm(dev: &TestDevice) -> Result<(), cl_tests::TestError> {
    let caps = dev.device.svm_capabilities()?;
    if dev.device.version() < cl_mem::Version::V2_0
        || !caps.contains(cl_mem::SvmCapabilities::COARSE_GRAIN_BUFFER)
    {
        return Err(skip("no coarse-grain buffer SVM (OpenCL 2.0)"));
    }
    Ok(())
}

pub(crate) const RGBA_F: ImageFormat = ImageFormat::new(ChannelOrder::Rgba, ChannelType::Float);

/// A queue on a fresh context, or a skip when the device has no images.
pub(crate) fn image_queue(dev: &TestDevice) -> Result<Queue, cl_tests::TestError> {
    if !dev.device.image_support()? {
        return Err(skip(
            "the device has no image support (CL_DEVICE_IMAGE_SUPPORT false)",
        ));
    }
    Ok(dev.queue())
}
