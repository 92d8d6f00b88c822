//! Quick start: a pooled vector add on the device `create_some_context` picks, read back into a
//! `Vec` and an `ndarray`. Run: `cargo run -p cl-pool --example quick_start` (`CL_CTX=portable`
//! or any selector picks a device; `RUST_LOG`-style tracing is shown in the `tracing` example).

use cl_mem::{create_some_context, Buffer, MemFlags, Program, Queue};
use cl_pool::{ImmediateAllocator, MemoryPool};

const SRC: &str = "__kernel void add(__global const float* a, __global const float* b,
                                     __global float* c, float scale) {
                       size_t i = get_global_id(0);
                       c[i] = scale * (a[i] + b[i]);
                   }";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // CL_CTX (or CL_TEST) when set; else a GPU, else a CPU runtime, a simulator last.
    let context = create_some_context()?;
    let device = context.devices()[0];
    let queue = Queue::new(&context, &device)?;
    println!("device: {}", device.name()?);

    // A pool of device buffers: a repeated size costs tens of nanoseconds, not a driver call.
    let pool = MemoryPool::new(ImmediateAllocator::new(&queue, MemFlags::READ_WRITE)?);

    let n = 256 * 256;
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| (2 * i) as f32).collect();
    let a_dev = Buffer::from_slice(&context, MemFlags::READ_ONLY, &a)?;
    let b_dev = pool.allocate(n * 4)?;
    b_dev.write(&queue, &b, &[])?; // `&[]`: no wait list (the queue is in order)
    let c_dev = pool.allocate(n * 4)?;

    let add = Program::build_from_source(&context, SRC, "")?.kernel("add")?;
    // Buffers, pooled blocks and scalars go straight in, checked against the kernel's declaration
    // (a wrong kind or size names the kernel and the argument).
    add.call(&queue, &[n], None, (&a_dev, &b_dev, &c_dev, &0.5f32))?;

    let c: Vec<f32> = c_dev.to_vec(&queue)?;
    assert!(c.iter().enumerate().all(|(i, &x)| x == 1.5 * i as f32));

    // Or straight into an ndarray (cl-mem's `ndarray` feature).
    let grid = c_dev.to_array::<f32, _>(&queue, (256, 256))?;
    assert_eq!(grid[[1, 0]], 1.5 * 256.0);

    // Back to the pool: the next allocation of this size is a hit.
    drop((b_dev, c_dev));
    let again = pool.allocate(n * 4)?;
    println!(
        "pool: {} hits, {} misses, {} blocks held",
        pool.stats().hits,
        pool.stats().misses,
        pool.held_blocks()
    );
    drop(again);
    Ok(())
}
