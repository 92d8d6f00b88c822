//! Coarse-grain SVM has no unmapped host access: `as_slice` exists only for fine-grain and
//! system SVM.
use cl_mem::svm::csvm_empty;
use cl_mem::Queue;

fn touch(q: &Queue) -> cl_mem::Result<f32> {
    let mut a = csvm_empty::<f32>(q, 4)?;
    Ok(a.as_slice()?[0])
}

fn main() {
    let _ = touch;
}
