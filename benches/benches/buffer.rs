//! Buffer creation and host-to-device writes on the bench device.

use criterion::{BenchmarkId, Criterion, Throughput};

use cl_mem::{Buffer, MemFlags};

/// Sizes PyOpenCL's reference bench uses (`raw_buffer_create_release_ns_<size>`).
const SIZES: [usize; 3] = [1 << 10, 1 << 20, 64 << 20];

/// `raw_buffer_create_release/<bytes>` and `buffer_write/<bytes>`.
pub fn benches(c: &mut Criterion) {
    let Some(queue) = cl_benches::bench_queue() else {
        return;
    };
    let context = queue.context().clone();

    let mut g = c.benchmark_group("raw_buffer_create_release");
    for size in SIZES {
        g.bench_with_input(BenchmarkId::from_parameter(size), &size, |b, &size| {
            b.iter(|| Buffer::new(&context, MemFlags::READ_WRITE, size).expect("buffer create"));
        });
    }
    g.finish();

    let mut g = c.benchmark_group("buffer_write");
    for size in [1usize << 10, 1 << 20] {
        let host = vec![1u8; size];
        let buf = Buffer::new(&context, MemFlags::READ_WRITE, size).expect("buffer create");
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_with_input(BenchmarkId::from_parameter(size), &size, |b, _| {
            b.iter(|| buf.write(&queue, &host, &[]).expect("buffer write"));
        });
    }
    g.finish();
}
