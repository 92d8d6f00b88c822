//! A fine-grain host slice cannot outlive its array (which frees the memory on drop).
use cl_mem::svm::fsvm_empty;
use cl_mem::Queue;

fn escape(q: &Queue) -> cl_mem::Result<&'static [f32]> {
    let mut a = fsvm_empty::<f32>(q, 4)?;
    a.as_slice()
}

fn main() {
    let _ = escape;
}
