// USE_HOST_PTR memory must live as long as the driver's object: a non-'static borrow is refused.
use cl_mem::{Buffer, Context, MemFlags};

fn main() {}

#[allow(dead_code)]
fn check(context: Context) {
    let mut local = vec![0u32; 16];
    let buf = Buffer::use_host_memory(&context, MemFlags::READ_WRITE, &mut local[..]).unwrap();
    drop(local);
    drop(buf);
}
