//! While a map is alive, the array cannot be set as a kernel argument (nor used otherwise):
//! no kernel can be enqueued on memory the host is touching.
use cl_mem::svm::csvm_empty;
use cl_mem::{Kernel, Queue};

fn race(q: &Queue, k: &mut Kernel) -> cl_mem::Result<()> {
    let mut a = csvm_empty::<f32>(q, 4)?;
    let mut m = a.map(q, cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE, ..)?;
    k.set_arg(0, &a)?;
    m[0] = 1.0;
    Ok(())
}

fn main() {
    let _ = race;
}
