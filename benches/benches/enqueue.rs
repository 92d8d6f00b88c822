//! What command tracking (issue 11) adds to one enqueue: a batch of `depth` non-blocking commands
//! enqueued back to back, then one `clFinish`, through `cl-mem` and through a raw `cl-sys` loop
//! making the same calls (one event requested and released per call, as ours does). The time is
//! per command, so `ours - raw` is the per-enqueue cost of the checks, the per-allocation record
//! and the kernel's argument snapshot; the depths (16, 256, 4096 commands in flight) show how it
//! scales with the number of commands not yet complete.
//!
//! Groups (`<group>/<depth>`): `enqueue_kernel`, `enqueue_kernel_raw` (a kernel over two buffers and a
//! scalar: one read-only and one written argument), `enqueue_fill`, `enqueue_fill_raw` (4 bytes).

use cl_mem::Transfer;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion};

use cl_mem::RawHandle;
use cl_mem::{Buffer, MemFlags, Program, Queue};
use cl_raw::sys;

const DEPTHS: [usize; 3] = [16, 256, 4096];

const SRC: &str = r#"
__kernel void axpy(__global const float* x, __global float* y, float a) {
    size_t i = get_global_id(0);
    y[i] += a * x[i];
}
"#;

fn group<'a>(
    c: &'a mut Criterion,
    name: &str,
) -> criterion::BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    g
}

/// Times `iters` batches of `depth` commands (then a finish each), per command.
fn per_command(iters: u64, depth: usize, q: &Queue, mut one: impl FnMut()) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let start = Instant::now();
        for _ in 0..depth {
            one();
        }
        q.finish().unwrap();
        total += start.elapsed();
    }
    total / u32::try_from(depth).unwrap()
}

fn release(ev: sys::cl_event) {
    // SAFETY: a fresh event the raw call returned; released once.
    let status = unsafe { sys::clReleaseEvent(ev) };
    assert_eq!(status, 0, "clReleaseEvent");
}

/// Every enqueue-overhead group.
pub(crate) fn benches(c: &mut Criterion) {
    let Some(q) = cl_benches::bench_queue() else {
        return;
    };
    let ctx = q.context().clone();
    let n = 256usize;
    let x = Buffer::from_slice(&ctx, MemFlags::READ_ONLY, &vec![1.0f32; n]).unwrap();
    let y = Buffer::from_slice(&ctx, MemFlags::READ_WRITE, &vec![0.0f32; n]).unwrap();
    let program = Program::build_from_source(&ctx, SRC, "").unwrap();
    let mut k = program.kernel("axpy").unwrap();
    k.set_arg(0, &x)
        .unwrap()
        .set_arg(1, &y)
        .unwrap()
        .set_arg(2, &0.5f32)
        .unwrap();
    // The raw loop's kernel: the same function, arguments set once through cl-sys.
    let raw_k = program.kernel("axpy").unwrap();
    let (xr, yr, a) = (x.as_raw(), y.as_raw(), 0.5f32);
    // SAFETY: valid kernel; arguments of the declared kinds and sizes.
    unsafe {
        let m = std::mem::size_of::<sys::cl_mem>();
        assert_eq!(
            sys::clSetKernelArg(raw_k.as_raw(), 0, m, (&xr as *const sys::cl_mem).cast()),
            0
        );
        assert_eq!(
            sys::clSetKernelArg(raw_k.as_raw(), 1, m, (&yr as *const sys::cl_mem).cast()),
            0
        );
        assert_eq!(
            sys::clSetKernelArg(raw_k.as_raw(), 2, 4, (&a as *const f32).cast()),
            0
        );
    }
    let global = [n];
    for depth in DEPTHS {
        let id = BenchmarkId::from_parameter(depth);
        let mut g = group(c, "enqueue_kernel");
        g.bench_function(id.clone(), |b| {
            b.iter_custom(|iters| {
                per_command(iters, depth, &q, || {
                    drop(k.enqueue_nd_range(&q, &global, None, &[]).unwrap());
                })
            });
        });
        g.finish();
        let mut g = group(c, "enqueue_kernel_raw");
        g.bench_function(id.clone(), |b| {
            b.iter_custom(|iters| {
                per_command(iters, depth, &q, || {
                    let mut ev: sys::cl_event = std::ptr::null_mut();
                    // SAFETY: valid queue and kernel with every argument set; `ev` is ours.
                    let status = unsafe {
                        sys::clEnqueueNDRangeKernel(
                            q.as_raw(),
                            raw_k.as_raw(),
                            1,
                            std::ptr::null(),
                            global.as_ptr(),
                            std::ptr::null(),
                            0,
                            std::ptr::null(),
                            &mut ev,
                        )
                    };
                    assert_eq!(status, 0, "clEnqueueNDRangeKernel");
                    release(ev);
                })
            });
        });
        g.finish();
        let mut g = group(c, "enqueue_fill");
        g.bench_function(id.clone(), |b| {
            b.iter_custom(|iters| {
                per_command(iters, depth, &q, || {
                    drop(
                        y.fill(&q, &[0u32], Transfer::default().byte_count(4))
                            .unwrap(),
                    );
                })
            });
        });
        g.finish();
        let mut g = group(c, "enqueue_fill_raw");
        g.bench_function(id, |b| {
            b.iter_custom(|iters| {
                per_command(iters, depth, &q, || {
                    let pattern = 0u32;
                    let mut ev: sys::cl_event = std::ptr::null_mut();
                    // SAFETY: valid queue and buffer; the pattern is read during the call.
                    let status = unsafe {
                        sys::clEnqueueFillBuffer(
                            q.as_raw(),
                            yr,
                            (&pattern as *const u32).cast(),
                            4,
                            0,
                            4,
                            0,
                            std::ptr::null(),
                            &mut ev,
                        )
                    };
                    assert_eq!(status, 0, "clEnqueueFillBuffer");
                    release(ev);
                })
            });
        });
        g.finish();
    }
}
