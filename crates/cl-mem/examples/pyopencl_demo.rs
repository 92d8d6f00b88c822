//! Port of PyOpenCL's `examples/demo.py`: two input buffers, a `sum` kernel, the result read back
//! and checked on the host (the error vector's norm must be exactly 0, as float addition is the
//! same on host and device). The inputs are fixed rather than random so the printed numbers can be
//! compared with the Python program fed the same arrays (`docs/pyopencl-mapping.md`).
//!
//! Run: `cargo run -p cl-mem --example pyopencl_demo` (`CL_CTX=portable` or any selector).

use cl_mem::{create_some_context, Buffer, MemFlags, Program, Queue};

const SRC: &str = "
__kernel void sum(
    __global const float *a_g, __global const float *b_g, __global float *res_g)
{
  int gid = get_global_id(0);
  res_g[gid] = a_g[gid] + b_g[gid];
}";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n = 50000;
    let a_np: Vec<f32> = (0..n).map(|i| (i * 37 % 1000) as f32 / 1000.0).collect();
    let b_np: Vec<f32> = (0..n).map(|i| (i * 91 % 997) as f32 / 997.0).collect();

    let ctx = create_some_context()?;
    let queue = Queue::new(&ctx, &ctx.devices()[0])?;

    let a_g = Buffer::from_slice(&ctx, MemFlags::READ_ONLY, &a_np)?;
    let b_g = Buffer::from_slice(&ctx, MemFlags::READ_ONLY, &b_np)?;
    let prg = Program::build_from_source(&ctx, SRC, "")?;

    let res_g = Buffer::new(&ctx, MemFlags::WRITE_ONLY, n * 4)?;
    let knl = prg.kernel("sum")?; // Use this Kernel object for repeated calls
    knl.call(&queue, &[n], None, (&a_g, &b_g, &res_g))?;
    let res_np: Vec<f32> = res_g.to_vec(&queue)?;

    // Check on the CPU:
    let error_np: Vec<f32> = (0..n).map(|i| res_np[i] - (a_np[i] + b_np[i])).collect();
    let norm = error_np.iter().map(|e| e * e).sum::<f32>().sqrt();
    let total: f64 = res_np.iter().map(|&r| f64::from(r)).sum();
    println!("Error: {:?} ...", &error_np[..5]);
    println!("Norm: {norm:.16e}, sum of the result: {total:.6}");
    assert_eq!(norm, 0.0);
    Ok(())
}
