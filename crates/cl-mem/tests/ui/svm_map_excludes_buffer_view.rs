//! While a map is alive, no buffer view of the array can be made: a view's write would change
//! the bytes under the map's `&mut [T]`; and while a view lives, the array cannot be mapped.
use cl_mem::svm::{csvm_empty, SvmPointer};
use cl_mem::{MemFlags, Queue};

fn view_under_map(q: &Queue) -> cl_mem::Result<()> {
    let mut a = csvm_empty::<f32>(q, 4)?;
    let mut m = a.map(q, cl_mem::MapFlags::WRITE, ..)?;
    let v = a.as_buffer(MemFlags::READ_WRITE)?;
    v.write(q, &[2f32; 4][..], &[])?;
    m[0] = 1.0;
    Ok(())
}

fn map_under_view(q: &Queue) -> cl_mem::Result<()> {
    let mut a = csvm_empty::<f32>(q, 4)?;
    let v = a.as_buffer(MemFlags::READ_WRITE)?;
    let mut m = a.map(q, cl_mem::MapFlags::WRITE, ..)?;
    v.write(q, &[2f32; 4][..], &[])?;
    m[0] = 1.0;
    Ok(())
}

fn main() {
    let _ = (view_under_map, map_under_view);
}
