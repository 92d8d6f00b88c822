//! The slice of a map cannot outlive the map guard (it is unmapped on drop).
use cl_mem::svm::csvm_empty;
use cl_mem::Queue;

fn escape(q: &Queue) -> cl_mem::Result<()> {
    let mut a = csvm_empty::<f32>(q, 4)?;
    let slice: &[f32] = {
        let m = a.map(q, cl_mem::ReadOnly, ..)?;
        &m[..]
    };
    println!("{}", slice[0]);
    Ok(())
}

fn main() {
    let _ = escape;
}
