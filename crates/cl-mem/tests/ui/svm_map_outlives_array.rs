//! A map guard cannot outlive the SVM array it maps.
use cl_mem::svm::{csvm_empty, SvmMapMut};
use cl_mem::Queue;

fn escape(q: &Queue) -> cl_mem::Result<SvmMapMut<'static, f32>> {
    let mut a = csvm_empty::<f32>(q, 4)?;
    let m = a.map(q, cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE, ..)?;
    Ok(m)
}

fn main() {
    let _ = escape;
}
