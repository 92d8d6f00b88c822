// Two owners of one cl_kernel could set arguments from two threads: Kernel is not Clone
// (use Kernel::duplicate for a second kernel object).
fn again(k: &cl_mem::Kernel) -> cl_mem::Kernel {
    k.clone()
}

fn main() {}
