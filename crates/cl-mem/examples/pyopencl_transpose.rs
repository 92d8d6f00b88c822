//! Port of PyOpenCL's `examples/transpose.py`: a matrix transpose three ways (`Silly`: no local
//! size; `Naive`: 16x16 work-groups; `WithLocal`: a 16x16 tile staged in `__local` memory behind a
//! barrier), each checked to be exact against the host's transpose, then timed with event
//! profiling (4 warm-up runs, 12 timed, bandwidth from `end - start`), as `check_transpose` and
//! `benchmark_transpose` do. Sizes are the Python's `(2**i // 32) * 32`, for `i` in 6..=8 step 0.5
//! (the Python's 10..13 takes minutes on Oclgrind, a simulator); the input is a fixed pattern, not
//! random. No plots.
//!
//! Run: `cargo run -p cl-mem --example pyopencl_transpose` (`CL_CTX=portable` or any selector).

use cl_mem::{
    create_some_context, Buffer, Event, Kernel, LocalMemory, MemFlags, Program, Queue,
    QueueProperties, Result,
};

const BLOCK_SIZE: usize = 16;
const SRC: &str = "
__kernel void transpose_naive(
  __global float *a_t, __global float *a,
  unsigned a_width, unsigned a_height)
{
  int read_idx = get_global_id(0) + get_global_id(1) * a_width;
  int write_idx = get_global_id(1) + get_global_id(0) * a_height;

  a_t[write_idx] = a[read_idx];
}

#define BLOCK_SIZE 16
#define A_BLOCK_STRIDE (BLOCK_SIZE * a_width)
#define A_T_BLOCK_STRIDE (BLOCK_SIZE * a_height)

__kernel __attribute__((reqd_work_group_size(BLOCK_SIZE, BLOCK_SIZE, 1)))
void transpose_local(
  __global float *a_t, __global float *a,
  unsigned a_width, unsigned a_height,
  __local float *a_local)
{
  int base_idx_a   =
    get_group_id(0) * BLOCK_SIZE +
    get_group_id(1) * A_BLOCK_STRIDE;
  int base_idx_a_t =
    get_group_id(1) * BLOCK_SIZE +
    get_group_id(0) * A_T_BLOCK_STRIDE;

  int glob_idx_a   =
    base_idx_a + get_local_id(0) + a_width * get_local_id(1);
  int glob_idx_a_t =
    base_idx_a_t + get_local_id(0) + a_height * get_local_id(1);

  a_local[get_local_id(1)*BLOCK_SIZE+get_local_id(0)] = a[glob_idx_a];

  barrier(CLK_LOCAL_MEM_FENCE);

  a_t[glob_idx_a_t] = a_local[get_local_id(0)*BLOCK_SIZE+get_local_id(1)];
}";

#[derive(Clone, Copy, Debug)]
enum Method {
    Silly,
    Naive,
    WithLocal,
}

/// One transpose of the `w` x `h` matrix `src` into `tgt`: the Python classes' `__call__`.
fn transpose(
    m: Method,
    k: &[Kernel; 2],
    q: &Queue,
    tgt: &Buffer,
    src: &Buffer,
    w: usize,
    h: usize,
) -> Result<Event> {
    assert!(w.is_multiple_of(BLOCK_SIZE) && h.is_multiple_of(BLOCK_SIZE));
    let (global, local) = (&[w, h][..], Some(&[BLOCK_SIZE, BLOCK_SIZE][..]));
    let (wu, hu) = (
        u32::try_from(w).expect("w fits u32"),
        u32::try_from(h).expect("h fits u32"),
    );
    match m {
        Method::Silly => k[0].call(q, global, None, (tgt, src, &wu, &hu)),
        Method::Naive => k[0].call(q, global, local, (tgt, src, &wu, &hu)),
        Method::WithLocal => {
            let tile = LocalMemory::new(4 * BLOCK_SIZE * (BLOCK_SIZE + 1));
            k[1].call(q, global, local, (tgt, src, &wu, &hu, &tile))
        }
    }
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let ctx = create_some_context()?;
    let device = ctx.devices()[0];
    assert!(device.local_mem_size()? > 0);
    let queue = Queue::with_properties(&ctx, &device, QueueProperties::PROFILING_ENABLE)?;
    let prg = Program::build_from_source(&ctx, SRC, "")?;
    let kernels = [
        prg.kernel("transpose_naive")?,
        prg.kernel("transpose_local")?,
    ];
    // The Python's `(2**i // 32) * 32` for `i` in `np.arange(6, 8.5, 0.5)`.
    let sizes = [64, 64, 128, 160, 256];

    for method in [Method::Silly, Method::Naive, Method::WithLocal] {
        for &size in &sizes {
            // The Python's source is rng.random((size, size)); a fixed pattern here.
            let source: Vec<f32> = (0..size * size)
                .map(|i| (i * 7919 % 10007) as f32 / 10007.0)
                .collect();
            let a_buf = Buffer::from_slice(&ctx, MemFlags::READ_ONLY, &source)?;
            let a_t_buf = Buffer::new(&ctx, MemFlags::WRITE_ONLY, source.len() * 4)?;
            transpose(method, &kernels, &queue, &a_t_buf, &a_buf, size, size)?;
            let result: Vec<f32> = a_t_buf.to_vec(&queue)?;
            let wrong = (0..size * size)
                .filter(|&i| result[i] != source[i % size * size + i / size])
                .count();
            assert_eq!(wrong, 0, "{method:?} at {size}: {wrong} elements differ");

            for _ in 0..4 {
                transpose(method, &kernels, &queue, &a_t_buf, &a_buf, size, size)?;
            }
            let count = 12;
            let events = (0..count)
                .map(|_| transpose(method, &kernels, &queue, &a_t_buf, &a_buf, size, size))
                .collect::<Result<Vec<_>>>()?;
            events[count - 1].wait()?;
            let mut time = 0u64;
            for e in &events {
                let p = e.profiling()?;
                time += p.ended - p.started;
            }
            let mem_bw = 2.0 * (source.len() * 4 * count) as f64 / (time as f64 * 1e-9);
            println!("{method:?} {size}: exact; {:.3} GB/s", mem_bw / 1e9);
        }
    }
    Ok(())
}
