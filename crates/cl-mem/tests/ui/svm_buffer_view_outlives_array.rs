//! A buffer view of SVM cannot outlive the SVM array.
use cl_mem::svm::{csvm_empty, SvmBufferView, SvmPointer};
use cl_mem::{MemFlags, Queue};

fn escape(q: &Queue) -> cl_mem::Result<SvmBufferView<'static>> {
    let a = csvm_empty::<f32>(q, 4)?;
    a.as_buffer(MemFlags::READ_WRITE)
}

fn main() {
    let _ = escape;
}
