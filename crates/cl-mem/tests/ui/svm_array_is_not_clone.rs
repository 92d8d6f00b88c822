//! An SVM array owns its memory: it is not `Clone` (SVM has no reference count).
use cl_mem::svm::csvm_empty;
use cl_mem::Queue;

fn twice(q: &Queue) -> cl_mem::Result<()> {
    let a = csvm_empty::<f32>(q, 4)?;
    let _b = a.clone();
    Ok(())
}

fn main() {
    let _ = twice;
}
