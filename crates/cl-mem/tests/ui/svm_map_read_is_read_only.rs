// A read-only SVM map (`SvmMapMode` for `ReadOnly`) gives `&[T]` only, in both forms.
use cl_mem::svm::csvm_empty;
use cl_mem::Queue;

fn main() {}

#[allow(dead_code)]
fn check(q: &Queue) -> cl_mem::Result<()> {
    let mut a = csvm_empty::<f32>(q, 4)?;
    let guard = a.map(q, cl_mem::ReadOnly, ..)?;
    guard[0] = 1.0;
    drop(guard);
    a.with_map(q, cl_mem::ReadOnly, .., |s| s[0] = 1.0)?;
    Ok(())
}
