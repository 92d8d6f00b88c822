//! Coarse-grain SVM has no unmapped host writes either.
use cl_mem::svm::{Coarse, SvmArray};
use cl_mem::Queue;

fn touch(q: &Queue) -> cl_mem::Result<()> {
    let mut a = SvmArray::<u32, Coarse>::new(q, 4)?;
    a.as_mut_slice()?[0] = 1;
    Ok(())
}

fn main() {
    let _ = touch;
}
