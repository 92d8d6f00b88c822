//! Transfer bandwidth and latency, 4 bytes to 256 MiB: write, read, copy, fill, rect, map, each
//! through `cl-mem` and through a raw `cl-sys` loop doing the same calls (blocking where ours
//! blocks, one event requested and released per call, as ours does), plus pinned host memory and
//! host `memcpy` for scale.
//!
//! Groups (`<group>/<bytes>`): `write` (the default path: `Auto`), `write_plain`, `write_staged`
//! (issue 13's paths forced, from 1 MiB on), `write_raw`, `write_pinned`, `read`, `read_plain`,
//! `read_staged`, `read_raw`,
//! `read_pinned`, `copy`, `copy_raw`, `fill`, `fill_raw`, `rect`, `rect_raw`, `map`, `map_raw`,
//! `host_memcpy`. PyOpenCL's reference tool reports `h2d_GBps_<bytes>`, `d2h_GBps_<bytes>` and
//! `d2d_GBps_rw_<bytes>` for its `enqueue_copy` (pageable host memory): compare with `write`,
//! `read` and `copy` (criterion's throughput is in bytes; `d2d_GBps_rw` counts both directions).
//!
//! `CL_BENCH_MAX_BYTES` caps the sizes (default 256 MiB) for quick runs on shared machines.

use cl_mem::Transfer;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput};

use cl_mem::RawHandle;
use cl_mem::{enqueue_copy, Buffer, MapFlags, MemFlags, PinnedMemory, Queue, Rect};
use cl_raw::sys;

/// 4 B, 4 KiB, 1 MiB, 16 MiB, 64 MiB, 256 MiB.
const SIZES: [usize; 6] = [4, 4 << 10, 1 << 20, 16 << 20, 64 << 20, 256 << 20];

fn sizes() -> impl Iterator<Item = usize> {
    let max = std::env::var("CL_BENCH_MAX_BYTES")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(usize::MAX);
    SIZES.into_iter().filter(move |&s| s <= max)
}

/// Releases an event the raw loop asked for, as `cl-mem`'s `Event` drop does.
fn release(ev: sys::cl_event) {
    // SAFETY: a fresh event the raw call returned; released once.
    let status = unsafe { sys::clReleaseEvent(ev) };
    assert_eq!(status, 0, "clReleaseEvent");
}

/// `write_plain` / `write_staged` (or the `read_` pair): issue 13's two paths forced, from 1 MiB.
fn path_groups(
    c: &mut Criterion,
    q: &Queue,
    buf: &Buffer,
    host: &[u8],
    out: &mut [u8],
    size: usize,
    write: bool,
) {
    if size < 1 << 20 {
        return;
    }
    let staged = cl_mem::TransferOptions {
        path: cl_mem::TransferPath::Staged,
        ..cl_mem::TransferOptions::default()
    };
    let dir = if write { "write" } else { "read" };
    for (path, opts) in [
        ("plain", cl_mem::TransferOptions::plain()),
        ("staged", staged),
    ] {
        let mut g = group(c, &format!("{dir}_{path}"));
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_function(BenchmarkId::from_parameter(size), |b| {
            b.iter(|| {
                if write {
                    buf.write(q, host, Transfer::default().options(opts))
                        .expect("write")
                } else {
                    buf.read(q, out, Transfer::default().options(opts))
                        .expect("read")
                }
            })
        });
        g.finish();
    }
}

fn group<'a>(
    c: &'a mut Criterion,
    name: &str,
) -> criterion::BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    g
}

/// Every transfer group.
pub(crate) fn benches(c: &mut Criterion) {
    let Some(queue) = cl_benches::bench_queue() else {
        return;
    };
    for size in sizes() {
        one_size(c, &queue, size);
    }
}

#[expect(
    clippy::too_many_lines,
    reason = "one flat list of groups reads best next to its raw twin"
)]
fn one_size(c: &mut Criterion, q: &Queue, size: usize) {
    let ctx = q.context().clone();
    let raw_q = q.as_raw();
    let host = vec![1u8; size];
    let mut out = vec![0u8; size];
    let buf = Buffer::new(&ctx, MemFlags::READ_WRITE, size).expect("buffer");
    let buf2 = Buffer::new(&ctx, MemFlags::READ_WRITE, size).expect("buffer");
    let id = BenchmarkId::from_parameter(size);
    let bytes = Throughput::Bytes(size as u64);

    let mut g = group(c, "write");
    g.throughput(bytes.clone());
    g.bench_function(id.clone(), |b| {
        b.iter(|| buf.write(q, &host, &[]).expect("write"))
    });
    g.finish();
    let mut g = group(c, "write_raw");
    g.throughput(bytes.clone());
    g.bench_function(id.clone(), |b| {
        b.iter(|| {
            let mut ev = std::ptr::null_mut();
            // SAFETY: valid queue and buffer; blocking, so `host` is read during the call only.
            let s = unsafe {
                sys::clEnqueueWriteBuffer(
                    raw_q,
                    buf.as_raw(),
                    sys::CL_TRUE,
                    0,
                    size,
                    host.as_ptr().cast(),
                    0,
                    std::ptr::null(),
                    &mut ev,
                )
            };
            assert_eq!(s, 0);
            release(ev);
        });
    });
    g.finish();

    path_groups(c, q, &buf, &host, &mut out, size, true);

    let mut g = group(c, "read");
    g.throughput(bytes.clone());
    g.bench_function(id.clone(), |b| {
        b.iter(|| buf.read(q, &mut out, &[]).expect("read"))
    });
    g.finish();
    path_groups(c, q, &buf, &host, &mut out, size, false);
    let mut g = group(c, "read_raw");
    g.throughput(bytes.clone());
    g.bench_function(id.clone(), |b| {
        b.iter(|| {
            let mut ev = std::ptr::null_mut();
            // SAFETY: valid queue and buffer; blocking, so `out` is written during the call only.
            let s = unsafe {
                sys::clEnqueueReadBuffer(
                    raw_q,
                    buf.as_raw(),
                    sys::CL_TRUE,
                    0,
                    size,
                    out.as_mut_ptr().cast(),
                    0,
                    std::ptr::null(),
                    &mut ev,
                )
            };
            assert_eq!(s, 0);
            release(ev);
        });
    });
    g.finish();

    if let Ok(mut pinned) = PinnedMemory::<u8>::new(q, size) {
        let mut g = group(c, "write_pinned");
        g.throughput(bytes.clone());
        g.bench_function(id.clone(), |b| {
            b.iter(|| enqueue_copy(q, &buf, &pinned, &[]).expect("write"))
        });
        g.finish();
        let mut g = group(c, "read_pinned");
        g.throughput(bytes.clone());
        g.bench_function(id.clone(), |b| {
            b.iter(|| enqueue_copy(q, &mut pinned, &buf, &[]).expect("read"))
        });
        g.finish();
    }

    let mut g = group(c, "copy");
    g.throughput(bytes.clone());
    g.bench_function(id.clone(), |b| {
        b.iter(|| {
            enqueue_copy(q, &buf2, &buf, &[]).expect("copy");
            q.finish().expect("finish");
        });
    });
    g.finish();
    let mut g = group(c, "copy_raw");
    g.throughput(bytes.clone());
    g.bench_function(id.clone(), |b| {
        b.iter(|| {
            let mut ev = std::ptr::null_mut();
            // SAFETY: valid queue and buffers of one context, distinct, in bounds.
            let s = unsafe {
                sys::clEnqueueCopyBuffer(
                    raw_q,
                    buf.as_raw(),
                    buf2.as_raw(),
                    0,
                    0,
                    size,
                    0,
                    std::ptr::null(),
                    &mut ev,
                )
            };
            assert_eq!(s, 0);
            release(ev);
            // SAFETY: a valid queue.
            assert_eq!(unsafe { sys::clFinish(raw_q) }, 0);
        });
    });
    g.finish();

    let pattern = 7u32;
    let mut g = group(c, "fill");
    g.throughput(bytes.clone());
    g.bench_function(id.clone(), |b| {
        b.iter(|| {
            buf.fill(q, &[pattern], Transfer::default().byte_count(size))
                .expect("fill");
            q.finish().expect("finish");
        });
    });
    g.finish();
    let mut g = group(c, "fill_raw");
    g.throughput(bytes.clone());
    g.bench_function(id.clone(), |b| {
        b.iter(|| {
            let mut ev = std::ptr::null_mut();
            // SAFETY: valid queue and buffer; a 4-byte pattern read during the call; the size is
            // a multiple of 4.
            let s = unsafe {
                sys::clEnqueueFillBuffer(
                    raw_q,
                    buf.as_raw(),
                    (&raw const pattern).cast(),
                    4,
                    0,
                    size,
                    0,
                    std::ptr::null(),
                    &mut ev,
                )
            };
            assert_eq!(s, 0);
            release(ev);
            // SAFETY: a valid queue.
            assert_eq!(unsafe { sys::clFinish(raw_q) }, 0);
        });
    });
    g.finish();

    // A 2-D rectangle: rows of up to 4 KiB, the whole buffer on both sides.
    let row = size.min(4096);
    let rect = Rect::new([row, size / row, 1]);
    let mut g = group(c, "rect");
    g.throughput(bytes.clone());
    g.bench_function(id.clone(), |b| {
        b.iter(|| {
            buf.write(q, &host, Transfer::default().rect(rect))
                .expect("rect")
        })
    });
    g.finish();
    let mut g = group(c, "rect_raw");
    g.throughput(bytes.clone());
    g.bench_function(id.clone(), |b| {
        b.iter(|| {
            let mut ev = std::ptr::null_mut();
            let (o, r) = ([0usize; 3], rect.region);
            // SAFETY: valid queue and buffer; blocking; the rectangle covers exactly the host
            // vector and the buffer.
            let s = unsafe {
                sys::clEnqueueWriteBufferRect(
                    raw_q,
                    buf.as_raw(),
                    sys::CL_TRUE,
                    o.as_ptr(),
                    o.as_ptr(),
                    r.as_ptr(),
                    row,
                    row * r[1],
                    row,
                    row * r[1],
                    host.as_ptr().cast(),
                    0,
                    std::ptr::null(),
                    &mut ev,
                )
            };
            assert_eq!(s, 0);
            release(ev);
        });
    });
    g.finish();

    let mut g = group(c, "map");
    g.throughput(bytes.clone());
    g.bench_function(id.clone(), |b| {
        b.iter(|| {
            let mut m = buf
                .map::<u8, _>(q, MapFlags::WRITE_INVALIDATE_REGION, .., &[])
                .expect("map");
            m[0] = 1;
            m.unmap(&[]).expect("unmap").wait().expect("wait");
        });
    });
    g.finish();
    let mut g = group(c, "map_raw");
    g.throughput(bytes.clone());
    g.bench_function(id.clone(), |b| {
        b.iter(|| {
            let (mut ev, mut err) = (std::ptr::null_mut(), 0);
            // SAFETY: valid queue and buffer; blocking map of the whole buffer, written once,
            // then unmapped and waited for.
            unsafe {
                let p = sys::clEnqueueMapBuffer(
                    raw_q,
                    buf.as_raw(),
                    sys::CL_TRUE,
                    sys::CL_MAP_WRITE_INVALIDATE_REGION,
                    0,
                    size,
                    0,
                    std::ptr::null(),
                    &mut ev,
                    &mut err,
                );
                assert_eq!(err, 0);
                release(ev);
                p.cast::<u8>().write(1);
                let mut ev2 = std::ptr::null_mut();
                assert_eq!(
                    sys::clEnqueueUnmapMemObject(
                        raw_q,
                        buf.as_raw(),
                        p,
                        0,
                        std::ptr::null(),
                        &mut ev2
                    ),
                    0
                );
                assert_eq!(sys::clWaitForEvents(1, &ev2), 0);
                release(ev2);
            }
        });
    });
    g.finish();

    let mut g = group(c, "host_memcpy");
    g.throughput(bytes);
    g.bench_function(id, |b| b.iter(|| out.copy_from_slice(&host)));
    g.finish();
}
