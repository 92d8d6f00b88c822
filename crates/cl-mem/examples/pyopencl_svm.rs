//! Port of PyOpenCL's `examples/svm.py`: reports the device's shared-virtual-memory features, then
//! for each one it has doubles ten 17s in place with a `twice` kernel and checks the 34s on the
//! host: coarse grain through maps, fine-grain buffers and fine-grain system memory directly.
//! A device without SVM (Oclgrind, OpenCL 1.2) reports three `false`s and tests nothing, as the
//! Python does; the example still exits 0.
//!
//! Run: `cargo run -p cl-mem --example pyopencl_svm` (`CL_CTX=portable` or any selector).

use cl_mem::svm::{csvm_empty, fsvm_empty, SvmArray};
use cl_mem::{create_some_context, MapFlags, Program, Queue, ReadOnly, SvmCapabilities};

const SRC: &str = "
__kernel void twice(
    __global float *a_g)
{
  int gid = get_global_id(0);
  a_g[gid] = 2*a_g[gid];
}";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = create_some_context()?;
    let dev = ctx.devices()[0];
    let queue = Queue::new(&ctx, &dev)?;
    let caps = dev.svm_capabilities()?;
    let (coarse, fine, system) = (
        caps.contains(SvmCapabilities::COARSE_GRAIN_BUFFER),
        caps.contains(SvmCapabilities::FINE_GRAIN_BUFFER),
        caps.contains(SvmCapabilities::FINE_GRAIN_SYSTEM),
    );
    println!(
        "Device '{}' on platform '{} ({})' has the following SVM features:\n  \
         Coarse-grained buffer SVM: {coarse}\n  Fine-grained buffer SVM:   {fine}\n  \
         Fine-grained system SVM:   {system}",
        dev.name()?,
        dev.platform().name()?,
        dev.platform()
            .info::<String>(cl_raw::sys::CL_PLATFORM_VERSION)?
    );
    let prg = Program::build_from_source(&ctx, SRC, "")?;
    let twice = prg.kernel("twice")?;

    if coarse {
        print!("Testing coarse-grained buffer SVM...");
        let mut svm_ary = csvm_empty::<f32>(&queue, 10)?;
        let orig_ary = svm_ary.with_map(&queue, MapFlags::READ | MapFlags::WRITE, .., |ary| {
            ary.fill(17.0); // use from host
            ary.to_vec()
        })?;
        twice.call(&queue, &[10], None, (&svm_ary,))?;
        queue.finish()?;
        let doubled: Vec<f32> = orig_ary.iter().map(|x| 2.0 * x).collect();
        svm_ary.with_map(&queue, ReadOnly, .., |ary| assert_eq!(ary, doubled))?;
        println!(" done.");
    }

    if fine {
        print!("Testing fine-grained buffer SVM...");
        let mut ary = fsvm_empty::<f32>(&queue, 10)?;
        ary.as_mut_slice()?.fill(17.0);
        let orig_ary = ary.as_slice()?.to_vec();
        twice.call(&queue, &[10], None, (&ary,))?;
        queue.finish()?;
        let doubled: Vec<f32> = orig_ary.iter().map(|x| 2.0 * x).collect();
        assert_eq!(ary.as_slice()?, doubled);
        println!(" done.");
    }

    if system {
        print!("Testing fine-grained system SVM...");
        let ary = SvmArray::from_vec(&queue, vec![17.0f32; 10])?;
        twice.call(&queue, &[10], None, (&ary,))?;
        queue.finish()?;
        assert_eq!(ary.into_vec()?, vec![34.0f32; 10]);
        println!(" done.");
    }
    Ok(())
}
