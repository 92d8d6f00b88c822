//! The slice given to a `with_map_rw` scope cannot escape it.
use cl_mem::svm::csvm_empty;
use cl_mem::Queue;

fn escape(q: &Queue) -> cl_mem::Result<()> {
    let mut a = csvm_empty::<f32>(q, 4)?;
    let mut leaked: Option<&mut [f32]> = None;
    a.with_map(q, cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE, .., |s| leaked = Some(s))?;
    drop(leaked);
    Ok(())
}

fn main() {
    let _ = escape;
}
