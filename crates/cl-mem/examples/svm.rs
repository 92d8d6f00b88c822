//! Shared virtual memory: a coarse-grain SVM array filled on the host through a map, incremented
//! by a kernel, and read back; freed on its queue after the kernel, never under it. Devices
//! without SVM (OpenCL 1.2, Oclgrind) get a typed `Unsupported` error, printed with what is
//! missing: a program falls back to buffers there.
//!
//! Run: `cargo run -p cl-mem --example svm`.

use cl_mem::svm::{csvm_empty, Coarse, SvmArray};
use cl_mem::{create_some_context, Error, Program, Queue};

const SRC: &str = "__kernel void plus_one(__global float* p) { p[get_global_id(0)] += 1.0f; }";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let context = create_some_context()?;
    let device = context.devices()[0];
    let queue = Queue::new(&context, &device)?;
    println!(
        "device: {} (SVM: {:?})",
        device.name()?,
        device.svm_capabilities()?
    );
    let n = 4096;
    let mut data: SvmArray<f32, Coarse> = match csvm_empty(&queue, n) {
        Ok(a) => a,
        Err(e @ Error::Unsupported { .. }) => {
            println!("no coarse-grain SVM here, use buffers instead: {e}");
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    // Coarse grain: the host touches the memory only through a map.
    data.with_map(
        &queue,
        cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE,
        ..,
        |s| {
            for (i, v) in s.iter_mut().enumerate() {
                *v = i as f32;
            }
        },
    )?;
    let program = Program::build_from_source(&context, SRC, "-cl-std=CL2.0")?;
    let k = program.kernel("plus_one")?;
    k.call(&queue, &[n], None, (&data,))?;
    let sum: f64 = data.with_map(&queue, cl_mem::ReadOnly, .., |s| {
        s.iter().map(|&v| f64::from(v)).sum()
    })?;
    let n_f = n as f64;
    assert_eq!(sum, n_f * (n_f - 1.0) / 2.0 + n_f);
    println!("sum after the kernel: {sum}");
    Ok(())
}
